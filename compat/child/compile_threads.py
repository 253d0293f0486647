"""The threads Inductor compiles on in a child: one, but where max-autotune compiles its template choices.

Each xdist worker runs its own children, so a child compiles on one thread (compat.run.session.base_env): Inductor's
compile pool is sized from TORCHINDUCTOR_COMPILE_THREADS when it is imported (the warm server imports it), and stays
one process. Max-autotune precompiles its choices on a thread pool that reads the variable again at each precompile
(`torch._inductor.select_algorithm.get_num_workers`, torch 2.11 to 2.13): serial, Liger-Kernel's SwiGLU MLP fuzz test
under `compile_max_autotune` spent 143 s compiling its 6 graphs on the H200, on 4 threads 49 s, on 8 48 s, with the same
outcome (results/benchmark/autotune-precompile-threads/). Which choice wins is timed, as it always was; the threads
only compile the candidates.
"""

from __future__ import annotations

import contextlib
import os

from ..matrix.stages import STAGES
from .protocol import AUTOTUNE_THREADS_ENV

VARIABLE = "TORCHINDUCTOR_COMPILE_THREADS"


@contextlib.contextmanager
def autotuning():
    """Inside, max-autotune's precompiles run on the run's AUTOTUNE_THREADS_ENV threads (where a run set it)."""
    threads, before = os.environ.get(AUTOTUNE_THREADS_ENV), os.environ.get(VARIABLE)
    if threads is None:
        yield
        return
    os.environ[VARIABLE] = threads
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(VARIABLE, None)
        else:
            os.environ[VARIABLE] = before


def of_stage(stage: str):
    """What a stage's phase runs inside: `autotuning` where the stage autotunes, else nothing."""
    return autotuning() if STAGES[stage].autotunes else contextlib.nullcontext()
