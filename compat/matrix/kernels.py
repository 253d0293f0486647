"""Kernel axis: the registry, and the suite's own kernels, each with its eager PyTorch reference.

Your kernels go in a module of your own (see compat.matrix.contract for what to declare), registered with
`register_kernel(Kernel(...))` and named in your pytest ini as `compat_cases = mypkg.compat_cases`; the matrix
multiplies each over every wrapping style it admits, stage, dtype and device.
"""

import math
from typing import Optional, TypeVar

import torch
import triton
import triton.language as tl
from torch import Tensor as TorchTensor

from ..errors import RegistryError
from .contract import Backward, Dim, Entry, Kernel, Op, Scalar, Shapes, Tensor, Tunable, check_schema

KERNELS: dict[str, Entry] = {}  # the kernel axis: bare kernels and ops as shipped, by name


E = TypeVar("E", Kernel, Op)


def _register(entry: E, kind: type, how: str) -> E:
    if not isinstance(entry, kind):
        raise RegistryError(f"{how}: expected a compat.{kind.__name__}, got {type(entry).__name__}")
    known = KERNELS.get(entry.name)
    if known is not None and known is not entry:
        raise RegistryError(f"{entry.module}: {entry.what} {entry.name!r} is already declared by {known.module}")
    KERNELS[entry.name] = entry
    return entry


def register_kernel(kernel: Kernel) -> Kernel:
    """Add a kernel to the matrix. Its name must be new; its signature must be one torch.library can take."""
    if isinstance(kernel, Kernel):
        check_schema(kernel)
    return _register(kernel, Kernel, "register_kernel")


def register_op(op: Op) -> Op:
    """Add an op as shipped to the matrix (the kernel axis; its style is `as_shipped`). Its name must be new."""
    return _register(op, Op, "register_op")


def _grid(n_elements):
    return lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)


def _contiguous(*tensors):
    # The kernels do 1-D pointer arithmetic: a strided view would be read wrongly.
    for t in tensors:
        assert t.is_contiguous(), "Input tensor must be contiguous"


# ---- the write-up's SiLU, and three variations of its signature or launch ---------------------------------------


