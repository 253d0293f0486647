"""The generated inputs: a recipe materializes to the same values in every layout, shapes stay inside what the kernel
and the artifact admit, boundaries are always sent, and the profiles are what CI and the GPU runner need."""

import dataclasses
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from compat.errors import CompatError
from compat.matrix.kernels import KERNELS
from compat.matrix.model import shape_of
from compat.matrix.strategies import (
    LARGE_SIZES,
    LAYOUTS,
    MAX_ELEMENTS,
    PROFILES,
    SPECIALS,
    Example,
    boundary_examples,
    dim_tops,
    dynamic_max,
    examples,
    exported_shapes,
    free_shapes,
    kernel_examples,
    last_dim_multiple,
    materialize,
    materialize_inputs,
    misfit,
    profile_settings,
)

DTYPES = ("float32", "float16", "bfloat16")
ANY_SHAPE = sorted(name for name, k in KERNELS.items() if k.any_shape)
DECLARED = sorted(name for name, k in KERNELS.items() if not k.any_shape)
small_shapes = st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple)


@given(ex=small_shapes.flatmap(lambda s: examples(st.just(s), "float32")), dtype=st.sampled_from(DTYPES))
def test_a_layout_changes_memory_never_values(ex, dtype):
    x = materialize(ex, dtype, "cpu")
    flat = materialize(Example(ex.shape, "contiguous", ex.seed, ex.scale, ex.sign, ex.specials), dtype, "cpu")
    assert x.shape == ex.shape and x.dtype == getattr(torch, dtype)
    torch.testing.assert_close(x, flat, rtol=0, atol=0, equal_nan=True)
    rows, inner = math.prod(ex.shape[:-1]), ex.shape[-1]
    scattered = {
        "contiguous": False,
        "transposed": rows > 1 and inner > 1 and ex.shape[-2] > 1,
        "sliced": rows > 1,
        "strided": ex.shape[0] > 1 and math.prod(ex.shape[1:]) > 0,
    }[ex.layout]
    assert x.is_contiguous() != scattered or (ex.layout == "strided" and x.numel() == 1)


def test_the_memory_around_a_view_is_nan_so_a_kernel_reading_past_it_is_caught():
    for layout in ("sliced", "strided"):
        x = materialize(Example((3, 4), layout, 0, 1.0, "positive"), "float32", "cpu")
        storage = torch.empty(0).set_(x.untyped_storage())
        assert int(storage.isnan().sum()) == storage.numel() - x.numel() > 0
        assert not x.isnan().any()


@given(index=st.integers(0, 10**6), kind=st.sampled_from(SPECIALS), dtype=st.sampled_from(DTYPES))
def test_specials_land_where_the_recipe_puts_them(index, kind, dtype):
    x = materialize(Example((7, 5), "contiguous", 3, 1.0, "mixed", ((index, kind),)), dtype, "cpu").flatten()
    v, info = x[index % 35].double().item(), torch.finfo(getattr(torch, dtype))
    want = {
        "nan": math.isnan(v),
        "inf": v == math.inf,
        "-inf": v == -math.inf,
        "zero": v == 0 and math.copysign(1, v) > 0,
        "-zero": v == 0 and math.copysign(1, v) < 0,
        "max": v == info.max,
        "-max": v == -info.max,
        "subnormal": 0 < v < info.tiny,
        "-subnormal": -info.tiny < v < 0,
    }
    assert want[kind], (kind, v)


@given(data=st.data())
def test_example_json_round_trips(data):
    ex = data.draw(examples(free_shapes(KERNELS["silu"], "float16"), "float16"))
    assert Example.from_json(ex.to_json()) == ex


@pytest.mark.parametrize("kernel", ANY_SHAPE)
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_free_shapes_are_what_the_kernel_admits(kernel, data, dtype):
    k = KERNELS[kernel]
    shape = data.draw(free_shapes(k, dtype))
    multiple = last_dim_multiple(k, dtype)
    assert len(shape) in k.shapes.ranks and min(shape) >= 1 and shape[-1] % multiple == 0
    assert math.prod(shape) <= MAX_ELEMENTS * multiple


