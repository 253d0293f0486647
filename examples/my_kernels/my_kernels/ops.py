"""my_kernels' library as its users call it: one op of each kind a kernel library ships.

- `rms_norm`: a `torch.library.triton_op` with `register_autograd`, whose backward is another triton_op;
- `gelu_tanh`: an opaque `torch.library.custom_op` launching the raw kernel, with a fake;
- `scaled_add`: a `torch.library.Library` fragment, `define` plus CPU and CUDA `impl`s and a fake (vLLM's idiom);
- `Swish.apply`: an `autograd.Function` whose forward and backward launch raw kernels (Liger-Kernel's idiom);
- `RMSNorm`: an `nn.Module` with a weight, calling `torch.ops.my_kernels.rms_norm`;
- `bias_relu`: a plain Python function launching a raw kernel, its bias optional.
"""

import math
from typing import Optional

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton
from torch.utils.flop_counter import register_flop_formula

BLOCK = 1024


def _grid(n):
    return (triton.cdiv(n, BLOCK),)


# ---- rms_norm: triton_op + register_autograd ----------------------------------------------------------------------


@triton.jit
def _rms_norm_fwd(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rms_norm_bwd(x_ptr, w_ptr, dy_ptr, dx_ptr, dw_ptr, stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    g = dy * w
    dx = rstd * g - x * (rstd * rstd * rstd) * tl.sum(g * x, axis=0) / n_cols
    tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    tl.store(dw_ptr + row * n_cols + cols, dy * x * rstd, mask=mask)


@triton_op("my_kernels::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    wrap_triton(_rms_norm_fwd)[(rows,)](
        x, weight.contiguous(), y, x.stride(0), cols, eps, BLOCK_SIZE=triton.next_power_of_2(cols)
    )
    return y


@triton_op("my_kernels::rms_norm_backward", mutates_args=())
def rms_norm_backward(
    x: torch.Tensor, weight: torch.Tensor, eps: float, grad: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    x, grad = x.contiguous(), grad.contiguous()
    dx = torch.empty_like(x)
    dw_rows = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    rows, cols = x.shape
    wrap_triton(_rms_norm_bwd)[(rows,)](
        x, weight.contiguous(), grad, dx, dw_rows, x.stride(0), cols, eps, BLOCK_SIZE=triton.next_power_of_2(cols)
    )
    return dx, dw_rows.sum(0).to(weight.dtype)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_grad(ctx, grad):
    x, weight = ctx.saved_tensors
    dx, dw = rms_norm_backward(x, weight, ctx.eps, grad)
    return dx, dw, None


rms_norm.register_autograd(_rms_norm_grad, setup_context=_rms_norm_setup)


@register_flop_formula(torch.ops.my_kernels.rms_norm)
def _rms_norm_flops(x_shape, weight_shape, eps=1e-6, *args, out_shape=None, **kwargs) -> int:
    return 4 * math.prod(x_shape)  # square, mean, scale, weight


# ---- gelu_tanh: an opaque custom_op ----------------------------------------------------------------------------


@triton.jit
def _gelu_tanh(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    # 0.5 * (1 + tanh(u)) is sigmoid(2u): no cancellation where tanh(u) is near -1
    tl.store(y_ptr + offsets, (x * tl.sigmoid(2.0 * inner)).to(y_ptr.dtype.element_ty), mask=mask)


@torch.library.custom_op("my_kernels::gelu_tanh", mutates_args=())
def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    _gelu_tanh[_grid(x.numel())](x, y, x.numel(), BLOCK_SIZE=BLOCK)
    return y


@gelu_tanh.register_fake
def _(x):
    return torch.empty_like(x)


# ---- scaled_add: a Library fragment ----------------------------------------------------------------------------


@triton.jit
def _scaled_add(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (x + alpha * y).to(out_ptr.dtype.element_ty), mask=mask)


def _scaled_add_impl(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    _scaled_add[_grid(x.numel())](x, y, out, alpha, x.numel(), BLOCK_SIZE=BLOCK)
    return out


LIBRARY = torch.library.Library("my_kernels", "FRAGMENT")  # kept for the process: a collected Library unregisters
LIBRARY.define("scaled_add(Tensor x, Tensor y, float alpha=1.0) -> Tensor")
LIBRARY.impl("scaled_add", _scaled_add_impl, "CUDA")
LIBRARY.impl("scaled_add", _scaled_add_impl, "CPU")  # Triton's interpreter runs the kernel on CPU tensors
torch.library.register_fake("my_kernels::scaled_add", lambda x, y, alpha=1.0: torch.empty_like(x), lib=LIBRARY)
scaled_add = torch.ops.my_kernels.scaled_add


# ---- Swish: an autograd.Function launching raw kernels -----------------------------------------------------------


@triton.jit
def _swish_fwd(x_ptr, y_ptr, beta, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(y_ptr + offsets, (x / (1.0 + tl.exp(-beta * x))).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _swish_bwd(x_ptr, dy_ptr, dx_ptr, beta, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    dy = tl.load(dy_ptr + offsets, mask=mask).to(tl.float32)
    s = 1.0 / (1.0 + tl.exp(-beta * x))
    tl.store(dx_ptr + offsets, (dy * (s + beta * x * s * (1.0 - s))).to(dx_ptr.dtype.element_ty), mask=mask)


class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta=1.0):
        x = x.contiguous()
        y = torch.empty_like(x)
        _swish_fwd[_grid(x.numel())](x, y, beta, x.numel(), BLOCK_SIZE=BLOCK)
        ctx.save_for_backward(x)
        ctx.beta = beta
        return y

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty_like(x)
        _swish_bwd[_grid(x.numel())](x, dy, dx, ctx.beta, x.numel(), BLOCK_SIZE=BLOCK)
        return dx, None


# ---- RMSNorm: an nn.Module --------------------------------------------------------------------------------------


class RMSNorm(torch.nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x):
        return torch.ops.my_kernels.rms_norm(x, self.weight, self.eps)


# ---- bias_relu: a plain function -------------------------------------------------------------------------------


@triton.jit
def _bias_relu(x_ptr, b_ptr, y_ptr, n, n_cols, HAS_BIAS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    if HAS_BIAS:
        x += tl.load(b_ptr + offsets % n_cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0).to(y_ptr.dtype.element_ty), mask=mask)


def bias_relu(x: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    b = x if bias is None else bias.contiguous()  # not read without a bias
    _bias_relu[_grid(x.numel())](x, b, y, x.numel(), x.shape[-1], HAS_BIAS=bias is not None, BLOCK_SIZE=BLOCK)
    return y
