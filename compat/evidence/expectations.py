"""Expected outcomes as data: one YAML file of rows, each row a version range's outcome for the cells it lists.

    schema: 2
    cells:
    - torch: '>=2.6,<2.14'              # packaging specifiers; a cell's first row that matches the run is used
      triton: '>=3.0'                   # optional
      host: gpu                         # optional: gpu (CUDA available) or cpu-only
      outcome: failed                   # passed | failed | mismatch | crashed | timed_out
      error: torch._dynamo.exc.TorchRuntimeError  # failed: the exception type, qualified unless builtin
      cause: RuntimeError               # failed, optional: the root cause's type, where a wrapper re-raised it
      known: raw_launch_data_ptr        # the catalogue entry (compat.evidence.catalogue, or your register_known)
                                        #   whose reason, rewrite and match the row takes; or, written out:
      # match: 'Cannot access data pointer of Tensor'  # failed: a regex on the root cause's stable fragment,
      #                                 #   searched in the message and the cause's message (with `known`: a
      #                                 #   narrower regex than the entry's, where one was observed)
      # reason: one line on why
      # rewrite: what to do instead     # optional
      provenance: {measured: {torch: 2.11.0+cu130, triton: 3.6.0, device: NVIDIA H100, date: 2026-11-22}}
                  # or a list of those, for a row widened over versions, or {documented: 'pytorch/pytorch#185827: ...'}
      ids:                              # the cells the row holds for: cell ids, or with '*' for the dtype (every
      - silu-raw_jit-export_nonstrict-*-cuda   # dtype of the kernel)

    fuzz:                               # optional: the fuzz tests' findings, same rows, plus
    - ...                               #   findings: what it pins (compat.evidence.findings), each with
                                        #     output, layout, difference, cause, max_rel_err or error, and the
                                        #     example (JSON) replayed first in every run; a later run fails on a
                                        #     difference none of them explains, and on one that no longer shows
                                        # a cell without fuzz rows is expected to pass its fuzz test

A cell's rows are those listing its own id, then those listing its any-dtype key, each in file order. In memory
the file is read as each cell's list of rows (`Expectations.data`); writing groups the cells that share a row, in
an order that keeps every cell's own order, and names a catalogue entry by its key where a row carries its words.
--compat-accept folds the rows that every dtype of a cell shares into the any-dtype key. Schema 1 (a mapping of
cell ids to their rows) is still read; the next accept rewrites it as schema 2.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from ..atomic import write_atomic
from ..errors import CompatError, ExpectationsError
from ..matrix.cells import (
    ANY_DTYPE,
    Cell,
    any_dtype_key,
    applicable,
    check_names,
    in_matrix,
    parse_cell_id,
    split_cell_id,
)
from ..matrix.kernels import KERNELS
from ..matrix.strategies import misfit
from . import findings, gate
from .catalogue import KNOWN, by_key, explain
from .findings import Finding, example_json
from .gate import UNEXPLAINED
from .outcomes import KINDS, Outcome

SCHEMA = 2
READS = (1, 2)  # schema 1: a mapping of cell ids to their rows, rewritten as schema 2 by the next accept
EXPECTABLE = tuple(k for k in KINDS if k != "skipped")  # a skip is the environment's, never an expectation
HOSTS = ("gpu", "cpu-only")
ROW_KEYS = {
    "torch",
    "triton",
    "host",
    "outcome",
    "error",
    "cause",
    "known",
    "match",
    "signal",
    "reason",
    "rewrite",
    "provenance",
    "example",
    "findings",
}
# Written by earlier versions and dropped on reading: the command follows from the id and the example
# (a run's own output prints it), and it doubled the fuzz rows' size.
DROPPED_KEYS = ("reproducer",)
WORDS = ("match", "reason", "rewrite")  # what a row takes from its catalogue entry (`known`) or writes out
IDS = "ids"  # a row's list of the cells it holds for, in the file
SECTIONS = ("cells", "fuzz")  # the matrix's cells, and the fuzz tests' findings


def _parse_key(key: str, where: str) -> list[Cell]:
    """The matrix cells a key names: its own cell, or every dtype's cell for an any-dtype key."""
    key_cell = split_cell_id(key, where)
    if key_cell.dtype == ANY_DTYPE:
        for axis in ("kernel", "style", "stage", "device"):
            check_names(axis, [getattr(key_cell, axis)], f"{where}: cell {key!r}")
        cells = [dataclasses.replace(key_cell, dtype=dtype) for dtype in KERNELS[key_cell.kernel].dtypes]
        in_matrix = [parse_cell_id(c.id, where) for c in cells if applicable(c)]
        return in_matrix or [parse_cell_id(cells[0].id, where)]  # none applies: parse_cell_id says why
    return [parse_cell_id(key, where)]


