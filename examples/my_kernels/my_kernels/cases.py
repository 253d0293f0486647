"""The kernels this repository tests, declared once each (its pytest ini names this module: compat_cases)."""

import math

import torch
import triton
import triton.language as tl

from compat import Dim, Kernel, Scalar, Tensor, Tunable, register_kernel


@triton.jit
def leaky_relu_kernel(x_ptr, out_ptr, slope, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.where(x > 0, x, x * slope)
    tl.store(out_ptr + offsets, y, mask=mask)


def launch_leaky_relu(kernel, meta, x: torch.Tensor, slope: float) -> torch.Tensor:
    assert x.is_contiguous(), "leaky_relu needs a contiguous input"
    out = torch.empty_like(x)
    n = x.numel()
    kernel[lambda m: (triton.cdiv(n, m["BLOCK_SIZE"]),)](x, out, slope, n, **meta)
    return out


def leaky_relu_reference(x: torch.Tensor, slope: float) -> torch.Tensor:
    return torch.nn.functional.leaky_relu(x.float(), slope).to(x.dtype)


register_kernel(Kernel(
    name="leaky_relu",
    doc="leaky_relu(x, slope): a tensor of rows and columns, a float scalar, BLOCK_SIZE chosen by autotune styles.",
    jit=leaky_relu_kernel, launch=launch_leaky_relu, reference=leaky_relu_reference,
    inputs=(Tensor("x", ("rows", "cols")), Scalar("slope", 0.01)),
    dims=(Dim("rows", example=8, checks=(1, 37, 1024), max=1024), Dim("cols", example=300)),
    meta=(("BLOCK_SIZE", 1024),),
    tunable=Tunable({"BLOCK_SIZE": (256, 1024)}, key=("n_elements",), threshold=4096),
    flops=lambda x, slope: 2 * math.prod(x),
))
