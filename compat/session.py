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
from typing import Any, Iterable

from filelock import FileLock

from .cells import DEVICES, Cell
from .isolation import ChildResult, run_child
from .outcomes import Outcome

BUILD_TIMEOUT = 1200.0  # export + AOTI compile (about 50 s alone on an H100, more when many run at once)


def artifact_key(cell: Cell) -> str:
    from .stages import STAGES

    return "-".join((cell.kernel, cell.style, STAGES[cell.stage].export_mode, cell.dtype, cell.device))


@dataclass
class Build:
    key: str
    result: ChildResult
    package: str | None  # path of the AOTI package, when it compiled

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "package": self.package, "log": self.result.log, "seconds": self.result.seconds,
                "phases": {name: o.to_dict() for name, o in self.result.phases.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Build":
        result = ChildResult({n: Outcome.from_dict(o) for n, o in d["phases"].items()}, d["seconds"], d["log"])
        return cls(d["key"], result, d["package"])


class RunSession:
    def __init__(self, run_dir: Path, cells: Iterable[Cell]):
        from .stages import STAGES

        self.run_dir = Path(run_dir)
        self.packages_wanted = {artifact_key(c) for c in cells if STAGES[c.stage].packaged}

    def child(self, cell: Cell, fn: str, args: dict[str, Any], timeout: float) -> ChildResult:
        workdir = self.run_dir / "cells" / cell.id / fn.rpartition(".")[2]
        return run_child(fn, args, workdir=workdir, env=dict(DEVICES[cell.device].env), timeout=timeout)

    def artifact(self, cell: Cell) -> Build:
        from .stages import STAGES

        key = artifact_key(cell)
        workdir = self.run_dir / "artifacts" / key
        record = workdir / "build.json"
        workdir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(workdir) + ".lock"):
            if record.exists():
                return Build.from_dict(json.loads(record.read_text()))
            package = str(workdir / "model.pt2") if key in self.packages_wanted else None
            result = run_child("compat.stages.child_build",
                               {"cell": cell.id, "mode": STAGES[cell.stage].export_mode, "package_path": package},
                               workdir=workdir, env=dict(DEVICES[cell.device].env), timeout=BUILD_TIMEOUT)
            compiled = result.phases.get("aoti_compile")
            build = Build(key, result, package if compiled is not None and compiled.kind == "passed" else None)
            tmp = record.with_suffix(".tmp")
            tmp.write_text(json.dumps(build.to_dict()))
            os.replace(tmp, record)
            return build


def build_counts(run_dir: Path) -> dict[str, Any]:
    """How many exports and AOTI compiles the run did, and how long the compiles took."""
    builds = [json.loads(p.read_text()) for p in sorted((Path(run_dir) / "artifacts").glob("*/build.json"))]
    compiles = {b["key"]: b["seconds"].get("aoti_compile") for b in builds if "aoti_compile" in b["phases"]}
    return {"exports": sum("export" in b["phases"] for b in builds), "aoti_compiles": len(compiles),
            "aoti_compile_seconds": compiles}
