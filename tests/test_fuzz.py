"""The fuzz tests: one per cell expected to pass here, generated inputs through its artifact (compat.child.fuzz).

Shapes, layouts and values are drawn inside the child's @given, never in parametrize lists, so every xdist worker
collects the same tests."""

from compat.testing import test_fuzz  # noqa: F401
