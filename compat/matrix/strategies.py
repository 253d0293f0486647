"""Generated inputs for the fuzz tests, composed from small Hypothesis strategies, and the profiles that run them.

An `Example` is a small recipe (shape, layout, seed, scale, sign, special values at indices); `materialize` turns it
into a tensor the same way in every process, so a failing example printed as JSON reproduces exactly. Values live in
their layout's view over a buffer whose other elements are NaN: a kernel that reads past its view reads NaN.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any, Optional

import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from ..errors import CompatError
from .model import bounded, in_domain, integer_range, shape_of, standard_normal, torch_device

# The element budget of one example, and the top of an exported artifact's dynamic range: the device's
# `fuzz_elements` (compat.matrix.cells), this by default.
MAX_ELEMENTS = 2**20
LARGE_SIZES = (1_000_003, MAX_ELEMENTS)  # about 1e6 elements: a prime, and a power of two (clamped to the budget)
PRIMES = (2, 3, 5, 7, 13, 31, 127, 257, 1021, 4093, 65537)
LAYOUTS = ("contiguous", "transposed", "sliced", "strided")
SPECIALS = ("nan", "inf", "-inf", "subnormal", "-subnormal", "zero", "-zero", "max", "-max")
MAX_SPECIALS = 4

# Profiles: `ci` is reproducible and bounded (derandomized, no database, no deadline: a compile takes seconds);
# `thorough` explores more on the GPU runner. Both print a failing example's JSON through the fuzz outcome.
PROFILES: dict[str, dict[str, Any]] = {
    "ci": dict(max_examples=25, derandomize=True),
    "thorough": dict(max_examples=100, derandomize=False),
}
DEFAULT_PROFILE = "ci"
PROFILE_ENV = "COMPAT_HYPOTHESIS_PROFILE"
for _name, _options in PROFILES.items():
    settings.register_profile(
        _name,
        deadline=None,
        database=None,
        print_blob=False,
        report_multiple_bugs=False,
        suppress_health_check=[HealthCheck.too_slow],
        # No explain phase: after shrinking it calls the test up to a thousand times more, each call a run of the
        # artifacts, for comments in Hypothesis's own report, which no outcome shows (its falsifying example is ours).
        phases=[phase for phase in Phase if phase != Phase.explain],
        **_options,
    )


@dataclass(frozen=True)
class Example:
    shape: tuple[int, ...]  # the first tensor's shape (an any-shape kernel's only tensor)
    layout: str  # applied to every tensor that can take it
    seed: int  # tensor i draws its values from seed + i
    scale: float  # magnitude of the ordinary values (standard normal times scale)
    sign: str  # mixed | negative | positive
    specials: tuple[tuple[int, str], ...] = ()  # in the first tensor: (flat index modulo numel, kind in SPECIALS)
    sizes: tuple[tuple[str, int], ...] = ()  # a kernel with declared dims: the size of each

    def to_json(self) -> str:
        d = asdict(self)
        if not self.sizes:
            del d["sizes"]  # an any-shape kernel's recipe reads as it always has
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "Example":
        d = json.loads(text)
        return cls(
            tuple(d["shape"]),
            d["layout"],
            d["seed"],
            d["scale"],
            d["sign"],
            tuple((int(i), str(k)) for i, k in d["specials"]),
            tuple((str(n), int(v)) for n, v in d.get("sizes", ())),
        )


def _special(kind: str, dtype: torch.dtype) -> float:
    info = torch.finfo(dtype)
    sign = -1.0 if kind.startswith("-") else 1.0
    base = {"nan": math.nan, "inf": math.inf, "subnormal": info.tiny / 4, "zero": 0.0, "max": info.max}
    return sign * base[kind.lstrip("-")]


def _values(
    shape: tuple[int, ...], seed: int, example: Example, t: torch.dtype, specials: tuple = (), domain=None
) -> torch.Tensor:
    """The example's values: standard normal times its scale, of its sign, then in the tensor's declared domain (an
    interval's from the unscaled draw: a sigmoid of 1e30 is its end, no value a caller passes); `specials` only
    where no domain is declared (NaN, inf and the others lie outside every domain)."""
    numel = math.prod(shape)
    values = standard_normal((numel,), seed) * example.scale
    if example.sign != "mixed":
        values = values.abs() * (-1.0 if example.sign == "negative" else 1.0)
    values = in_domain(values / example.scale if bounded(domain) else values, domain)
    for index, kind in specials if numel and domain is None else ():
        values[index % numel] = _special(kind, t)
    return values.to(t).reshape(shape)


def _laid_out(values: torch.Tensor, layout: str, device: str) -> torch.Tensor:
    """`values` on the device in `layout`: the same values, in other memory."""
    t, shape, dev = values.dtype, tuple(values.shape), torch_device(device)
    # Around a view: NaN, which a kernel that reads past it carries into its output; an integer tensor (indices)
    # gets 0, which any kernel may read safely.
    fill = math.nan if t.is_floating_point else 0
    if layout == "contiguous":
        return values.to(dev)
    if layout == "transposed":  # stored with the last two dimensions swapped
        return values.transpose(-1, -2).contiguous().to(dev).transpose(-1, -2)
    if layout == "sliced":  # a narrowed view of a wider last dimension; for 1-D, an offset view
        base = torch.full((*shape[:-1], shape[-1] + 2), fill, dtype=t, device=dev)
        view = base[..., 1 : shape[-1] + 1]
    elif layout == "strided":  # every other element of the first dimension
        base = torch.full((2 * shape[0], *shape[1:]), fill, dtype=t, device=dev)
        view = base[::2]
    else:
        raise ValueError(f"unknown layout {layout!r}; layouts: {', '.join(LAYOUTS)}")
    view.copy_(values)
    return view


def _admits(layout: str, shape: tuple[int, ...]) -> bool:
    return layout != "transposed" or len(shape) >= 2


def materialize(example: Example, dtype: str, device: str, domain=None) -> torch.Tensor:
    """The example's tensor (an any-shape kernel's), in its layout, on the device's torch device."""
    values = _values(example.shape, example.seed, example, getattr(torch, dtype), example.specials, domain)
    return _laid_out(values, example.layout, device)