@triton.jit
def _sigmoid_f32(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def silu_kernel(in_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr + offsets, mask=mask)
    x_f32 = x.to(tl.float32)  # float32 math, rounded once, as torch's own silu does
    tl.store(out_ptr + offsets, (x_f32 * _sigmoid_f32(x_f32)).to(x.dtype), mask=mask)


@triton.jit
def silu_backward_kernel(in_ptr, grad_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr + offsets, mask=mask)
    g = tl.load(grad_ptr + offsets, mask=mask).to(tl.float32)
    x_f32 = x.to(tl.float32)
    s = _sigmoid_f32(x_f32)
    tl.store(out_ptr + offsets, (g * s * (1.0 + x_f32 * (1.0 - s))).to(x.dtype), mask=mask)


@triton.jit
def sigmoid_silu_kernel(in_ptr, sig_ptr, silu_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr + offsets, mask=mask)
    x_f32 = x.to(tl.float32)
    s = _sigmoid_f32(x_f32)
    tl.store(sig_ptr + offsets, s.to(x.dtype), mask=mask)
    tl.store(silu_ptr + offsets, (x_f32 * s).to(x.dtype), mask=mask)


@triton.jit
def silu_tma_kernel(in_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    m = tl.program_id(axis=0) * BLOCK_M
    n = tl.program_id(axis=1) * BLOCK_N
    x = in_desc.load([m, n])
    x_f32 = x.to(tl.float32)
    out_desc.store([m, n], (x_f32 * _sigmoid_f32(x_f32)).to(x.dtype))


def launch_silu(kernel, meta, x: TorchTensor) -> TorchTensor:
    _contiguous(x)
    out = torch.empty_like(x)
    kernel[_grid(x.numel())](x, out, x.numel(), **meta)
    return out


def launch_silu_out(kernel, meta, x: TorchTensor, out: TorchTensor) -> None:
    _contiguous(x, out)
    kernel[_grid(x.numel())](x, out, x.numel(), **meta)


def launch_silu_backward(kernel, meta, x: TorchTensor, grad: TorchTensor) -> tuple[TorchTensor]:
    grad = grad.contiguous()  # autograd may hand an expanded gradient
    _contiguous(x)
    out = torch.empty_like(x)
    kernel[_grid(x.numel())](x, grad, out, x.numel(), **meta)
    return (out,)


def launch_sigmoid_silu(kernel, meta, x: TorchTensor) -> tuple[TorchTensor, TorchTensor]:
    _contiguous(x)
    sig, silu = torch.empty_like(x), torch.empty_like(x)
    kernel[_grid(x.numel())](x, sig, silu, x.numel(), **meta)
    return sig, silu


TMA_BLOCK = (16, 64)


def launch_silu_tma(kernel, meta, x: TorchTensor) -> TorchTensor:
    from triton.tools.tensor_descriptor import TensorDescriptor  # Triton >= 3.4 only: _needs_host_tma says so first

    _contiguous(x)
    out = torch.empty_like(x)
    x2, out2 = x.view(-1, x.shape[-1]), out.view(-1, x.shape[-1])
    grid = (triton.cdiv(x2.shape[0], TMA_BLOCK[0]), triton.cdiv(x2.shape[1], TMA_BLOCK[1]))
    kernel[grid](
        TensorDescriptor.from_tensor(x2, list(TMA_BLOCK)),
        TensorDescriptor.from_tensor(out2, list(TMA_BLOCK)),
        BLOCK_M=TMA_BLOCK[0],
        BLOCK_N=TMA_BLOCK[1],
    )
    return out


def silu_reference(x: TorchTensor) -> TorchTensor:
    return torch.nn.functional.silu(x.float()).to(x.dtype)


def silu_out_reference(x: TorchTensor, out: TorchTensor) -> None:
    out.copy_(silu_reference(x))


def sigmoid_silu_reference(x: TorchTensor) -> tuple[TorchTensor, TorchTensor]:
    return torch.sigmoid(x.float()).to(x.dtype), silu_reference(x)


def _needs_host_tma(device: str) -> Optional[str]:
    try:
        import triton.tools.tensor_descriptor  # noqa: F401 - optional: the host TMA API, Triton >= 3.4
    except ImportError:
        return f"triton {triton.__version__} has no triton.tools.tensor_descriptor (host TMA API, Triton >= 3.4)"
    if device == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        return f"host TMA needs compute capability 9.0 (Hopper) or newer; this GPU is {torch.cuda.get_device_name()}"
    return None


# ---- kernels with the shapes of real ones -----------------------------------------------------------------------


@triton.jit
def silu_mul_kernel(x_ptr, y_ptr, out_ptr, scale, n_elements, BLOCK_SIZE: tl.constexpr):
    """SwiGLU's gate: silu(x) * y * scale, two inputs and a float scalar."""
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (x * _sigmoid_f32(x) * y * scale).to(out_ptr.dtype.element_ty), mask=mask)


def launch_silu_mul(kernel, meta, x: TorchTensor, y: TorchTensor, scale: float) -> TorchTensor:
    _contiguous(x, y)
    out = torch.empty_like(x)
    kernel[_grid(x.numel())](x, y, out, scale, x.numel(), **meta)
    return out


def silu_mul_reference(x: TorchTensor, y: TorchTensor, scale: float) -> TorchTensor:
    return (torch.nn.functional.silu(x.float()) * y.float() * scale).to(x.dtype)


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    """One row per program; the row's masked tail loads 0 (`other=`), so the sum of squares is the row's own."""
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * out_row_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_backward_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    dx_ptr,
    dw_ptr,
    x_row_stride,
    dy_row_stride,
    dx_row_stride,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    """dx for one row, and the row's share of dw (summed over rows by the launcher)."""
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * dy_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    g = dy * w
    dx = rstd * g - x * (rstd * rstd * rstd) * tl.sum(g * x, axis=0) / n_cols
    tl.store(dx_ptr + row * dx_row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    tl.store(dw_ptr + row * n_cols + cols, dy * x * rstd, mask=mask)


def _rows(x: TorchTensor) -> None:
    # Rows may be strided (the kernel takes the row stride); each row must be contiguous.
    assert x.dim() == 2 and x.stride(-1) == 1, "rms_norm needs a 2-D input whose rows are contiguous (stride 1)"


def launch_rms_norm(kernel, meta, x: TorchTensor, weight: TorchTensor, eps: float) -> TorchTensor:
    _rows(x)
    _contiguous(weight)
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    kernel[(x.shape[0],)](
        x,
        weight,
        out,
        x.stride(0),
        out.stride(0),
        x.shape[1],
        eps,
        BLOCK_SIZE=triton.next_power_of_2(x.shape[1]),
        **meta,
    )
    return out


def launch_rms_norm_backward(
    kernel, meta, x: TorchTensor, weight: TorchTensor, eps: float, grad: TorchTensor
) -> tuple[TorchTensor, TorchTensor]:
    _rows(x)
    grad = grad.contiguous()  # autograd may hand an expanded gradient
    dx = torch.empty_like(x, memory_format=torch.contiguous_format)
    dw_rows = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    kernel[(x.shape[0],)](
        x,
        weight,
        grad,
        dx,
        dw_rows,
        x.stride(0),
        grad.stride(0),
        dx.stride(0),
        x.shape[1],
        eps,
        BLOCK_SIZE=triton.next_power_of_2(x.shape[1]),
        **meta,
    )
    return dx, dw_rows.sum(0).to(weight.dtype)


def rms_norm_reference(x: TorchTensor, weight: TorchTensor, eps: float) -> TorchTensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


@triton.jit
def matmul_kernel(
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
):
    """C = A @ B on a 2-D grid of tiles, float32 accumulation; masked edges load 0."""
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
            acc += tl.dot(a, b, input_precision="ieee")  # eager float32 matmul does not use TF32 by default
        else:
            acc += tl.dot(a, b)
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def launch_matmul(kernel, meta, a: TorchTensor, b: TorchTensor) -> TorchTensor:
    assert a.dim() == b.dim() == 2 and a.shape[1] == b.shape[0], "matmul needs (M, K) @ (K, N)"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), **meta)
    return c


