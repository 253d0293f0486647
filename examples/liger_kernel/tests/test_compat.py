"""The matrix and its fuzz tests over Liger-Kernel's ops as shipped (liger_cases.py)."""

from compat.testing import test_cell, test_fuzz  # noqa: F401
