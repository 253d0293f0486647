"""A child that crashes, hangs or exits becomes that phase's outcome; the parent carries on."""

import time

import pytest

from compat.environment import LIBSTDCXX, crash_remedy
from compat.isolation import run_child


def _run(tmp_path, name, timeout=120.0):
    return run_child(f"tests.children.{name}", {}, workdir=tmp_path / name, env={}, timeout=timeout)


def test_phase_outcomes_in_order(tmp_path):
    result = _run(tmp_path, "passes")
    assert list(result.phases) == ["work"]
    assert result.outcome("work").kind == "passed"


def test_exception_is_the_phase_failure_with_its_type(tmp_path):
    result = _run(tmp_path, "raises")
    outcome = result.outcome("never")
    assert (outcome.kind, outcome.error_type, outcome.detail["phase"]) == ("failed", "KeyError", "work")
    assert "no such thing" in outcome.message


def test_segfault_is_crashed_in_the_phase_it_began(tmp_path):
    result = _run(tmp_path, "segfaults")
    assert result.phases["first"].kind == "passed"
    crashed = result.outcome("aoti_load")
    assert (crashed.kind, crashed.error_type, crashed.detail["phase"]) == ("crashed", "SIGSEGV", "aoti_load")
    assert "Fatal Python error: Segmentation fault" in crashed.detail["stderr_tail"]  # faulthandler's stack


def test_hang_is_timed_out_and_killed(tmp_path):
    start = time.monotonic()
    outcome = _run(tmp_path, "hangs", timeout=5).outcome("work")
    assert outcome.kind == "timed_out" and outcome.detail["phase"] == "work"
    assert time.monotonic() - start < 60


def test_exit_without_result_is_crashed_with_exit_code(tmp_path):
    outcome = _run(tmp_path, "exits").outcome("work")
    assert (outcome.kind, outcome.detail["exit_code"]) == ("crashed", 3)


def test_libstdcxx_crash_on_aoti_load_gets_the_remedy(tmp_path, monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    crashed = _run(tmp_path, "segfaults").outcome("aoti_load")
    remedy = crash_remedy(crashed)
    assert remedy and f"LD_PRELOAD={LIBSTDCXX}" in remedy
    monkeypatch.setenv("LD_PRELOAD", LIBSTDCXX)
    assert crash_remedy(crashed) is None  # already applied: then it is some other crash


@pytest.mark.parametrize("phase", ["export", "aoti_compile"])
def test_remedy_only_for_crashes_on_load(tmp_path, phase, monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    crashed = _run(tmp_path, "segfaults").outcome("aoti_load")
    crashed.detail["phase"] = phase
    assert crash_remedy(crashed) is None


def _shared(**phases):
    from compat.isolation import ChildResult
    from compat.outcomes import Outcome

    return ChildResult({name: Outcome(kind) for name, kind in phases.items()}, env={"pid": 1})


def test_a_shared_childs_phase_is_judged_by_its_own_phases_and_any_crash():
    # Phases of other cells that failed do not count; a crash that ended the child before this cell's phase does.
    result = _shared(export="passed", save_load="failed", decompose="passed")
    assert result.outcome("decompose", among=("export", "decompose")).kind == "passed"
    assert result.outcome("save_load", among=("export", "save_load")).kind == "failed"
    died = _shared(export="passed", save_load="crashed")
    outcome = died.outcome("decompose", among=("export", "decompose"))
    assert (outcome.kind, outcome.detail["phase"]) == ("crashed", "save_load")


class _Session:
    """A stand-in for RunSession: a shared probe result, and a record of cells rerun alone."""

    def __init__(self, probe):
        self._probe, self.alone = probe, []

    def probe(self, cell):
        return self._probe

    def child(self, cell, fn, args, timeout):
        self.alone.append(cell.stage)
        return _shared(**{cell.stage: "passed"})


@pytest.mark.parametrize("probe, reran", [
    (dict(eager="passed", compile_inductor="failed"), []),
    (dict(eager="passed", compile_inductor="crashed"), ["compile_inductor"]),  # perhaps an earlier phase's doing
    (dict(eager="timed_out"), ["compile_inductor"]),  # never reached
])
def test_a_probe_phase_that_crashed_or_was_not_reached_runs_again_alone(probe, reran):
    from compat.cells import Cell
    from compat.stages import STAGES

    session = _Session(_shared(**probe))
    outcome = STAGES["compile_inductor"].run(Cell("silu", "triton_op", "compile_inductor", "float32", "cuda"),
                                             session)
    assert session.alone == reran
    assert outcome.kind == ("passed" if reran else probe["compile_inductor"])
