"""How a cell's op becomes a model, and the inputs every stage checks it at.

Three embeddings (`Kernel.embedding`, `Op.embedding`):
- `sandwich`: the write-up's model, Linear(128->64) -> op -> Linear(64->128), eval, weights uniform in [-1, 1] from a
  fixed seed; its input is a batch of 128 features, checked at batch 1, 37 and 1024 and exported over Dim(1..1024).
- `op`: the op alone; its inputs are the kernel's declared tensors at the sizes their dims declare, checked at each of
  their check points and exported with their dynamic dims.
- `module`: a user's nn.Module as shipped (`Op(shipped=Module(cls, ...))`), its parameters part of the model, inputs
  as for `op`; its reference model holds a copy of the same parameters.

Where a declaration has choices (an optional tensor, a Scalar's choices, a OneOf), the model calls the op once per
variant and returns every variant's outputs: one trace, export and package cover them all.

Every process that rebuilds a cell's model (a child, a loader of an AOTI package) gets the same weights and inputs
from the same seed, so an output computed in one process can be compared with eager computed in another.
"""

from __future__ import annotations

import copy
import functools
import operator
from typing import TYPE_CHECKING, Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from ..errors import DeclarationError
from .contract import GIVEN, Module, Tensor

if TYPE_CHECKING:
    from .contract import Entry

IN_FEATURES, HIDDEN = 128, 64
EXAMPLE_BATCH = 8  # the batch the sandwich is traced and exported with
CHECK_BATCHES = (1, 37, 1024)  # batch 1 (0/1 specialisation), an odd middle batch, the dynamic maximum
BATCH_RANGE = (1, 1024)
SEED = 0


def torch_device(device: str) -> str:
    """The torch device behind a device axis name (cpu_interpret is CPU tensors)."""
    return "cpu" if device.startswith("cpu") else device


def as_function(kernel: "Entry", fn: Callable, variants: list[dict] | None = None) -> Callable:
    """`fn` (the op, or the kernel's reference) as a function of the tensors a caller provides, returning the op's
    outputs as a tuple (the tensors it writes into, for an op that returns nothing), every variant's in turn (or
    those of `variants`). Scalars take their defaults, or each of their choices. An any-shape kernel is called with
    its first tensor; the tensors it writes into are allocated like that one."""
    plans = [plan(kernel, v) for v in variants or kernel.variants()]
    return lambda *provided: call_variants(kernel, plans, fn, provided)


def plan(kernel: "Entry", variant: dict[str, Any]) -> tuple:
    """How one variant's arguments are made from the provided tensors, as plain values (traced code meets no object
    of ours): per input, (how, its name, its value): "tensor" the provided one, "written" the provided one, which the
    op writes, "empty_like" / "clone" of the first tensor (an any-shape kernel's others), "value" a scalar or None."""
    first, steps = kernel.tensors[0].name, []
    for spec in kernel.inputs:
        choice = variant[spec.name]
        if choice is not GIVEN:
            steps.append(("value", spec.name, choice))  # a scalar's value, or None for an optional tensor left out
        elif kernel.any_shape and spec.name != first:
            steps.append(("empty_like" if spec.name in kernel.mutates else "clone", spec.name, None))
        else:
            steps.append(("written" if spec.name in kernel.mutates else "tensor", spec.name, None))
    return tuple(steps)


def call_variants(kernel: "Entry", plans: list[tuple], fn: Callable, provided) -> tuple:
    """fn called once per variant; the outputs of all, in order. Between variants, an input the op writes into is
    a copy, so one variant's write is not the next one's input."""
    names, outputs = tuple(t.name for t in kernel.tensors), ()
    for steps in plans:
        outputs += kernel.call(fn, *run_plan(names, steps, provided, copy_written=len(plans) > 1))
    return outputs


def run_plan(names: tuple[str, ...], steps: tuple, provided, copy_written: bool = False) -> list:
    tensors, first, args = dict(zip(names, provided, strict=False)), provided[0], []
    for how, name, value in steps:
        if how == "value":
            args.append(value)
        elif how == "empty_like":
            args.append(torch.empty_like(first))
        elif how == "clone":
            args.append(first.clone())
        else:
            args.append(tensors[name].clone() if how == "written" and copy_written else tensors[name])
    return args


def arguments(kernel: "Entry", provided, variant: dict[str, Any] | None = None) -> list:
    """The op's arguments, in declaration order, from the tensors a caller provides (see as_function), for one
    variant of its choices (the defaults unless given)."""
    steps = plan(kernel, variant or kernel.variants()[0])
    return run_plan(tuple(t.name for t in kernel.tensors), steps, provided)


