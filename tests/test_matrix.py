"""The matrix: one test per (kernel, style, stage, dtype, device), parametrized by compat.plugin."""


def test_cell(cell, compat, request):
    compat.check(cell, request.node)
