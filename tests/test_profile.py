"""python -m compat profile: where a run's time went, read from its results file alone."""

import json

import pytest

from compat.__main__ import main
from compat.report import profile


def _record(cell_id, worker, seconds, pid, phases=None, gpu=None, source=None, kind="passed", started_at=None):
    detail = {
        "child": {"pid": pid},
        "seconds": phases or {},
        "cpu_seconds": {k: v / 2 for k, v in (phases or {}).items()},
    }
    return {
        "id": cell_id,
        "outcome": {"kind": kind, "detail": detail},
        "duration_s": seconds,
        "worker": worker,
        "gpu": gpu,
        **({"source": source} if source else {}),
        **({"started_at": started_at} if started_at is not None else {}),
    }


SHARED = {"startup": 2.0, "eager": 3.0, "compile_inductor": 5.0}  # one probe child's phases, on each of its cells


def _doc(wall=20.0, **options):
    return {
        "schema": 1,
        "environment": {"torch": "2.13.0+cpu", "triton": "3.7.1", "gpus": []},
        "options": options,
        "summary": {"wall_seconds": wall},
        "cells": [
            # The probe child's time falls to the first cell of its lane; the second read its record.
            _record("silu-triton_op-eager-float32-cpu_interpret", "gw0", 10.0, 11, SHARED, started_at=100.0),
            _record("silu-triton_op-compile_inductor-float32-cpu_interpret", "gw0", 0.0, 11, SHARED, started_at=110.0),
            _record("silu-raw_jit-eager-float32-cpu_interpret", "gw1", 4.0, 12, {"eager": 3.0}, started_at=99.0),
            _record("silu-raw_jit-compile_inductor-float32-cpu_interpret", "gw1", 0.0, None, kind="skipped"),
        ],
        "fuzz": [
            _record("silu-triton_op-eager-float32-cpu_interpret", "gw1", 6.0, 13, {"eager": 4.0}),
        ],
    }


def test_the_critical_path_is_the_longest_lane_and_each_child_counts_once():
    prof = profile.of(_doc())
    assert prof.critical == ("probe-silu-triton_op-float32-cpu_interpret", 10.0)
    assert prof.workers == {"gw0": 10.0, "gw1": 10.0} and prof.tests == {"cells": 3, "fuzz": 1}
    # The shared child's phases once, though two cells carry them; a fuzzed stage under its own name.
    assert prof.phases[("cells", "probe")] == [3, 11.0, 5.5]  # eager + compile_inductor twice + raw_jit's eager
    assert prof.phases[("cells", "startup")] == [1, 2.0, 1.0]
    assert prof.phases[("fuzz", "fuzz probe")] == [1, 4.0, 2.0]
    text = profile.text(_doc())
    assert "critical path: probe-silu-triton_op-float32-cpu_interpret, 10 s (50% of the wall time) on gw0" in text
    assert "gw1      busy    10.0 s  idle    10.0 s" in text
    assert "outside every phase" in text and "  15%  (starting children" in text  # 20 busy, 17 in phases


def test_a_lane_longer_than_the_bound_says_what_it_spent_and_when_it_started():
    text = profile.text(_doc(), bound=5.0)
    # The probe child's phases once, though two of its cells carry them; the lanes in the order they started.
    assert (
        "   10.0 s  probe-silu-triton_op-float32-cpu_interpret  (started 2nd of 2): compile_inductor 5.0 s, "
        "eager 3.0 s, startup 2.0 s, outside its children's phases 0.0 s" in text
    )
    assert "   6.0 s  fuzz-silu-triton_op" in text
    assert "(start not recorded): eager 4.0 s, outside its children's phases 2.0 s" in text
    assert "probe-silu-raw_jit" not in text.split("lanes longer than the bound of 5 s")[1].split("workers")[0]
    assert "no lane longer than the bound of 30 s" in profile.text(_doc(), bound=30.0)
    assert "bound" not in profile.text(_doc())


def test_a_lane_that_built_or_waited_for_the_run_wide_work_says_so_among_its_phases():
    """The C++ runner and the canaries are made once a run, by the first cell that needs them, in no child of that
    cell's lane: each cell that built or waited for one records its seconds, shown as a phase of its lane."""
    doc = _doc()
    build = _record("silu-triton_op-aoti_cpp_strict-float32-cpu", "gw0", 70.0, 21, {"launch": 1.0, "export": 2.0})
    build["outcome"]["detail"]["run_wide_s"] = {"cpp-runner": 60.0, "canary-cpu": 5.0}
    doc["cells"].append(build)
    text = profile.text(doc, bound=30.0)
    assert (
        "aoti_cpp_strict-float32-cpu  (start not recorded): run-wide cpp-runner 60.0 s, "
        "run-wide canary-cpu 5.0 s, export 2.0 s, outside its children's phases 2.0 s" in text
    )
    assert ("cells", "run-wide cpp-runner") not in profile.of(doc).phases  # no child's phase: the busy time's split


def test_a_merged_file_profiles_each_of_its_runs_on_its_own():
    doc = _doc(
        merged_from=[{"path": "results/runs/a.json.gz", "wall_seconds": 10.0}, {"path": "b.json", "wall_seconds": 5.0}]
    )
    for r in doc["cells"][:2]:
        r["source"] = "results/runs/a.json.gz"
    for r in doc["cells"][2:] + doc["fuzz"]:
        r["source"] = "results/b.json"  # moved since: matched by its name
    text = profile.text(doc)
    assert "merged from 2 run(s)" in text
    b, a = text.split("== results/b.json")[1].split("== results/runs/a.json.gz")  # in the order of their names
    assert "10 s wall time on 1 worker(s)" in a and "5 s wall time on 1 worker(s)" in b


def test_the_command_reads_a_results_file_and_refuses_bad_input_with_exit_2(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_doc()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("compat.evidence.results._check_shape", lambda doc, path: None)
        assert main(["profile", str(path), "--top", "1"]) == 0
        out = capsys.readouterr().out
        assert out.count(" s  probe-") + out.count(" s  fuzz-") == 1  # the one longest lane
        assert main(["profile", str(path), "--top", "0"]) == 2
        assert main(["profile", str(path), "--bound", "0"]) == 2
    assert main(["profile", str(tmp_path / "missing.json")]) == 2
    assert "no such results file" in capsys.readouterr().err
