"""Bare Triton kernels of this repository, each with its launcher and eager reference, for the suite's styles to
wrap (declared in my_kernels/cases.py). Each uses a part of the contract real kernels need:

- `matmul_act_kernel`: the matmul tutorial's string constexpr `ACTIVATION`, autotuned over explicit configs;
- `layer_norm_kernel`: an optional bias, and a forward that saves mean and rstd for its backward;
- `rotary_kernel`: flash-attention's `seqlen_offsets: Union[int, Tensor]`, and `interleaved` / `conjugate` branches;
- `swiglu_kernel`: a backward that writes its gradients into its saved inputs (Liger-Kernel's SwiGLU).
"""

from typing import Optional, Union

import torch
import triton
import triton.language as tl

BLOCK = 1024


def _contiguous(*tensors):
    for t in tensors:
        assert t is None or t.is_contiguous(), "my_kernels needs contiguous inputs"


# ---- matmul with a string constexpr ------------------------------------------------------------------------------


@triton.jit
def matmul_act_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    rm = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(axis=1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(kk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        if a_ptr.dtype.element_ty == tl.float32:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc += tl.dot(a, b)
    if ACTIVATION == "leaky_relu":
        acc = tl.where(acc >= 0, acc, 0.01 * acc)
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def launch_matmul_act(kernel, meta, a: torch.Tensor, b: torch.Tensor, activation: str) -> torch.Tensor:
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda m: (triton.cdiv(M, m["BLOCK_M"]), triton.cdiv(N, m["BLOCK_N"]))  # noqa: E731
    kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        ACTIVATION=activation,
        **meta,
    )
    return c


def matmul_act_reference(a: torch.Tensor, b: torch.Tensor, activation: str) -> torch.Tensor:
    c = a.float() @ b.float()
    return (torch.nn.functional.leaky_relu(c, 0.01) if activation == "leaky_relu" else c).to(a.dtype)


def matmul_act_error_scale(a: torch.Tensor, b: torch.Tensor, activation: str) -> tuple[torch.Tensor]:
    return ((a.float().abs() @ b.float().abs()),)  # a dot product errs relative to its terms' magnitudes


# ---- layer norm: an optional bias, mean and rstd saved for the backward -------------------------------------------


@triton.jit
def layer_norm_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    mean_ptr,
    rstd_ptr,
    stride,
    n_cols,
    eps,
    HAS_BIAS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centered = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
    y = centered * rstd * tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_BIAS:
        y += tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def layer_norm_backward_kernel(
    x_ptr, w_ptr, mean_ptr, rstd_ptr, dy_ptr, dx_ptr, dw_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean, rstd = tl.load(mean_ptr + row), tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = w * dy
    dx = (wdy - (xhat * tl.sum(xhat * wdy, axis=0) + tl.sum(wdy, axis=0)) / n_cols) * rstd
    tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    tl.store(dw_ptr + row * n_cols + cols, dy * xhat, mask=mask)


def launch_layer_norm(
    kernel, meta, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], eps: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _contiguous(x, weight, bias)
    rows, cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    kernel[(rows,)](
        x,
        weight,
        weight if bias is None else bias,
        y,
        mean,
        rstd,
        x.stride(0),
        cols,
        eps,
        HAS_BIAS=bias is not None,
        BLOCK_SIZE=triton.next_power_of_2(cols),
    )
    return y, mean, rstd  # the output, then what the backward needs


def launch_layer_norm_backward(
    kernel,
    meta,
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor],
    eps: float,
    mean: torch.Tensor,
    rstd: torch.Tensor,
    grad: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    grad = grad.contiguous()  # autograd may hand an expanded gradient
    rows, cols = x.shape
    dx = torch.empty_like(x)
    dw_rows = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    kernel[(rows,)](
        x, weight, mean, rstd, grad, dx, dw_rows, x.stride(0), cols, BLOCK_SIZE=triton.next_power_of_2(cols)
    )
    return dx, dw_rows.sum(0).to(weight.dtype)


def layer_norm_reference(
    x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], eps: float
) -> torch.Tensor:
    return torch.nn.functional.layer_norm(
        x.float(), x.shape[-1:], weight.float(), None if bias is None else bias.float(), eps
    ).to(x.dtype)


def layer_norm_error_scale(
    x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], eps: float
) -> tuple[torch.Tensor]:
    """An element of (x - mean) * rstd errs by the rounding of x and of the mean, not by its own size: near zero the
    subtraction cancels, so each element is measured against (|x| + |mean|) * rstd * |weight|."""
    xf = x.float()
    mean = xf.mean(-1, keepdim=True)
    rstd = torch.rsqrt(xf.var(-1, unbiased=False, keepdim=True) + eps)
    scale = (xf.abs() + mean.abs()) * rstd * weight.float().abs()
    return (scale if bias is None else scale + bias.float().abs(),)


# ---- rotary embedding: a union argument and two branch flags ------------------------------------------------------


