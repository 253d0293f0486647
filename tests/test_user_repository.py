"""A user's repository written from the README alone (not copied from examples/): a Triton `scaled_silu` with forward
and backward kernels, shipped as a triton_op with register_autograd, gated on the CPU through Triton's interpreter
with `python -m compat run`, as a user runs it. One accept records the correct op; the gate then passes; five bugs
planted one per copy of the op are each caught (wrong forward, wrong backward, a tail mask, a forward and a backward
that read views as contiguous); an op that overflows where eager overflows has its finding recorded and pinned, and a
backward bug on views planted after it is still caught. Each run writes a results file of its own."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent

KERNELS = """
import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

BLOCK = 256


@triton.jit
def _forward(x_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = @MASK@
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = @FORWARD@
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _backward(x_ptr, g_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    s = tl.sigmoid(x)
    d = @BACKWARD@
    tl.store(out_ptr + offs, d.to(out_ptr.dtype.element_ty), mask=mask)


@triton_op("@NAME@::silu", mutates_args=())
def scaled_silu(x: torch.Tensor, scale: float) -> torch.Tensor:
    x = @FORWARD_INPUT@
    out = torch.empty_like(x)
    n = x.numel()
    wrap_triton(_forward)[(triton.cdiv(n, BLOCK),)](x, out, scale, n, BLOCK=BLOCK)
    return out


@triton_op("@NAME@::silu_backward", mutates_args=())
def scaled_silu_backward(x: torch.Tensor, g: torch.Tensor, scale: float) -> torch.Tensor:
    x, g = @BACKWARD_INPUTS@
    out = torch.empty_like(x)
    n = x.numel()
    wrap_triton(_backward)[(triton.cdiv(n, BLOCK),)](x, g, out, scale, n, BLOCK=BLOCK)
    return out


def _setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


def _grad(ctx, g):
    (x,) = ctx.saved_tensors
    return scaled_silu_backward(x, g, ctx.scale), None


scaled_silu.register_autograd(_grad, setup_context=_setup)
"""
CORRECT = {
    "MASK": "offs < n",
    # x * sigmoid(x), then the scale: exact where eager's (scale * x) * sigmoid(x) overflows at float32's largest
    "FORWARD": "x * tl.sigmoid(x) * scale",
    "BACKWARD": "g * scale * (s + x * s * (1 - s))",
    "FORWARD_INPUT": "x.contiguous()",
    "BACKWARD_INPUTS": "x.contiguous(), g.contiguous()",
}
# What each planted bug changes, and what catches it: (section, stage).
BUGS = {
    "wrong_forward": ({"FORWARD": "x * tl.sigmoid(1.01 * x) * scale"}, ("cells", "eager")),
    "wrong_backward": ({"BACKWARD": "g * scale * s"}, ("cells", "eager_backward")),
    "tail_mask": ({"MASK": "offs < n // BLOCK * BLOCK"}, ("cells", "eager")),
    "views_forward": ({"FORWARD_INPUT": "x"}, ("fuzz", "eager")),
    "views_backward": ({"BACKWARD_INPUTS": "x, g"}, ("fuzz", "eager_backward")),
}
# The order eager's reference computes in: it overflows where eager does, a finding the accept records and pins.
AS_EAGER = {
    **CORRECT,
    "FORWARD": "(scale * x) * tl.sigmoid(x)",
    "BACKWARD": "g * (scale * s + (scale * x) * (s * (1 - s)))",
}

CASES = """
import torch
from compat import Dim, Op, Scalar, Tensor, register_op

from . import OPS


def reference(x, scale):
    return scale * x * torch.sigmoid(x)


ROWS = Dim("rows", example=8, checks=(1, 8, 37), max=1024)
for name in OPS:
    ns = getattr(torch.ops, name)
    register_op(
        Op(
            name=name,
            doc=f"torch.ops.{name}.silu: a triton_op with register_autograd",
            shipped=ns.silu,
            helpers=(ns.silu_backward,),
            reference=reference,
            differentiable=True,
            inputs=(Tensor("x", ("rows", "cols")), Scalar("scale", 1.5)),
            dims=(ROWS, Dim("cols", example=1000)),
            dtypes=("float32",),
            devices=("@DEVICE@",),
        )
    )
"""
STAGES = "--compat-stages=eager,eager_backward"
# Triton's interpreter on a CPU machine (CI's); the GPU where there is one (the GPU runner runs this test too).
DEVICE = "cuda" if torch.cuda.is_available() else "cpu_interpret"


def write_repository(path: Path, ops: dict[str, dict[str, str]]) -> None:
    package = path / "scaled"
    package.mkdir(parents=True, exist_ok=True)
    imports = "".join(f"from . import {name}  # noqa: F401\n" for name in ops)
    (package / "__init__.py").write_text(f"{imports}OPS = {sorted(ops)!r}\n")
    for name, parts in ops.items():
        source = KERNELS.replace("@NAME@", name)
        for key, value in parts.items():
            source = source.replace(f"@{key}@", value)
        (package / f"{name}.py").write_text(source)
    (package / "cases.py").write_text(CASES.replace("@DEVICE@", DEVICE))
    (path / "pyproject.toml").write_text(
        '[project]\nname = "scaled"\nversion = "0.1"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n'
        'compat_cases = ["scaled.cases"]\ncompat_require_declared = ' + json.dumps(sorted(ops)) + "\n"
    )


def compat(path: Path, *args: str, where: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "compat", *args],
        cwd=where or path,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )


def latest_results(path: Path) -> dict:
    return json.loads((path / "compat-results" / "latest.json").read_text())


@pytest.mark.slow
def test_a_users_repository_passes_after_one_accept_and_catches_five_planted_bugs(tmp_path):
    correct = {name: CORRECT for name in BUGS} | {"as_eager": AS_EAGER}
    write_repository(tmp_path, correct)
    accepted = compat(tmp_path, "run", "--compat-accept", STAGES)
    output = accepted.stdout + accepted.stderr
    # The correct op has no finding: it is exact where eager overflows (float32's largest value). The op that
    # overflows as eager does passes too, its overflows noted: no row, nothing needs a reason.
    assert accepted.returncode == 0, output[-4000:]
    assert "NEEDS A REASON" not in output
    # register_autograd's backward op is declared as the op's helper: every op of each namespace is declared.
    covered = compat(tmp_path, "coverage", *BUGS, "as_eager", "--fail-undeclared")
    assert covered.returncode == 0 and "silu_backward  declared: as_eager's helper" in covered.stdout, covered.stdout
    rows = yaml.safe_load((tmp_path / "expectations.yaml").read_text())
    assert not rows.get("fuzz"), rows.get("fuzz")
    as_eager = [f for f in latest_results(tmp_path)["fuzz"] if f["id"].startswith("as_eager-")]
    assert {f["id"] for f in as_eager} == {
        f"as_eager-as_shipped-eager-float32-{DEVICE}",
        f"as_eager-as_shipped-eager_backward-float32-{DEVICE}",
    }
    assert all(f["outcome"]["kind"] == "passed" for f in as_eager)
    assert {d["difference"] for f in as_eager for d in f["outcome"]["detail"]["findings"]} == {"overflow_only"}

    green = compat(tmp_path, "run", STAGES, where=tmp_path / "scaled")  # from a subfolder, as pytest finds its ini
    assert green.returncode == 0, (green.stdout + green.stderr)[-4000:]

    planted = {name: {**CORRECT, **change} for name, (change, _) in BUGS.items()}
    planted["as_eager"] = {**AS_EAGER, "BACKWARD_INPUTS": "x, g"}  # beside its overflows where eager overflows
    write_repository(tmp_path, planted)
    gate = compat(tmp_path, "run", STAGES)
    assert gate.returncode == 1, (gate.stdout + gate.stderr)[-4000:]
    doc = latest_results(tmp_path)
    failing = {(section, r["id"]) for section in ("cells", "fuzz") for r in doc.get(section, []) if r["verdict"]}
    expected = {
        (section, f"{name}-as_shipped-{stage}-float32-{DEVICE}") for name, (_, (section, stage)) in BUGS.items()
    } | {("fuzz", f"as_eager-as_shipped-eager_backward-float32-{DEVICE}")}
    assert expected <= failing, sorted(failing)
    pinned = next(r for r in doc["fuzz"] if r["id"] == f"as_eager-as_shipped-eager_backward-float32-{DEVICE}")
    # Wrong values on views, where the op only overflowed as eager does: a finding, the gate fails.
    assert "does not compute eager's function" in pinned["verdict"], pinned["verdict"]
    assert "finding: eager grad of x, transposed: wrong_values" in pinned["verdict"]
    # Every run wrote a file of its own: the accept, the green gate and the failing one.
    assert len(list((tmp_path / "compat-results").glob("torch-*.json"))) == 3


@pytest.mark.slow
def test_a_scalar_of_the_wrong_type_for_the_ops_schema_stops_before_any_cell(tmp_path):
    write_repository(tmp_path, {"typed": CORRECT})
    cases = tmp_path / "scaled" / "cases.py"
    cases.write_text(cases.read_text().replace('Scalar("scale", 1.5)', 'Scalar("scale", "1.5")'))
    done = compat(tmp_path, "run", STAGES)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "input 'scale': passes '1.5' (str), but the op's argument 'scale' is float" in done.stdout + done.stderr
    assert not (tmp_path / "compat-results").exists() and not (tmp_path / "expectations.yaml").exists()
