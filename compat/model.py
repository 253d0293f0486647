"""How a cell's op becomes a model, and the inputs every stage checks it at.

Two embeddings (`Kernel.embedding`):
- `sandwich`: the write-up's model, Linear(128->64) -> op -> Linear(64->128), eval, weights uniform in [-1, 1] from a
  fixed seed; its input is a batch of 128 features, checked at batch 1, 37 and 1024 and exported over Dim(1..1024).
- `op`: the op alone; its inputs are the kernel's declared tensors at the sizes its dims declare, checked at each of
  their check points and exported with their dynamic dims.

Every process that rebuilds a cell's model (a child, a loader of an AOTI package) gets the same weights and inputs
from the same seed, so an output computed in one process can be compared with eager computed in another.
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Callable

import torch

from .contract import Tensor

if TYPE_CHECKING:
    from .contract import Kernel

IN_FEATURES, HIDDEN = 128, 64
EXAMPLE_BATCH = 8  # the batch the sandwich is traced and exported with
CHECK_BATCHES = (1, 37, 1024)  # batch 1 (0/1 specialisation), an odd middle batch, the dynamic maximum
BATCH_RANGE = (1, 1024)
SEED = 0


def torch_device(device: str) -> str:
    """The torch device behind a device axis name (cpu_interpret is CPU tensors)."""
    return "cpu" if device.startswith("cpu") else device


def as_function(kernel: "Kernel", fn: Callable) -> Callable:
    """`fn` (the op, or the kernel's reference) as a function of the tensors a caller provides, returning the op's
    outputs as a tuple (the tensors it writes into, for an op that returns nothing). Scalars take their defaults. An
    any-shape kernel is called with its first tensor; the tensors it writes into are allocated like that one."""
    return lambda *provided: kernel.call(fn, *arguments(kernel, provided))


def arguments(kernel: "Kernel", provided) -> list:
    """The op's arguments, in declaration order, from the tensors a caller provides (see as_function)."""
    given, first, first_tensor = iter(provided), provided[0], kernel.tensors[0].name
    args = []
    for spec in kernel.inputs:
        if not isinstance(spec, Tensor):
            args.append(spec.default)
        elif kernel.any_shape and spec.name != first_tensor:
            args.append(torch.empty_like(first) if spec.name in kernel.mutates else first.clone())
        else:
            args.append(next(given))
    return args


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


def build(kernel: "Kernel", fn: Callable, dtype: str, device: str) -> torch.nn.Module:
    """The cell's model around `fn` (the op, or the reference), as the kernel's embedding says."""
    function = as_function(kernel, fn)
    if kernel.embedding == "op":
        return OpModule(function)
    torch.manual_seed(SEED)
    model = KernelSandwich(lambda h: functools.reduce(operator.add, function(h)))
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-1.0, 1.0)
    return model.to(device=torch_device(device), dtype=getattr(torch, dtype)).eval()


def make_input(batch: int, dtype: str, device: str) -> torch.Tensor:
    """The sandwich's input: a batch of IN_FEATURES features."""
    gen = torch.Generator().manual_seed(SEED + batch)
    return torch.randn(batch, IN_FEATURES, generator=gen).to(device=torch_device(device), dtype=getattr(torch, dtype))


def shape_of(spec: Tensor, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(sizes[d] if isinstance(d, str) else d for d in spec.dims)


def make_inputs(kernel: "Kernel", sizes: dict[str, int], dtype: str, device: str) -> tuple[torch.Tensor, ...]:
    """The op embedding's inputs at `sizes` (dimension name -> size): standard normal values from a seed that
    depends on the sizes, in the cell's dtype unless the tensor declares its own."""
    seed = SEED + sum(sizes.values())
    out = []
    for i, spec in enumerate(kernel.tensors):
        gen = torch.Generator().manual_seed(seed + i)
        t = torch.randn(shape_of(spec, sizes), generator=gen, dtype=torch.float64)
        out.append(t.to(device=torch_device(device), dtype=getattr(torch, spec.dtype or dtype)))
    return tuple(out)


def check_points(kernel: "Kernel") -> list[dict[str, int]]:
    """The sizes every stage checks an op-embedded kernel at: the i-th check of every dim (a dim with fewer checks
    keeps its last)."""
    count = max([len(d.sizes()) for d in kernel.dims] + [1])
    return [{d.name: d.sizes()[min(i, len(d.sizes()) - 1)] for d in kernel.dims} for i in range(count)]


def example_point(kernel: "Kernel") -> dict[str, int]:
    return {d.name: d.example for d in kernel.dims}


def batched(kernel: "Kernel") -> bool:
    """Checked at batches: the sandwich, and an any-shape op alone (as a (batch, 64) hidden activation)."""
    return kernel.embedding == "sandwich" or kernel.any_shape


def points(kernel: "Kernel") -> list:
    """The check points of the kernel's embedding: batches, or dim sizes."""
    return list(CHECK_BATCHES) if batched(kernel) else check_points(kernel)


def _hidden(batch: int, dtype: str, device: str) -> torch.Tensor:
    """An any-shape op's own input: what the sandwich would hand it."""
    gen = torch.Generator().manual_seed(SEED + batch)
    return torch.randn(batch, HIDDEN, generator=gen).to(device=torch_device(device), dtype=getattr(torch, dtype))


def inputs_at(kernel: "Kernel", point, dtype: str, device: str) -> tuple[torch.Tensor, ...]:
    if kernel.embedding == "sandwich":
        return (make_input(point, dtype, device),)
    if kernel.any_shape:
        return (_hidden(point, dtype, device),)
    return make_inputs(kernel, point, dtype, device)


def label(point) -> str:
    return f"batch {point}" if isinstance(point, int) else ", ".join(f"{k}={v}" for k, v in point.items())


def example(kernel: "Kernel"):
    """The point export traces at: a batch, or dim sizes."""
    return EXAMPLE_BATCH if batched(kernel) else example_point(kernel)


def example_inputs(kernel: "Kernel", dtype: str, device: str) -> tuple[torch.Tensor, ...]:
    """What export traces with."""
    return inputs_at(kernel, example(kernel), dtype, device)


def dynamic_shapes(kernel: "Kernel", tops: dict[str, int] | None = None):
    """Export's dynamic dims for the model's inputs: the sandwich's batch, or the kernel's dynamic dims (one
    torch.export.Dim per name, shared by every tensor that has it; `tops` may lower their maximum)."""
    if batched(kernel):
        batch = {0: torch.export.Dim("batch", min=BATCH_RANGE[0], max=BATCH_RANGE[1])}
        return (batch,) if kernel.embedding == "sandwich" else op_dynamic_shapes([batch])
    tops = tops or {}
    dims = {d.name: torch.export.Dim(d.name, min=d.min, max=tops.get(d.name, d.max)) for d in kernel.dims if d.dynamic}
    return op_dynamic_shapes([{axis: dims[d] for axis, d in enumerate(spec.dims) if d in dims}
                              for spec in kernel.tensors])


def op_dynamic_shapes(per_tensor: list[dict]):
    """OpModule takes its tensors as *args: export wants their dims under "args"."""
    return {"args": tuple(dims or None for dims in per_tensor)}