@dataclass(frozen=True)
class Run:
    """The facts a row's selectors are matched against."""

    torch: str
    triton: str
    host: str
    gpu: str | None = None  # the GPU's name, as a fuzz finding records where it showed (None: no GPU, or not known)

    @classmethod
    def from_env(cls, env: dict[str, Any]) -> "Run":
        gpus = env["gpus"]
        return cls(env["torch"], env["triton"], "gpu" if gpus else "cpu-only", gpus[0]["name"] if gpus else None)


def _contains(spec: str | None, version: str) -> bool:
    # Matched on the release number: 2.11.0+cu130 is 2.11.0, and a nightly or candidate (2.14.0.dev20261101,
    # 2.14.0rc1) is checked against the rows of the release it becomes, where PEP 440 would put it below '>=2.14'.
    return spec is None or SpecifierSet(spec).contains(Version(version).base_version)


@dataclass(frozen=True)
class Expectation:
    cell_id: str
    index: int
    row: dict[str, Any]
    section: str = "cells"

    @property
    def where(self) -> str:
        return f"{self.section}.{self.cell_id}[{self.index}]"

    def applies(self, run: Run) -> bool:
        r = self.row
        return (
            _contains(r["torch"], run.torch)
            and _contains(r.get("triton"), run.triton)
            and r.get("host", run.host) == run.host
        )

    @cached_property
    def full(self) -> dict[str, Any]:
        """The row with its catalogue entry's words filled in."""
        return resolve(self.row)

    def describe(self) -> str:
        r = self.full
        pinned = "".join(f"; pins {f.text()}" for f in _findings(r))
        if r["outcome"] == "failed":
            cause = f" caused by {r['cause']}" if r.get("cause") else ""
            return f"failed {r['error']}{cause} matching /{r['match']}/{pinned}"
        if r["outcome"] == "crashed" and r.get("signal"):
            return f"crashed {r['signal']}"
        return r["outcome"] + pinned


SUITE = Path(__file__).resolve().parents[2] / "expectations.yaml"  # the suite's own, for its own kernels


class Expectations:
    """One expectations file, and behind it (`fallback`, read only) the suite's own, so a repository that records
    rows for its kernels still gates ours on the suite's rows. Accept writes to this file only."""

    def __init__(self, path: Path, data: dict[str, Any], fallback: "Expectations | None" = None):
        self.path = Path(path)
        self.data = data
        self.fallback = fallback
        self.rows = {
            (section, cid): [Expectation(cid, i, row, section) for i, row in enumerate(rows)]
            for section in SECTIONS
            for cid, rows in data.get(section, {}).items()
        }

    @classmethod
    def for_run(cls, path: str | os.PathLike, named: bool, accept: bool = False) -> "Expectations":
        """The run's expectations: `path`, which may not exist yet where the run will create it (`accept`) or the
        user did not name it (a typo in a named file that is only read is refused), backed by the suite's own
        file."""
        path = Path(path)
        fallback = cls.load(SUITE) if SUITE.exists() and path.resolve() != SUITE else None
        if not path.exists() and (accept or not named):
            return cls(path, {"schema": SCHEMA, "cells": {}}, fallback)
        own = cls.load(path)
        own.fallback = fallback
        return own

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Expectations":
        path = Path(path)
        try:
            with open(path) as f:  # a stream, so marks name the file
                data = yaml.load(f, Loader=_UniqueKeyLoader)
        except OSError as exc:
            raise ExpectationsError(f"{path}: cannot read the expectations file: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise ExpectationsError(f"{path}: not valid YAML: {exc}") from None
        data = cell_view(data, str(path))
        validate(data, str(path))
        return cls(path, data)

    def lookup(self, cell_id: str, run: Run, section: str = "cells") -> Expectation | None:
        rows = self.rows.get((section, cell_id), []) + self.rows.get((section, any_dtype_key(cell_id)), [])
        own = next((e for e in rows if e.applies(run)), None)
        return own if own or self.fallback is None else self.fallback.lookup(cell_id, run, section)


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    # libyaml's parser where PyYAML has it: the suite's file reads in a fifth of the time
    """Safe YAML that refuses a key given twice in one mapping: plain YAML keeps the later block, and a row edited
    by hand in the earlier one would vanish without a word."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ExpectationsError(
                    f"{key_node.start_mark.name}: duplicate key {key!r} on lines {seen[key]} and "
                    f"{line}; merge the two blocks into one"
                )
            seen[key] = line
        return super().construct_mapping(node, deep)


def cell_view(data: Any, where: str) -> dict[str, Any]:
    """The file read as each cell's list of rows: schema 2's rows listing their cells, or schema 1's mapping."""
    if not isinstance(data, dict) or not {"schema", "cells"} <= set(data) <= {"schema", *SECTIONS}:
        raise ExpectationsError(
            f"{where}: the top level must be a mapping with the keys 'schema' and 'cells', and optionally 'fuzz'"
        )
    if data["schema"] not in READS:
        raise ExpectationsError(
            f"{where}: schema {data['schema']!r} is not supported (this version reads {' and '.join(map(str, READS))})"
        )
    if data["schema"] == 1:
        return {
            "schema": SCHEMA,
            **{
                section: {cell_id: [_kept(row) for row in rows] for cell_id, rows in cells.items()}
                if isinstance(cells, dict) and all(isinstance(rows, list) for rows in cells.values())
                else cells
                for section, cells in data.items()
                if section != "schema"
            },
        }
    view: dict[str, Any] = {"schema": SCHEMA}
    for section in SECTIONS:
        rows = data.get(section, [])
        if not isinstance(rows, list):
            raise ExpectationsError(
                f"{where}: '{section}' must be a list of rows, each listing its cells under '{IDS}'"
            )
        cells = view.setdefault(section, {})
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get(IDS), list) or not row[IDS]:
                raise ExpectationsError(
                    f"{where}: {section}[{i}]: a row must be a mapping whose '{IDS}' lists the cells it holds for"
                )
            for cell_id in row[IDS]:
                cells.setdefault(str(cell_id), []).append(_kept({k: v for k, v in row.items() if k != IDS}))
    return view


