"""The quick tier (--compat-tier quick): which cells it keeps, what it would miss on recorded results, and that the
run collects exactly those cells."""

import gzip
import json
import re
from pathlib import Path

import pytest

from compat.matrix.cells import matrix, parse_cell_id
from compat.matrix.stages import STAGES
from compat.matrix.tiers import TIERS, in_tier, missed, select
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
    records = [
        _record("silu-triton_op-aoti_strict-float32-cuda", "passed"),
        _record("silu-triton_op-aoti_strict-float16-cuda", "mismatch"),  # quick never sees float16 here
        _record("silu-triton_op-eager-float32-cuda", "passed"),
        _record("silu-triton_op-eager-float16-cuda", "failed"),  # quick runs eager in float16: seen
        _record("silu-triton_op-export_strict-float32-cuda", "passed"),
        _record("silu-triton_op-export_strict-float16-cuda", "passed"),
        _record("silu-triton_op-decompose_strict-float32-cuda", "passed"),
        _record("silu-triton_op-decompose_strict-float16-cuda", "skipped"),
    ]  # not measured: no difference
    assert missed(records) == (["silu-triton_op-aoti_strict-cuda"], 3)


@pytest.mark.slow
def test_a_quick_run_collects_the_quick_cells(project):
    args = ["--collect-only", "-q", "--compat-kernels=silu", "--compat-styles=raw_jit", "test_matrix.py"]
    full = project.runpytest_subprocess(*args).stdout.lines
    quick = project.runpytest_subprocess(*args, "--compat-tier=quick").stdout.lines

    def ids(lines):
        return {m.group(1) for line in lines if (m := re.search(r"test_cell\[(.+)\]", line))}

    assert ids(quick) == {i for i in ids(full) if in_tier(parse_cell_id(i, "test"), "quick")}
    assert ids(quick) < ids(full) and any("float16" in i for i in ids(quick))


def test_what_the_readme_says_the_quick_tier_would_miss_is_what_the_committed_evidence_shows():
    root = Path(__file__).resolve().parent.parent
    doc = json.loads(
        gzip.decompress((root / "results" / "torch-2.11.0-cu130_triton-3.6.0_NVIDIA-H200.json.gz").read_bytes())
    )
    cells, cell_triples = missed(r for r in doc["cells"] if r["axes"]["device"] == "cuda")
    fuzz, fuzz_triples = missed(r for r in doc["fuzz"] if r["axes"]["device"] == "cuda")
    cuda = matrix({"device": ["cuda"]})
    readme = " ".join((root / "docs" / "GPU_RUNNER.md").read_text().split())
    said = (
        f"every stage in float32, and float16 and bfloat16 only for `eager`, `compile_inductor` and the stages "
        f"that train; fuzz tests follow their cells ({sum(in_tier(c, 'quick') for c in cuda):,} of the "
        f"{len(cuda):,} CUDA cells)"
    )
    assert said in readme
    assert f"{len(cells)} of the {cell_triples:,} (kernel, style, stage) triples" in readme
    assert f"{len(fuzz)} of {fuzz_triples:,} fuzz triples" in readme
    assert cells == ["silu_tma-raw_jit-aoti_strict-cuda"]
    assert fuzz == ["silu_out-custom_op-aoti_strict-cuda"]


def test_the_sample_holds_each_kernel_style_stage_and_device_at_least_once_in_few_cells():
    cells = matrix({"device": ["cuda"]})
    sample = select(cells, "sample")
    for axis in ("kernel", "style", "stage", "device"):
        assert {getattr(c, axis) for c in sample} == {getattr(c, axis) for c in cells}, axis
    assert len(sample) <= 60 and all(c.dtype == "float32" for c in sample)
    assert [c.id for c in select(cells, "sample")] == [c.id for c in sample]  # the same on every machine
    assert select(cells, "quick") == [c for c in cells if in_tier(c, "quick")]
