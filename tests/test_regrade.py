"""Every committed results file, judged again by today's code (compat.evidence.gate) against today's expectations:
a change of judgement or of rows is done when this passes, and shows here what it does to the evidence.

The example repositories' files are judged against their own expectations, their ops registered for the test and
taken out of the registry after it, as their runs see them."""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
from pathlib import Path

import pytest

from compat.evidence import catalogue, findings, gate, numerics, results
from compat.evidence.expectations import Expectations
from compat.matrix.kernels import KERNELS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {
    "my_kernels": "my_kernels.cases",
    "liger_kernel": "liger_cases",
    "minimal_op": "minimal_op.cases",
}  # repository -> its cases module
FILES = [
    *sorted(ROOT.glob("results/*.json.gz")),
    *sorted(ROOT.glob("results/sample/*.json.gz")),
    *sorted(ROOT.glob("results/examples/*/*.json.gz")),
    *sorted(ROOT.glob("results/examples/*/sample/*.json.gz")),
]
GPU_RERUN = "bash scripts/gpu_run.sh NAME 560 --compat-devices=cuda (from the repository's folder), then merge it in"
CPU_RERUN = "python -m compat run under that torch and triton on a CPU machine, then merge it in"
# Files that hold fuzz records made before findings were recorded (by class, output and layout): today's judgement
# holds each to its row by its kind alone, and they agree (test_committed_results_regrade_as_expected). Expected as
# data: a file listed here that has none, or one not listed that has some, fails, so the rerun that refreshes a file
# takes it off the list.
STALE = {
    "results/torch-2.9.1-cu128_triton-3.5.1_cpu.json.gz": CPU_RERUN,
    "results/torch-2.10.0-cu128_triton-3.6.0_cpu.json.gz": CPU_RERUN,
    "results/torch-2.11.0-cu130_triton-3.6.0_cpu.json.gz": CPU_RERUN,
    "results/torch-2.12.1-cu130_triton-3.7.1_cpu.json.gz": CPU_RERUN,
    "results/torch-2.13.0-cpu_triton-3.6.0_cpu.json.gz": CPU_RERUN,
    "results/torch-2.14.1-cu130_triton-3.8.0_cpu.json.gz": CPU_RERUN,
    "results/torch-2.15.0-cu132_triton-3.9.0_cpu.json.gz": CPU_RERUN,
    "results/examples/my_kernels/torch-2.11.0-cu130_triton-3.6.0_NVIDIA-H100-80GB-HBM3.json.gz": GPU_RERUN,
}

_REGISTERED: dict[str, tuple[dict, list]] = {}  # a cases module registers once per process: what it added


@contextlib.contextmanager
def _registered(repository: str | None):
    """The registry as the repository's runs see it: its ops and catalogue entries added, then taken out again."""
    if repository is None:
        yield
        return
    kernels, known = dict(KERNELS), list(catalogue.KNOWN)
    if repository not in _REGISTERED:
        path = str(ROOT / "examples" / repository)
        sys.path.insert(0, path)
        try:
            importlib.import_module(EXAMPLES[repository])
        finally:
            sys.path.remove(path)
        added = [k for k in catalogue.KNOWN if k not in known]
        _REGISTERED[repository] = ({n: e for n, e in KERNELS.items() if n not in kernels}, added)
    ops, entries = _REGISTERED[repository]
    KERNELS.update(ops)
    catalogue.KNOWN[:0] = [k for k in entries if k not in catalogue.KNOWN]
    try:
        yield
    finally:
        KERNELS.clear()
        KERNELS.update(kernels)
        catalogue.KNOWN[:] = known


def _repository(path: Path) -> str | None:
    """The example repository whose run wrote the file (results/examples/NAME/..., its sample's too), else None."""
    parts = path.relative_to(ROOT).parts
    return parts[2] if parts[1] == "examples" else None


@functools.cache
def _expectations(repository: str | None) -> Expectations:
    if repository is None:
        return Expectations.load(ROOT / "expectations.yaml")
    return Expectations.for_run(ROOT / "examples" / repository / "expectations.yaml", named=True)


def _regrade(path: Path) -> results.Regrade:
    repository = _repository(path)
    with _registered(repository):
        return results.regrade(results.load(path), _expectations(repository))