def _kept(row: Any) -> Any:
    return {k: v for k, v in row.items() if k not in DROPPED_KEYS} if isinstance(row, dict) else row


def validate(data: dict[str, Any], where: str) -> None:
    """Check a file read as each cell's rows (`cell_view`)."""
    for section in SECTIONS:
        if not isinstance(data.get(section, {}), dict):
            raise ExpectationsError(f"{where}: '{section}' must map cell ids to lists of rows")
        for cell_id, rows in data.get(section, {}).items():
            try:
                cells = _parse_key(str(cell_id), where)
            except CompatError as exc:
                raise ExpectationsError(str(exc)) from None
            if not isinstance(rows, list) or not rows:
                raise ExpectationsError(f"{where}: {section}.{cell_id}: must be a non-empty list of rows")
            for i, row in enumerate(rows):
                _validate_row(row, f"{where}: {section}.{cell_id}[{i}]", section)
                _validate_examples(row, KERNELS[cells[0].kernel], f"{where}: {section}.{cell_id}[{i}]")


def _validate_row(row: Any, where: str, section: str = "cells") -> None:
    if not isinstance(row, dict):
        raise ExpectationsError(f"{where}: a row must be a mapping")
    unknown = set(row) - ROW_KEYS
    if unknown:
        raise ExpectationsError(f"{where}: unknown key(s) {sorted(unknown)}; valid keys: {sorted(ROW_KEYS)}")
    for key in ("torch", "outcome", "provenance"):
        if key not in row:
            raise ExpectationsError(f"{where}: missing required key {key!r}")
    for key in ("torch", "triton"):
        if key in row:
            try:
                SpecifierSet(str(row[key]))
            except InvalidSpecifier:
                raise ExpectationsError(
                    f"{where}: {key}: {row[key]!r} is not a version specifier (for example '>=2.6,<2.14' or '==2.11.*')"
                ) from None
    if row.get("host", HOSTS[0]) not in HOSTS:
        raise ExpectationsError(f"{where}: host {row['host']!r} is not one of {HOSTS}")
    if row["outcome"] not in EXPECTABLE:
        raise ExpectationsError(f"{where}: outcome {row['outcome']!r} is not one of {EXPECTABLE}")
    if "known" in row:
        _validate_known(row, where)
    words = () if "known" in row else ("match", "reason") if row["outcome"] == "failed" else ("reason",)
    needed = {"failed": ("error", *words), "mismatch": words, "crashed": words, "timed_out": words}.get(
        row["outcome"], ()
    )
    for key in needed:
        if not row.get(key):
            raise ExpectationsError(f"{where}: outcome {row['outcome']} needs {key!r}")
    if "match" in row:
        try:
            re.compile(row["match"])
        except re.error as exc:
            raise ExpectationsError(f"{where}: match {row['match']!r} is not a valid regex: {exc}") from None
    if "example" in row:
        example_json(row["example"], where)
    if "findings" in row:
        if section != "fuzz" or not isinstance(row["findings"], list) or row["outcome"] == "passed":
            raise ExpectationsError(f"{where}: findings are a list, in a fuzz row of a failure or mismatch")
        for i, finding in enumerate(row["findings"]):
            Finding.from_row(finding, f"{where}: findings[{i}]")
    prov = row["provenance"]
    if not (
        isinstance(prov, dict)
        and len(prov) == 1
        and (
            isinstance(prov.get("documented"), str)
            or (
                measurements(prov)
                and all(
                    isinstance(m, dict) and {"torch", "triton", "device", "date"} <= set(m) for m in measurements(prov)
                )
            )
        )
    ):
        raise ExpectationsError(
            f"{where}: provenance must be {{measured: {{torch, triton, device, date}}}} (or a "
            f"list of those, for a row widened over versions) or {{documented: 'citation'}}"
        )


