"""Latency: the record a passing cell carries, the documentation's tables, and the diff's non-failing section."""

import copy

from compat.child import latency, protocol
from compat.evidence import diff
from compat.report import report, timings, upgrade


def _cell(kernel, style, stage, kind="passed", first=100.0, median=30.0, best=10.0, dtype="float32"):
    lat = latency.entry(first, {"batch 1": (median, best), "batch 1024": (median * 2, best * 2)})
    return {
        "id": f"{kernel}-{style}-{stage}-{dtype}-cuda",
        "axes": {"kernel": kernel, "style": style, "stage": stage, "dtype": dtype, "device": "cuda"},
        "outcome": {
            "kind": kind,
            "error_type": None,
            "message": None,
            "numerics": [],
            "detail": {"latency": lat} if kind == "passed" else {},
        },
    }


def test_the_record_keeps_median_and_best_per_point_and_the_counts():
    lat = latency.entry(12.3456, {"batch 1": (30.123, 9.87)})
    assert lat == {
        "first_call_ms": 12.346,
        "steady_us": {"batch 1": 30.12},
        "steady_best_us": {"batch 1": 9.87},
        "clock": "cuda_event",
        "warmup": latency.WARMUP,
        "reps": latency.REPS,
    }


def test_only_timed_stages_on_cuda_in_a_run_are_timed(monkeypatch, tmp_path):
    from compat.matrix.cells import parse_cell_id
    from compat.run.session import child_env

    cell = parse_cell_id("silu-triton_op-aoti_cpp_strict-float32-cuda", "test")
    monkeypatch.delenv(protocol.TIMED_ENV, raising=False)
    assert not latency.wanted(cell)  # outside a run (a fuzz test, a user's script): never timed
    for key, value in child_env(cell, tmp_path).items():
        monkeypatch.setenv(key, value)

    assert latency.wanted(parse_cell_id("silu-triton_op-aoti_cpp_strict-float32-cuda", "test"))
    assert not latency.wanted(parse_cell_id("silu-triton_op_cpu_fallback-aoti_cpp_strict-float32-cpu", "test"))
    assert not latency.wanted(parse_cell_id("silu-triton_op-flop_count-float32-cuda", "test"))


def test_a_failing_cell_has_no_latency_even_if_its_detail_says_so():
    cell = _cell("silu", "custom_op", "aoti_cpp_strict", kind="failed")
    cell["outcome"]["detail"]["latency"] = latency.entry(1.0, {"batch 1": (1.0, 1.0)})
    assert timings.of(cell) is None


def test_steady_table_rows_styles_columns_timed_stages_and_says_where_it_failed():
    doc = {
        "cells": [
            _cell("silu", "triton_op", "eager"),
            _cell("silu", "triton_op", "aoti_cpp_strict", median=40),
            _cell("silu", "custom_op", "eager", median=50, best=20),
            _cell("silu", "custom_op", "aoti_cpp_strict", kind="failed"),
            _cell("silu", "custom_op", "flop_count"),
        ]
    }
    t = timings.steady_table(doc, "silu", ["triton_op", "custom_op"])
    assert t.columns == ["eager", "aoti_cpp_strict"] and t.point == "batch 1"
    assert t.rows == [("triton_op", ["30 / 10", "40 / 10"]), ("custom_op", ["50 / 20", "fails"])]


def test_first_call_rows_need_compile_and_both_packages():
    cells = [
        _cell("silu", "triton_op", s, first=f)
        for s, f in (("compile_inductor", 2000.0), ("aoti_nonstrict", 90.0), ("aoti_cpp_nonstrict", 100.0))
    ]
    doc = {"cells": cells + [_cell("silu", "wrap_triton", "compile_inductor")]}
    assert timings.first_call_rows(doc, ["silu"], ["triton_op", "wrap_triton"]) == [
        ("silu", "triton_op", ["2,000", "90", "100"])
    ]


def test_changes_report_only_beyond_the_noise_band():
    old = {"cells": [_cell("silu", "triton_op", "eager", first=100.0, best=10.0)]}
    inside = copy.deepcopy(old)
    inside["cells"][0]["outcome"]["detail"]["latency"] = latency.entry(
        190.0, {"batch 1": (300.0, 300.0), "batch 1024": (20.0, 20.0)}
    )
    assert timings.changes(old, inside) == []  # 1.9x first call; 30x best call: both inside
    beyond = copy.deepcopy(old)
    beyond["cells"][0]["outcome"]["detail"]["latency"] = latency.entry(
        900.0, {"batch 1": (9000.0, 9000.0), "batch 1024": (20.0, 20.0)}
    )
    moved = timings.changes(old, beyond)
    assert [(c.what, c.unit) for c in moved] == [("best steady-state call at batch 1", "µs"), ("first call", "ms")]


def test_the_diff_shows_latency_apart_and_never_as_a_regression():
    env = {"torch": "2.11.0", "triton": "3.6.0", "gpus": [{"name": "H100"}], "python": "3.12", "cuda": "13.0"}
    old = {"environment": env, "cells": [_cell("silu", "triton_op", "eager", first=100.0)]}
    new = copy.deepcopy(old)
    new["cells"][0]["outcome"]["detail"]["latency"]["first_call_ms"] = 5000.0
    assert not diff.regressed(diff.compare(old, new))
    text, _ = upgrade.markdown(old, new, "old.json", "new.json")
    assert "### Latency (not a failure)" in text and "`silu-triton_op-eager-float32-cuda` first call" in text


def test_the_report_has_a_latency_section_only_when_cells_were_timed():
    cells = [
        _cell("silu", "triton_op", s) for s in ("eager", "compile_inductor", "aoti_nonstrict", "aoti_cpp_nonstrict")
    ]
    docs = report.Docs(_doc(cells))
    assert report.latency_intro(docs) and report.latency_tables(docs)[0]
    untimed = [dict(c, outcome={**c["outcome"], "detail": {}}) for c in cells]
    assert report.latency_intro(report.Docs(_doc(untimed))) is None


def _doc(cells):
    env = {
        "torch": "2.11.0",
        "triton": "3.6.0",
        "gpus": [],
        "python": "3.12",
        "cuda": None,
        "driver": None,
        "platform": "linux",
        "date": "2026-11-24",
        "ld_preload": "",
    }
    return {"schema": 1, "environment": env, "options": {}, "summary": {}, "cells": cells, "fuzz": []}
