"""The matrix and its fuzz tests, over the op minimal_op/cases.py declares."""

from compat.testing import test_cell, test_fuzz  # noqa: F401
