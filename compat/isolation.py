"""Run a piece of a cell in a child process, so a crash, hang or abort is that cell's outcome, not the run's end.

The child appends to a journal (JSON lines) as it goes: `ready` once its task's code is imported, `begin` before each
phase, `end` with the phase's outcome after it. A phase that began and never ended is where the child died; the parent
labels it `crashed` (signal or exit code) or `timed_out`.

What fails outside every phase is the harness's own fault, never a cell's outcome: a child that dies before it is
ready, or an exception that escapes the task (a cell id the child cannot resolve, a bug of ours). The child journals
it as `harness_error`, and the parent raises HarnessError naming the cause.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import outcomes
from .errors import HarnessError
from .outcomes import Outcome

PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


class Journal:
    """The child's side: where it records each phase."""

    def __init__(self, path: str):
        self.path = path

    def _write(self, entry: dict[str, Any]) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def begin(self, phase: str) -> None:
        self._write({"event": "begin", "phase": phase, "t": time.time()})

    def ready(self) -> None:
        self._write({"event": "ready", "t": time.time()})

    def harness_error(self, exc: BaseException) -> None:
        self._write({"event": "harness_error", "t": time.time(),
                     "error": f"{outcomes.exception_type_name(exc)}: {exc}"})

    def end(self, phase: str, outcome: Outcome) -> None:
        self._write({"event": "end", "phase": phase, "t": time.time(), "outcome": outcome.to_dict()})

    def run(self, phase: str, fn: Callable[[], Outcome]) -> Outcome:
        """Run one phase; an exception it raises is the phase's `failed` outcome."""
        self.begin(phase)
        try:
            outcome = fn()
        except Exception as exc:  # noqa: BLE001 - every exception is an observation
            outcome = outcomes.from_exception(exc)
        self.end(phase, outcome)
        return outcome


# What a child reports of its own environment: which GPU it saw and which caches it wrote.
CHILD_ENV = ("CUDA_VISIBLE_DEVICES", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TRITON_INTERPRET")


@dataclass
class ChildResult:
    phases: dict[str, Outcome] = field(default_factory=dict)  # in the order they began
    seconds: dict[str, float] = field(default_factory=dict)
    log: str = ""
    env: dict[str, str | None] = field(default_factory=dict)  # CHILD_ENV as the child saw it, and its pid
    harness_error: str | None = None  # the harness failed in this child: no phase's outcome is the cell's
    ready: bool = False  # the child imported its task's code

    def to_dict(self) -> dict[str, Any]:
        return {"phases": {name: o.to_dict() for name, o in self.phases.items()}, "seconds": self.seconds,
                "log": self.log, "env": self.env, "harness_error": self.harness_error}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ChildResult":
        return cls({n: Outcome.from_dict(o) for n, o in d["phases"].items()}, d["seconds"], d["log"], d["env"],
                   d.get("harness_error"))

    def outcome(self, final: str, among: tuple[str, ...] | None = None) -> Outcome:
        """The first phase that did not pass, else `final`'s outcome (which holds its numerics).

        Phases are those up to `final`, or only those named in `among` when the child also did work for other cells;
        a phase that ended the child (crash, timeout) before `final` counts either way."""
        if self.harness_error:
            raise HarnessError(f"{self.harness_error} (child log: {self.log})")
        for name, outcome in self.phases.items():
            counts = among is None or name in among or outcome.kind in ("crashed", "timed_out")
            if counts and outcome.kind != "passed":
                return Outcome(outcome.kind, outcome.error_type, outcome.message, outcome.numerics,
                               {**outcome.detail, "phase": name, "child": self.env})
            if name == final:
                return Outcome(outcome.kind, outcome.error_type, outcome.message, outcome.numerics,
                               {**outcome.detail, "child": self.env})
        raise HarnessError(f"the child never reached phase {final!r} (phases: {list(self.phases)}; child log: "
                           f"{self.log})")


def read_journal(path: Path) -> ChildResult:
    result = ChildResult()
    if not path.exists():
        return result
    begun: dict[str, float] = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry["event"] == "start":
            result.env = entry["env"]
        elif entry["event"] == "ready":
            result.ready = True
        elif entry["event"] == "harness_error":
            result.harness_error = entry["error"]
        elif entry["event"] == "begin":
            begun[entry["phase"]] = entry["t"]
            result.phases.setdefault(entry["phase"], None)  # placeholder keeps the order
        else:
            result.phases[entry["phase"]] = Outcome.from_dict(entry["outcome"])
            result.seconds[entry["phase"]] = round(entry["t"] - begun.get(entry["phase"], entry["t"]), 3)
    return result


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def _no_core_dump() -> None:
    # A crashing CUDA process can dump gigabytes of core, slowly; the crash itself is the evidence we keep.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_child(fn: str, args: dict[str, Any], *, workdir: Path, env: dict[str, str], timeout: float) -> ChildResult:
    """Run `fn(journal, **args)` (a dotted name) in a fresh interpreter; never raises for what the child does."""
    workdir.mkdir(parents=True, exist_ok=True)
    journal, log = workdir / "journal.jsonl", workdir / "child.log"
    journal.unlink(missing_ok=True)
    (workdir / "task.json").write_text(json.dumps({"fn": fn, "args": args}))
    child_env = {**os.environ, **env, "PYTHONUNBUFFERED": "1",
                 "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-X", "faulthandler", "-m", "compat.isolation", str(workdir / "task.json"), str(journal)]
    with open(log, "w") as logf:
        # A session of its own, so a timeout kills the child's own children (compilers) too.
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=child_env, start_new_session=True,
                                preexec_fn=_no_core_dump)
        try:
            rc = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc, timed_out = None, True
    result = read_journal(journal)
    result.log = str(log)
    unfinished = [p for p, o in result.phases.items() if o is None]
    if timed_out or unfinished or rc:
        phase = unfinished[-1] if unfinished else "child (outside any phase)"
        if timed_out:
            died = outcomes.timed_out(timeout, phase, _tail(log))
        else:  # exited 0 with a phase open is the child's own bug
            died = outcomes.from_exit(rc or 0, _tail(log), phase)
        if not result.ready and not result.harness_error:
            result.harness_error = (f"the child ended before its task began ({died.message}); its log ends: "
                                    f"{_tail(log, 600).strip()}")
        result.phases[phase] = died
    return result


def _child_main(task_path: str, journal_path: str) -> None:
    journal = Journal(journal_path)
    journal._write({"event": "start", "env": {**{k: os.environ.get(k) for k in CHILD_ENV}, "pid": os.getpid()}})
    try:
        task = json.loads(Path(task_path).read_text())
        module, _, name = task["fn"].rpartition(".")
        fn = getattr(importlib.import_module(module), name)
        journal.ready()
        fn(journal, **task["args"])  # every phase catches its own exceptions: what escapes is ours
    except Exception as exc:  # noqa: BLE001 - reported to the parent as the harness's failure, not the cell's
        journal.harness_error(exc)
        raise


if __name__ == "__main__":
    _child_main(*sys.argv[1:3])
