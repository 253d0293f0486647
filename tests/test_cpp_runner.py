"""The aoti_cpp stages' C++ runner, on the CPU: built once against the installed torch, run on CPU packages made
here (a plain model, and one holding an opaque custom_op), and what it reports when the toolchain or its input is
wrong. On the GPU the matrix's own packages run through it (results/)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from compat.child import cpp
from compat.child.journal import Journal
from compat.evidence.outcomes import Outcome
from compat.run.doctor import CANARY_PACKAGE, build_runner, run_canary, run_cpp_canary
from compat.run.launcher import Launcher

# A CPU package with an opaque custom_op (its Python impl is what AOTInductor calls back through its proxy executor).
OPAQUE_PACKAGE = """
import sys, torch

@torch.library.custom_op("compat_test::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 3.0

@scale.register_fake
def _(x):
    return torch.empty_like(x)

class M(torch.nn.Module):
    def forward(self, x):
        return scale(x) + 1.0

x = torch.randn(4, 8)
ep = torch.export.export(M(), (x,))
torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[1])
"""


@pytest.fixture(scope="module")
def launcher(tmp_path_factory):
    launcher = Launcher(tmp_path_factory.mktemp("cpp-launcher"))
    yield launcher
    launcher.close()


@pytest.fixture(scope="module")
def runner(launcher, tmp_path_factory) -> str:
    built = build_runner(launcher, tmp_path_factory.mktemp("runner"))
    assert built.kind == "passed", built.summary()
    assert Path(built.detail["path"]).is_file() and "-ltorch" in built.detail["command"]
    return built.detail["path"]


@pytest.mark.slow
def test_the_runner_runs_a_cpu_package_from_cpp_and_matches_eager(launcher, runner, tmp_path):
    canary = run_canary(launcher, tmp_path / "canary", "cpu")
    assert canary.kind == "passed", canary.summary()
    ran = run_cpp_canary(launcher, tmp_path / "cpp", "cpu", str(tmp_path / "canary" / CANARY_PACKAGE), runner)
    assert ran.kind == "passed", ran.summary()
    (comparison,) = ran.numerics
    assert comparison["ok"] and comparison["max_abs_err"] <= 1e-4


@pytest.mark.slow
def test_an_opaque_custom_op_cannot_run_from_cpp_and_says_so(runner, tmp_path):
    package = tmp_path / "opaque.pt2"
    made = subprocess.run(
        [sys.executable, "-c", OPAQUE_PACKAGE, str(package)], capture_output=True, text=True, timeout=900
    )
    assert made.returncode == 0, made.stderr[-2000:]
    x = torch.randn(4, 8)
    outcome, outputs, report = cpp.run_package(runner, str(package), [(x,)], "cpu", tmp_path, 240.0)
    assert outcome.kind == "failed" and outputs is None
    assert outcome.error_type == "c10::Error"  # at load (torch 2.13, CPU) or at the first call
    assert "Could not find schema for compat_test::scale" in outcome.message
    if tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 13):
        assert "cannot be run via AOTI without Python environment" in outcome.message
    assert report["phase"] == outcome.detail["runner_phase"]


@pytest.mark.slow
def test_a_file_that_is_no_package_fails_the_load_with_the_loaders_message(runner, tmp_path):
    bogus = tmp_path / "bogus.pt2"
    bogus.write_bytes(b"not a zip")
    outcome, outputs, report = cpp.run_package(runner, str(bogus), [(torch.randn(2, 2),)], "cpu", tmp_path, 60.0)
    assert outcome.kind == "failed" and outcome.error_type == "c10::Error" and outputs is None
    assert outcome.detail["runner_phase"] == "load" and report["phase"] == "load"
    assert "Exception raised from" not in outcome.message  # no C++ backtrace: a stable fragment


@pytest.mark.slow
def test_inputs_the_runner_cannot_read_are_the_harnesss_error_not_the_cells(runner, tmp_path, monkeypatch):
    monkeypatch.setattr(torch, "save", lambda obj, path: Path(path).write_bytes(b"garbage"))
    with pytest.raises(RuntimeError, match="could not read its inputs"):
        cpp.run_package(runner, "unused.pt2", [(torch.randn(1),)], "cpu", tmp_path, 60.0)


@pytest.mark.slow
def test_a_runner_killed_by_a_signal_is_a_crash(tmp_path):
    fake = tmp_path / "runner.sh"
    fake.write_text("#!/bin/sh\nkill -SEGV $$\n")
    fake.chmod(0o755)
    outcome, outputs, _ = cpp.run_package(str(fake), "p.pt2", [(torch.randn(1),)], "cpu", tmp_path, 60.0)
    assert outcome.kind == "crashed" and outcome.detail["signal"] == "SIGSEGV" and outputs is None


def _build(tmp_path, monkeypatch, cxx: str) -> Outcome:
    monkeypatch.setenv("CXX", cxx)
    journal = Journal(str(tmp_path / "journal.jsonl"))
    cpp.build(journal, str(tmp_path / "runner"))
    (line,) = [json.loads(x) for x in (tmp_path / "journal.jsonl").read_text().splitlines() if '"end"' in x]
    return Outcome.from_dict(line["outcome"])


def test_a_missing_compiler_is_named_with_its_remedy(tmp_path, monkeypatch):
    outcome = _build(tmp_path, monkeypatch, "/nonexistent/c++")
    assert outcome.kind == "failed" and outcome.error_type == "CppToolchainMissing"
    assert "C++ compiler '/nonexistent/c++' not found" in outcome.message and "set CXX" in outcome.message


@pytest.mark.slow
def test_a_compiler_that_fails_is_reported_with_its_own_message(tmp_path, monkeypatch):
    broken = tmp_path / "broken-cxx"
    broken.write_text("#!/bin/sh\necho 'fatal error: torch/csrc/something.h: No such file' >&2\nexit 1\n")
    broken.chmod(0o755)
    outcome = _build(tmp_path, monkeypatch, str(broken))
    assert outcome.kind == "failed" and outcome.error_type == "CppRunnerBuildFailed"
    assert "fatal error: torch/csrc/something.h" in outcome.message
    assert not (tmp_path / "runner").exists()


@pytest.mark.slow
def test_the_doctor_names_a_missing_toolchain_and_exits_1(tmp_path):
    env = {**os.environ, "CXX": "/nonexistent/c++"}
    done = subprocess.run(
        [sys.executable, "-m", "compat", "doctor"], capture_output=True, text=True, env=env, timeout=1800
    )
    assert done.returncode == 1, done.stdout[-2000:]
    assert "C++ toolchain: FAILED: CppToolchainMissing: C++ compiler '/nonexistent/c++' not found" in done.stdout


def test_an_environment_failure_is_never_accepted_as_an_expectation(tmp_path):
    from compat.evidence.gate import judge

    failed = Outcome(
        "failed",
        "CppRunnerBuildFailed",
        "ld: cannot find -ltorch",
        detail={"environment_failure": "the C++ runner could not be built against this torch"},
    )
    complaint = judge("silu-triton_op-aoti_cpp_strict-float32-cuda", None, failed, None, tmp_path / "e.yaml").complaint
    assert complaint and "the environment failed, not the wrapping style" in complaint
