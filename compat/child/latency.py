"""Latency of a passing cell, recorded beside its outcome and never a gate: on CUDA, for the stages declared `timed`.

- first call: from the start of the artifact's load (an AOTI package) or of its first call (eager, where Triton
  compiles the kernel or reads it from the worker's cache; torch.compile, which compiles then) to its first output,
  on the host's clock with the device synchronised;
- steady state: per check point, the median of REPS calls after WARMUP, each timed with CUDA events on the current
  stream (launch overhead included), and the best of them: under a whole run's load another process's kernels and
  the host's scheduling can stretch most calls (measured on the H100: medians of one cell 10 µs in one run, 350 µs
  in the next), while the best call is what the op costs when nothing else is in the way.
The C++ runner (aoti_runner.cpp) measures the same two with the same counts.

A run's children share their GPU, and a timing that overlaps another's measures both: the steady state is timed
holding the run's lock of that GPU (`lock_path`; the C++ runner takes the same lock with flock). Other cells' checks
and compiles still run beside it, so a number is one run's under its load: compare cells of one run (compat.report.report),
and runs only beyond compat.evidence.diff's noise band.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from typing import TYPE_CHECKING, Callable

import torch
from filelock import FileLock

from .protocol import LOCK_DIR_ENV, TIMED_ENV

if TYPE_CHECKING:
    from ..matrix.cells import Cell

WARMUP, REPS = 5, 30
# Set by the parent for every child of a run (compat.run.session): where the timing locks are, and which stages are
# timed (`Stage.timed`; handed down rather than imported, since the stages' checks import this module).


def lock_path() -> str | None:
    """The run's timing lock of the GPU this process sees, or None outside a run."""
    where = os.environ.get(LOCK_DIR_ENV)
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "all").replace(",", "_") or "none"
    return os.path.join(where, f"timing-gpu-{gpu}.lock") if where else None


@contextlib.contextmanager
def quiet():
    """Held while timing the steady state: no other timing of the run on this GPU overlaps it."""
    path = lock_path()
    if path is None:
        yield
        return

    with FileLock(path):
        yield


def wanted(cell: "Cell") -> bool:
    """Time this cell: on CUDA, in a run, at a stage the run's parent says is timed."""
    return cell.device == "cuda" and cell.stage in os.environ.get(TIMED_ENV, "").split(",")


def _sync() -> None:
    """Wait for the GPU's queued work, where this process uses one (a CPU cell's clock needs no wait)."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()


class FirstCall:
    """Times the first call made through it; later calls go straight through. `since`: a `time.perf_counter()`
    taken when the artifact's load began (the first call's time then includes the load)."""

    def __init__(self, since: float | None = None):
        self.since: float | None = since
        self.ms: float | None = None

    def __call__(self, fn: Callable, *args):
        if self.ms is not None:
            return fn(*args)
        _sync()
        start = self.since if self.since is not None else time.perf_counter()
        out = fn(*args)
        _sync()
        self.ms = (time.perf_counter() - start) * 1000.0
        return out


def steady_us(fn: Callable, args: tuple) -> tuple[float, float]:
    """The median and the best of REPS timed calls after WARMUP, in microseconds."""
    with torch.no_grad(), quiet():
        for _ in range(WARMUP):
            fn(*args)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(REPS)]
        for start, end in events:
            start.record()
            fn(*args)
            end.record()
        _sync()
    times = [start.elapsed_time(end) * 1000.0 for start, end in events]
    return statistics.median(times), min(times)


def entry(first_call_ms: float, steady: dict[str, tuple[float, float]], clock: str = "cuda_event") -> dict:
    """The record a cell's outcome carries under detail["latency"] (compat.report.timings reads it): `steady` maps each
    check point's label to its (median, best)."""
    return {
        "first_call_ms": round(first_call_ms, 3),
        "steady_us": {k: round(median, 2) for k, (median, _) in steady.items()},
        "steady_best_us": {k: round(best, 2) for k, (_, best) in steady.items()},
        "clock": clock,
        "warmup": WARMUP,
        "reps": REPS,
    }


def measure(fn: Callable, first: FirstCall, points: list, make_inputs: Callable, label: Callable) -> dict:
    """The latency record of a passing artifact: its first call (already timed by `first`) and its steady state at
    every check point, on fresh inputs per point (an op may write into them; their values do not change its time)."""
    assert first.ms is not None, "the artifact's first call was not made through `first`"
    return entry(first.ms, {label(p): steady_us(fn, make_inputs(p)) for p in points})
