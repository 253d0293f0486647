"""What the gate runs: the op as shipped, its arguments, the sizes it is checked at, and eager PyTorch computing the
same (the reference)."""

import torch

from compat import Dim, Op, Scalar, Tensor, register_op


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
