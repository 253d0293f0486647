"""The quick tier (--compat-tier quick): which cells it keeps, what it would miss on recorded results, and that the
run collects exactly those cells."""

import re

from compat.matrix.cells import matrix, parse_cell_id
from compat.matrix.stages import STAGES
from compat.matrix.tiers import TIERS, in_tier, missed
from compat.run.options import OPTIONS


def test_quick_keeps_every_stage_in_float32_and_every_dtype_where_the_numerics_are_the_question():
    cells = matrix({"kernel": ["silu"], "device": ["cuda"]})
    quick = [c for c in cells if in_tier(c, "quick")]
    assert {c.stage for c in quick} == {c.stage for c in cells}  # every stage
    low = {c.stage for c in quick if c.dtype != "float32"}
    assert low == {s for s in {c.stage for c in cells} if STAGES[s].every_dtype_in_quick_tier}
    assert {"eager", "compile_inductor", "eager_backward", "compile_backward"} <= low
    assert "aoti_strict" not in low and "compile_dynamic" not in low
    assert all(in_tier(c, "full") for c in cells)


def test_the_option_offers_the_declared_tiers():
    (choices,) = [o["choices"] for flags, o in OPTIONS if flags == ("--compat-tier",)]
    assert tuple(choices) == TIERS


def _record(cell_id, kind):
    return {"id": cell_id, "outcome": {"kind": kind}}


def test_missed_names_the_triples_whose_outcome_differs_by_dtype_where_quick_runs_float32_only():
    records = [_record("silu-triton_op-aoti_strict-float32-cuda", "passed"),
               _record("silu-triton_op-aoti_strict-float16-cuda", "mismatch"),  # quick never sees float16 here
               _record("silu-triton_op-eager-float32-cuda", "passed"),
               _record("silu-triton_op-eager-float16-cuda", "failed"),  # quick runs eager in float16: seen
               _record("silu-triton_op-export_strict-float32-cuda", "passed"),
               _record("silu-triton_op-export_strict-float16-cuda", "passed"),
               _record("silu-triton_op-decompose_strict-float32-cuda", "passed"),
               _record("silu-triton_op-decompose_strict-float16-cuda", "skipped")]  # not measured: no difference
    assert missed(records) == (["silu-triton_op-aoti_strict-cuda"], 3)


def test_a_quick_run_collects_the_quick_cells(project):
    args = ["--collect-only", "-q", "--compat-kernels=silu", "--compat-styles=raw_jit", "test_matrix.py"]
    full = project.runpytest_subprocess(*args).stdout.lines
    quick = project.runpytest_subprocess(*args, "--compat-tier=quick").stdout.lines

    def ids(lines):
        return {m.group(1) for line in lines if (m := re.search(r"test_cell\[(.+)\]", line))}

    assert ids(quick) == {i for i in ids(full) if in_tier(parse_cell_id(i, "test"), "quick")}
    assert ids(quick) < ids(full) and any("float16" in i for i in ids(quick))