@pytest.mark.parametrize("kernel", ANY_SHAPE)
@given(data=st.data())
def test_exported_shapes_stay_inside_the_artifacts_dynamic_range(kernel, data):
    k = KERNELS[kernel]
    shape = data.draw(exported_shapes(k))
    assert len(shape) == len(k.shapes.exported)
    for size, spec in zip(shape, k.shapes.exported, strict=False):
        assert size == spec if spec is not None else 1 <= size <= dynamic_max(k)


@pytest.mark.parametrize("kernel", ANY_SHAPE)
def test_every_run_sends_size_one_the_block_boundaries_the_maximum_and_every_special(kernel):
    k = KERNELS[kernel]
    multiple = last_dim_multiple(k, "float16")  # TMA: the last dimension comes in 16-byte steps
    shapes = [e.shape for e in boundary_examples(k, "float16", exported=False)]
    assert min(map(math.prod, shapes)) == multiple and max(map(math.prod, shapes)) >= LARGE_SIZES[0]
    assert all(any(abs(s[-1] - (b + d)) < multiple for s in shapes) for b in k.shapes.blocks for d in (-1, 1))
    dynamic = [i for i, d in enumerate(k.shapes.exported) if d is None]
    sizes = {e.shape[dynamic[0]] for e in boundary_examples(k, "float32", exported=True)}
    assert {1, dynamic_max(k)} <= sizes
    assert all({kind for _, kind in e.specials} == set(SPECIALS) for e in boundary_examples(k, "float32", True))


def test_profiles_ci_is_reproducible_and_bounded_thorough_explores_more():
    ci, thorough = profile_settings("ci"), profile_settings("thorough")
    assert ci.derandomize and ci.database is None and ci.deadline is None
    assert ci.max_examples < thorough.max_examples and thorough.database is None
    assert set(PROFILES) == {"ci", "thorough"}
    with pytest.raises(CompatError, match="unknown Hypothesis profile 'fast'.*ci, thorough"):
        profile_settings("fast")


def test_layouts_cover_the_issue():
    assert set(LAYOUTS) == {"contiguous", "transposed", "sliced", "strided"}


@pytest.mark.parametrize("kernel", DECLARED)
def test_a_declared_dims_kernel_gets_each_dynamic_dims_minimum_blocks_and_top_and_every_special(kernel):
    k = KERNELS[kernel]
    tops = dim_tops(k)
    sent = [dict(e.sizes) for e in boundary_examples(k, "float32", exported=False)]
    for d in k.dims:
        seen = {s[d.name] for s in sent}
        assert seen == {d.example} if not d.dynamic else {d.min, tops[d.name]} <= seen <= set(range(d.min, d.max + 1))
    assert all({kind for _, kind in e.specials} == set(SPECIALS) for e in boundary_examples(k, "float32", False))


@pytest.mark.parametrize("kernel", DECLARED)
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_declared_examples_stay_in_every_dims_range_and_materialize_every_input(kernel, data, dtype):
    k = KERNELS[kernel]
    ex = data.draw(kernel_examples(k, dtype, exported=True))
    sizes, tops = dict(ex.sizes), dim_tops(k)
    for d in k.dims:
        assert d.min <= sizes[d.name] <= tops.get(d.name, d.example)
    inputs = materialize_inputs(k, ex, dtype, "cpu")
    assert [tuple(t.shape) for t in inputs] == [shape_of(t, sizes) for t in k.tensors]
    assert Example.from_json(ex.to_json()) == ex
    assert misfit(k, ex) is None


def test_an_example_the_declaration_cannot_take_says_what_does_not_fit():
    k = KERNELS["matmul"]  # m dynamic in [1, 1024]; k static at 64, n at 96; the first tensor a is (m, k)
    (fits,) = [e for e in boundary_examples(k, "float32", exported=False) if dict(e.sizes)["m"] == 1]
    assert misfit(k, fits) is None

    def sized(**sizes):
        return dataclasses.replace(fits, sizes=tuple({**dict(fits.sizes), **sizes}.items()))

    assert misfit(k, sized(k=128)) == "k=128, but k is static at 64"
    assert misfit(k, sized(m=2048)) == "m=2048, outside its declared range [1, 1024] (multiples of 1)"
    assert misfit(k, dataclasses.replace(fits, sizes=fits.sizes[:2])).startswith("its sizes name ['k', 'm']")
    assert misfit(k, dataclasses.replace(fits, shape=(64, 1))) == "its shape [64, 1] is not 'a''s at its sizes, [1, 64]"
