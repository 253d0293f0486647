"""torch.ops.minimal_op.scaled_silu: a Triton kernel shipped as a triton_op, its gradient a second kernel."""

from .ops import scaled_silu  # noqa: F401
