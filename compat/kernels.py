"""Kernel axis: each Triton kernel with its eager PyTorch reference and the signature its ops get.

Adding a kernel of your own means adding one `Kernel(...)` to `KERNELS` below: the matrix multiplies it over every
wrapping style it allows, stage, dtype and device.

No `from __future__ import annotations` here: `torch.library` reads each signature's annotations as real types.
"""

from dataclasses import dataclass
from typing import Callable, Optional

import torch
import triton
import triton.language as tl
from torch import Tensor


def _unary(op, h):
    return op(h)


@dataclass(frozen=True)
class Backward:
    """A gradient kernel: `launch(kernel, meta, x, grad) -> grad_x` (checked against eager autograd of the
    kernel's reference, in compile_backward)."""
    jit: object
    launch: Callable


@dataclass(frozen=True)
class Shapes:
    """The inputs a kernel admits, for generated examples (compat.strategies) and its op-level artifacts."""
    ranks: tuple[int, ...] = (1, 2, 3)
    # Sizes at which the launch's tiling changes: examples go to size-1, size and size+1 of each.
    blocks: tuple[int, ...] = (1024,)
    last_dim_bytes: int = 1  # the last dimension's byte size must be a multiple of this (TMA: 16)
    # The input of the exported op-level artifact: None is a dynamic dimension (from 1 up to the element budget),
    # an int a static one.
    exported: tuple[Optional[int], ...] = (None,)


@dataclass(frozen=True)
class Kernel:
    name: str
    doc: str
    jit: object  # the @triton.jit function
    # launch(kernel, meta, *args): calls `kernel[grid](..., **meta)`. `kernel` is the jit function, an autotuned or
    # heuristics-wrapped one, or wrap_triton(...) of one; `meta` holds the constexprs the wrapper does not choose.
    launch: Callable
    # Eager PyTorch function with the op's signature: the kernel must match it; CPU fallbacks and fake kernels run it.
    reference: Callable
    # Annotated prototype of the op (`torch.library` infers the schema from it) and the arguments the op mutates.
    signature: Callable
    dtypes: tuple[str, ...] = ("float32", "float16", "bfloat16")
    mutates: tuple[str, ...] = ()
    # How the model calls an op of this signature on its hidden activation h, returning one tensor.
    use: Callable[[Callable, Tensor], Tensor] = _unary
    backward: Optional[Backward] = None
    meta: tuple[tuple[str, int], ...] = (("BLOCK_SIZE", 1024),)  # launch constexprs when no decorator chooses them
    # The launch constexprs autotune / heuristics styles may choose from; None: the kernel takes no such tuning.
    tunable: Optional[dict] = None
    flops_per_element: int = 4  # what `register_flop_formula` reports for the flop-counting style
    styles: Optional[tuple[str, ...]] = None  # None: every style whose needs the kernel meets
    requires: Callable[[str], Optional[str]] = lambda device: None  # a reason the kernel cannot run on a device
    shapes: Shapes = Shapes()

    def features(self) -> frozenset[str]:
        have = {"backward": self.backward is not None, "tunable": self.tunable is not None,
                "unary": not self.mutates and self.use is _unary}
        return frozenset(k for k, v in have.items() if v)


def _grid(n_elements):
    return lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)


def _contiguous(*tensors):
    # The kernels do 1-D pointer arithmetic: a strided view would be read wrongly.
    for t in tensors:
        assert t.is_contiguous(), "Input tensor must be contiguous"


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


def launch_silu(kernel, meta, x: Tensor) -> Tensor:
    _contiguous(x)
    out = torch.empty_like(x)
    kernel[_grid(x.numel())](x, out, x.numel(), **meta)
    return out


def launch_silu_out(kernel, meta, x: Tensor, out: Tensor) -> None:
    _contiguous(x, out)
    kernel[_grid(x.numel())](x, out, x.numel(), **meta)


def launch_silu_backward(kernel, meta, x: Tensor, grad: Tensor) -> Tensor:
    grad = grad.contiguous()  # autograd may hand an expanded gradient
    _contiguous(x)
    out = torch.empty_like(x)
    kernel[_grid(x.numel())](x, grad, out, x.numel(), **meta)
    return out


def launch_sigmoid_silu(kernel, meta, x: Tensor) -> tuple[Tensor, Tensor]:
    _contiguous(x)
    sig, silu = torch.empty_like(x), torch.empty_like(x)
    kernel[_grid(x.numel())](x, sig, silu, x.numel(), **meta)
    return sig, silu


