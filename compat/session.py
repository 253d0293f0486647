"""One run of the matrix: its directory, its shared artifacts, and how its cells start child processes.

Exported programs and AOTI packages are built once per run per (kernel, style, export mode, dtype, device): the first
cell that needs one builds it under a file lock in the run directory, which every xdist worker shares; the others
wait for the lock and read the build's record.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from filelock import FileLock

from .atomic import write_atomic
from .cells import DEVICES, Cell
from .isolation import ChildResult, run_child
from .outcomes import Outcome

BUILD_TIMEOUT = 1200.0  # export + AOTI compile (about 50 s alone on an H100, more when many run at once)


def child_env(cell: Cell) -> dict[str, str]:
    # One compile thread and one CPU op thread per child unless the user says otherwise: each xdist worker runs its
    # own children, and an Inductor worker pool or an OpenMP pool per child would oversubscribe the cores many times
    # over (measured: 16 fuzz children on 16 cores ran several times slower).
    return {var: os.environ.get(var, "1") for var in ("TORCHINDUCTOR_COMPILE_THREADS", "OMP_NUM_THREADS")} | dict(
        DEVICES[cell.device].env)


def probe_group(cell: Cell) -> str:
    return "-".join(("probe", cell.kernel, cell.style, cell.dtype, cell.device))


def probe_key(cell: Cell) -> str:
    # Per worker: a probe runs in the worker its group was sent to (and under `--dist each`, in every worker).
    return f"{probe_group(cell)}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


def artifact_key(cell: Cell) -> str:
    from .stages import STAGES

    return "-".join((cell.kernel, cell.style, STAGES[cell.stage].export_mode, cell.dtype, cell.device))


@dataclass
class Build:
    key: str
    result: ChildResult
    program: str  # where the build saves the exported program (torch.export.save)
    package: str | None  # path of the AOTI package, when it compiled

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "program": self.program, "package": self.package, **self.result.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Build":
        return cls(d["key"], ChildResult.from_dict(d), d["program"], d["package"])


class RunSession:
    def __init__(self, run_dir: Path, cells: Iterable[Cell], fuzz_cells: Iterable[Cell] = (), profile: str = "ci",
                 known_examples: dict[str, list[str]] | None = None):
        from .fuzzing import fuzz_group
        from .stages import STAGES

        self.run_dir = Path(run_dir)
        self.profile = profile  # the Hypothesis profile of the fuzz tests
        self.known_examples = known_examples or {}  # per cell id: recorded falsifying examples, replayed every run
        cells = list(cells)
        self.packages_wanted = {artifact_key(c) for c in cells if STAGES[c.stage].packaged}
        self.probe_stages: dict[str, list[str]] = {}  # per probe group: the selected stages its child runs
        for c in cells:
            if STAGES[c.stage].probe:
                self.probe_stages.setdefault(probe_group(c), []).append(c.stage)
        self.fuzz_stages: dict[str, list[str]] = {}  # per fuzz group: the stages its child fuzzes, in matrix order
        for c in sorted(fuzz_cells, key=lambda c: list(STAGES).index(c.stage)):
            self.fuzz_stages.setdefault(fuzz_group(c), []).append(c.stage)

    def child(self, cell: Cell, fn: str, args: dict[str, Any], timeout: float) -> ChildResult:
        # Per worker: under `--dist each` two workers run the same cell at once.
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        workdir = self.run_dir / "cells" / worker / cell.id / fn.rpartition(".")[2]
        return run_child(fn, args, workdir=workdir, env=child_env(cell), timeout=timeout)

    def _once(self, name: str, build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
        """The record of `name`, built by the first process to ask for it in this run, read by the others."""
        workdir = self.run_dir / "artifacts" / name
        workdir.mkdir(parents=True, exist_ok=True)
        record = workdir / "record.json"
        with FileLock(str(workdir) + ".lock"):
            if not record.exists():
                write_atomic(record, json.dumps(build(workdir)))
            return json.loads(record.read_text())

    def artifact(self, cell: Cell) -> Build:
        from .stages import STAGES

        key = artifact_key(cell)

        def build(workdir: Path) -> dict[str, Any]:
            program = str(workdir / "program.pt2")
            package = str(workdir / "model.pt2") if key in self.packages_wanted else None
            result = run_child("compat.stages.child_build",
                               {"cell": cell.id, "mode": STAGES[cell.stage].export_mode, "program_path": program,
                                "package_path": package},
                               workdir=workdir, env=child_env(cell), timeout=BUILD_TIMEOUT)
            compiled = result.phases.get("aoti_compile")
            return Build(key, result, program,
                         package if compiled is not None and compiled.kind == "passed" else None).to_dict()

        return Build.from_dict(self._once(key, build))

    def probe(self, cell: Cell) -> ChildResult:
        """One child for all the selected probe stages of the cell's (kernel, style, dtype, device), run once."""
        from .stages import STAGES

        key = probe_key(cell)
        stages = sorted(self.probe_stages.get(probe_group(cell), [cell.stage]), key=list(STAGES).index)

        def probe(workdir: Path) -> dict[str, Any]:
            return run_child("compat.stages.child_probe", {"cell": cell.id, "stages": stages}, workdir=workdir,
                             env=child_env(cell), timeout=sum(STAGES[s].timeout_s for s in stages)).to_dict()

        return ChildResult.from_dict(self._once(key, probe))

    def fuzz(self, cell: Cell) -> ChildResult:
        """One child for all the fuzzed stages of the cell's group, run once per worker (as probes are)."""
        from .fuzzing import fuzz_group, fuzz_task

        group = fuzz_group(cell)
        stages = self.fuzz_stages.get(group, [cell.stage])
        fn, args, timeout = fuzz_task(cell, stages, self.profile, known=self.fuzz_known(cell, stages))

        def fuzz(workdir: Path) -> dict[str, Any]:
            return run_child(fn, args, workdir=workdir, env=child_env(cell), timeout=timeout).to_dict()

        return ChildResult.from_dict(self._once(f"{group}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", fuzz))

    def fuzz_known(self, cell: Cell, stages: list[str]) -> dict[str, list[str]]:
        import dataclasses

        return {st: self.known_examples.get(dataclasses.replace(cell, stage=st).id, []) for st in stages}

    def canary(self, device: str) -> Outcome:
        """The AOTI canary on a torch device ("cuda" or "cpu"), run at most once per run."""
        from .doctor import run_canary

        return Outcome.from_dict(self._once(f"canary-{device}", lambda workdir: run_canary(workdir, device).to_dict()))


def build_counts(run_dir: Path) -> dict[str, Any]:
    """How many exports and AOTI compiles the run did, how long the compiles took, and any canary's verdict."""
    records = {p.parent.name: json.loads(p.read_text())
               for p in sorted((Path(run_dir) / "artifacts").glob("*/record.json"))}
    builds = [r for r in records.values() if "phases" in r]
    compiles = {b["key"]: b["seconds"].get("aoti_compile") for b in builds if "aoti_compile" in b["phases"]}
    canaries = {name: Outcome.from_dict(r).summary() for name, r in records.items() if name.startswith("canary-")}
    return {"exports": sum("export" in b["phases"] for b in builds), "aoti_compiles": len(compiles),
            "aoti_compile_seconds": compiles, "canaries": canaries}
