"""examples/minimal_op, the repository the README points a kernel author to: its committed gate passes as a user
runs it (the plain command, on the CPU through Triton's interpreter), and catches a bug planted in its forward and
one in its backward, each at the stage that computes it."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "minimal_op"
FORWARD = "x * tl.sigmoid(x) * scale"
BACKWARD = "g * scale * (s + x * s * (1 - s))"


def gate(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "compat", "run", "-n", "2", *args],
        cwd=path,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture
def repository(tmp_path):
    copy = tmp_path / "minimal_op"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("compat-results", "compat-report", ".hypothesis"))
    return copy


@pytest.mark.slow
def test_the_minimal_repository_passes_its_gate_and_catches_a_planted_bug_in_each_direction(repository):
    green = gate(repository)
    assert green.returncode == 0, (green.stdout + green.stderr)[-3000:]
    # Its ini ignores no warning: the plugins the command imports before pytest starts are not warned about.
    assert "warnings summary" not in green.stdout, green.stdout[-3000:]
    ops = repository / "minimal_op" / "ops.py"
    source = ops.read_text()
    assert FORWARD in source and BACKWARD in source
    for wrong, right, stage in (
        ("x * tl.sigmoid(1.01 * x) * scale", FORWARD, "eager"),
        ("g * scale * s", BACKWARD, "eager_backward"),
    ):
        ops.write_text(source.replace(right, wrong))
        red = gate(repository, "--compat-stages=eager,eager_backward")
        output = red.stdout + red.stderr
        assert red.returncode == 1, output[-3000:]
        assert f"scaled_silu-as_shipped-{stage}-float32-cpu_interpret: outcome changed" in output, output[-3000:]
    ops.write_text(source)
