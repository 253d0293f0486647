"""Parent side: one run of the matrix in one process (an xdist worker, or the only process). Its directory, the keys
of the work cells share, the locks that make shared work happen once, and each cell's outcome read from the children
that did its work.

Work that cells share, never done twice in a run:
- a probe child per (kernel, style, dtype, device) runs every selected probe stage as a phase;
- a build per (kernel, style, export mode, dtype, device) exports once and makes every artifact of that export (the
  AOTI package only when an AOTI cell is selected); the first cell that needs it builds it under a file lock in the
  run directory, which every worker shares, and the others read its record;
- a fuzz child per (kernel, style, stage family, dtype, device) fuzzes every selected stage of the family.
Each of these groups is a lane (compat.matrix.cells.lane): the scheduler sends it to one worker (compat.plugin).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shlex
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from filelock import FileLock

from ..atomic import write_atomic
from ..child.protocol import (
    AUTOTUNE_THREADS_ENV,
    CPP_RUN_TIMEOUT_S,
    LIBRARY_FILES,
    LOCK_DIR_ENV,
    PACKAGE,
    PACKAGE_STORE_ENV,
    PROGRAM,
    TIMED_ENV,
)
from ..errors import HarnessError
from ..evidence.findings import Finding, sequence, sequence_json
from ..evidence.outcomes import Outcome
from ..matrix.cells import DEVICES, Cell, fuzz_family, lane, parse_cell_id
from ..matrix.stages import BUILD_PHASES, FRESH_PHASES, RUNS_LIBRARY_OF, STAGES
from ..matrix.strategies import Example
from .doctor import CANARY_PACKAGE, build_runner, canary_device, run_canary, run_cpp_canary
from .environment import crash_remedy
from .launcher import LAUNCHERS, ChildResult, Launcher, read_journal

BUILD_TIMEOUT = 1200.0  # export + AOTI compile (seconds alone on an H100, more when many run at once)
FUZZ_STAGE_TIMEOUT = 600.0  # per fuzzed stage, in the child that fuzzes it


def _run_library(workdir: Path, family: str) -> tuple[str, dict[str, Any]]:
    return "run_library", {"family": family, "path": str(workdir / LIBRARY_FILES[family])}


# The fresh child of each family that loads its artifact in a process that did not build it: (task, its arguments
# but the cell, given the build's work directory).
FRESH_TASKS: dict[str, Callable[[Path], tuple[str, dict[str, Any]]]] = {
    "save_load": lambda workdir: ("load_program", {"program_path": str(workdir / PROGRAM)}),
    **{family: functools.partial(_run_library, family=family) for family in LIBRARY_FILES},
    # The C++ runner's path is added by the session, which builds it once per run.
    "aoti_cpp": lambda workdir: ("run_cpp", {"package_path": str(workdir / PACKAGE), "timeout_s": CPP_RUN_TIMEOUT_S}),
}
assert set(FRESH_TASKS) == set(FRESH_PHASES), "every family with fresh phases has the task that runs them"


AUTOTUNE_THREADS = 4  # max-autotune's precompile threads: 4 compiled as fast as 8 on the H200 (compile_threads)


def base_env() -> dict[str, str]:
    # One compile thread and one CPU op thread per child unless the user says otherwise: each xdist worker runs its
    # own children, and an Inductor worker pool or an OpenMP pool per child would oversubscribe the cores many times
    # over (measured: 16 fuzz children on 16 cores ran several times slower). Max-autotune's few stages compile their
    # template choices on AUTOTUNE_THREADS threads, or the user's number (compat.child.compile_threads).
    own = {var: os.environ.get(var, "1") for var in ("TORCHINDUCTOR_COMPILE_THREADS", "OMP_NUM_THREADS")}
    threads = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", str(AUTOTUNE_THREADS))
    return own | {AUTOTUNE_THREADS_ENV: threads}


def child_env(cell: Cell, run_dir: Path | None = None) -> dict[str, str]:
    """A cell's child's environment; in a run, with what compat.child.latency needs (where the run's timing locks
    are, and which stages are timed) and the run's store of AOTI libraries (compat.child.packages)."""
    run = {
        LOCK_DIR_ENV: str(run_dir),
        TIMED_ENV: ",".join(s for s in STAGES if STAGES[s].timed),
        PACKAGE_STORE_ENV: str(Path(run_dir or ".") / "packages"),
    }
    return base_env() | dict(DEVICES[cell.device].env) | (run if run_dir else {})


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@dataclasses.dataclass
class Build:
    key: str
    result: ChildResult
    workdir: Path


