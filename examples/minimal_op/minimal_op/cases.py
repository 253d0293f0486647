"""What the gate runs: the op as shipped, its arguments, the sizes it is checked at, and eager PyTorch computing the
same (the reference); and the one finding of its own that the gate explains."""

import torch

from compat import Dim, Known, Op, Scalar, Tensor, register_known, register_op


def reference(x, scale):
    return scale * x * torch.sigmoid(x)


register_op(
    Op(
        name="scaled_silu",
        doc="torch.ops.minimal_op.scaled_silu: scale * silu(x), a triton_op with register_autograd",
        shipped=torch.ops.minimal_op.scaled_silu,
        helpers=(torch.ops.minimal_op.scaled_silu_backward,),  # the gradient's op: declared as this op's
        reference=reference,
        differentiable=True,
        inputs=(Tensor("x", ("rows", "cols")), Scalar("scale", 1.5)),
        # rows is dynamic (export's Dim, a symbol under dynamic=True): 3 checks, 1 first (it specialises)
        dims=(Dim("rows", example=8, checks=(1, 37, 1024), max=1024), Dim("cols", example=1000)),
        dtypes=("float32", "bfloat16"),  # Triton's interpreter on a CPU runs float32 only
    )
)

# The suite's catalogue explains the same finding in the AOTInductor packages of any op (fuzz_aoti_strided_wrong) and
# under decompose_* for the triton_ops it wraps itself; an op as shipped explains its own decompositions.
register_known(
    Known(
        "",
        r", (transposed|sliced|strided): .*?\d+ element\(s\)",
        key="scaled_silu_decompose_strides_traced",
        kind="mismatch",
        section="fuzz",
        kernels=("scaled_silu",),
        stages=("decompose_",),
        reason="decompose_custom_triton_ops=True replaces the triton_op by its launch as export traced it, on the "
        "contiguous example: the strides the kernel reads through are that example's constants, so a view "
        "(transposed, sliced) is read as if it were contiguous: wrong values (measured on an H200, torch 2.11)",
        rewrite="keep the op in the graph (decompose_custom_triton_ops=False, the default), or pass contiguous "
        "inputs to the decomposed program",
    )
)