def matmul_reference(a: TorchTensor, b: TorchTensor) -> TorchTensor:
    return (a.float() @ b.float()).to(a.dtype)


def matmul_error_scale(a: TorchTensor, b: TorchTensor) -> tuple[TorchTensor]:
    # Each output is a sum of K products; summed in another order it errs by a few ulps of the terms, not of the sum.
    return (a.double().abs() @ b.double().abs(),)


@triton.jit
def axpy_inplace_kernel(x_ptr, y_ptr, alpha, n_elements, BLOCK_SIZE: tl.constexpr):
    """y += alpha * x, written into y."""
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, (y.to(tl.float32) + alpha * x).to(y.dtype), mask=mask)


def launch_axpy_inplace(kernel, meta, x: TorchTensor, y: TorchTensor, alpha: float) -> None:
    _contiguous(x, y)
    kernel[_grid(y.numel())](x, y, alpha, y.numel(), **meta)


def axpy_inplace_reference(x: TorchTensor, y: TorchTensor, alpha: float) -> None:
    y.copy_((y.float() + alpha * x.float()).to(y.dtype))


SIGNATURE_WHY = (
    "it varies the op's signature or launch, which only the raw, triton_op and custom_op styles handle apart"
)


def signature_styles(style) -> bool:
    """Kernels that vary the op's signature or launch run the styles whose schema handling differs."""
    return style.basic


def signature_or_inplace_autotune_styles(style) -> bool:
    """The in-place kernel with an output it overwrites whole also runs the autotune styles that name a written
    pointer."""
    return style.basic or "tunable_inplace" in style.needs


TUNING = Tunable({"BLOCK_SIZE": (256, 1024)}, key=("n_elements",), threshold=4096)
ROWS = Dim("rows", example=8, checks=(1, 37, 1024), max=1024)  # as the write-up's batch

