"""Wrapping-style axis: the ways people hand a Triton kernel to PyTorch.

A style turns a `Kernel` into a unary tensor function (`build`) and names the graph node that proves a traced graph
holds the kernel (`graph_marker`). Adding a style means adding one `Style(...)` to `STYLES` below.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import torch
from torch.library import triton_op, wrap_triton

from .kernels import Kernel

OP_NAMESPACE = "compat"


@dataclass(frozen=True)
class Style:
    name: str
    doc: str
    build: Callable[[Kernel], Callable[[torch.Tensor], torch.Tensor]]
    graph_marker: Callable[[Kernel], str]  # a substring of the traced node's target


def _raw_jit(kernel: Kernel):
    def op(x: torch.Tensor) -> torch.Tensor:
        return kernel.launch(kernel.jit, x)

    return op


def _op_name(kernel: Kernel, style: str) -> str:
    return f"{kernel.name}_{style}"


def _triton_op(kernel: Kernel, style: str = "triton_op"):
    # Custom ops are registered once per process; tests build styles repeatedly, hence the cache below.
    def impl(x: torch.Tensor) -> torch.Tensor:
        return kernel.launch(wrap_triton(kernel.jit), x)

    return triton_op(f"{OP_NAMESPACE}::{_op_name(kernel, style)}", mutates_args={})(impl)


def _triton_op_cpu_fallback(kernel: Kernel):
    op = _triton_op(kernel, "triton_op_cpu_fallback")

    @op.register_kernel("cpu")
    def _(x: torch.Tensor) -> torch.Tensor:
        return kernel.reference(x.float()).to(x.dtype)

    return op


def _custom_op_marker(style: str) -> Callable[[Kernel], str]:
    return lambda kernel: f"{OP_NAMESPACE}.{_op_name(kernel, style)}"


STYLES: dict[str, Style] = {
    s.name: s
    for s in (
        Style(
            name="raw_jit",
            doc="`kernel[grid](...)` launched from a plain Python function.",
            build=_raw_jit,
            graph_marker=lambda kernel: "triton_kernel_wrapper",
        ),
        Style(
            name="triton_op",
            doc="`@torch.library.triton_op(..., mutates_args={})` calling `torch.library.wrap_triton(kernel)[grid](...)`.",
            build=_triton_op,
            graph_marker=_custom_op_marker("triton_op"),
        ),
        Style(
            name="triton_op_cpu_fallback",
            doc='`triton_op` as above plus `register_kernel("cpu")` computing the eager reference in float32.',
            build=_triton_op_cpu_fallback,
            graph_marker=_custom_op_marker("triton_op_cpu_fallback"),
        ),
    )
}


@functools.cache
def build_op(style_name: str, kernel_name: str):
    from .kernels import KERNELS

    return STYLES[style_name].build(KERNELS[kernel_name])
