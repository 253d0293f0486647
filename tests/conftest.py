"""This repository's own test policy (not the plugin's, which users load): pytester for the plugin's end-to-end tests,
and the `matrix` marker on the matrix and fuzz tests, so the harness tests run alone with `-m "not matrix"`."""

import pytest

pytest_plugins = ("pytester",)


def pytest_collection_modifyitems(items):
    for item in items:
        if getattr(item, "originalname", None) in ("test_cell", "test_fuzz"):
            item.add_marker(pytest.mark.matrix)
