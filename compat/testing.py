"""The matrix and its fuzz tests, for any repository: import them into a test module of yours,

    from compat.testing import test_cell, test_fuzz  # noqa: F401

and the plugin (active once your pytest ini names `compat_cases`) parametrizes them over your kernels and ours:
`test_cell` over every cell of the matrix, `test_fuzz` over every cell expected to pass on this run."""


def test_cell(cell, compat, request):
    compat.check(cell, request.node)


def test_fuzz(fuzz_cell, compat, request):
    compat.check(fuzz_cell, request.node, section="fuzz")
