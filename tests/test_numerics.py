"""Comparison against eager: tolerances follow the dtype, NaN never passes, zeros prove nothing."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from compat.errors import DeclarationError
from compat.evidence.numerics import TOL, compare

DTYPES = st.sampled_from(["float32", "float16", "bfloat16"])


def ref(dtype, n=257, seed=0):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed)).to(getattr(torch, dtype))


@given(dtype=DTYPES, seed=st.integers(0, 2**16), frac=st.floats(0.0, 0.9))
def test_errors_within_the_dtype_tolerance_pass(dtype, seed, frac):
    r = ref(dtype, seed=seed)
    out = (r.double() + frac * TOL[dtype] * r.double().abs().max()).to(r.dtype)  # rounding may add one ulp
    result = compare(out, r, "x")
    assert result["ok"], result
    assert result["max_rel_err"] <= TOL[dtype]


@given(dtype=DTYPES, seed=st.integers(0, 2**16), factor=st.floats(1.5, 100.0))
def test_errors_beyond_the_tolerance_fail(dtype, seed, factor):
    r = ref(dtype, seed=seed)
    out = r.clone()
    out[3] = (r[3].double() + factor * TOL[dtype] * r.double().abs().max()).to(r.dtype)
    result = compare(out, r, "x")
    assert not result["ok"] and "max abs err" in result["why"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_output_never_passes(bad):
    r = ref("float32")
    out = r.clone()
    out[0] = bad
    result = compare(out, r, "x")
    assert not result["ok"] and result["nonfinite"] == 1


def test_shape_or_dtype_difference_fails():
    r = ref("bfloat16")
    assert not compare(r[:-1], r, "x")["ok"]
    assert not compare(r.float(), r, "x")["ok"]


def test_a_zero_or_non_finite_reference_is_refused():
    with pytest.raises(DeclarationError, match="all zeros"):
        compare(torch.zeros(4), torch.zeros(4), "x")
    with pytest.raises(DeclarationError, match="not finite"):
        compare(torch.ones(2), torch.tensor([1.0, float("nan")]), "x")


def test_tolerances_follow_precision():
    assert TOL["float32"] < TOL["float16"] < TOL["bfloat16"]
    for dtype, tol in TOL.items():  # at least a few units in the last place, far below a wrong kernel's error
        assert torch.finfo(getattr(torch, dtype)).eps <= tol <= 0.05


# ---- element by element, for generated inputs ----

from compat.evidence.numerics import compare_elementwise  # noqa: E402

SPECIAL = torch.tensor([1.5, float("nan"), float("inf"), -float("inf"), 0.0, -2.0])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_nan_and_inf_must_sit_where_eager_puts_them(dtype):
    ref = SPECIAL.to(getattr(torch, dtype))
    assert compare_elementwise(ref.clone(), ref, "x")["ok"]
    for i, wrong in ((0, float("nan")), (1, 0.0), (2, -float("inf")), (3, 7.0), (4, float("inf"))):
        out = ref.clone()
        out[i] = wrong
        result = compare_elementwise(out, ref, "x")
        assert not result["ok"] and f"first at [{i}]" in result["why"], (i, result)


def test_a_subnormal_result_may_flush_to_zero_and_nothing_larger_may():
    ref = torch.tensor([1e-39, 2.0])  # float32 subnormal
    assert compare_elementwise(torch.tensor([0.0, 2.0]), ref, "x")["ok"]
    assert not compare_elementwise(torch.tensor([1e-37, 2.0]), ref, "x")["ok"]


def test_each_element_is_held_to_its_own_magnitude():
    ref = torch.tensor([1e-3, 1e4])  # a scale-relative check would let the small element be 100% wrong
    assert not compare_elementwise(torch.tensor([2e-3, 1e4]), ref, "x")["ok"]
    result = compare_elementwise(ref * (1 + 5e-5), ref, "x")
    assert result["ok"] and result["informative"] and 4e-5 < result["max_rel_err"] < 6e-5
    assert not compare_elementwise(torch.zeros(3), torch.zeros(3), "x")["informative"]


def test_a_float32_result_of_a_bfloat16_cell_is_held_to_bfloat16s_tolerance_and_no_looser():
    """Liger's fused linear cross entropy returns a float32 loss computed from bfloat16 logits (measured on the H100:
    0.27% from the float32 reference); a float32 cell's output keeps float32's tolerance."""
    ref = torch.tensor([32.3, 1.5])
    rounded = ref * (1 + 2.7e-3)
    assert not compare(rounded, ref, "loss")["ok"]
    assert compare(rounded, ref, "loss", computed_in="bfloat16")["ok"]
    assert not compare(ref * 1.05, ref, "loss", computed_in="bfloat16")["ok"]  # beyond bfloat16's 4%
    assert compare(rounded, ref, "loss", computed_in="float32")["tol"] == TOL["float32"]
    assert not compare_elementwise(rounded, ref, "loss")["ok"]
    assert compare_elementwise(rounded, ref, "loss", computed_in="bfloat16")["ok"]
