"""The fuzz tests: one per cell expected to pass here, generated inputs through its artifact (compat.fuzzing).

Shapes, layouts and values are drawn inside the child's @given, never in parametrize lists, so every xdist worker
collects the same tests."""


def test_fuzz(fuzz_cell, compat, request):
    compat.check(fuzz_cell, request.node, section="fuzz")
