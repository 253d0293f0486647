"""This repository's own test policy (not the plugin's, which users load): the config-leak check (tests/hygiene.py),
pytester for the plugin's end-to-end tests, and markers: `matrix` on the matrix and fuzz tests (the harness tests
alone: `-m "not matrix"`), `fuzz` on the fuzz tests (the matrix alone: `-m "not fuzz"`)."""

import pytest

pytest_plugins = ("pytester", "tests.hygiene")


def pytest_configure(config):
    # Registered here, not in pyproject.toml: the runner's pytest 9.1 warned the TOML list's markers were unknown.
    config.addinivalue_line("markers", "matrix: a cell of the matrix or its fuzz test (harness tests alone: "
                                       "-m 'not matrix')")
    config.addinivalue_line("markers", "fuzz: a fuzz test (the matrix alone: -m 'not fuzz')")


def pytest_collection_modifyitems(items):
    for item in items:
        name = getattr(item, "originalname", None)
        if name in ("test_cell", "test_fuzz"):
            item.add_marker(pytest.mark.matrix)
        if name == "test_fuzz":
            item.add_marker(pytest.mark.fuzz)
