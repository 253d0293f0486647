"""How many graphs a probe stage's fuzz test compiles, and what they cost, in this process, cell by cell:

    TRITON_INTERPRET=1 python scripts/fuzz_graphs.py CELL_ID...   # on a CPU; on a GPU without TRITON_INTERPRET
    python scripts/fuzz_graphs.py --cases liger_cases CELL_ID...  # a repository's own ops (its cases module)
    TORCHINDUCTOR_COMPILE_THREADS=1 python scripts/fuzz_graphs.py --precompile-threads 8 CELL_ID...

Each cell's fuzz test runs as its child runs it (compat.child.fuzz, the ci profile, no pins) after a reset of Dynamo;
then one line: its outcome, seconds, examples, the graphs Dynamo compiled (`unique_graphs`: the first compile and
each recompile, whatever its guard) and the seconds spent compiling them (Dynamo's `_compile.compile_inner`, the
backend's compile included). A fuzz test's cost is its graphs times a graph's compile, so this says what a bound on
its recompiles (issue 54) would save. `TORCH_LOGS=recompiles` names each recompile's guard.

`--precompile-threads N`: the threads max-autotune compiles its template choices with, set for an autotuning stage
as a run's child sets it (compat.child.compile_threads), after Inductor has sized its compile pool from the
environment (TORCHINDUCTOR_COMPILE_THREADS=1: no pool of subprocesses).
"""

import argparse
import os
import sys
import tempfile
import time

import torch._dynamo
import torch._dynamo.utils
import torch._inductor.config  # noqa: F401 - sizes its compile pool from the environment as it is imported

from compat.child import compile_threads, fuzz
from compat.child.checks import before_stage
from compat.child.journal import Journal
from compat.child.protocol import AUTOTUNE_THREADS_ENV
from compat.matrix.cases import import_cases
from compat.matrix.cells import parse_cell_id

COMPILE = "_compile.compile_inner"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", action="append", default=[], help="a module that declares ops (repeatable)")
    parser.add_argument("--precompile-threads", type=int, help="max-autotune's precompile threads")
    parser.add_argument("cells", nargs="+")
    args = parser.parse_args(argv)
    if args.precompile_threads:
        os.environ[AUTOTUNE_THREADS_ENV] = str(args.precompile_threads)
    import_cases(args.cases, "scripts/fuzz_graphs.py", forks=False)
    journal = Journal(os.path.join(tempfile.mkdtemp(), "journal.jsonl"))  # the waits before_stage reports
    for cell_id in args.cells:
        cell = parse_cell_id(cell_id, "scripts/fuzz_graphs.py")
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        torch._dynamo.utils.compilation_time_metrics.clear()
        before_stage(cell, journal)
        start = time.monotonic()
        with compile_threads.of_stage(cell.stage):
            outcome = fuzz._fuzz_probe_stage(cell, "ci", None, {"pins": []})
            threads = os.environ.get(compile_threads.VARIABLE)
        took = time.monotonic() - start
        graphs = torch._dynamo.utils.counters["stats"].get("unique_graphs", 0)
        compiling = sum(torch._dynamo.utils.compilation_time_metrics.get(COMPILE, []))
        examples = outcome.detail.get("tally", {}).get("examples")
        print(
            f"{cell_id}: {outcome.kind} in {took:.1f} s, {examples} examples, {graphs} graphs "
            f"compiled in {compiling:.1f} s (compile threads {threads})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
