"""The matrix: one test per (kernel, style, stage, dtype, device), parametrized by compat.plugin."""

from compat.testing import test_cell  # noqa: F401