for _kernel in (
    Kernel(
        name="silu",
        doc="The write-up's SiLU: masked 1-D load, float32 math, store in the input dtype, BLOCK_SIZE 1024; its "
        "gradient is a second kernel.",
        jit=silu_kernel,
        launch=launch_silu,
        reference=silu_reference,
        embedding="sandwich",
        meta=(("BLOCK_SIZE", 1024),),
        tunable=TUNING,
        flops=lambda x: 4 * math.prod(x),
        backward=Backward(silu_backward_kernel, launch_silu_backward),
        shapes=Shapes(blocks=(256, 1024)),
    ),
    Kernel(
        name="silu_out",
        doc="SiLU written into a caller's `out` tensor: the op mutates `out` (`mutates_args={'out'}`), returns "
        "nothing.",
        jit=silu_kernel,
        launch=launch_silu_out,
        reference=silu_out_reference,
        embedding="sandwich",
        inputs=(Tensor("x"), Tensor("out")),
        outputs=(),
        mutates=("out",),
        meta=(("BLOCK_SIZE", 1024),),
        tunable=TUNING,
        styles=signature_or_inplace_autotune_styles,
        styles_why=SIGNATURE_WHY + "; and the autotune styles that restore or zero the buffer it writes",
    ),
    Kernel(
        name="sigmoid_silu",
        doc="One kernel, two outputs: sigmoid(x) and silu(x); the model adds them.",
        jit=sigmoid_silu_kernel,
        launch=launch_sigmoid_silu,
        reference=sigmoid_silu_reference,
        embedding="sandwich",
        outputs=("sig", "silu"),
        meta=(("BLOCK_SIZE", 1024),),
        styles=signature_styles,
        styles_why=SIGNATURE_WHY,
    ),
    Kernel(
        name="silu_tma",
        doc="SiLU over 2-D tiles read and written through host-side TMA descriptors "
        "(`triton.tools.tensor_descriptor.TensorDescriptor.from_tensor`); Hopper or newer.",
        jit=silu_tma_kernel,
        launch=launch_silu_tma,
        reference=silu_reference,
        embedding="sandwich",
        styles=signature_styles,
        styles_why=SIGNATURE_WHY,
        requires=_needs_host_tma,
        # TMA needs 16-byte aligned row strides; the exported artifact keeps its rows static so export need not
        # prove that alignment for a symbolic size.
        shapes=Shapes(blocks=TMA_BLOCK, last_dim_bytes=16, exported=(None, TMA_BLOCK[1])),
    ),
    Kernel(
        name="silu_mul",
        doc="SwiGLU's gate, silu(x) * y * scale: two tensor inputs and a float scalar, elementwise over the rows.",
        jit=silu_mul_kernel,
        launch=launch_silu_mul,
        reference=silu_mul_reference,
        inputs=(Tensor("x", ("rows", "cols")), Tensor("y", ("rows", "cols")), Scalar("scale", 0.5)),
        dims=(ROWS, Dim("cols", example=1000)),
        meta=(("BLOCK_SIZE", 1024),),
        tunable=TUNING,
        flops=lambda x, y, scale: 6 * math.prod(x),
    ),
    Kernel(
        name="rms_norm",
        doc="RMSNorm over each row: a masked tail reduced with `other=0.0`, explicit row strides (row-sliced views "
        "are valid input), and a backward kernel for x and the weight.",
        jit=rms_norm_kernel,
        launch=launch_rms_norm,
        reference=rms_norm_reference,
        inputs=(Tensor("x", ("rows", "cols")), Tensor("weight", ("cols",)), Scalar("eps", 1e-6)),
        dims=(ROWS, Dim("cols", example=1000)),
        flops=lambda x, weight, eps: 4 * math.prod(x),
        backward=Backward(rms_norm_backward_kernel, launch_rms_norm_backward),
    ),
    Kernel(
        name="matmul",
        doc="A small matmul on a 2-D grid of tiles, float32 accumulation, `@triton.autotune` keyed on M and N.",
        jit=matmul_kernel,
        launch=launch_matmul,
        reference=matmul_reference,
        inputs=(Tensor("a", ("m", "k")), Tensor("b", ("k", "n"))),
        outputs=("c",),
        dims=(Dim("m", example=8, checks=(1, 37, 1024), max=1024), Dim("k", example=64), Dim("n", example=96)),
        meta=(("BLOCK_M", 32), ("BLOCK_N", 32), ("BLOCK_K", 32)),
        tunable=Tunable({"BLOCK_M": (16, 64), "BLOCK_N": (32, 64)}, key=("M", "N"), threshold=64),
        flops=lambda a, b: 2 * a[0] * a[1] * b[1],
        error_scale=matmul_error_scale,
    ),
    Kernel(
        name="axpy_inplace",
        doc="y += alpha * x, written into its input y (`mutates_args={'y'}`), returning nothing.",
        jit=axpy_inplace_kernel,
        launch=launch_axpy_inplace,
        reference=axpy_inplace_reference,
        inputs=(Tensor("x", ("n",)), Tensor("y", ("n",)), Scalar("alpha", 2.0)),
        outputs=(),
        mutates=("y",),
        dims=(Dim("n", example=4099, checks=(1, 4099, 65536), max=65536),),
        meta=(("BLOCK_SIZE", 1024),),
        tunable=TUNING,
        flops=lambda x, y, alpha: 2 * math.prod(x),
    ),
):
    register_kernel(_kernel)