def materialize_inputs(kernel, example: Example, dtype: str, device: str) -> tuple[torch.Tensor, ...]:
    """Every tensor the op-level artifact takes: an any-shape kernel's one, or each declared tensor at the example's
    sizes, in the example's layout where its rank admits it (specials go to the first)."""
    if kernel.any_shape:
        return (materialize(example, dtype, device, kernel.tensors[0].domain),)
    sizes, out = dict(example.sizes), []
    for i, spec in enumerate(kernel.tensors):
        shape, kind = shape_of(spec, sizes), getattr(torch, spec.dtype or dtype)
        if kind.is_floating_point:
            values = _values(shape, example.seed + i, example, kind, example.specials if i == 0 else (), spec.domain)
        else:  # indices, targets: uniform in the declared range, whatever the example's scale
            gen = torch.Generator().manual_seed(example.seed + i)
            values = torch.randint(*integer_range(spec, sizes), shape, generator=gen).to(kind)
        out.append(_laid_out(values, example.layout if _admits(example.layout, shape) else "contiguous", device))
    return tuple(out)


def misfit(kernel, example: Example) -> str | None:
    """Why a declared-dims kernel cannot take `example` (its sizes name other dims, a static dim at another size, a
    dynamic one outside its range, a shape not its first tensor's), or None: a pin recorded under an older declaration
    would replay inputs no draw makes."""
    if kernel.any_shape:
        return None
    sizes, declared = dict(example.sizes), [d.name for d in kernel.dims]
    if sorted(sizes) != sorted(declared):
        return f"its sizes name {sorted(sizes)}, the op declares the dims {sorted(declared)}"
    for d in kernel.dims:
        size = sizes[d.name]
        if not d.dynamic and size != d.example:
            return f"{d.name}={size}, but {d.name} is static at {d.example}"
        if d.dynamic and not (d.min <= size <= d.max and size % d.multiple_of == 0):
            return f"{d.name}={size}, outside its declared range [{d.min}, {d.max}] (multiples of {d.multiple_of})"
    shape = _first_shape(kernel, sizes)
    if tuple(example.shape) != shape:
        return f"its shape {list(example.shape)} is not {kernel.tensors[0].name!r}'s at its sizes, {list(shape)}"
    return None