def declared(kernel: "Entry", fn: Callable, what: str) -> Callable:
    """A callback of the declaration (its reference, error_scale, Module class): what it raises is the
    declaration's fault, a harness error naming it, never the cell's outcome."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DeclarationError:
            raise
        except Exception as exc:  # noqa: BLE001 - named as the declaration's fault
            raise DeclarationError(
                f"{kernel.module}: {kernel.what} {kernel.name!r}: its {what} raised {type(exc).__name__}: {exc}"
            ) from exc

    return call


class KernelSandwich(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.linear1 = torch.nn.Linear(IN_FEATURES, HIDDEN)
        self.linear2 = torch.nn.Linear(HIDDEN, IN_FEATURES)
        self.fn = fn  # hidden activation -> tensor of the same shape: the wrapped kernel, or its eager reference

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.fn(self.linear1(x)))


class OpModule(torch.nn.Module):
    """The op alone: a generated input reaches the kernel as generated (shape, layout, NaN)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)  # the tuple of the op's outputs


class ShippedModule(torch.nn.Module):
    """A user's module as shipped, called with the declared arguments of each variant; its parameters are this
    model's (`module.<name>`), reached through `self`, as export and Dynamo lift them."""

    def __init__(self, kernel: "Entry", module: torch.nn.Module, variants: list[dict] | None = None):
        super().__init__()
        self.module, self.kernel = module, kernel
        self.plans = [plan(kernel, v) for v in variants or kernel.variants()]

    def forward(self, *args):  # named as OpModule's: export's dynamic shapes name them "args"
        return call_variants(self.kernel, self.plans, self.module, args)


class ReferenceModule(torch.nn.Module):
    """The declared reference over a copy of the shipped module's parameters (same names, so gradients compare)."""

    def __init__(self, kernel: "Entry", module: torch.nn.Module, variants: list[dict] | None = None):
        super().__init__()
        self.module, self.kernel = module, kernel
        self.plans = [plan(kernel, v) for v in variants or kernel.variants()]
        self.reference = declared(kernel, kernel.reference, "reference")

    def forward(self, *args):
        return call_variants(self.kernel, self.plans, functools.partial(self.reference, self.module), args)


def shipped_module(kernel: "Entry", spec: Module, dtype: str, device: str) -> torch.nn.Module:
    """The user's module, made from the seed, its floating-point parameters drawn (or `init`), in the cell's dtype."""
    torch.manual_seed(SEED)
    module = declared(kernel, spec.cls, "Module class")(*spec.args, **spec.kwargs)
    with torch.no_grad():
        if spec.init is not None:
            declared(kernel, spec.init, "Module init")(module)
        else:
            for p in module.parameters():
                if p.is_floating_point():
                    p.uniform_(-1.0, 1.0)
    return module.to(device=torch_device(device), dtype=getattr(torch, dtype)).eval()


def pair(kernel: "Entry", op: Any, dtype: str, device: str, embedded: bool = True, variant: dict | None = None):
    """The cell's model around the style's op, and the same model around the eager reference. `embedded=False`:
    the op alone even where the kernel's embedding is the sandwich (the fuzz tests'). `variant`: that variant of
    the declaration's choices alone (a gradient check runs each on inputs of its own: a backward may write into
    what it saved, Liger's SwiGLU does, and the next variant would read what the last one left)."""
    reference = declared(kernel, kernel.reference, "reference")
    only = None if variant is None else [variant]
    if kernel.embedding == "module":
        module = shipped_module(kernel, op, dtype, device)
        return ShippedModule(kernel, module, only), ReferenceModule(kernel, copy.deepcopy(module), only)
    if kernel.embedding == "sandwich" and embedded:
        return sandwich(kernel, op, dtype, device, only), sandwich(kernel, reference, dtype, device, only)
    return OpModule(as_function(kernel, op, only)), OpModule(as_function(kernel, reference, only))


WORKING_PRECISIONS = (torch.float32, torch.float16, torch.bfloat16)
DOWNCASTS = {torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16}


