"""Kernel axis: each Triton kernel with its eager PyTorch reference.

Adding a kernel of your own means adding one `Kernel(...)` to `KERNELS` below: the matrix multiplies it over every
wrapping style, stage, dtype and device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import triton
import triton.language as tl


@dataclass(frozen=True)
class Kernel:
    name: str
    doc: str
    jit: object  # the @triton.jit function
    # launch(kernel, x) -> out: calls `kernel[grid](...)`; `kernel` is the jit function or wrap_triton(jit function).
    launch: Callable[[object, torch.Tensor], torch.Tensor]
    # Eager PyTorch function the kernel must match; also the body of CPU fallbacks.
    reference: Callable[[torch.Tensor], torch.Tensor]
    dtypes: tuple[str, ...]


@triton.jit
def silu_kernel(in_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(in_ptr + offsets, mask=mask)
    # Compute in float32 and round once, as torch's own silu does.
    x_f32 = x.to(tl.float32)
    out = x_f32 * (1.0 / (1.0 + tl.exp(-x_f32)))
    tl.store(out_ptr + offsets, out.to(x.dtype), mask=mask)


def launch_silu(kernel, x: torch.Tensor) -> torch.Tensor:
    # The kernel does 1-D pointer arithmetic: a strided view would be read wrongly.
    assert x.is_contiguous(), "Input tensor must be contiguous"
    out = torch.empty_like(x)
    n_elements = x.numel()

    def grid(meta):
        return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

    kernel[grid](x, out, n_elements, BLOCK_SIZE=1024)
    return out


KERNELS: dict[str, Kernel] = {
    k.name: k
    for k in (
        Kernel(
            name="silu",
            doc="The write-up's SiLU: masked 1-D load, float32 math, store in the input dtype, BLOCK_SIZE 1024.",
            jit=silu_kernel,
            launch=launch_silu,
            reference=torch.nn.functional.silu,
            dtypes=("bfloat16",),
        ),
    )
}
