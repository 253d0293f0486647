"""A repository of the user's own (examples/my_kernels) runs end to end: its kernel, declared outside compat/, through
every style and stage that applies, against its own expectations file, from its own directory."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "my_kernels"
SHIPPED = ("my_rms_norm", "my_gelu_tanh", "my_scaled_add", "my_swish", "my_rms_norm_module", "my_bias_relu")
OURS = ("leaky_relu", "matmul_act", "layer_norm", "rotary", "swiglu", *SHIPPED)
GPU_RESULTS = (
    ROOT / "results" / "examples" / "my_kernels" / "torch-2.11.0-cu130_triton-3.6.0_NVIDIA-H100-80GB-HBM3.json.gz"
)


def assert_no_false_failure(doc):
    """Each op as shipped, one of each kind, runs in eager and is never reported missing from a graph it was traced
    into: a stage it passes proves the op by what it launched, one it fails fails for its own reason."""
    shipped = [c for c in doc["cells"] if c["axes"]["style"] == "as_shipped"]
    assert {c["axes"]["kernel"] for c in shipped} == set(SHIPPED)
    assert all(c["outcome"]["kind"] == "passed" for c in shipped if c["axes"]["stage"] == "eager")
    assert not [c["id"] for c in shipped if c["outcome"]["error_type"] == "MissingKernelNode"]


@pytest.mark.slow
def test_the_example_repository_gates_its_own_kernel_on_its_own_expectations(tmp_path):
    repo = tmp_path / "my_kernels"
    shutil.copytree(EXAMPLE, repo)
    out = subprocess.run(
        [sys.executable, "-m", "compat", "run", "-n", "2", "--results", "r.json", "--compat-devices=cpu_interpret"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    doc = json.loads((repo / "r.json").read_text())
    kernels = {c["axes"]["kernel"] for c in doc["cells"]}
    assert kernels == set(OURS)  # what its cases declare: the suite's own kernels are gated in the suite's repository
    assert len(doc["cells"]) > 100 and "silu-" not in (repo / "expectations.yaml").read_text()
    assert not doc["harness_errors"], doc["harness_errors"]
    assert_no_false_failure(doc)
    if all(c["expected_at"] for c in doc["cells"]):  # the example recorded this torch and triton: its rows gate it
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        assert doc["summary"]["unexpected"] == 0
        assert all(c["expected_at"].startswith(tuple(f"cells.{k}-" for k in OURS)) for c in doc["cells"])
        assert doc["fuzz"] and doc["summary"]["fuzz"]["unexpected"] == 0
    else:  # a version it never recorded: every cell is compared with its rows of the nearest version below
        assert all(c["against_baseline"] for c in doc["cells"]), "a cell without rows and without a baseline"
        changed = [c for c in doc["cells"] if c["verdict"]]
        assert all("changed against the baseline" in c["verdict"] for c in changed)
        assert out.returncode == (1 if changed or doc["summary"]["fuzz"]["unexpected"] else 0), out.stdout[-3000:]


@pytest.mark.slow
def test_the_cli_knows_the_repositorys_own_kernels_from_its_ini(tmp_path):
    repo = tmp_path / "my_kernels"
    shutil.copytree(EXAMPLE, repo)
    doc = {
        "schema": 1,
        "environment": {
            "torch": "2.13.0+cpu",
            "triton": "3.7.1",
            "gpus": [],
            "date": "2026-11-22",
            "platform": "Linux",
        },
        "options": {},
        "summary": {},
        "cells": [
            {
                "id": "leaky_relu-raw_jit-eager-float32-cpu_interpret",
                "verdict": None,
                "axes": {
                    "kernel": "leaky_relu",
                    "style": "raw_jit",
                    "stage": "eager",
                    "dtype": "float32",
                    "device": "cpu_interpret",
                },
                "outcome": {"kind": "passed", "error_type": None, "message": None, "numerics": None, "detail": {}},
            }
        ],
    }
    (repo / "r.json").write_text(json.dumps(doc))
    before = (repo / "expectations.yaml").read_text()
    out = subprocess.run(
        [sys.executable, "-m", "compat", "accept", "r.json"], cwd=repo, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    # Its own file, already expecting the pass: nothing to change, and no cell left out as unknown.
    assert out.stdout.strip() == f"0 change(s) written to {repo / 'expectations.yaml'}"
    assert (repo / "expectations.yaml").read_text() == before


def test_the_examples_ops_as_shipped_on_the_gpu_pass_where_traced_and_are_never_missing_from_a_graph():
    import gzip

    doc = json.load(gzip.open(GPU_RESULTS))
    assert_no_false_failure(doc)
    # On the GPU the traced stages run: every kind passes some compile stage, its graph holding what it launched.
    compiled = {
        c["axes"]["kernel"]
        for c in doc["cells"]
        if c["axes"]["style"] == "as_shipped"
        and c["axes"]["stage"] == "compile_inductor"
        and c["outcome"]["kind"] == "passed"
    }
    assert compiled == set(SHIPPED)


@pytest.mark.slow
def test_the_liger_repository_gates_liger_kernel_as_its_users_call_it_on_the_cpu(tmp_path):
    pytest.importorskip("liger_kernel", reason="liger-kernel is not installed (.ci/run installs its pin, 0.8.5)")
    repo = tmp_path / "examples" / "liger_kernel"
    shutil.copytree(ROOT / "examples" / "liger_kernel", repo)
    # Where its ini finds its committed runs' seconds (compat_durations): beside it, as in this repository.
    shutil.copytree(ROOT / "results" / "examples" / "liger_kernel", tmp_path / "results" / "examples" / "liger_kernel")
    out = subprocess.run(
        [sys.executable, "-m", "compat", "run", "-n", "2", "--results", "r.json", "--compat-devices=cpu_interpret"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    doc = json.loads((repo / "r.json").read_text())
    assert {c["axes"]["kernel"] for c in doc["cells"]} == {
        "liger_rope",
        "liger_cross_entropy",
        "liger_cross_entropy_fn",
        "liger_fused_linear_cross_entropy",
    }
    assert not doc["harness_errors"] and doc["summary"]["unexpected"] == 0, out.stdout[-3000:]
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