@triton.jit
def rotary_kernel(
    x_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    offsets_ptr,
    offset,
    seqlen,
    half,
    OFFSETS_TENSOR: tl.constexpr,
    INTERLEAVED: tl.constexpr,
    CONJUGATE: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    """One (batch, position) row of x (batch, seqlen, 2 * half); the position's angle row is position + offset."""
    b, s = tl.program_id(0), tl.program_id(1)
    if OFFSETS_TENSOR:
        position = s + tl.load(offsets_ptr + b)
    else:
        position = s + offset
    i = tl.arange(0, BLOCK_SIZE)
    mask = i < half
    cos = tl.load(cos_ptr + position * half + i, mask=mask, other=0.0).to(tl.float32)
    sin = tl.load(sin_ptr + position * half + i, mask=mask, other=0.0).to(tl.float32)
    if CONJUGATE:
        sin = -sin
    row = (b * seqlen + s) * 2 * half
    if INTERLEAVED:
        first, second = row + 2 * i, row + 2 * i + 1
    else:
        first, second = row + i, row + half + i
    x0 = tl.load(x_ptr + first, mask=mask, other=0.0).to(tl.float32)
    x1 = tl.load(x_ptr + second, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + first, (x0 * cos - x1 * sin).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + second, (x0 * sin + x1 * cos).to(out_ptr.dtype.element_ty), mask=mask)


def launch_rotary(
    kernel,
    meta,
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    seqlen_offsets: Union[int, torch.Tensor],
    interleaved: bool,
    conjugate: bool,
) -> torch.Tensor:
    _contiguous(x, cos, sin)
    batch, seqlen, dim = x.shape
    out = torch.empty_like(x)
    is_tensor = isinstance(seqlen_offsets, torch.Tensor)
    kernel[(batch, seqlen)](
        x,
        cos,
        sin,
        out,
        seqlen_offsets if is_tensor else x,
        0 if is_tensor else seqlen_offsets,
        seqlen,
        dim // 2,
        OFFSETS_TENSOR=is_tensor,
        INTERLEAVED=interleaved,
        CONJUGATE=conjugate,
        BLOCK_SIZE=triton.next_power_of_2(dim // 2),
    )
    return out


def _rotated(x, cos, sin, seqlen_offsets, interleaved, conjugate, magnitude=False) -> torch.Tensor:
    """The rotation in float32; `magnitude`: each output's |x0 cos| + |x1 sin| instead, what its error scales with."""
    batch, seqlen, dim = x.shape
    position = torch.arange(seqlen, device=x.device)[None, :]
    position = position + (
        seqlen_offsets.long()[:, None] if isinstance(seqlen_offsets, torch.Tensor) else seqlen_offsets
    )
    c, s = cos.float()[position], sin.float()[position] * (-1.0 if conjugate else 1.0)
    xf = x.float()
    x0, x1 = (xf[..., 0::2], xf[..., 1::2]) if interleaved else (xf[..., : dim // 2], xf[..., dim // 2 :])
    if magnitude:
        x0, x1, c, s = x0.abs(), x1.abs(), c.abs(), s.abs()
        o0, o1 = x0 * c + x1 * s, x0 * s + x1 * c
    else:
        o0, o1 = x0 * c - x1 * s, x0 * s + x1 * c
    return torch.stack((o0, o1), dim=-1).flatten(-2) if interleaved else torch.cat((o0, o1), dim=-1)


def rotary_reference(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    seqlen_offsets: Union[int, torch.Tensor],
    interleaved: bool,
    conjugate: bool,
) -> torch.Tensor:
    return _rotated(x, cos, sin, seqlen_offsets, interleaved, conjugate).to(x.dtype)


def rotary_error_scale(x, cos, sin, seqlen_offsets, interleaved, conjugate) -> tuple[torch.Tensor]:
    """x0 cos - x1 sin cancels: each output element errs relative to |x0 cos| + |x1 sin|."""
    return (_rotated(x, cos, sin, seqlen_offsets, interleaved, conjugate, magnitude=True),)


# ---- SwiGLU: a backward that writes into its inputs -------------------------------------------------------------


@triton.jit
def swiglu_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(c_ptr + offsets, (a * tl.sigmoid(a) * b).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_backward_kernel(dc_ptr, a_ptr, b_ptr, n, BLOCK_SIZE: tl.constexpr):
    """Recomputes silu(a) and writes da into a's memory and db into b's, as Liger-Kernel's SwiGLU does."""
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    dc = tl.load(dc_ptr + offsets, mask=mask).to(tl.float32)
    a = tl.load(a_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=mask).to(tl.float32)
    sig = tl.sigmoid(a)
    silu = a * sig
    tl.store(a_ptr + offsets, (dc * (silu * (1.0 - sig) + sig) * b).to(a_ptr.dtype.element_ty), mask=mask)
    tl.store(b_ptr + offsets, (dc * silu).to(b_ptr.dtype.element_ty), mask=mask)


def launch_swiglu(kernel, meta, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _contiguous(a, b)
    c = torch.empty_like(a)
    kernel[(triton.cdiv(a.numel(), BLOCK),)](a, b, c, a.numel(), BLOCK_SIZE=BLOCK)
    return c


def launch_swiglu_backward(
    kernel, meta, a: torch.Tensor, b: torch.Tensor, grad: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    grad = grad.contiguous()
    kernel[(triton.cdiv(a.numel(), BLOCK),)](grad, a, b, a.numel(), BLOCK_SIZE=BLOCK)
    return a, b  # the gradients, where the kernel wrote them


def swiglu_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (torch.nn.functional.silu(a.float()) * b.float()).to(a.dtype)
