"""A user's project in a pytester directory: the matrix's two test functions and the plugin, no kernels of its own
until a test declares some (the fixture `project`, shared by the plugin's end-to-end tests)."""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PROVENANCE = {"documented": "test fixture"}


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest('pytest_plugins = ("compat.plugin",)')
    pytester.makepyfile(
        test_matrix="def test_cell(cell, compat, request):\n    compat.check(cell, request.node)\n",
        test_fuzz="def test_fuzz(fuzz_cell, compat, request):\n"
        "    compat.check(fuzz_cell, request.node, section='fuzz')\n",
    )
    return pytester


def expect(pytester, cells):
    (pytester.path / "expectations.yaml").write_text(yaml.safe_dump({"schema": 1, "cells": cells}))


def write_results(path: Path, seconds: dict[str, float]) -> None:
    """A results file whose cells passed in the given seconds (a durations file for the schedule)."""
    from compat.evidence import results
    from compat.matrix.cells import parse_cell_id

    env = {"torch": "2.13.0", "triton": "3.7.1", "gpus": [], "date": "2026-11-25T00:00:00+00:00", "platform": "linux"}
    cells = [
        {
            "id": c,
            "axes": parse_cell_id(c, "test").axes(),
            "outcome": {"kind": "passed", "detail": {}},
            "verdict": None,
            "duration_s": s,
        }
        for c, s in seconds.items()
    ]
    results.write(path, results.document(env, cells, {}, sum(seconds.values()), {}))
