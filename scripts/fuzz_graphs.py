"""How many graphs a probe stage's fuzz test compiles, in this process, cell by cell:

    TRITON_INTERPRET=1 python scripts/fuzz_graphs.py CELL_ID...   # on a CPU; on a GPU without TRITON_INTERPRET

Each cell's fuzz test runs as its child runs it (compat.child.fuzz, the ci profile, no pins) after a reset of Dynamo;
then one line: its outcome, seconds, examples, and the graphs Dynamo compiled (`unique_graphs`: the first compile and
each recompile, whatever its guard). A fuzz test's cost is its graphs times a graph's compile, so this says what a
bound on its recompiles (issue 54) would save. `TORCH_LOGS=recompiles` names each recompile's guard.
"""

import sys
import time

import torch._dynamo
import torch._dynamo.utils

from compat.child import fuzz
from compat.child.checks import before_stage
from compat.matrix.cells import parse_cell_id


def main(cell_ids: list[str]) -> int:
    for cell_id in cell_ids:
        cell = parse_cell_id(cell_id, "scripts/fuzz_graphs.py")
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        before_stage(cell)
        start = time.monotonic()
        outcome = fuzz._fuzz_probe_stage(cell, "ci", None, {"pins": []})
        graphs = torch._dynamo.utils.counters["stats"].get("unique_graphs", 0)
        examples = outcome.detail.get("tally", {}).get("examples")
        print(f"{cell_id}: {outcome.kind} in {time.monotonic() - start:.1f} s, {examples} examples, {graphs} graphs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