def _validate_examples(row: dict[str, Any], kernel, where: str) -> None:
    """Every example a fuzz row pins (its own, its findings', their earlier calls') must be one the op's declaration
    can take: replayed as recorded under another, it would hand the op inputs no caller makes."""
    pinned = [row["example"]] if row.get("example") else []
    for finding in row.get("findings") or ():
        pinned.append(finding["example"])
        pinned += [ex.to_json() for _, ex in findings.sequence(finding["after"])] if finding.get("after") else []
    for text in pinned:
        why = misfit(kernel, example_json(text, where))
        if why is not None:
            raise ExpectationsError(
                f"{where}: the pinned example {text} does not fit {kernel.name!r} as declared: {why}; "
                "delete the row and accept again (--compat-accept) to pin what this declaration shows"
            )


def _validate_known(row: dict[str, Any], where: str) -> None:
    entry = by_key(str(row["known"]))
    if entry is None:
        raise ExpectationsError(
            f"{where}: known: no catalogue entry has the key {row['known']!r} (the suite's are in "
            f"compat/evidence/catalogue.py; yours are registered with compat.register_known by a "
            f"module your compat_cases names)"
        )
    if entry.kind != row["outcome"]:
        raise ExpectationsError(
            f"{where}: known: {row['known']!r} explains outcome {entry.kind}, the row expects {row['outcome']}"
        )
    written = [k for k in ("reason", "rewrite") if k in row]
    if written:
        raise ExpectationsError(
            f"{where}: a row with 'known' takes its reason and rewrite from the catalogue entry; "
            f"remove {written} or 'known'"
        )


