"""The results file: one JSON document per run, written atomically at the end."""

from __future__ import annotations

import gzip
import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import write_atomic
from ..errors import ResultsError
from ..matrix.cells import in_matrix
from ..matrix.stages import STAGES
from . import gate
from .expectations import Run
from .outcomes import KINDS, Outcome

SCHEMA = 1


def fuzz_summary(fuzz: list[dict[str, Any]]) -> dict[str, Any]:
    tallies = [f["outcome"]["detail"].get("tally", {}) for f in fuzz]
    by_outcome = Counter(f["outcome"]["kind"] for f in fuzz)
    past = sum(t.get("past_compile_bound", 0) for t in tallies)
    return {
        "cells": len(fuzz),
        "by_outcome": {k: by_outcome.get(k, 0) for k in KINDS},
        "unexpected": sum(1 for f in fuzz if f["verdict"]),
        "examples": sum(t.get("examples", 0) for t in tallies),
        **({"past_compile_bound": past} if past else {}),
    }


def document(
    env: dict[str, Any],
    cells: list[dict[str, Any]],
    builds: dict[str, Any],
    wall_seconds: float,
    options: dict[str, Any],
    fuzz: Sequence[dict[str, Any]] = (),
    harness_errors: Sequence[dict[str, Any]] = (),
    fuzz_collected: bool = False,
) -> dict[str, Any]:
    """The run's document. `fuzz`: the fuzz tests' records (same shape as cells), each outcome's detail holding its
    tally: examples run, how many had something to compare, max abs and rel error, refusals per layout.
    `harness_errors`: tests the harness itself failed (id, section, error), which have no outcome.
    `fuzz_collected`: the fuzz tests were part of the run, even if no cell was expected to pass."""
    cells = sorted(cells, key=lambda c: c["id"])
    fuzz = sorted(fuzz, key=lambda c: c["id"])
    by_outcome = Counter(c["outcome"]["kind"] for c in cells)
    return {
        "schema": SCHEMA,
        "environment": env,
        "options": options,
        "summary": {
            "cells": len(cells),
            "by_outcome": {k: by_outcome.get(k, 0) for k in KINDS},
            "unexpected": sum(1 for c in cells if c["verdict"]),
            "environment_failures": sum(1 for c in cells if c["outcome"]["detail"].get("environment_failure")),
            "cells_per_gpu": dict(sorted(Counter(c["gpu"] for c in cells if c.get("gpu")).items())),
            "wall_seconds": round(wall_seconds, 1),
            "stage_families": stage_families(cells),
            **builds,
            "fuzz": {**fuzz_summary(fuzz), "collected": bool(fuzz or fuzz_collected)},
            "harness_errors": len(harness_errors),
        },
        "cells": cells,
        "fuzz": fuzz,
        "harness_errors": list(harness_errors),
    }