TMA_BLOCK = (16, 64)


def launch_silu_tma(kernel, meta, x: Tensor) -> Tensor:
    from triton.tools.tensor_descriptor import TensorDescriptor

    _contiguous(x)
    out = torch.empty_like(x)
    x2, out2 = x.view(-1, x.shape[-1]), out.view(-1, x.shape[-1])
    grid = (triton.cdiv(x2.shape[0], TMA_BLOCK[0]), triton.cdiv(x2.shape[1], TMA_BLOCK[1]))
    kernel[grid](TensorDescriptor.from_tensor(x2, list(TMA_BLOCK)), TensorDescriptor.from_tensor(out2, list(TMA_BLOCK)),
                 BLOCK_M=TMA_BLOCK[0], BLOCK_N=TMA_BLOCK[1])
    return out


def _silu_reference(x: Tensor) -> Tensor:
    return torch.nn.functional.silu(x.float()).to(x.dtype)


def _silu_out_reference(x: Tensor, out: Tensor) -> None:
    out.copy_(_silu_reference(x))


def _sigmoid_silu_reference(x: Tensor) -> tuple[Tensor, Tensor]:
    return torch.sigmoid(x.float()).to(x.dtype), _silu_reference(x)


def _use_out(op, h):
    out = torch.empty_like(h)
    op(h, out)
    return out


def _use_pair(op, h):
    sig, silu = op(h)
    return sig + silu


def _unary_signature(x: Tensor) -> Tensor: ...
def _out_signature(x: Tensor, out: Tensor) -> None: ...
def _pair_signature(x: Tensor) -> tuple[Tensor, Tensor]: ...


def _needs_host_tma(device: str) -> Optional[str]:
    try:
        import triton.tools.tensor_descriptor  # noqa: F401
    except ImportError:
        return f"triton {triton.__version__} has no triton.tools.tensor_descriptor (host TMA API, Triton >= 3.4)"
    if device == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        return f"host TMA needs compute capability 9.0 (Hopper) or newer; this GPU is {torch.cuda.get_device_name()}"
    return None


# Kernels other than `silu` vary the op's signature or the launch; they run the styles whose schema handling differs.
SIGNATURE_STYLES = ("raw_jit", "triton_op", "custom_op")
TUNING = {"BLOCK_SIZE": (256, 1024)}  # autotune configs and the heuristic's choices

KERNELS: dict[str, Kernel] = {
    k.name: k
    for k in (
        Kernel(
            name="silu",
            doc="The write-up's SiLU: masked 1-D load, float32 math, store in the input dtype, BLOCK_SIZE 1024; "
                "its gradient is a second kernel.",
            jit=silu_kernel, launch=launch_silu, reference=_silu_reference, signature=_unary_signature,
            backward=Backward(silu_backward_kernel, launch_silu_backward),
            tunable=TUNING, shapes=Shapes(blocks=TUNING["BLOCK_SIZE"]),
        ),
        Kernel(
            name="silu_out",
            doc="SiLU written into a caller's `out` tensor: the op mutates `out` (`mutates_args={'out'}`), returns "
                "nothing.",
            jit=silu_kernel, launch=launch_silu_out, reference=_silu_out_reference, signature=_out_signature,
            mutates=("out",), use=_use_out, styles=SIGNATURE_STYLES,
        ),
        Kernel(
            name="sigmoid_silu",
            doc="One kernel, two outputs: sigmoid(x) and silu(x); the model adds them.",
            jit=sigmoid_silu_kernel, launch=launch_sigmoid_silu, reference=_sigmoid_silu_reference,
            signature=_pair_signature, use=_use_pair, styles=SIGNATURE_STYLES,
        ),
        Kernel(
            name="silu_tma",
            doc="SiLU over 2-D tiles read and written through host-side TMA descriptors "
                "(`triton.tools.tensor_descriptor.TensorDescriptor.from_tensor`); Hopper or newer.",
            jit=silu_tma_kernel, launch=launch_silu_tma, reference=_silu_reference, signature=_unary_signature,
            meta=(), styles=SIGNATURE_STYLES, requires=_needs_host_tma,
            # TMA needs 16-byte aligned row strides; the exported artifact keeps its rows static so export need not
            # prove that alignment for a symbolic size.
            shapes=Shapes(blocks=TMA_BLOCK, last_dim_bytes=16, exported=(None, TMA_BLOCK[1])),
        ),
    )
}