class KeepFloat64(TorchFunctionMode):
    """The reference's float64 run computes the exact value: where the reference casts to a working precision
    (`x.float()`, as a reference that computes at least in float32 does, `.to(torch.float32)`, `dtype=torch.float32`),
    the cast keeps float64. Without it such a reference ran its "float64" run in float32: it overflowed where the
    kernel is exact (a row holding float32's largest value) and underflowed where it is not (my_swish, on the H100)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in DOWNCASTS and args and args[0].is_floating_point():
            return args[0].to(torch.float64)
        if kwargs.get("dtype") in WORKING_PRECISIONS:
            kwargs["dtype"] = torch.float64
        if func is torch.Tensor.to and len(args) > 1 and args[1] in WORKING_PRECISIONS:
            args = (args[0], torch.float64, *args[2:])
        return func(*args, **kwargs)


def in_float64(reference: torch.nn.Module, args) -> tuple | None:
    """The reference model run in float64: its floating parameters, buffers and inputs upcast (the values the cell's
    dtype holds, exactly), its floating outputs as float64. None where the reference cannot run in float64 (code
    that insists on a dtype): the comparison then holds the output to eager's result alone."""
    upcast = tuple(
        a.detach().to(torch.float64, copy=True)
        if isinstance(a, torch.Tensor) and a.is_floating_point()
        else a.clone()
        if isinstance(a, torch.Tensor)
        else a
        for a in args
    )  # copies: it may write into them
    try:
        with KeepFloat64():
            if isinstance(reference, torch.nn.Module):
                state = {
                    name: t.detach().double() if t.is_floating_point() else t
                    for name, t in (*reference.named_parameters(), *reference.named_buffers())
                }
                outputs = torch.func.functional_call(reference, state, upcast)
            else:  # a plain function of the inputs
                outputs = reference(*upcast)
    except DeclarationError:  # the reference raised in float64: it is not the declaration's fault here
        return None
    outputs = tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)
    return tuple(o.double() if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in outputs)


def sandwich(kernel: "Entry", fn: Callable, dtype: str, device: str, variants: list[dict] | None = None):
    """The write-up's model around `fn` (the op, or the reference)."""
    function = as_function(kernel, fn, variants)
    torch.manual_seed(SEED)
    model = KernelSandwich(lambda h: functools.reduce(operator.add, function(h)))
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-1.0, 1.0)
    return model.to(device=torch_device(device), dtype=getattr(torch, dtype)).eval()


def output_names(kernel: "Entry") -> list[str]:
    """How each of the model's outputs is called in a comparison: its index, after its variant where there are
    several (the first variant, the defaults, unnamed)."""
    count = len(kernel.outputs) or len(kernel.mutates)
    return [
        ", ".join(filter(None, (kernel.variant_label(v), f"output {i}")))
        for v in kernel.variants()
        for i in range(count)
    ]


def error_scales(kernel: "Entry", reference_model: torch.nn.Module, provided) -> tuple:
    """The declared error_scale of every variant's arguments, one tensor per output, in the outputs' order; it
    takes the reference's parameters (a shipped module's first)."""
    if kernel.error_scale is None:
        raise DeclarationError(f"{kernel.module}: {kernel.what} {kernel.name!r} declares no error_scale")
    fn = declared(kernel, kernel.error_scale, "error_scale")
    if isinstance(reference_model, ReferenceModule):
        fn = functools.partial(fn, reference_model.module)
    scales = ()
    for variant in kernel.variants():
        result = fn(*arguments(kernel, provided, variant))
        scales += tuple(result) if isinstance(result, (tuple, list)) else (result,)
    return scales


def make_input(batch: int, dtype: str, device: str) -> torch.Tensor:
    """The sandwich's input: a batch of IN_FEATURES features."""
    gen = torch.Generator().manual_seed(SEED + batch)
    return torch.randn(batch, IN_FEATURES, generator=gen).to(device=torch_device(device), dtype=getattr(torch, dtype))


def shape_of(spec: Tensor, sizes: dict[str, int]) -> tuple[int, ...]:
    if spec.dims is None:
        raise DeclarationError(f"input {spec.name!r} declares no dims, so it has no shape at given sizes")
    return tuple(sizes[d] if isinstance(d, str) else d for d in spec.dims)


INTEGER_VALUES = (0, 8)  # an integer tensor's range where it declares none


def integer_range(spec: Tensor, sizes: dict[str, int]) -> tuple[int, int]:
    """An integer tensor's [low, high), its bounds resolved (a bound may name a dim: targets of a vocabulary)."""
    low, high = (sizes[b] if isinstance(b, str) else b for b in spec.values or INTEGER_VALUES)
    return low, high


def in_domain(values: torch.Tensor, domain) -> torch.Tensor:
    """Float64 draws moved into a tensor's declared domain (Tensor.domain): the sign for a half line, a sigmoid for
    an interval (open: its ends are not values a caller passes)."""
    if domain is None:
        return values
    if domain == "positive":
        return values.abs()
    if domain == "negative":
        return -values.abs()
    low, high = (0.0, 1.0) if domain == "unit_interval" else domain
    return low + (high - low) * torch.sigmoid(values)


def bounded(domain) -> bool:
    return domain is not None and domain not in ("positive", "negative")


