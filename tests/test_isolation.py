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
