"""Worker count for -n auto, GPU pinning per worker, and the environment failure the canary reveals."""

import os
import time

import pytest

from compat.evidence.outcomes import Outcome
from compat.matrix.cells import Cell
from compat.run import doctor
from compat.run.session import RunSession
from compat.run.workers import auto_workers, gib_per_worker, gpu_for, usable_cpus

H100, H200 = 79.2, 139.8


def test_auto_workers_follow_gpu_memory_capped_by_cores():
    assert auto_workers(16, [("0", H100)], 4.0) == 16  # 19 by memory, 16 cores
    assert auto_workers(32, [("0", H200), ("1", H200)], 4.0) == 32
    assert auto_workers(16, [("0", 10.0)], 4.0) == 2  # a small GPU limits the workers
    assert auto_workers(2, [], 4.0) == 2  # no GPU: one per core
    assert auto_workers(16, [("0", 1.0)], 4.0) == 1  # never zero


def test_workers_round_robin_over_visible_gpus():
    gpus = [("2", H200), ("5", H200)]
    assert [gpu_for(f"gw{i}", gpus) for i in range(5)] == ["2", "5", "2", "5", "2"]


def test_memory_share_override_is_validated(monkeypatch):
    monkeypatch.setenv("COMPAT_GIB_PER_WORKER", "8")
    assert gib_per_worker() == 8.0
    monkeypatch.setenv("COMPAT_GIB_PER_WORKER", "lots")
    with pytest.raises(ValueError, match="COMPAT_GIB_PER_WORKER='lots': expected a positive number"):
        gib_per_worker()


def _blame(tmp_path, monkeypatch, cell, canary, outcome):
    """The outcome after the canary's verdict, and the devices the canary was asked about."""
    session = RunSession(tmp_path, [cell])
    asked = []
    monkeypatch.setattr(session, "canary", lambda device: asked.append(device) or canary)
    return session._blame_environment(cell, outcome), asked


SEGV = Outcome(
    "crashed", "SIGSEGV", "killed by SIGSEGV during aoti_load", detail={"signal": "SIGSEGV", "phase": "aoti_load"}
)


def _segv():
    return Outcome("crashed", "SIGSEGV", SEGV.message, detail=dict(SEGV.detail))


def test_aoti_failure_with_a_failing_canary_is_an_environment_failure(tmp_path, monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    cell = Cell("silu", "triton_op", "aoti_strict", "bfloat16", "cuda")
    outcome, asked = _blame(tmp_path, monkeypatch, cell, _segv(), _segv())
    assert asked == ["cuda"]
    assert "canary (a plain model with no Triton kernel) fails too on cuda" in outcome.detail["environment_failure"]
    assert "LD_PRELOAD=" in outcome.detail["remedy"]


def test_aoti_failure_with_a_healthy_canary_blames_the_style(tmp_path, monkeypatch):
    cell = Cell("silu", "raw_jit", "aoti_strict", "bfloat16", "cpu_interpret")
    failed = Outcome("failed", "torch._inductor.exc.InductorError", "C++ compile error", detail={})
    outcome, asked = _blame(tmp_path, monkeypatch, cell, Outcome("passed"), failed)
    assert asked == ["cpu"] and "environment_failure" not in outcome.detail


def test_a_cell_records_the_run_wide_work_it_built_or_waited_for(tmp_path, monkeypatch):
    """The canary is made once a run, in no child of the failing cell's lane: the cell that ran it says for how long
    (the profile's `run-wide` phases); a later cell that read its record, and a passing cell, say nothing."""
    import compat.run.session as session_module

    cell = Cell("silu", "raw_jit", "aoti_strict", "bfloat16", "cpu_interpret")
    session = RunSession(tmp_path, [cell])
    monkeypatch.setattr(session_module, "run_canary", lambda *args: time.sleep(0.3) or Outcome("passed"))
    failed = dict(kind="failed", error_type="torch._inductor.exc.InductorError", message="C++ compile error")
    monkeypatch.setattr(session, "_built", lambda c: session._blame_environment(c, Outcome(**failed, detail={})))
    assert session.outcome(cell).detail["run_wide_s"]["canary-cpu"] >= 0.3  # it ran the canary
    assert "run_wide_s" not in session.outcome(cell).detail  # the next read the canary's record: no wait to show
    monkeypatch.setattr(session, "_built", lambda c: Outcome("passed"))
    assert "run_wide_s" not in session.outcome(cell).detail


def test_passing_aoti_cells_do_not_run_the_canary(tmp_path, monkeypatch):
    cell = Cell("silu", "triton_op", "aoti_strict", "bfloat16", "cuda")
    _, asked = _blame(tmp_path, monkeypatch, cell, _segv(), Outcome("passed"))
    assert asked == []


@pytest.mark.slow
def test_doctor_reports_the_known_crash_and_its_remedy(monkeypatch, capsys):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setattr(doctor, "run_canary", lambda launcher, workdir, device, env=None: _segv())
    assert doctor.main() == 1
    out = capsys.readouterr().out
    assert "torch " in out and "canary: FAILED in aoti_load" in out
    assert "remedy: Known environment crash" in out and "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libstdc++.so.6" in out


def test_workers_follow_the_cpus_this_process_may_use_not_the_hosts_count():
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("os.sched_getaffinity is Linux's")
    assert usable_cpus() == len(os.sched_getaffinity(0)) <= (os.cpu_count() or 1)


def test_a_given_commit_names_the_harness_and_the_repositories_in_its_checkout(monkeypatch, tmp_path):
    # Measured: the GPU runner's copy kept a .git older than the files copied, and named that commit "+changes".
    from pathlib import Path

    from compat.run import environment

    harness = Path(environment.__file__).resolve().parents[2]
    monkeypatch.setenv(environment.COMMIT_ENV, "c" * 40)
    monkeypatch.setattr(environment, "_commit", lambda path: f"read from {path}")
    inside = environment.describe(harness / "examples" / "liger_kernel")["commits"]
    assert inside == {"compat": "c" * 40, "repository": "c" * 40}
    outside = environment.describe(tmp_path)["commits"]
    assert outside == {"compat": "c" * 40, "repository": f"read from {tmp_path.resolve()}"}
    assert environment.describe(harness)["commits"]["repository"] == "the harness's"