def resolve(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its catalogue entry's words written out (as results files store it); a row without `known` as is."""
    entry = by_key(str(row["known"])) if "known" in row else None
    if entry is None:
        return row
    words = {"match": row.get("match", entry.match)} if row["outcome"] == "failed" else {}
    words["reason"] = f"{entry.reason} ({entry.source})" if entry.source else entry.reason
    words.update({"rewrite": entry.rewrite} if entry.rewrite else {})
    return {**{k: v for k, v in row.items() if k != "provenance"}, **words, "provenance": row["provenance"]}


def _keyed(row: dict[str, Any]) -> dict[str, Any]:
    """A row that writes out a keyed catalogue entry's reason and rewrite, naming the entry instead (and keeping its
    own match where that is not the entry's); other rows as they are."""
    if "known" in row or "reason" not in row:
        return row
    rest = {k: v for k, v in row.items() if k not in WORDS}
    for entry in (e for e in KNOWN if e.key and e.kind == row["outcome"]):
        words = resolve({**rest, "known": entry.key})
        if all(words.get(k) == row.get(k) for k in ("reason", "rewrite")):
            own = {"match": row["match"]} if row.get("match", words.get("match")) != words.get("match") else {}
            return {
                **{k: v for k, v in rest.items() if k != "provenance"},
                "known": entry.key,
                **own,
                "provenance": row["provenance"],
            }
    return row


def _findings(row: dict[str, Any]) -> list[Finding]:
    return [Finding(**f) for f in row.get("findings") or []]


def measurements(prov: dict[str, Any]) -> list[dict[str, Any]]:
    """A row's measurements: one, or one per version a widened row was observed on."""
    measured = prov.get("measured")
    return [measured] if isinstance(measured, dict) else list(measured) if isinstance(measured, list) else []


def _minor_spec(version: str) -> str:
    v = Version(version)
    return f"=={v.major}.{v.minor}.*"


def _next_minor(v: Version) -> Version:
    return Version(f"{v.major}.{v.minor + 1}")


def widen(spec: str | None, version: str) -> str | None:
    """A range that holds `spec`'s versions and `version`'s minor series, or None where `spec` is not one range
    (a '!=' in it, say): then accept writes a row of its own. No spec covers every version already."""
    if spec is None:
        return None
    v = Version(Version(version).base_version)
    lo, hi = None, None  # inclusive lower, exclusive upper bound
    for clause in SpecifierSet(spec):
        op, ver = clause.operator, clause.version
        if op == "==" and ver.endswith(".*"):
            base = Version(ver[:-2])
            lo, hi = base, _next_minor(base) if len(base.release) >= 2 else Version(f"{base.major + 1}")
        elif op in (">=", "==", "==="):
            lo = Version(ver)
            hi = _next_minor(lo) if op != ">=" else hi
        elif op == ">":
            lo = _next_minor(Version(ver))
        elif op == "<":
            hi = Version(ver)
        elif op == "<=":
            hi = _next_minor(Version(ver))
        else:
            return None
    lo = Version(f"{v.major}.{v.minor}") if lo is not None and v < lo else lo  # the minor series, as rows are
    hi = _next_minor(v) if hi is not None and v >= hi else hi
    parts = ([f">={_short(lo)}"] if lo is not None else []) + ([f"<{_short(hi)}"] if hi is not None else [])
    return ",".join(parts) or None


def _short(v: Version) -> str:
    return ".".join(map(str, v.release[:2] if v.release[2:] in ((), (0,)) else v.release))


def proposed_match(first_line: str) -> str:
    """A regex proposal: the first sentence of the message, past any 'SomeError: ' prefix, escaped.
    Trim it to its stable part by hand."""
    text = re.sub(r"^(\w+(Error|Exception): )+", "", first_line.strip())
    sentence = re.split(r"(?<=[.:])\s", text, maxsplit=1)[0][:120]
    return re.escape(sentence).replace("\\ ", " ")


def measured_on(env: dict[str, Any]) -> dict[str, str]:
    """A row's measured provenance, from a run's environment (compat.run.environment.describe)."""
    gpu = env["gpus"][0]["name"] if env["gpus"] else f"cpu ({env['platform']})"
    return {"torch": env["torch"], "triton": env["triton"], "device": gpu, "date": env["date"][:10]}


def row_from(
    cell_id: str, outcome: Outcome, run: Run, measured: dict[str, str], section: str = "cells"
) -> dict[str, Any]:
    """A row recording an observation; a failure the catalogue knows gets its stable match, reason and rewrite. A
    fuzz finding carries its falsifying example, replayed first in every later run."""
    row: dict[str, Any] = {
        "torch": _minor_spec(run.torch),
        "triton": _minor_spec(run.triton),
        "host": run.host,
        "outcome": outcome.kind,
    }
    known = explain(outcome, parse_cell_id(cell_id, "accept"), section)
    if outcome.kind == "failed":
        cause = outcome.cause
        row["error"] = outcome.error_type
        if cause.error_type and cause.error_type != outcome.error_type:
            row["cause"] = cause.error_type
        if not (known and known.key):
            row["match"] = known.match if known else proposed_match(cause.fragment)
    elif outcome.kind == "crashed":
        row["signal"] = outcome.error_type
    if known and known.key:
        row["known"] = known.key
    elif known:
        row["reason"] = f"{known.reason} ({known.source})" if known.source else known.reason
        if known.rewrite:
            row["rewrite"] = known.rewrite
    elif outcome.kind != "passed":
        row["reason"] = UNEXPLAINED
    if section == "fuzz" and outcome.kind != "passed":
        row.update(findings.recorded(outcome, measured["device"] if run.host == "gpu" else None))
    row["provenance"] = {"measured": measured}
    return row


def _explained_elsewhere(exp: Expectations | None, cell_id: str, outcome: Outcome, section: str) -> Expectation | None:
    """A row of the cell, for any version or host, that agrees with the outcome and says why."""
    while exp is not None:
        rows = exp.rows.get((section, cell_id), []) + exp.rows.get((section, any_dtype_key(cell_id)), [])
        found = next(
            (e for e in rows if UNEXPLAINED not in str(e.full.get("reason", UNEXPLAINED)) and gate.agrees(e, outcome)),
            None,
        )
        if found:
            return found
        exp = exp.fallback
    return None


def _widened(row: dict[str, Any], run: Run, measured: dict[str, str]) -> dict[str, Any] | None:
    torch, triton = widen(row["torch"], run.torch), widen(row.get("triton"), run.triton)
    if torch is None or (row.get("triton") is not None and triton is None):
        return None
    selectors = {"torch": torch, **({"triton": triton} if row.get("triton") is not None else {})}
    seen = measurements(row["provenance"])
    return {**row, **selectors, "provenance": {"measured": [*seen, measured]}}


def recorded_runs(expectations: Expectations | None, cell_id: str | None = None) -> set[Run]:
    """Every (torch, triton, host) some row was measured on (only the cell's rows, where one is named), in the file
    and in the file behind it."""
    runs: set[Run] = set()
    while expectations is not None:
        keys = expectations.rows if cell_id is None else (("cells", cell_id), ("cells", any_dtype_key(cell_id)))
        for key in keys:
            for e in expectations.rows.get(key, ()):
                host = e.row.get("host")
                if not isinstance(host, str):
                    continue
                for m in measurements(e.row["provenance"]):
                    runs.add(Run(Version(m["torch"]).base_version, Version(m["triton"]).base_version, host))
        expectations = expectations.fallback
    return runs


def _widen_neighbours(
    exp: Expectations,
    cell_id: str,
    outcome: Outcome,
    run: Run,
    measured: dict[str, str],
    neighbours: Callable[[str], tuple[Run, ...]],
    changes: list[str],
    section: str,
) -> bool:
    """Widen the first neighbour's row of this file that agrees with the outcome to this run; say whether one did."""
    for neighbour in neighbours(cell_id):
        old = exp.lookup(cell_id, neighbour, section)
        if old is None or old not in exp.rows.get((section, old.cell_id), []) or not gate.agrees(old, outcome):
            continue
        wide = _widened(old.row, run, measured)
        if wide is None:
            continue
        # The wider range must not take over a version recorded in between (first match wins): then no widening.
        others = recorded_runs(exp, cell_id) - {run}
        before = {r: exp.lookup(cell_id, r, section) for r in others}
        exp.rows[(section, old.cell_id)][old.index] = Expectation(old.cell_id, old.index, wide)
        if any(exp.lookup(cell_id, r, section) != before[r] and before[r] != old for r in others):
            exp.rows[(section, old.cell_id)][old.index] = old
            continue
        exp.data[section][old.cell_id][old.index] = wide
        changes.append(
            f"{cell_id}: widened {old.where} to torch {wide['torch']}"
            f"{', triton ' + wide['triton'] if 'triton' in wide else ''}: {outcome.summary()[:80]}"
        )
        return True
    return False


def accept(
    exp: Expectations,
    observed: dict[str, Outcome],
    run: Run,
    measured: dict[str, str],
    neighbours: Callable[[str], tuple[Run, ...]] = lambda cell_id: (),
    section: str = "cells",
) -> list[str]:
    """Make the file agree with what was observed; return one line per change. Cells not observed are kept;
    observations of cells no longer in the matrix (an older run's results) are left out.

    Accept widens rather than copies: a cell with no row for this run whose row at one of its `neighbours` (the
    cell's nearest recorded versions below and above, compat.evidence.baseline.neighbours) agrees with the observation gets that row's range
    extended to this version. A new row the catalogue cannot explain takes the explanation of a row that agrees with it on another
    version or host.

    `section` "fuzz": the fuzz tests' findings; a fuzz test without rows is expected to pass, so a pass needs none."""
    changes = []
    cells = exp.data.setdefault(section, {})
    for cell_id in sorted(filter(in_matrix, observed)):
        outcome = observed[cell_id]
        current = exp.lookup(cell_id, run, section)
        if outcome.kind == "skipped" or (section == "fuzz" and current is None and outcome.kind == "passed"):
            continue
        if outcome.detail.get("environment_failure"):  # the machine's fault, never the cell's (see verdict)
            changes.append(f"{cell_id}: NOT recorded, an environment failure: {outcome.detail['environment_failure']}")
            continue
        if current is None and _widen_neighbours(exp, cell_id, outcome, run, measured, neighbours, changes, section):
            continue
        new = row_from(cell_id, outcome, run, measured, section)
        if UNEXPLAINED in str(new.get("reason")):
            twin = _explained_elsewhere(exp, cell_id, outcome, section)
            if twin is not None:
                new = {
                    **{k: v for k, v in new.items() if k not in WORDS},
                    **{k: twin.row[k] for k in ("cause", "known", *WORDS) if k in twin.row},
                }
                new["provenance"] = new.pop("provenance")  # keeps the row's key order: provenance last
        mine = current is not None and current in exp.rows.get((section, current.cell_id), [])
        if current is not None and gate.agrees(current, outcome, run.gpu):
            if mine and UNEXPLAINED in str(current.row.get("reason")) and UNEXPLAINED not in str(new.get("reason")):
                # The catalogue now explains a row recorded as unexplained: explain it where it is.
                cells[current.cell_id][current.index] = {**new, "provenance": current.row["provenance"]}
                changes.append(f"{cell_id}: explained as {new.get('known') or new['reason'][:80]}")
            elif mine and section == "fuzz" and "findings" in new and "findings" not in current.row:
                # A row recorded before findings were pinned: pinned now, with what its replay showed, for this cell;
                # for one GPU only where the row was measured on this one alone (else it showed on each).
                devices = {m["device"] for m in measurements(current.row["provenance"])}
                alone = run.host == "gpu" and devices <= {measured["device"]}
                pinned = {
                    **{k: v for k, v in current.row.items() if k not in ("example", "provenance")},
                    **findings.recorded(outcome, measured["device"] if alone else None),
                    "provenance": current.row["provenance"],
                }
                if current.cell_id == cell_id:
                    cells[cell_id][current.index] = pinned
                else:  # its any-dtype row holds other dtypes, whose errors differ: a row of this cell's own
                    cells.setdefault(cell_id, []).insert(0, pinned)
                changes.append(f"fuzz {cell_id}: pinned {'; '.join(f.text() for f in _findings(pinned))}")
            continue
        rows = cells.setdefault(cell_id, [])
        own = current is not None and mine and current.cell_id == cell_id
        if current is None:
            rows.append(new)
        elif own and all(current.row.get(k) == new[k] for k in ("torch", "triton", "host")):
            rows[current.index] = new
        else:
            # First match wins: the new, narrower row goes before the row it overrides for this run (a cell's own
            # rows come before its any-dtype rows).
            rows.insert(current.index if own else 0, new)
        was = current.describe() if current else "no expectation"
        changes.append(
            f"{'fuzz ' if section == 'fuzz' else ''}{cell_id}: {was} -> {outcome.summary()}  "
            f"[torch {new['torch']}, triton {new['triton']}, host {new['host']}]"
        )
    if changes:
        exp.data[section] = dict(sorted(_fold_dtypes(cells).items()))
        validate(exp.data, str(exp.path))
        write_atomic(exp.path, dump(exp.data))
    return changes


# What an accept that recorded unexplained fuzz findings tells the user to do with each.
NEEDS_REASON = (
    "each is pinned as seen and the gate passes it from now on, so say why it is not a bug: where those inputs are "
    "outside what the op takes, declare the input's domain (Tensor(name, dims, domain=(low, high))) and accept "
    "again; where the op is wrong, fix it; otherwise give the row its reason, `reason:` in the file or a "
    "compat.Known(..., kind='mismatch', section='fuzz', key=...) your cases module registers (register_known)"
)


@dataclass
class Accepted:
    changes: list[str]  # one line per change written
    needs_reason: list[str]  # the fuzz findings it recorded that no catalogue entry explains, with reproducers


def accept_run(
    exp: Expectations,
    cells: dict[str, Outcome],
    fuzz: dict[str, Outcome],
    run: Run,
    measured: dict[str, str],
    neighbours: Callable[[str], tuple[Run, ...]],
) -> Accepted:
    """A run's cells and fuzz tests accepted (accept, per section), and the fuzz findings it recorded without a
    reason: a wrong value the gate no longer fails on must never be recorded silently."""
    cells = {cell_id: gate.regraded(o, cell_id, "cells") if in_matrix(cell_id) else o for cell_id, o in cells.items()}
    fuzz = {cell_id: gate.regraded(o, cell_id, "fuzz") if in_matrix(cell_id) else o for cell_id, o in fuzz.items()}
    changes = accept(exp, cells, run, measured, neighbours=neighbours)
    changes += accept(exp, fuzz, run, measured, neighbours=neighbours, section="fuzz")
    written, needs = Expectations(exp.path, exp.data, exp.fallback), []  # the rows as the file now holds them
    for cell_id, outcome in sorted(fuzz.items()):
        row = written.lookup(cell_id, run, "fuzz") if in_matrix(cell_id) and outcome.kind != "skipped" else None
        if row is None or row.row["outcome"] == "passed" or UNEXPLAINED not in str(row.full.get("reason")):
            continue
        found = "; ".join(f.text() for f in _findings(row.row)) or outcome.summary()
        command = outcome.detail.get("reproducer")
        reproduce = f"\n    reproduce: {command}" if command else ""
        needs.append(f"fuzz {cell_id}: {found}{reproduce}")
    return Accepted(changes, needs)


def _fold_dtypes(cells: dict[str, list]) -> dict[str, list]:
    """Move rows every dtype of a cell shares into its any-dtype key (ahead of that key's own rows: same lookup)."""
    cells = dict(cells)
    for key in [k for k in cells if split_cell_id(k, "expectations").dtype != ANY_DTYPE]:
        if key not in cells:
            continue
        group = [c.id for c in _parse_key(any_dtype_key(key), "fold")]
        lists = [cells.get(cid) for cid in group]
        if all(r == lists[0] for r in lists):
            fold = any_dtype_key(key)
            cells[fold] = _unshadowed(cells[key] + cells.get(fold, []))
            for cid in group:
                del cells[cid]
    return cells


def _unshadowed(rows: list[dict]) -> list[dict]:
    """Rows less those an earlier row hides from every run (the same torch, triton and host): the first applies."""
    seen, kept = set(), []
    for row in rows:
        selectors = (row.get("torch"), row.get("triton"), row.get("host"))
        if selectors not in seen:
            seen.add(selectors)
            kept.append(row)
    return kept


def _grouped(cells: dict[str, list[dict]]) -> list[dict]:
    """Each distinct row once, listing the cells it holds for, in an order that keeps the order of every cell's
    rows that can meet one run (its first matching row wins): a topological order, plain rows first where any may go.
    Where the cells' orders disagree (a cycle), the rows left are written per cell, in each cell's order."""
    rows: dict[str, dict] = {}
    ids: dict[str, list[str]] = defaultdict(list)
    later: dict[str, set[str]] = defaultdict(set)
    own: dict[str, list[str]] = {}  # each cell's row keys, in its order
    for cell_id, cell_rows in cells.items():
        for row in cell_rows:
            rows.setdefault(json.dumps(row, sort_keys=True), row)
        keys = own[cell_id] = list(dict.fromkeys(json.dumps(row, sort_keys=True) for row in cell_rows))
        for key in keys:
            ids[key].append(cell_id)
        for i, before in enumerate(keys):
            later[before].update(after for after in keys[i + 1 :] if _overlap(rows[before], rows[after]))
    waiting = {key: 0 for key in rows}
    for key in rows:
        for after in later[key]:
            waiting[after] += 1
    plain = {
        key: (
            rows[key]["outcome"],
            str(rows[key].get("known") or rows[key].get("reason") or ""),
            str(rows[key].get("error") or ""),
            key,
        )
        for key in rows
    }
    ready = [plain[key] for key, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        key = heapq.heappop(ready)[-1]
        order.append(key)
        for after in later[key]:
            waiting[after] -= 1
            if not waiting[after]:
                heapq.heappush(ready, plain[after])
    groups = [{**rows[key], IDS: sorted(ids[key])} for key in order]
    done = set(order)
    for cell_id, keys in sorted(own.items()):
        groups += [{**rows[key], IDS: [cell_id]} for key in keys if key not in done]
    return groups


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether one run can match both rows. Ranges overlap where one holds the other's lower end: each selector's
    versions (and 0, for a range open below) are the ends tried; a selector of another shape ('!=') counts as
    overlapping, which keeps the order."""
    if a.get("host", b.get("host")) != b.get("host", a.get("host")):
        return False
    for key in ("torch", "triton"):
        specs = [SpecifierSet(str(r[key])) for r in (a, b) if r.get(key) is not None]
        if any(c.operator in ("!=", "~=", "===") for spec in specs for c in spec):
            continue
        ends = {"0", *(c.version.removesuffix(".*") for spec in specs for c in spec)}
        if not any(all(spec.contains(end) for spec in specs) for end in ends):
            return False
    return True


class _PlainDumper(yaml.SafeDumper):
    def ignore_aliases(self, data):  # rows written as themselves, never as &anchors
        return True


def dump(data: dict[str, Any]) -> str:
    """The file for a reading of it (`Expectations.data`, each cell's rows): schema 2."""
    out: dict[str, Any] = {"schema": SCHEMA}
    for section in SECTIONS:
        if section in data:
            cells = {cell_id: [_keyed(row) for row in rows] for cell_id, rows in data[section].items()}
            out[section] = _grouped(cells)
    return yaml.dump(out, Dumper=_PlainDumper, sort_keys=False, width=120, allow_unicode=True)