def stage_families(cells: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per stage family (compat.matrix.stages: Stage.family): its cells, and the seconds and CPU seconds spent on them
    (a shared child's go to the first cell that needed it; CPU time is not recorded by runs before it was)."""
    families: dict[str, dict[str, float]] = {}
    for c in cells:
        family = STAGES[c["axes"]["stage"]].family if c["axes"]["stage"] in STAGES else c["axes"]["stage"]
        row = families.setdefault(family, {"cells": 0, "seconds": 0.0, "cpu_seconds": 0.0})
        row["cells"] += 1
        row["seconds"] += c.get("duration_s") or 0.0
        row["cpu_seconds"] += c.get("cpu_s") or 0.0
    return {f: {k: round(v, 1) for k, v in row.items()} for f, row in sorted(families.items())}


def _in_repository(path) -> str:
    """A run's path as its repository names it (relative to the checkout that holds it, whatever folder the merge ran
    from), so a merged file names its runs the same wherever it was made; a path outside any checkout as given."""
    resolved = Path(path).resolve()
    root = next((d for d in resolved.parents if (d / ".git").exists()), None)
    return str(resolved.relative_to(root)) if root else str(path)


def merge(paths: list[str], expectations) -> dict[str, Any]:
    """One document from several partial runs of the same torch and triton (shards, or runs cut short by a time
    limit): each cell as its latest run measured it (by the runs' dates), its verdict recomputed against
    `expectations` (said in the options, so a reader knows the gate did not see these verdicts live). Cells no longer
    in the matrix are left out."""
    docs = [(_in_repository(p), load(p)) for p in paths]  # loaded where given, named as its repository names it
    versions = {(d["environment"]["torch"], d["environment"]["triton"]) for _, d in docs}
    if len(versions) > 1:
        raise ResultsError(f"cannot merge runs of different torch / triton versions: {sorted(versions)}")
    merged: dict[str, dict[str, Any]] = {"cells": {}, "fuzz": {}}
    measured_at: dict[tuple[str, str], str] = {}  # (section, id): the date of the run its record is from
    sources, left_out = [], 0
    for path, doc in docs:
        env = doc["environment"]
        run = Run.from_env(env)
        gpus = Counter(g["name"] for g in env["gpus"])
        # A merged file brings its own runs: its records keep the run they came from.
        inner = doc["options"].get("merged_from")
        sources += (
            [{k: s.get(k) for k in ("path", "machine", "date", "wall_seconds", "commits")} for s in inner]
            if inner
            else [
                {
                    "path": str(path),
                    "machine": ", ".join(f"{n}x {name}" if n > 1 else name for name, n in gpus.items()) or "cpu",
                    "date": env["date"],
                    "wall_seconds": doc["summary"]["wall_seconds"],
                    "commits": env.get("commits"),  # None: a run from before runs recorded their commits
                }
            ]
        )
        dates = {s["path"]: s["date"] for s in inner} if inner else {}
        for section, records in merged.items():
            for cell in doc.get(section, []):
                if not in_matrix(cell["id"]):
                    left_out += 1
                    continue
                date = dates.get(cell["source"], env["date"]) if inner else env["date"]
                if measured_at.get((section, cell["id"]), "") > date:
                    continue  # a later run measured it: the runs' order on the command line does not matter
                measured_at[section, cell["id"]] = date
                records[cell["id"]] = {
                    **judged(cell, section, expectations, run),
                    "source": cell["source"] if inner else str(path),
                }
    for source in sources:  # what each run still contributes, once later runs took their cells
        for section in merged:
            source[section] = sum(r["source"] == source["path"] for r in merged[section].values())
    summaries = [d["summary"] for _, d in docs]
    builds = {
        "exports": sum(s.get("exports", 0) for s in summaries),
        "aoti_compiles": sum(s.get("aoti_compiles", 0) for s in summaries),
        "aoti_reused": sum(s.get("aoti_reused", 0) for s in summaries),
        "aoti_store_compiles": sum(s.get("aoti_store_compiles", 0) for s in summaries),
        "aoti_compile_seconds": {k: v for s in summaries for k, v in s.get("aoti_compile_seconds", {}).items()},
        "canaries": {k: v for s in summaries for k, v in s.get("canaries", {}).items()},
    }
    # a merged input names its profiles joined by ", ": each once
    profiles = sorted(
        {p for _, d in docs if d.get("fuzz") for p in (d["options"].get("fuzz_profile") or "").split(", ") if p}
    )
    code = {json.dumps(s.get("commits"), sort_keys=True) for s in sources}
    options = {
        "merged_from": sources,
        # Evidence of one code is one commit's runs: said here, so a reader sees a patchwork for what it is.
        "one_commit": len(code) == 1 and None not in (s.get("commits") for s in sources),
        "left_out_not_in_matrix": left_out,
        "regraded_against": os.path.relpath(expectations.path),
        "fuzz_profile": ", ".join(profiles) or None,
    }
    return document(
        docs[-1][1]["environment"],
        list(merged["cells"].values()),
        builds,
        sum(s["wall_seconds"] for s in summaries),
        options,
        fuzz=list(merged["fuzz"].values()),
    )


def judged(record: dict[str, Any], section: str, expectations, run: Run, baseline=None) -> dict[str, Any]:
    """A record with its verdict recomputed (compat.evidence.gate) against `expectations` and, where no row
    applies, `baseline`."""
    exp = expectations.lookup(record["id"], run, section)
    judgement = gate.judge(
        record["id"], exp, Outcome.from_dict(record["outcome"]), run, expectations.path, section, baseline
    )
    return {
        **record,
        "expected": exp.full if exp else None,
        "expected_at": exp.where if exp else None,
        "verdict": judgement.complaint,
        "against_baseline": judgement.against,
    }


@dataclass
class Regrade:
    """A results file judged again by today's code against today's expectations."""

    differ: list[str]  # the complaints of the records whose verdict is not "as expected"
    unreadable: list[str]  # the records holding what today's judgement does not know: only a new run regrades them
    stale: list[str]  # the fuzz records made before findings were recorded: judged by their kind alone
    records: int

    @property
    def green(self) -> bool:
        return not (self.differ or self.unreadable)


def regrade(doc: dict[str, Any], expectations) -> Regrade:
    """Every record of the file as today's judgement (compat.evidence.gate) sees it, against `expectations`."""
    run = Run.from_env(doc["environment"])
    done = Regrade([], [], [], 0)
    for section in ("cells", "fuzz"):
        for record in doc.get(section, []):
            if not in_matrix(record["id"]):
                continue
            done.records += 1
            try:
                complaint = judged(record, section, expectations, run)["verdict"]
            except gate.Unreadable as exc:
                done.unreadable.append(f"{section} {record['id']}: {exc}")
                continue
            if complaint:
                done.differ.append(complaint)
            if gate.stale(Outcome.from_dict(record["outcome"]), section):
                done.stale.append(record["id"])
    return done


def write(path: str | Path, doc: dict[str, Any]) -> None:
    """As JSON; gzipped where the name ends in .gz (the committed evidence: a tenth of the size)."""
    text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
    try:
        write_atomic(path, gzip.compress(text.encode(), mtime=0) if str(path).endswith(".gz") else text)
    except OSError as exc:
        raise ResultsError(f"{path}: cannot write the results file: {exc}") from None


def load(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        doc = json.loads(gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such results file") from None
    except (json.JSONDecodeError, UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise ResultsError(f"{path}: not valid JSON (truncated?): {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ResultsError(f"{path}: results schema {got!r}; this version reads schema {SCHEMA}")
    _check_shape(doc, path)
    return doc


# What every reader of a results file relies on: (key, type) at the top, in the environment, and in each record.
TOP = (("environment", dict), ("options", dict), ("summary", dict), ("cells", list))
ENVIRONMENT = (("torch", str), ("triton", str), ("gpus", list), ("date", str), ("platform", str))
RECORD = (("id", str), ("axes", dict), ("outcome", dict), ("verdict", (str, type(None))))


def _check_shape(doc: dict[str, Any], path: Path) -> None:
    def need(mapping: dict, keys, where: str) -> None:
        for key, kind in keys:
            if not isinstance(mapping.get(key), kind):
                what = "missing" if key not in mapping else f"a {type(mapping[key]).__name__}, not the expected type"
                raise ResultsError(f"{path}: not a results file written by a run: {where}{key!r} is {what}")

    need(doc, TOP, "")
    need(doc["environment"], ENVIRONMENT, "environment.")
    for section in ("cells", "fuzz"):
        records = doc.get(section, [])
        if not isinstance(records, list):
            raise ResultsError(f"{path}: not a results file written by a run: {section!r} is not a list")
        for i, record in enumerate(records):
            if not isinstance(record, dict):
                raise ResultsError(f"{path}: not a results file written by a run: {section}[{i}] is not a mapping")
            need(record, RECORD, f"{section}[{i}].")
            try:
                Outcome.from_dict(record["outcome"])
            except (TypeError, ValueError) as exc:
                raise ResultsError(f"{path}: {section}[{i}] ({record['id']}): not an outcome: {exc}") from None
