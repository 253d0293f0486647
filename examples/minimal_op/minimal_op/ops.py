"""The op as users call it: `triton_op` + `wrap_triton` (torch.compile, export and AOTInductor see the kernel),
`register_autograd` with the gradient as a second triton_op."""

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

BLOCK = 256


@triton.jit
def _forward(x_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * tl.sigmoid(x) * scale).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _backward(x_ptr, g_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    s = tl.sigmoid(x)
    tl.store(out_ptr + offs, (g * scale * (s + x * s * (1 - s))).to(out_ptr.dtype.element_ty), mask=mask)


@triton_op("minimal_op::scaled_silu", mutates_args=())
def scaled_silu(x: torch.Tensor, scale: float) -> torch.Tensor:
    x = x.contiguous()  # the kernel reads flat memory: a view (transposed, sliced) is copied first
    out = torch.empty_like(x)
    n = x.numel()
    wrap_triton(_forward)[(triton.cdiv(n, BLOCK),)](x, out, scale, n, BLOCK=BLOCK)
    return out


@triton_op("minimal_op::scaled_silu_backward", mutates_args=())
def scaled_silu_backward(x: torch.Tensor, g: torch.Tensor, scale: float) -> torch.Tensor:
    x, g = x.contiguous(), g.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    wrap_triton(_backward)[(triton.cdiv(n, BLOCK),)](x, g, out, scale, n, BLOCK=BLOCK)
    return out


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


def _grad(ctx, g):
    (x,) = ctx.saved_tensors
    return scaled_silu_backward(x, g, ctx.scale), None


scaled_silu.register_autograd(_grad, setup_context=_setup)
