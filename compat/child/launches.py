"""What an op as shipped launched in eager, and whether a traced graph holds it: the `as_shipped` style's proof that a
stage traced the op, not something else.

A torch.library op proves itself by its own node (its overload, `ns.name.default`); a Triton kernel launched outside
any such op by a kernel-wrapper node of that kernel (`triton_kernel_wrapper_*`, named by its jit function); an op that
decomposition replaced by its kernels (`decompose_custom_triton_ops=True`) by the wrapper nodes of every kernel it
launched. What the op launched is recorded by running it eagerly once: a dispatch mode sees each op it calls, a hook on
Triton's launch sees each kernel, and which op it ran inside.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table
from torch.utils._python_dispatch import TorchDispatchMode
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction

TORCH_NAMESPACES = ("aten", "prims", "prim")  # torch's own ops: what the op is made of, not what it ships


@dataclass
class Launched:
    ops: dict[str, list[str]] = field(default_factory=dict)  # op overload ("ns.name.default") -> kernels inside it
    kernels: list[str] = field(default_factory=list)  # Triton kernels launched outside any recorded op
    # The autotuners the call went through (the objects, first call first): an op's own, found from what it launches
    autotuners: list = field(default_factory=list, compare=False)

    def describe(self) -> dict:
        return {"ops": {op: sorted(set(k)) for op, k in self.ops.items()}, "kernels": sorted(set(self.kernels))}

    @property
    def nothing(self) -> bool:
        return not self.ops and not self.kernels


def kernel_name(kernel) -> str:
    """A launched kernel's name: its @triton.jit function's, under any autotune or heuristics wrapper."""
    jit_classes = tuple(_launchers())
    while not isinstance(kernel, jit_classes) and hasattr(kernel, "fn"):
        kernel = kernel.fn
    return getattr(getattr(kernel, "fn", kernel), "__name__", repr(kernel))


def _launchers() -> list[Any]:
    """The classes whose `run` launches a kernel: Triton's jit function, and its interpreter's."""
    classes = [JITFunction]
    with contextlib.suppress(ImportError):  # optional: a Triton without the interpreter has no such class
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    return classes


class _Recorder(TorchDispatchMode):
    def __init__(self, launched: Launched):
        super().__init__()
        self.launched, self.inside = launched, list[str]()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if name.split(".")[0] in TORCH_NAMESPACES or self.inside:
            return func(*args, **(kwargs or {}))
        self.launched.ops.setdefault(name, [])
        self.inside.append(name)
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.inside.pop()


def record(fn, *args) -> Launched:
    """Run fn(*args) eagerly and record the torch.library ops it called and the Triton kernels it launched."""
    launched = Launched()
    recorder = _Recorder(launched)
    originals = {cls: cls.run for cls in _launchers()}

    def hooked(original):
        def run(self, *a, **kw):
            name = kernel_name(self)
            (launched.ops[recorder.inside[-1]] if recorder.inside else launched.kernels).append(name)
            return original(self, *a, **kw)

        return run

    def tuned(original):
        def run(self, *a, **kw):
            if not any(t is self for t in launched.autotuners):
                launched.autotuners.append(self)
            return original(self, *a, **kw)

        return run

    tuner_run = Autotuner.run
    for cls, original in originals.items():
        cls.run = hooked(original)
    Autotuner.run = tuned(tuner_run)
    try:
        with recorder, torch.no_grad():
            fn(*args)
    finally:
        for cls, original in originals.items():
            cls.run = original
        Autotuner.run = tuner_run
    return launched


def graph_kernels(graph_modules) -> set[str]:
    """The Triton kernels a traced graph launches: the kernel of each kernel-wrapper node (nested graphs too)."""
    names = set()
    for gm in graph_modules:
        for module in gm.modules():
            if isinstance(module, torch.fx.GraphModule):
                for node in module.graph.nodes:
                    if node.op == "call_function" and "kernel_idx" in node.kwargs:
                        names.add(kernel_name(kernel_side_table.get_kernel(node.kwargs["kernel_idx"])))
    return names


def missing(launched: Launched, targets: list[str], kernels: set[str]) -> list[str]:
    """What the op launched in eager that the graph does not hold."""
    held = set(targets)
    # An op is held by its overload (`ns.name.default`) or, as Dynamo records a call of torch.ops.ns.name, its packet.
    absent = [
        f"the op {op}"
        for op, inside in launched.ops.items()
        if op not in held and op.rpartition(".")[0] not in held and not (inside and set(inside) <= kernels)
    ]
    return absent + [f"the Triton kernel {k}" for k in sorted(set(launched.kernels) - kernels)]
