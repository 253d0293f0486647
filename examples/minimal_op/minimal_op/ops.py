"""The op as users call it: `triton_op` + `wrap_triton` (torch.compile, export and AOTInductor see the kernel),
`register_autograd` with the gradient as a second triton_op.

The kernels read their inputs through strides: eagerly and under torch.compile (which guards on strides) any layout
is read right, without a copy. An exported program holds the launch as export traced it on the contiguous example,
strides included, and neither it nor its AOTInductor package checks an input's strides: a caller hands those
contiguous inputs (the GPU fuzz tests found transposed inputs read wrongly under aoti_* and decompose_*, on an H200,
torch 2.11, with a `.contiguous()` inside the op and with these strides alike; the gate's rows explain it)."""

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

BLOCK = 256


@triton.jit
def _forward(x_ptr, out_ptr, scale, cols, x_row, x_col, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * x_row + offs * x_col, mask=mask).to(tl.float32)
    tl.store(out_ptr + row * cols + offs, (x * tl.sigmoid(x) * scale).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _backward(x_ptr, g_ptr, out_ptr, scale, cols, x_row, x_col, g_row, g_col, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * x_row + offs * x_col, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + row * g_row + offs * g_col, mask=mask).to(tl.float32)
    s = tl.sigmoid(x)
    tl.store(out_ptr + row * cols + offs, (g * scale * (s + x * s * (1 - s))).to(out_ptr.dtype.element_ty), mask=mask)


def _grid(x: torch.Tensor) -> tuple[int, int]:
    return (x.shape[0], triton.cdiv(x.shape[1], BLOCK))


@triton_op("minimal_op::scaled_silu", mutates_args=())
def scaled_silu(x: torch.Tensor, scale: float) -> torch.Tensor:
    """scale * silu(x) for a 2-D x of any layout; the result is contiguous."""
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    wrap_triton(_forward)[_grid(x)](x, out, scale, x.shape[1], x.stride(0), x.stride(1), BLOCK=BLOCK)
    return out


@triton_op("minimal_op::scaled_silu_backward", mutates_args=())
def scaled_silu_backward(x: torch.Tensor, g: torch.Tensor, scale: float) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    strides = (x.stride(0), x.stride(1), g.stride(0), g.stride(1))
    wrap_triton(_backward)[_grid(x)](x, g, out, scale, x.shape[1], *strides, BLOCK=BLOCK)
    return out


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


def _grad(ctx, g):
    (x,) = ctx.saved_tensors
    return scaled_silu_backward(x, g, ctx.scale), None


scaled_silu.register_autograd(_grad, setup_context=_setup)
