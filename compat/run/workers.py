"""How many xdist workers `-n auto` starts, and which GPU each worker's cells run on.

Rule: one worker per GIB_PER_WORKER GiB of GPU memory, summed over the visible GPUs, and never more workers than
CPU cores this process may use (`os.sched_getaffinity`: a container or `taskset` gives it fewer than the host has;
AOTI compiles run g++ and Triton compiles on the CPU). With no GPU: one worker per core. `-n N` overrides
the rule; `COMPAT_GIB_PER_WORKER` changes its memory share (a cell's child holds one CUDA context, under 2 GiB here).
Worker i runs its cells on visible GPU i mod (number of GPUs), through CUDA_VISIBLE_DEVICES set before anything in
the worker initialises CUDA; every child it starts inherits it.
"""

from __future__ import annotations

import os

DEFAULT_GIB_PER_WORKER = 4.0


def gib_per_worker() -> float:
    value = os.environ.get("COMPAT_GIB_PER_WORKER", str(DEFAULT_GIB_PER_WORKER))
    try:
        gib = float(value)
    except ValueError:
        gib = -1.0
    if gib <= 0:
        raise ValueError(f"COMPAT_GIB_PER_WORKER={value!r}: expected a positive number of GiB")
    return gib


def visible_gpus() -> list[tuple[str, float]]:
    """(CUDA_VISIBLE_DEVICES entry, total memory in GiB) for each GPU this process sees."""
    import torch  # here, not at the top: the plugin imports this module, and loads torch only where it is asked for

    if not torch.cuda.is_available():
        return []
    count = torch.cuda.device_count()
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [x.strip() for x in given.split(",")][:count] if given else [str(i) for i in range(count)]
    return [(ids[i], torch.cuda.get_device_properties(i).total_memory / 2**30) for i in range(count)]


def usable_cpus() -> int:
    """The CPUs this process may run on, not the host's count (`os.cpu_count()` counts cores it may not use)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def auto_workers(cpus: int, gpus: list[tuple[str, float]], gib: float) -> int:
    if not gpus:
        return max(1, cpus)
    return max(1, min(cpus, sum(int(mem // gib) for _, mem in gpus)))


def gpu_for(worker_id: str, gpus: list[tuple[str, float]]) -> str:
    """The GPU of xdist worker `gwN`: round robin over the visible GPUs."""
    return gpus[int(worker_id.removeprefix("gw")) % len(gpus)][0]
