"""`python -m compat describe CELL`: what it says of a cell's newest record, in process (compat.report.describe)."""

from compat.evidence.expectations import Expectations, Run
from compat.matrix.cells import split_cell_id
from compat.report.describe import cell_lines

CPU = Run("2.13.0+cpu", "3.7.1", "cpu-only")
CELL = "silu-warmup_launch-compile_inductor-float32-cpu_interpret"
ENVIRONMENT = {"torch": "2.13.0+cpu", "triton": "3.7.1", "date": "2026-11-29T10:00:00+00:00", "gpus": []}


def _evidence(tmp_path, error_type: str, message: str) -> list[str]:
    record = {"id": CELL, "outcome": {"kind": "failed", "error_type": error_type, "message": message}}
    doc = {"environment": ENVIRONMENT, "cells": [record], "fuzz": []}
    exp = Expectations.for_run(tmp_path / "expectations.yaml", named=False)
    lines = cell_lines(split_cell_id(CELL, "test"), exp, CPU, [("run.json", doc)])
    evidence = next(i for i, line in enumerate(lines) if line.startswith("evidence: "))
    return [line for line in lines[evidence:] if line.startswith(("evidence", "  not measurable"))]


def test_a_record_this_device_cannot_measure_is_described_as_not_measurable_as_the_grid_and_pages_say(tmp_path):
    """The interpreter's failure on a traced stage is no verdict on the op: describe says so and why, as the
    terminal grid (nm), the summary and the pages (⊘) do; another failure of the same cell reads as a failure."""
    unmeasurable = _evidence(tmp_path, "TypeError", "'NoneType' object is not subscriptable")
    assert unmeasurable[0].startswith("evidence: not measurable on this device (failed: TypeError")
    assert unmeasurable[1].startswith("  not measurable here: Triton's interpreter")
    failing = _evidence(tmp_path, "TypeError", "unsupported operand type(s)")
    assert failing == ["evidence: failed: TypeError: unsupported operand type(s)"]