_regraded = functools.cache(_regrade)  # each committed file once per process: its two tests read the same


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_committed_results_regrade_as_expected(path):
    done = _regraded(path)
    assert done.records > 0
    name = str(path.relative_to(ROOT))
    shown = "\n".join([*done.differ[:10], *done.unreadable[:10]])
    assert not (done.differ or done.unreadable), (
        f"{path.relative_to(ROOT)}: {len(done.differ)} records not as expected and {len(done.unreadable)} "
        f"unreadable by today's judgement against today's expectations. Where the rows or the judgement are right, "
        f"the evidence is not: {STALE.get(name, GPU_RERUN)}.\n{shown}"
    )


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_stale_records_are_where_the_list_says(path):
    name = str(path.relative_to(ROOT))
    stale = _regraded(path).stale
    if name in STALE:
        assert stale, f"{name} holds no fuzz record made before findings were recorded: take it off STALE"
    else:
        assert not stale, f"{name}: {len(stale)} fuzz records made before findings were recorded, e.g. {stale[:3]}"


CPU_FILE = ROOT / "results" / "torch-2.13.0-cpu_triton-3.7.1_cpu.json.gz"


def test_a_halved_tolerance_moves_no_committed_verdict_and_a_thousandth_moves_some(monkeypatch):
    """A planted change of judgement. Halved, the dtypes' tolerances move nothing in the CPU evidence (its worst
    relative error is 0.24% of float32's tolerance: matmul's fuzz tests); cut to a thousandth, they fail the fuzz
    tests whose passing examples now lie beyond it, naming each and the error it read."""
    monkeypatch.setattr(numerics, "TOL", {k: v / 2 for k, v in numerics.TOL.items()})
    monkeypatch.setattr(gate, "TOL", numerics.TOL)
    assert _regrade(CPU_FILE).green
    monkeypatch.setattr(gate, "TOL", {k: v / 1000 for k, v in numerics.TOL.items()})
    done = _regrade(CPU_FILE)
    assert done.differ and all("regraded: examples it passed showed a relative error" in line for line in done.differ)
    assert any(line.startswith("fuzz matmul-triton_op-eager-float32-cpu_interpret: ") for line in done.differ)


def test_a_renamed_class_leaves_the_records_that_name_it_unreadable(monkeypatch):
    """A planted change of judgement: overflow_only renamed. The records that name it cannot be judged by today's
    code until a run records them again, and the regrade says which."""
    renamed = {("overflows_as_eager" if k == "overflow_only" else k): v for k, v in findings.DIFFERENCES.items()}
    monkeypatch.setattr(gate, "DIFFERENCES", renamed)
    done = _regrade(CPU_FILE)
    assert not done.green and done.unreadable
    assert all(
        "a finding of class 'overflow_only', which today's judgement does not know" in u for u in done.unreadable
    )


def test_a_model_comparison_is_judged_again_from_its_worst_error_scale_and_eagers_own_error(monkeypatch):
    """What a cell's comparison recorded decides it again at today's tolerance: max abs err <= tol x scale + twice
    eager's own error, with no non-finite output; a kind that something beside the numbers decided stays."""
    from compat.evidence.outcomes import Outcome

    compared = {"dtype": "float32", "tol": 1e-4, "max_abs_err": 5e-5, "max_rel_err": 5e-5, "ref_scale": 1.0}
    compared |= {"nonfinite": 0, "against": "float64", "eager_err": 1e-6, "ok": True, "input": "n=1"}
    cell = "silu-triton_op-eager-float32-cuda"
    assert gate.regraded(Outcome("passed", numerics=[compared]), cell, "cells").kind == "passed"
    monkeypatch.setattr(gate, "TOL", {**numerics.TOL, "float32": 2.5e-5})
    again = gate.regraded(Outcome("passed", numerics=[compared]), cell, "cells")
    assert again.kind == "mismatch" and again.numerics[0]["ok"] is False
    decided_elsewhere = Outcome("mismatch", numerics=[compared])  # every comparison passed: not the numbers' kind
    assert gate.regraded(decided_elsewhere, cell, "cells") is decided_elsewhere
