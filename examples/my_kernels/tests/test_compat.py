"""The matrix and its fuzz tests, over the kernels my_kernels/cases.py declares (and the suite's own)."""

from compat.testing import test_cell, test_fuzz  # noqa: F401
