"""Wrapping-style axis: the ways people hand a Triton kernel to PyTorch.

A style turns a `Kernel` into an op with the kernel's signature (`build`) and names the graph node that proves a
traced graph holds the kernel (`graph_marker`). Adding a style means adding one `Style(...)` to `STYLES` below.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import torch
import triton
from torch.library import triton_op, wrap_triton

from .kernels import KERNELS, Kernel

OP_NAMESPACE = "compat"
RAW_MARKER = "triton_kernel_wrapper"  # the higher-order op Dynamo puts a traced raw launch into


@dataclass(frozen=True)
class Style:
    name: str
    doc: str
    build: Callable[[Kernel], Callable]
    graph_marker: Callable[[Kernel], str]  # a substring of the traced node's target
    needs: frozenset[str] = frozenset()  # Kernel.features() the style uses
    custom_op: bool = False  # registers a torch.library op, so torch.library.opcheck applies
    cpu_kernel: bool = False  # has a CPU path, so it runs on the plain `cpu` device
    flop_formula: bool = False  # registers a FLOP formula, which flop_count then holds the count to

    def applies_to(self, kernel: Kernel) -> bool:
        return self.needs <= kernel.features() and (kernel.styles is None or self.name in kernel.styles)


def op_name(kernel: Kernel, style: str) -> str:
    return f"{kernel.name}_{style}"


def _launcher(kernel: Kernel, launched, meta=None, wrap: bool = False):
    """A function with the kernel's annotated signature that launches `launched` (torch.library reads the
    annotations through functools.wraps). `wrap`: call `wrap_triton(launched)` at each launch, inside the traced
    code, as users write it (Dynamo handles the call to wrap_triton, not a wrapper object made beforehand)."""
    meta = dict(kernel.meta if meta is None else meta)

    @functools.wraps(kernel.signature)
    def impl(*args, **kwargs):
        return kernel.launch(wrap_triton(launched) if wrap else launched, meta, *args, **kwargs)

    return impl


def _library_op(kernel: Kernel, style: str, impl):
    return triton_op(f"{OP_NAMESPACE}::{op_name(kernel, style)}", mutates_args=kernel.mutates)(impl)


# ---- the decorated kernels autotune / heuristics styles launch ----

SIZE_KEY = ["n_elements"]  # the launch argument autotune keys on and the heuristic reads


def _autotuned(jit, kernel: Kernel, over_block: bool = True):
    (param, choices), = kernel.tunable.items()
    configs = ([triton.Config({param: c}) for c in choices] if over_block
               else [triton.Config({}, num_warps=w) for w in (2, 4)])
    return triton.autotune(configs=configs, key=SIZE_KEY)(jit)


def _heuristic(jit, kernel: Kernel):
    (param, choices), = kernel.tunable.items()
    small, large = min(choices), max(choices)
    return triton.heuristics({param: lambda args: small if args[SIZE_KEY[0]] <= 4096 else large})(jit)


# ---- builders ----

def _raw_jit(kernel: Kernel):
    return _launcher(kernel, kernel.jit)


def _wrap_triton(kernel: Kernel):
    return _launcher(kernel, kernel.jit, wrap=True)


def _triton_op(kernel: Kernel, style: str = "triton_op"):
    return _library_op(kernel, style, _launcher(kernel, kernel.jit, wrap=True))


def _custom_op(kernel: Kernel):
    op = torch.library.custom_op(f"{OP_NAMESPACE}::{op_name(kernel, 'custom_op')}",
                                 mutates_args=kernel.mutates)(_launcher(kernel, kernel.jit))
    op.register_fake(kernel.reference)  # the reference only allocates and computes with torch ops
    return op


def _triton_op_cpu_fallback(kernel: Kernel):
    op = _triton_op(kernel, "triton_op_cpu_fallback")
    op.register_kernel("cpu")(kernel.reference)
    return op


def _triton_op_flops(kernel: Kernel):
    from torch.utils.flop_counter import register_flop_formula

    op = _triton_op(kernel, "triton_op_flops")

    @register_flop_formula(getattr(torch.ops, OP_NAMESPACE).__getattr__(op_name(kernel, "triton_op_flops")))
    def _(x_shape, *args, **kwargs) -> int:
        return kernel.flops_per_element * math.prod(x_shape)

    return op


def _triton_op_subclass(kernel: Kernel):
    from torch.testing._internal.two_tensor import TwoTensor

    op = _triton_op(kernel, "triton_op_subclass")

    # The op receives a wrapper subclass holding two tensors; its __torch_dispatch__ runs the op on each. Both halves
    # hold x, so averaging them is exact and a half computed wrongly shows as a mismatch.
    def through_subclass(x):
        y = op(TwoTensor(x, x.clone()))
        return y.a * 0.5 + y.b * 0.5

    return through_subclass


def _autotune_raw(kernel: Kernel):
    return _launcher(kernel, _autotuned(kernel.jit, kernel), meta={})


def _autotune_triton_op(kernel: Kernel):
    return _library_op(kernel, "autotune_triton_op",
                       _launcher(kernel, _autotuned(kernel.jit, kernel), meta={}, wrap=True))


def _heuristics_raw(kernel: Kernel):
    return _launcher(kernel, _heuristic(kernel.jit, kernel), meta={})


def _heuristics_triton_op(kernel: Kernel):
    return _library_op(kernel, "heuristics_triton_op",
                       _launcher(kernel, _heuristic(kernel.jit, kernel), meta={}, wrap=True))


def _autotune_heuristics_triton_op(kernel: Kernel):
    # @triton.autotune over @triton.heuristics: the heuristic picks the block, autotune the warps.
    fn = _autotuned(_heuristic(kernel.jit, kernel), kernel, over_block=False)
    return _library_op(kernel, "autotune_heuristics_triton_op", _launcher(kernel, fn, meta={}, wrap=True))


def _heuristics_autotune_triton_op(kernel: Kernel):
    # @triton.heuristics over @triton.autotune: the decorator order torch's tracing does not look through.
    fn = _heuristic(_autotuned(kernel.jit, kernel, over_block=False), kernel)
    return _library_op(kernel, "heuristics_autotune_triton_op", _launcher(kernel, fn, meta={}, wrap=True))


def _autograd_function(kernel: Kernel):
    bwd = kernel.backward
    meta = dict(kernel.meta)

    class KernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return kernel.launch(kernel.jit, meta, x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return bwd.launch(bwd.jit, meta, x, grad)

    return KernelFunction.apply


def _register_autograd(kernel: Kernel):
    bwd = kernel.backward
    meta = dict(kernel.meta)
    op = _triton_op(kernel, "register_autograd")

    @triton_op(f"{OP_NAMESPACE}::{op_name(kernel, 'register_autograd')}_backward", mutates_args=())
    def backward_op(x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        return bwd.launch(wrap_triton(bwd.jit), meta, x, grad)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return backward_op(x, grad)

    op.register_autograd(backward, setup_context=setup_context)
    return op


def _op_marker(style: str) -> Callable[[Kernel], str]:
    return lambda kernel: f"{OP_NAMESPACE}.{op_name(kernel, style)}"


def _raw(kernel: Kernel) -> str:
    return RAW_MARKER


STYLES: dict[str, Style] = {
    s.name: s
    for s in (
        Style("raw_jit", "`kernel[grid](...)` launched from a plain Python function.", _raw_jit, _raw),
        Style("wrap_triton", "`torch.library.wrap_triton(kernel)[grid](...)` from a plain Python function, outside "
                             "any op.", _wrap_triton, _raw),
        Style("triton_op", "`@torch.library.triton_op(...)` calling `torch.library.wrap_triton(kernel)[grid](...)`.",
              _triton_op, _op_marker("triton_op"), custom_op=True),
        Style("custom_op", "An opaque `@torch.library.custom_op` launching the raw kernel, with `register_fake` "
                           "computing the eager reference.", _custom_op, _op_marker("custom_op"), custom_op=True),
        Style("triton_op_cpu_fallback", '`triton_op` plus `register_kernel("cpu")` computing the eager reference.',
              _triton_op_cpu_fallback, _op_marker("triton_op_cpu_fallback"), custom_op=True, cpu_kernel=True),
        Style("triton_op_flops", "`triton_op` plus `torch.utils.flop_counter.register_flop_formula`.",
              _triton_op_flops, _op_marker("triton_op_flops"), custom_op=True, flop_formula=True),
        Style("triton_op_subclass", "`triton_op` called on a wrapper tensor subclass holding two tensors "
                                    "(`TwoTensor`), built inside the model.", _triton_op_subclass,
              _op_marker("triton_op_subclass"), needs=frozenset({"unary"}), custom_op=True),
        Style("autotune_raw", "`@triton.autotune` (two BLOCK_SIZE configs, keyed on n_elements), launched raw.",
              _autotune_raw, _raw, needs=frozenset({"tunable"})),
        Style("autotune_triton_op", "The autotuned kernel through `triton_op` + `wrap_triton`.", _autotune_triton_op,
              _op_marker("autotune_triton_op"), needs=frozenset({"tunable"}), custom_op=True),
        Style("heuristics_raw", "`@triton.heuristics` choosing BLOCK_SIZE from n_elements, launched raw.",
              _heuristics_raw, _raw, needs=frozenset({"tunable"})),
        Style("heuristics_triton_op", "The heuristics-only kernel through `triton_op` + `wrap_triton`.",
              _heuristics_triton_op, _op_marker("heuristics_triton_op"), needs=frozenset({"tunable"}),
              custom_op=True),
        Style("autotune_heuristics_triton_op", "`@triton.autotune` (num_warps) over `@triton.heuristics` "
                                               "(BLOCK_SIZE), through `triton_op`.", _autotune_heuristics_triton_op,
              _op_marker("autotune_heuristics_triton_op"), needs=frozenset({"tunable"}), custom_op=True),
        Style("heuristics_autotune_triton_op", "`@triton.heuristics` (BLOCK_SIZE) over `@triton.autotune` "
                                               "(num_warps), through `triton_op`.", _heuristics_autotune_triton_op,
              _op_marker("heuristics_autotune_triton_op"), needs=frozenset({"tunable"}), custom_op=True),
        Style("autograd_function", "`torch.autograd.Function` whose forward and backward launch raw kernels.",
              _autograd_function, _raw, needs=frozenset({"backward", "unary"})),
        Style("register_autograd", "`triton_op` + `register_autograd` whose backward is itself a `triton_op`.",
              _register_autograd, _op_marker("register_autograd"), needs=frozenset({"backward", "unary"}),
              custom_op=True),
    )
}


@functools.cache
def build_op(style_name: str, kernel_name: str):
    """The style's op for a kernel; cached because a custom op is registered once per process."""
    return STYLES[style_name].build(KERNELS[kernel_name])