# ---- strategies ----

SMALL_BUDGET = 2**16  # the element budget of nine examples in ten: the tenth may use the device's whole budget


def dim_sizes(blocks: tuple[int, ...]) -> st.SearchStrategy[int]:
    """One dimension: 1, primes, each block size and its neighbours, anything small, and rarely about 1e6."""
    boundaries = sorted({b + d for b in blocks for d in (-1, 0, 1) if b + d > 0})
    small = st.one_of(st.just(1), st.sampled_from(PRIMES), st.sampled_from(boundaries), st.integers(2, 4096))
    return st.integers(0, 9).flatmap(lambda i: st.sampled_from(LARGE_SIZES) if i == 0 else small)


def example_budgets(budget: int) -> st.SearchStrategy[int]:
    """Most examples stay small, so the run's time goes to variety; one in ten may be as large as the budget."""
    return st.integers(0, 9).map(lambda i: budget if i == 0 else min(budget, SMALL_BUDGET))


def _fit(sizes: list[int], multiple: int, budget: int) -> tuple[int, ...]:
    """Dimensions within the element budget (earlier ones first), the last rounded up to a multiple."""
    dims = []
    for s in sizes:
        s = max(1, min(s, budget))
        budget = max(1, budget // s)
        dims.append(s)
    dims[-1] = -(-dims[-1] // multiple) * multiple
    return tuple(dims)


def last_dim_multiple(kernel, dtype: str) -> int:
    return max(1, kernel.shapes.last_dim_bytes // torch.empty((), dtype=getattr(torch, dtype)).element_size())


@st.composite
def free_shapes(draw, kernel, dtype: str, budget: int = MAX_ELEMENTS):
    """Any shape the kernel admits: its ranks, sizes around its blocks, the last dimension aligned as it needs."""
    rank = draw(st.sampled_from(kernel.shapes.ranks))
    sizes = [draw(dim_sizes(kernel.shapes.blocks)) for _ in range(rank)]
    return _fit(sizes, last_dim_multiple(kernel, dtype), draw(example_budgets(budget)))


def dynamic_max(kernel, budget: int = MAX_ELEMENTS) -> int:
    """The top of the exported artifact's dynamic dimension: the element budget over its static dimensions."""
    return budget // math.prod(d for d in kernel.shapes.exported if d is not None)


def exported_shapes(kernel, budget: int = MAX_ELEMENTS) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes inside the exported artifact's input spec: static dimensions as exported, the dynamic one anywhere in
    its range."""
    top = dynamic_max(kernel, budget)
    sizes = st.tuples(dim_sizes(kernel.shapes.blocks), example_budgets(top)).map(lambda sb: min(sb))
    size = st.one_of(st.just(1), sizes)  # the maximum is a boundary example: every run sends it
    return size.map(lambda n: tuple(n if d is None else d for d in kernel.shapes.exported))


def scales(dtype: str) -> st.SearchStrategy[float]:
    large = 1e4 if dtype == "float16" else 1e30  # large magnitude, still finite in the dtype
    return st.sampled_from((1.0, 1e-3, 1e3, large))


def values(dtype: str):
    return st.tuples(
        st.integers(0, 2**16),
        scales(dtype),
        st.sampled_from(("mixed", "negative", "positive")),
        st.lists(st.tuples(st.integers(0, MAX_ELEMENTS), st.sampled_from(SPECIALS)), max_size=MAX_SPECIALS).map(tuple),
    )


def layouts(shape: tuple[int, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from([lay for lay in LAYOUTS if lay != "transposed" or len(shape) >= 2])


def examples(shapes: st.SearchStrategy[tuple[int, ...]], dtype: str) -> st.SearchStrategy[Example]:
    return shapes.flatmap(
        lambda shape: st.builds(lambda layout, v: Example(shape, layout, *v), layouts(shape), values(dtype))
    )


def dim_tops(kernel, budget: int = MAX_ELEMENTS) -> dict[str, int]:
    """A declared-dims kernel: the largest size of each dynamic dim, within its declared max and the element budget
    (the budget over the largest product of the other dims of a tensor that has it)."""
    example = {d.name: d.example for d in kernel.dims}
    tops = {}
    for d in kernel.dims:
        if not d.dynamic:
            continue
        others = max(
            math.prod(shape_of(t, {**example, d.name: 1})) for t in kernel.tensors if t.dims and d.name in t.dims
        )
        tops[d.name] = max(d.min, min(d.max, budget // max(1, others)) // d.multiple_of * d.multiple_of)
    return tops


def _first_shape(kernel, sizes: dict[str, int]) -> tuple[int, ...]:
    return shape_of(kernel.tensors[0], sizes)


@st.composite
def declared_examples(draw, kernel, dtype: str, budget: int = MAX_ELEMENTS):
    """A declared-dims kernel's inputs: each dynamic dim anywhere in its range (its minimum, sizes around the
    kernel's blocks, anything, rarely its top), the others at their example."""
    tops = dim_tops(kernel, budget)
    sizes = {}
    for d in kernel.dims:
        if d.name not in tops:
            sizes[d.name] = d.example
            continue
        top, small_top = tops[d.name], draw(example_budgets(tops[d.name]))
        size = draw(st.one_of(st.just(d.min), dim_sizes(kernel.shapes.blocks)))
        size = max(d.min, min(size, small_top, top))
        sizes[d.name] = max(d.min, size // d.multiple_of * d.multiple_of)
    ranks = [len(t.dims) for t in kernel.tensors]
    layout = draw(st.sampled_from([lay for lay in LAYOUTS if lay != "transposed" or max(ranks) >= 2]))
    seed, scale, sign, specials = draw(values(dtype))
    return Example(_first_shape(kernel, sizes), layout, seed, scale, sign, specials, tuple(sizes.items()))


def boundary_examples(kernel, dtype: str, exported: bool, budget: int = MAX_ELEMENTS) -> list[Example]:
    """Examples every run sends, whatever Hypothesis draws: size 1, each block boundary, the largest size, and
    every special value."""
    specials = tuple(enumerate(SPECIALS))
    if not kernel.any_shape:
        tops, base = dim_tops(kernel, budget), {d.name: d.example for d in kernel.dims}
        out = []
        for name, top in tops.items():
            low = next(d.min for d in kernel.dims if d.name == name)
            for size in sorted(
                {low, *(b + e for b in kernel.shapes.blocks for e in (-1, 1) if low <= b + e <= top), top}
            ):
                sizes = {**base, name: size}
                out.append(
                    Example(_first_shape(kernel, sizes), "contiguous", 0, 1.0, "mixed", specials, tuple(sizes.items()))
                )
        return out or [
            Example(_first_shape(kernel, base), "contiguous", 0, 1.0, "mixed", specials, tuple(base.items()))
        ]
    if exported:
        top = dynamic_max(kernel, budget)
        lengths = [1, *(b for b in kernel.shapes.blocks + (top,) if b <= top)]
        shapes = [tuple(n if d is None else d for d in kernel.shapes.exported) for n in lengths]
    else:
        multiple = last_dim_multiple(kernel, dtype)
        rank = min(kernel.shapes.ranks)
        lengths = [1, *(b + d for b in kernel.shapes.blocks for d in (-1, 1)), LARGE_SIZES[0]]
        shapes = sorted({_fit([*[1] * (rank - 1), s], multiple, budget) for s in lengths})
    return [Example(shape, "contiguous", 0, 1.0, "mixed", specials) for shape in shapes]


def kernel_examples(kernel, dtype: str, exported: bool, budget: int = MAX_ELEMENTS) -> st.SearchStrategy[Example]:
    """What the fuzz tests draw for a kernel: any shape it admits, or its declared dims; inside an exported
    artifact's range when `exported`."""
    if not kernel.any_shape:
        return declared_examples(kernel, dtype, budget)
    shapes = exported_shapes(kernel, budget) if exported else free_shapes(kernel, dtype, budget)
    return examples(shapes, dtype)


def profile_settings(name: Optional[str]) -> settings:
    if name not in PROFILES:
        raise CompatError(f"unknown Hypothesis profile {name!r} for the fuzz tests; profiles: {', '.join(PROFILES)}")
    return settings.get_profile(name)