def cuda_error(outcome: Outcome) -> bool:
    """A failure on a CUDA error. The error sticks to the process (the context is lost), so every later phase of a
    shared child fails with it too: such a phase reruns alone before its outcome counts."""
    return outcome.kind == "failed" and "CUDA error: " in (outcome.message or "")


class RunSession:
    def __init__(
        self,
        run_dir: Path,
        cells: Iterable[Cell],
        fuzz_cells: Iterable[Cell] = (),
        profile: str = "ci",
        pinned: dict[str, list[dict]] | None = None,
        launcher: Launcher | None = None,
        split: frozenset[str] = frozenset(),
    ):
        self.run_dir = Path(run_dir)
        self.launcher = launcher or Launcher(self.run_dir)
        self.profile = profile  # the Hypothesis profile of the fuzz tests
        self.pinned = pinned or {}  # per cell id: the findings its fuzz row pins (compat.evidence.findings.pins)
        self.split = split  # lanes split into a lane per stage (compat.run.schedule.split_lanes); a build stays whole
        cells = list(cells)
        self.libraries_wanted: dict[str, set[str]] = {}  # per build: the AOTI families its selected cells need
        for c in cells:
            library = STAGES[c.stage].library  # a packaged stage's, else None
            if library is not None:
                self.libraries_wanted.setdefault(lane(c, "cells"), set()).add(library)
        self.selected: dict[str, dict[str, list[str]]] = {"cells": {}, "fuzz": {}}  # per group: its stages, in order
        # The run-wide work (the C++ runner, the canaries) the cell being judged built or waited for, in seconds.
        self.run_wide_s: dict[str, float] = {}
        order = list(STAGES)
        for section, members in (("cells", [c for c in cells if STAGES[c.stage].probe]), ("fuzz", fuzz_cells)):
            for c in sorted(members, key=lambda c: order.index(c.stage)):
                self.selected[section].setdefault(lane(c, section, split), []).append(c.stage)

    # ---- children ----

    def child(
        self, cell: Cell, task: str, args: dict[str, Any], timeout: float, name: str | None = None
    ) -> ChildResult:
        # Per worker: under `--dist each` two workers run the same cell at once.
        workdir = self.run_dir / "cells" / _worker() / cell.id / (name or task)
        return self.launcher.run(
            task, {"cell": cell.id, **args}, workdir=workdir, env=child_env(cell, self.run_dir), timeout=timeout
        )

    def _once(self, name: str, make: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
        """The record of `name`, made by the first process to ask for it in this run, read by the others."""
        workdir = self.run_dir / "artifacts" / name
        workdir.mkdir(parents=True, exist_ok=True)
        record = workdir / "record.json"
        with FileLock(str(workdir) + ".lock"):
            if not record.exists():
                write_atomic(record, json.dumps(make(workdir)))
            return json.loads(record.read_text())

    def _run_wide(self, name: str, make: Callable[[Path], dict[str, Any]]) -> Outcome:
        """A record made once per run (`_once`), timed: the cell that builds it, and each that waits on its lock,
        spends that time in no child of its own."""
        start = time.monotonic()
        record = self._once(name, make)
        self.run_wide_s[name] = self.run_wide_s.get(name, 0.0) + time.monotonic() - start
        return Outcome.from_dict(record)

    def _shared(self, name: str, cell: Cell, task: str, args: dict[str, Any], timeout: float) -> ChildResult:
        def make(workdir: Path) -> dict[str, Any]:
            return self.launcher.run(
                task, {"cell": cell.id, **args}, workdir=workdir, env=child_env(cell, self.run_dir), timeout=timeout
            ).to_dict()

        return ChildResult.from_dict(self._once(name, make))

    def build(self, cell: Cell) -> Build:
        key = lane(cell, "cells")
        workdir = self.run_dir / "artifacts" / key
        libraries = sorted(self.libraries_wanted.get(key, ()), key=list(LIBRARY_FILES).index)
        result = self._shared(
            key,
            cell,
            "build",
            {"mode": STAGES[cell.stage].export_mode, "workdir": str(workdir), "libraries": libraries},
            BUILD_TIMEOUT,
        )
        return Build(key, result, workdir)

    def probe(self, cell: Cell) -> ChildResult:
        """One child for all the selected probe stages of the cell's group, run once per worker."""
        group = lane(cell, "cells", self.split)
        stages = self.selected["cells"].get(group, [cell.stage])
        return self._shared(
            f"{group}-{_worker()}", cell, "probe", {"stages": stages}, sum(STAGES[s].timeout_s for s in stages)
        )

    # ---- outcomes ----

    def outcome(self, cell: Cell) -> Outcome:
        """The cell's outcome, from the children that did its work; with the run-wide work it built or waited for
        (`run_wide_s`: the profile's, which no child of its own accounts for)."""
        stage = STAGES[cell.stage]
        self.run_wide_s = {}
        outcome = self._probed(cell) if stage.probe else self._built(cell)
        waited = {name: round(s, 1) for name, s in self.run_wide_s.items() if round(s, 1)}  # a record read: none
        if waited:
            outcome.detail["run_wide_s"] = waited
        return outcome

    def _probed(self, cell: Cell) -> Outcome:
        """A probe stage's outcome from the shared probe child; a phase that crashed or hung there, or met a CUDA
        error (possibly an earlier phase's, which sticks to the process), or was never reached, runs again alone, so
        its outcome is its own. A child that ran this stage alone already gave its own outcome (a hang is not
        waited for twice)."""
        result = self.probe(cell)
        shared = result.phases.get(cell.stage)
        if shared is not None and (
            self.selected["cells"].get(lane(cell, "cells", self.split)) == [cell.stage]
            or shared.kind not in ("crashed", "timed_out")
            and not cuda_error(shared)
        ):
            return result.outcome(cell.stage, among=(cell.stage,))
        return self.child(cell, "probe", {"stages": [cell.stage]}, STAGES[cell.stage].timeout_s, name="alone").outcome(
            cell.stage
        )

    def _built(self, cell: Cell) -> Outcome:
        """An export-based stage: the export and the build phases its family owns, then its fresh child's phases.
        A build that fails to export fails every stage made from it, with the export's error."""
        stage = STAGES[cell.stage]
        build = self.build(cell)
        owned = ("export", *BUILD_PHASES[stage.family])
        outcome = build.result.outcome(owned[-1], among=owned)
        if outcome.kind == "passed" and stage.family in FRESH_TASKS:
            task, args = FRESH_TASKS[stage.family](build.workdir)
            built = outcome.detail
            if task == "run_cpp":
                runner = self.cpp_runner()
                if runner.kind != "passed":
                    return runner
                args["runner_path"] = runner.detail["path"]
            fresh = self.child(cell, task, args, stage.timeout_s)
            outcome = fresh.outcome(FRESH_PHASES[stage.family][-1])
            for key in ("compile_seconds", "deprecation"):  # what the build said of the library
                if key in built:
                    outcome.detail.setdefault(key, built[key])
        if "export" in build.result.phases:
            outcome.detail.setdefault("graph", build.result.phases["export"].detail.get("graph"))
        return self._blame_environment(cell, outcome) if stage.packaged else outcome

    def _blame_environment(self, cell: Cell, outcome: Outcome) -> Outcome:
        """A failing AOTI cell consults the canary: if a plain model fails too, the environment is at fault."""
        if outcome.kind == "passed":
            return outcome
        remedy = crash_remedy(outcome)
        device = canary_device(cell.device)
        canary = self.canary(device)
        if canary.kind == "passed" and STAGES[cell.stage].family in RUNS_LIBRARY_OF:
            canary = self.cpp_canary(device)
        if canary.kind != "passed":
            outcome.detail["environment_failure"] = (
                f"the AOTI canary (a plain model with no Triton kernel) fails too on {device}: {canary.summary()}; "
                f"AOTInductor is broken here for every model"
            )
            remedy = remedy or crash_remedy(canary)
        if remedy:
            outcome.detail["remedy"] = remedy
        return outcome

    def cpp_runner(self) -> Outcome:
        """The C++ runner, built at most once per run (by the first cell that needs it). One that cannot be built
        is an environment failure of every cell that needs it, with what is missing or the compiler's message."""
        built = self._run_wide("cpp-runner", lambda workdir: build_runner(self.launcher, workdir, base_env()).to_dict())
        if built.kind != "passed":
            built.detail["environment_failure"] = (
                f"the C++ runner could not be built against this torch, so no package could be run from C++ "
                f"(not a fault of the wrapping style): {built.summary()}"
            )
            built.detail["remedy"] = "python -m compat doctor names what the C++ toolchain lacks"
        return built

    def canary(self, device: str) -> Outcome:
        """The AOTI canary on a torch device ("cuda" or "cpu"), run at most once per run."""
        return self._run_wide(
            f"canary-{device}", lambda workdir: run_canary(self.launcher, workdir, device, base_env()).to_dict()
        )

    def cpp_canary(self, device: str) -> Outcome:
        """The canary's package run by the C++ runner, at most once per run."""
        runner = self.cpp_runner()
        if runner.kind != "passed":
            return runner
        package = self.run_dir / "artifacts" / f"canary-{device}" / CANARY_PACKAGE
        return self._run_wide(
            f"canary-cpp-{device}",
            lambda workdir: run_cpp_canary(
                self.launcher, workdir, device, str(package), runner.detail["path"], base_env()
            ).to_dict(),
        )

    # ---- fuzz tests ----

    def fuzz_known(self, cell: Cell, stages: list[str]) -> dict[str, dict]:
        """Per stage: the findings its row pins (compat.child.fuzz.fuzz)."""
        return {st: {"pins": self.pinned.get(dataclasses.replace(cell, stage=st).id, [])} for st in stages}

    def fuzz_outcome(self, cell: Cell) -> Outcome:
        """The cell's fuzz outcome from its group's shared child; a stage that crashed, hung or was never reached
        there runs again alone, so its outcome is its own. A new finding is shown by the calls that make it
        (`_shown`); each pinned finding of a sequence is checked by running its sequence (`_sequences_pinned`)."""
        among = ("export", cell.stage)
        group = lane(cell, "fuzz", self.split)
        stages = self.selected["fuzz"].get(group, [cell.stage])
        task, args, timeout = fuzz_task(cell, stages, self.profile, known=self.fuzz_known(cell, stages))
        result = self._shared(f"{group}-{_worker()}", cell, task, args, timeout)
        shared, export = result.phases.get(cell.stage), result.phases.get("export")
        died = ("crashed", "timed_out")
        if (shared is not None and shared.kind not in died and not cuda_error(shared)) or (
            export is not None and export.kind not in died + ("passed",) and not cuda_error(export)
        ):
            finding = result.outcome(cell.stage, among=among)
            ran = stages[: stages.index(cell.stage)] if cell.stage in stages else []
            earlier = [(st, result.phases[st].detail.get("calls") or []) for st in ran if st in result.phases]
        else:
            finding, earlier = self._alone(cell), []
        if finding.detail.get("new"):
            finding = self._shown(cell, finding, earlier)
        finding = self._sequences_pinned(cell, finding)
        finding.detail.pop("calls", None)  # the child's own trace: the sequence a finding needs is in its record
        return finding

    def _alone(self, cell: Cell) -> Outcome:
        """The stage fuzzed in a fresh process of its own."""
        task, args, timeout = fuzz_task(cell, [cell.stage], self.profile, known=self.fuzz_known(cell, [cell.stage]))
        return self.child(cell, task, args, timeout, name="fuzz-alone").outcome(
            cell.stage, among=("export", cell.stage)
        )

    def _sequence(
        self, cell: Cell, calls: list[tuple[str, list[str]]], example: str, pins: list[dict], name: str
    ) -> Outcome:
        """In a fresh process: each stage's calls through its artifact (differences not judged), in order, then
        `example` through the cell's stage, judged against `pins`."""
        task, args, timeout = sequence_task(cell, calls, example, pins, self.profile)
        return self.child(cell, task, args, timeout, name=name).outcome(cell.stage, among=("export", cell.stage))

    def _shown(self, cell: Cell, finding: Outcome, earlier: list[tuple[str, list[str]]]) -> Outcome:
        """A new finding is the op's where some calls show it in a fresh process: its example alone; else the stage's
        earlier calls at each shape its child ran (the first call at each shape and layout: what Dynamo's guards and
        automatic dynamic shapes see), then the example; else with the calls of the stages fuzzed before it in that
        child (they share Dynamo's caches: Liger's SiLUMul gradient was wrong at 1 token only after other token
        counts); else every call the child made, in order. The first that shows it is its reproducer, recorded with
        the finding (`after`). Where the same calls through eager differ too, or none shows it, the harness is at
        fault, not the op: a harness error naming what ran."""
        if "example" not in finding.detail:
            return finding
        example = json.dumps(finding.detail["example"], separators=(",", ":"))
        wanted = _first_new(finding)
        own = list(finding.detail.get("calls") or [])
        while own and Example.from_json(own[-1]) == Example.from_json(example):  # the falsifying call itself
            own.pop()
        candidates = [[], [(cell.stage, _first_at_each_shape(own))]]
        candidates += [[(st, _first_at_each_shape(exs)) for st, exs in [*earlier, (cell.stage, own)]]]
        candidates += [[*earlier, (cell.stage, own)]]
        tried: list[list[tuple[str, list[str]]]] = []
        for calls in candidates:
            calls = [(st, exs) for st, exs in calls if exs]
            if calls in tried:
                continue
            tried.append(calls)
            shown = self._sequence(cell, calls, example, [], name=f"fuzz-sequence-{len(tried)}")
            if not any(_signature(f) == wanted for f in shown.detail.get("findings") or []):
                continue
            if not calls:
                return finding  # its example alone shows it: the reproducer it has
            self._eager_passes(cell, finding, calls, example)
            return _after(cell, shown, calls)
        raised = f", raised at {finding.detail['raised_at']}" if finding.detail.get("raised_at") else ""
        raise HarnessError(
            f"{cell.id}: the fuzz finding of its child ({finding.summary()}{raised}; example {example}) did not show in a "
            f"fresh process, alone or after the calls its child made before it ({len(tried)} sequences, the "
            f"longest {sum(len(exs) for _, exs in tried[-1])} calls): state that the calls do not carry decided it"
        )

    def _eager_passes(self, cell: Cell, finding: Outcome, calls: list[tuple[str, list[str]]], example: str) -> None:
        """The same calls through the eager stage pass, or the comparison's state decided the finding: a harness
        error. An eager stage's sequence is its own check: earlier calls that change what the op computes are the
        op's state (a launcher warmed up on aligned pointers, given a view), so nothing is left to compare with."""
        eager = dataclasses.replace(cell, stage="eager_backward" if STAGES[cell.stage].trains else "eager")
        if eager.stage == cell.stage:
            return
        flat = [ex for _, exs in calls for ex in exs]
        on_eager = self._sequence(eager, [(eager.stage, flat)], example, [], name="fuzz-sequence-eager")
        if on_eager.kind != "passed":
            raise HarnessError(
                f"{cell.id}: the fuzz finding ({finding.summary()}) shows after {len(flat)} earlier calls, and "
                f"the same calls through eager differ too ({on_eager.summary()}): the comparison's state, not "
                f"the stage, decided it"
            )

    def _sequences_pinned(self, cell: Cell, outcome: Outcome) -> Outcome:
        """Each pinned finding of a sequence that the run did not meet runs its sequence in a fresh process: shown,
        it counts as met; not shown, it no longer shows (the fix is recorded by accepting it)."""
        met = [_finding(f) for f in outcome.detail.get("findings") or []]
        for spec in self.pinned.get(cell.id, []):
            if not spec.get("after") or any(_finding(spec).explains(f) for f in met):
                continue
            shown = self._sequence(cell, grouped(spec["after"]), spec["example"], [spec], name="fuzz-sequence-pinned")
            seen = [f for f in shown.detail.get("findings") or [] if f.get("pinned")]
            if not seen:
                outcome.detail.setdefault("unreproduced", []).append(Finding(**spec).text())
                continue
            outcome.detail.setdefault("findings", []).extend(seen)
            if outcome.kind == "passed":  # the pinned difference is what the test met: its outcome, this run's tally
                outcome = Outcome(
                    shown.kind,
                    shown.error_type,
                    shown.message,
                    shown.numerics,
                    {**outcome.detail, **{k: shown.detail[k] for k in ("example", "reproducer") if k in shown.detail}},
                )
        return outcome

    # ---- end ----

    def close(self) -> None:
        self.launcher.close()


def cut_short(run_dir: Path) -> dict[str, Outcome]:
    """What the probe children of an interrupted run finished before the interrupt cut them: each ended phase's
    outcome, by the id of the cell whose stage it is. A child cut at the limit may have run for minutes (one config
    pinned after another); its tests never ran, so without this its finished phases were lost. A phase that crashed,
    hung or met a CUDA error is left out: a test would have run it again alone first."""
    found = {}
    for spec in sorted((Path(run_dir) / "artifacts").glob("probe-*/task.json")):
        task = json.loads(spec.read_text())
        if task.get("task") != "probe":
            continue
        cell = parse_cell_id(task["args"]["cell"], str(spec))
        for phase, outcome in read_journal(spec.parent / "journal.jsonl").phases.items():
            if (
                outcome is None
                or phase not in task["args"]["stages"]
                or outcome.kind in ("crashed", "timed_out")
                or cuda_error(outcome)
            ):
                continue
            outcome.detail["cut_short"] = "finished before the interrupt cut its child: recorded by the run"
            found[dataclasses.replace(cell, stage=phase).id] = outcome
    return found


def _finding(row: dict[str, Any]) -> Finding:
    return Finding(**{k: v for k, v in row.items() if k not in ("pinned", "seen")})


def _signature(row: dict[str, Any]) -> tuple:
    return _finding(row).signature


def _first_new(outcome: Outcome) -> tuple:
    """The signature of the first finding an outcome's search raised (its falsifying example's)."""
    rows = [f for f in outcome.detail.get("findings") or [] if not f.get("pinned")]
    if not rows:
        raise HarnessError(f"a new finding without its record: {outcome.summary()}")
    return _signature(rows[0])


def _first_at_each_shape(calls: list[str]) -> list[str]:
    """The first call at each shape and layout, in order (examples, as JSON)."""
    firsts: dict[tuple, str] = {}
    for ex in calls:
        e = Example.from_json(ex)
        firsts.setdefault((e.shape, e.layout, e.sizes), ex)
    return list(firsts.values())


def _after(cell: Cell, shown: Outcome, calls: list[tuple[str, list[str]]]) -> Outcome:
    """The outcome of a sequence that shows a finding: each finding it met records the calls it needs, and the
    reproducer runs them."""
    after = sequence_json([(st, Example.from_json(ex)) for st, exs in calls for ex in exs])
    for f in shown.detail.get("findings") or []:
        f["after"] = after
    example = json.dumps(shown.detail["example"], separators=(",", ":"))
    shown.detail["reproducer"] = (
        f"python -m compat fuzz {cell.id} --example {shlex.quote(example)} --after {shlex.quote(after)}"
    )
    return shown


def fuzz_task(
    cell: Cell, stages: list[str], profile: str, example: str | None = None, known: dict[str, dict] | None = None
) -> tuple[str, dict[str, Any], float]:
    """The child that fuzzes `stages` of the cell's family: (task, arguments without the cell, timeout)."""
    args: dict[str, Any] = {"stages": stages, "profile": profile, "example": example, "known": known or {}}
    timeout = FUZZ_STAGE_TIMEOUT * (len(stages) + 1)
    if fuzz_family(cell) == "probe":
        return "fuzz_probe", args, timeout
    return "fuzz_export", {**args, "mode": STAGES[cell.stage].export_mode}, timeout


def sequence_task(
    cell: Cell, calls: list[tuple[str, list[str]]], example: str, pins: list[dict], profile: str
) -> tuple[str, dict[str, Any], float]:
    """The child that makes each stage's calls (examples, as JSON) through its artifact, in order, their differences
    not judged, then judges `example` through the cell's stage against `pins`."""
    stages = [st for st, _ in calls if st != cell.stage] + [cell.stage]
    own = [ex for st, exs in calls if st == cell.stage for ex in exs]
    known: dict[str, dict] = {
        st: {"pins": [], "calls": exs, "calls_only": True} for st, exs in calls if st != cell.stage
    }
    known[cell.stage] = {"pins": pins, "calls": own}
    return fuzz_task(cell, stages, profile, example, known)


def grouped(after: str) -> list[tuple[str, list[str]]]:
    """A finding's `after` as the calls of each stage in turn (examples, as JSON)."""
    calls: list[tuple[str, list[str]]] = []
    for st, ex in sequence(after):
        if not calls or calls[-1][0] != st:
            calls.append((st, []))
        calls[-1][1].append(ex.to_json())
    return calls


def build_counts(run_dir: Path) -> dict[str, Any]:
    """How many exports and AOTI compiles the run's builds did, how long the compiles took, how many libraries they
    linked from the run's store instead (an identical program compiled already), how many interpreters the run
    started, and any canary's verdict."""
    artifacts = Path(run_dir) / "artifacts"
    records = {p.parent.name: json.loads(p.read_text()) for p in sorted(artifacts.glob("*/record.json"))}
    builds = [r for name, r in records.items() if name.startswith("build-")]
    library_phases = [BUILD_PHASES[family][0] for family in LIBRARY_FILES]  # "aoti_compile" and its variants
    made = {
        name if phase == "aoti_compile" else f"{name}:{phase}": r["phases"][phase]["detail"]
        for name, r in records.items()
        if name.startswith("build-")
        for phase in library_phases
        if phase in r["phases"]
    }
    compiles = {name: d.get("compile_seconds") for name, d in made.items() if "reused_from" not in d}
    canaries = {name: Outcome.from_dict(r).summary() for name, r in records.items() if name.startswith("canary-")}
    launchers = [json.loads(p.read_text()) for p in sorted((Path(run_dir) / LAUNCHERS).glob("*.json"))]
    return {
        "exports": sum("export" in b["phases"] for b in builds),
        "aoti_compiles": len(compiles),
        "aoti_compile_seconds": compiles,
        "aoti_reused": len(made) - len(compiles),
        # every library compiled in the run, the fuzz tests' too: one per key of the store
        "aoti_store_compiles": len(list((Path(run_dir) / "packages").glob("*/record.json"))),
        "canaries": canaries,
        "children": {
            "mode": ", ".join(sorted({ln["mode"] for ln in launchers})) or None,
            "interpreters": sum(ln["interpreters"] for ln in launchers),
        },
    }