@functools.lru_cache(maxsize=8)
def _drawn(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def standard_normal(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Float64 standard normal draws from `seed`, the same in every process; a copy of what this process drew last
    time for the same (shape, seed): a fuzz example's inputs are made anew for every artifact it checks (an op may
    write into them), and drawing them again took more of a CPU fuzz test than its compiles (randn of 2**20 values,
    up to nine times an example)."""
    return _drawn(tuple(shape), seed).clone()


def make_inputs(kernel: "Entry", sizes: dict[str, int], dtype: str, device: str) -> tuple[torch.Tensor, ...]:
    """The op embedding's inputs at `sizes` (dimension name -> size): standard normal values from a seed that
    depends on the sizes, moved into the tensor's declared domain, in the cell's dtype unless the tensor declares
    its own (an integer one: uniform in its range)."""
    seed = SEED + sum(sizes.values())
    out = []
    for i, spec in enumerate(kernel.tensors):
        kind = getattr(torch, spec.dtype or dtype)
        if kind.is_floating_point:
            t = in_domain(standard_normal(shape_of(spec, sizes), seed + i), spec.domain)
        else:
            gen = torch.Generator().manual_seed(seed + i)
            t = torch.randint(*integer_range(spec, sizes), shape_of(spec, sizes), generator=gen)
        out.append(t.to(device=torch_device(device), dtype=kind))
    return tuple(out)


def check_points(kernel: "Entry") -> list[dict[str, int]]:
    """The sizes every stage checks an op-embedded kernel at: the i-th check of every dim (a dim with fewer checks
    keeps its last)."""
    count = max([len(d.sizes()) for d in kernel.dims] + [1])
    return [{d.name: d.sizes()[min(i, len(d.sizes()) - 1)] for d in kernel.dims} for i in range(count)]


def example_point(kernel: "Entry") -> dict[str, int]:
    return {d.name: d.example for d in kernel.dims}


def batched(kernel: "Entry") -> bool:
    """Checked at batches: the sandwich, and an any-shape op alone (as a (batch, 64) hidden activation)."""
    return kernel.checked_at_batches


def points(kernel: "Entry") -> list:
    """The check points of the kernel's embedding: batches, or dim sizes."""
    return list(CHECK_BATCHES) if batched(kernel) else check_points(kernel)


def _hidden(batch: int, dtype: str, device: str, domain=None) -> torch.Tensor:
    """An any-shape op's own input: what the sandwich would hand it, in the input's declared domain."""
    gen = torch.Generator().manual_seed(SEED + batch)
    values = in_domain(torch.randn(batch, HIDDEN, generator=gen), domain)
    return values.to(device=torch_device(device), dtype=getattr(torch, dtype))


def inputs_at(kernel: "Entry", point, dtype: str, device: str) -> tuple[torch.Tensor, ...]:
    if kernel.embedding == "sandwich":
        return (make_input(point, dtype, device),)
    if kernel.any_shape:
        return (_hidden(point, dtype, device, kernel.tensors[0].domain),)
    return make_inputs(kernel, point, dtype, device)


def label(point) -> str:
    return f"batch {point}" if isinstance(point, int) else ", ".join(f"{k}={v}" for k, v in point.items())


def example(kernel: "Entry"):
    """The point export traces at: a batch, or dim sizes."""
    return EXAMPLE_BATCH if batched(kernel) else example_point(kernel)


def example_inputs(kernel: "Entry", dtype: str, device: str) -> tuple[torch.Tensor, ...]:
    """What export traces with."""
    return inputs_at(kernel, example(kernel), dtype, device)


def dynamic_shapes(kernel: "Entry", tops: dict[str, int] | None = None):
    """Export's dynamic dims for the model's inputs: the sandwich's batch, or the kernel's dynamic dims (one
    torch.export.Dim per name, shared by every tensor that has it; `tops` may lower their maximum)."""
    if batched(kernel):
        batch = {0: torch.export.Dim("batch", min=BATCH_RANGE[0], max=BATCH_RANGE[1])}
        return (batch,) if kernel.embedding == "sandwich" else op_dynamic_shapes([batch])
    tops = tops or {}
    dims = {d.name: torch.export.Dim(d.name, min=d.min, max=tops.get(d.name, d.max)) for d in kernel.dims if d.dynamic}
    return op_dynamic_shapes(
        [{axis: dims[d] for axis, d in enumerate(spec.dims or ()) if d in dims} for spec in kernel.tensors]
    )


def op_dynamic_shapes(per_tensor: list[dict]):
    """OpModule takes its tensors as *args: export wants their dims under "args"."""
    return {"args": tuple(dims or None for dims in per_tensor)}
