"""Comparison against eager: tolerances follow the dtype, NaN never passes, zeros prove nothing."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from compat.numerics import TOL, compare

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
    with pytest.raises(ValueError, match="all zeros"):
        compare(torch.zeros(4), torch.zeros(4), "x")
    with pytest.raises(ValueError, match="not finite"):
        compare(torch.ones(2), torch.tensor([1.0, float("nan")]), "x")


def test_tolerances_follow_precision():
    assert TOL["float32"] < TOL["float16"] < TOL["bfloat16"]
    for dtype, tol in TOL.items():  # at least a few units in the last place, far below a wrong kernel's error
        assert torch.finfo(getattr(torch, dtype)).eps <= tol <= 0.05
