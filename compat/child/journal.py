"""The child's record of what it did, as JSON lines the parent reads (compat.run.launcher.read_journal).

Events: `start` (the child's environment), `ready` (its task's code is imported), `begin` and `end` around each
phase, `waited` (seconds spent outside every phase waiting for the run's shared work, which the profile names),
`harness_error` (something failed outside every phase: the harness's fault, never the cell's).
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path
from typing import Any, Callable

from ..errors import DeclarationError, HarnessError
from ..evidence import outcomes
from ..evidence.outcomes import Outcome
from ..evidence.rootcause import of_exception

PACKAGE = Path(__file__).resolve().parent.parent
# The suite's own ops (its styles' wrappers and launchers, its kernels): what they raise is the op's outcome.
OP_CODE = frozenset({PACKAGE / "matrix" / "styles.py", PACKAGE / "matrix" / "kernels.py"})

# What a child reports of its own environment: which GPU it saw and which caches it wrote.
CHILD_ENV = ("CUDA_VISIBLE_DEVICES", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TRITON_INTERPRET")


class Journal:
    def __init__(self, path: str):
        self.path = path

    def _write(self, entry: dict[str, Any]) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps({**entry, "t": time.time()}) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def start(self) -> None:
        self._write({"event": "start", "env": {**{k: os.environ.get(k) for k in CHILD_ENV}, "pid": os.getpid()}})

    def ready(self) -> None:
        self._write({"event": "ready"})

    def harness_error(self, exc: BaseException) -> None:
        declaration = isinstance(exc, DeclarationError)  # the user's to fix: bad input, exit 2
        self._write(
            {
                "event": "harness_error",
                "error": f"{outcomes.exception_type_name(exc)}: {exc}",
                "declaration": declaration,
            }
        )

    def waited(self, what: str, seconds: float) -> None:
        self._write({"event": "waited", "what": what, "s": round(seconds, 3)})

    def begin(self, phase: str) -> None:
        self._write({"event": "begin", "phase": phase, "cpu": cpu_seconds()})

    def end(self, phase: str, outcome: Outcome) -> None:
        self._write({"event": "end", "phase": phase, "outcome": outcome.to_dict(), "cpu": cpu_seconds()})

    def run(self, phase: str, fn: Callable[[], Outcome]) -> Outcome:
        """Run one phase; an exception it raises is the phase's `failed` outcome, unless it is the declaration's
        fault or the harness's (compat.errors.HarnessError, anywhere in its chain: a DeclarationError, a comparison
        that broke), which ends the task as a harness error."""
        self.begin(phase)
        try:
            outcome = fn()
        except Exception as exc:  # noqa: BLE001 - every exception is an observation
            fault = declaration_fault(exc)
            if fault is not None:
                raise fault from None
            outcome = outcomes.from_exception(exc)
        self.end(phase, outcome)
        return outcome


def cpu_seconds() -> float:
    """This process's CPU time and that of the processes it waited for (g++, Triton's compile workers)."""
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime, 3)


def declaration_fault(exc: BaseException) -> HarnessError | None:
    """The declaration's or the harness's fault behind an exception: itself, or one a tracer wrapped (Dynamo,
    Hypothesis), or an error the harness's own code raised (harness_frame)."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        if isinstance(at, HarnessError):
            return at
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    root = of_exception(exc)
    where = harness_frame(root)
    if where is None:
        return None
    return HarnessError(
        f"the harness raised {type(root).__name__}: {str(root)[:300]} at {where}: a bug of this suite's code, not "
        f"the op's outcome"
    )


def harness_frame(exc: BaseException) -> str | None:
    """Where `exc` was raised, if in the suite's own code outside its ops (OP_CODE): the harness's bug, such as a
    check that unpacks points a declaration lacks. A RuntimeError is torch's (a CUDA error an earlier launch left
    surfaces at whatever syncs next, harness code included), and a comparison's failure is raised on purpose (an
    exception marked `observation`)."""
    if isinstance(exc, RuntimeError) or getattr(exc, "observation", False):
        return None
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    path = Path(tb.tb_frame.f_code.co_filename).resolve()
    if PACKAGE not in path.parents or path in OP_CODE:
        return None
    return f"{path.relative_to(PACKAGE.parent)}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}"
