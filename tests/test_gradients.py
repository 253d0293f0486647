"""Verdicts right in both directions, as a user's repository meets them: a backward kernel's bug fails the CPU gate;
an op whose backward writes into what it saved is judged on what it computes, never on what another run left; a
kernel more accurate than eager passes; a first accept fuzzes and records what the fuzz tests find."""

import json
import os

import pytest
import torch
import yaml

from compat.evidence.expectations import cell_view
from compat.evidence.numerics import compare, compare_elementwise, compare_gradient
from compat.matrix.contract import Tensor

# A user's triton_op with register_autograd: y = x * x, its backward a Triton kernel of its own (dx = 2 x dy).
SQUARE = """
import torch, triton, triton.language as tl
from torch.library import triton_op, wrap_triton
from compat import Dim, Op, Tensor, register_op

@triton.jit
def square_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * x, mask=offs < n)

@triton.jit
def square_backward_kernel(x_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    du = tl.load(dy_ptr + offs, mask=offs < n) * x
    tl.store(dx_ptr + offs, 2.0 * du, mask=offs < n)

@triton_op("mine::square", mutates_args=())
def square(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    wrap_triton(square_kernel)[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y

@triton_op("mine::square_backward", mutates_args=())
def square_backward(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    dx = torch.empty_like(x)
    wrap_triton(square_backward_kernel)[(triton.cdiv(x.numel(), 64),)](x, dy, dx, x.numel(), BLOCK=64)
    return dx

def setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])

def backward(ctx, dy):
    return square_backward(ctx.saved_tensors[0], dy.contiguous())

square.register_autograd(backward, setup_context=setup_context)
register_op(Op(name="square", doc="x * x, a triton_op with a backward kernel", shipped=torch.ops.mine.square,
               reference=lambda x: x * x, inputs=(Tensor("x", ("rows", "cols")),),
               dims=(Dim("rows", example=4, checks=(1, 3, 5), max=64), Dim("cols", example=8, checks=(8,))),
               dtypes=("float32",), devices=("cpu_interpret",), differentiable=True))
"""
GATE = ("-p", "no:cacheprovider", "test_matrix.py", "--compat-stages=eager,eager_backward", "--compat-results=r.json")


@pytest.fixture
def interpreted(project, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the children set it themselves; the cases module is imported here
    return project


@pytest.mark.slow
def test_a_backward_kernel_bug_fails_the_cpu_gate_where_eager_forward_passes(interpreted):
    interpreted.makepyfile(square_cases=SQUARE)
    interpreted.makeini("[pytest]\ncompat_cases = square_cases\n")
    interpreted.runpytest_subprocess(*GATE, "--compat-accept").assert_outcomes(passed=2)
    rows = cell_view(yaml.safe_load((interpreted.path / "expectations.yaml").read_text()), "test")["cells"]
    assert rows["square-as_shipped-eager_backward-*-cpu_interpret"][0]["outcome"] == "passed"
    interpreted.makepyfile(square_cases=SQUARE.replace("2.0 * du", "1.0 * du"))  # the planted bug
    result = interpreted.runpytest_subprocess(*GATE)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*square-as_shipped-eager_backward-float32-cpu_interpret: outcome changed*", "*observed: mismatch*grad of x*"]
    )


# A pure-PyTorch autograd.Function whose backward writes the gradients into the tensors it saved, its inputs (as
# Liger-Kernel's SwiGLU does), with a choice, so the model calls it twice: a stage that hands one variant's inputs,
# or one run's, to another reads what an earlier backward wrote there.
WRITES_SAVED = """
import torch
from compat import Dim, Op, Scalar, Tensor, register_op

class ScaledMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        return a * b * scale

    @staticmethod
    def backward(ctx, dy):
        a, b = ctx.saved_tensors
        da, db = dy * b * ctx.scale, dy * a * ctx.scale
        a.data.copy_(da)  # into the saved inputs, unseen by autograd's version counter, as a Triton kernel writes
        b.data.copy_(db)
        return a, b, None

def scaled_mul(a, b, scale):
    return ScaledMul.apply(a, b, scale)

register_op(Op(name="scaled_mul", doc="a * b * scale, its backward writing into a and b", shipped=scaled_mul,
               reference=lambda a, b, scale: a * b * scale,
               inputs=(Tensor("a", ("rows", "cols")), Tensor("b", ("rows", "cols")),
                       Scalar("scale", 1.0, choices=(3.0,))),
               dims=(Dim("rows", example=4, checks=(1, 3, 5), max=64), Dim("cols", example=8, checks=(8,))),
               dtypes=("float32",), devices=("cpu",), differentiable=True))
"""
TRAINING = "eager,eager_backward,compile_backward,compile_dynamic_backward"


@pytest.mark.slow
def test_an_op_whose_backward_writes_into_its_saved_inputs_is_judged_on_what_it_computes(project):
    project.makepyfile(saved_cases=WRITES_SAVED)
    project.makeini("[pytest]\ncompat_cases = saved_cases\n")
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "test_fuzz.py",
        "--compat-accept",
        f"--compat-stages={TRAINING}",
        "--compat-results=r.json",
    )
    doc = json.loads((project.path / "r.json").read_text())
    outcomes = {c["id"]: c["outcome"]["kind"] for c in doc["cells"]}
    assert outcomes == {f"scaled_mul-as_shipped-{s}-float32-cpu": "passed" for s in TRAINING.split(",")}, outcomes
    fuzzed = {f["id"]: f["outcome"]["kind"] for f in doc["fuzz"]}
    assert set(fuzzed.values()) == {"passed"} and len(fuzzed) == 4, fuzzed
    result.assert_outcomes(passed=8)


def test_that_op_gives_a_wrong_gradient_where_one_pair_of_leaves_feeds_both_variants():
    """What the test above guards against is real: the same op, both variants on one pair of leaves."""
    namespace: dict = {}
    exec(WRITES_SAVED.replace("register_op(", "("), namespace)  # noqa: S102 - the declaration's own code
    b0 = torch.randn(3, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    a, b = (t.clone().requires_grad_() for t in (torch.ones(3, 8, dtype=torch.float64), b0))
    (namespace["scaled_mul"](a, b, 1.0) + namespace["scaled_mul"](a, b, 3.0)).sum().backward()
    assert not torch.allclose(a.grad, 4.0 * b0)
    for scale in (1.0, 3.0):  # each on leaves of its own: right
        a, b = (t.clone().requires_grad_() for t in (torch.ones(3, 8, dtype=torch.float64), b0))
        namespace["scaled_mul"](a, b, scale).sum().backward()
        assert torch.allclose(a.grad, scale * b0)


def test_a_kernel_more_accurate_than_eager_passes_where_eager_cancels():
    x = -torch.linspace(3.0, 12.0, 4001, dtype=torch.float64)
    u = 0.7978845608028654 * (x + 0.044715 * x**3)
    exact = x * torch.sigmoid(2 * u)  # float64: 0.5 x (1 + tanh u) without the cancellation
    xf = x.float()
    uf = 0.7978845608028654 * (xf + 0.044715 * xf**3)
    eager = 0.5 * xf * (1 + torch.tanh(uf))  # float32: 1 + tanh(u) cancels on the negative tail
    kernel = (xf * torch.sigmoid(2 * uf)).float()  # what the fused kernel computes, in float32
    assert not compare_elementwise(kernel, eager, "gelu")["ok"]  # eager alone would call it wrong
    assert compare_elementwise(kernel, eager, "gelu", ref64=exact)["ok"]
    wrong = kernel * (1 + 1e-2)
    judged = compare_elementwise(wrong, eager, "gelu", ref64=exact)
    assert not judged["ok"] and "float64" in judged["why"] and "eager's own error" in judged["why"]


def test_the_float64_bound_still_fails_a_wrong_output_and_names_both_bounds():
    ref64 = torch.randn(257, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    eager = ref64.float()
    assert compare(eager, eager, "x", "float32", ref64)["ok"]
    bad = eager.clone()
    bad[5] += 0.5
    result = compare(bad, eager, "x", "float32", ref64)
    assert not result["ok"] and result["against"] == "float64" and "eager's own error" in result["why"]


def test_a_gradient_is_held_to_its_scale_and_to_eagers_specials():
    ref = torch.tensor([1e-9, 2.0, -3.0, float("nan")])
    near = ref + torch.tensor([1e-6, 0.0, 0.0, 0.0])  # tiny against the gradient's scale, huge against 1e-9
    assert compare_gradient(near, ref, "g")["ok"]
    assert not compare_gradient(torch.tensor([1e-9, 2.0, -3.0, 0.0]), ref, "g")["ok"]  # NaN lost
    assert not compare_gradient(ref * torch.tensor([1.0, 1.1, 1.0, 1.0]), ref, "g")["ok"]
    assert not compare_gradient(torch.ones(3), torch.zeros(3), "g")["ok"]
    nan = torch.full((3,), float("nan"))
    assert compare_gradient(nan, nan, "g")["ok"]  # NaN where eager has it, and nothing else to measure
    assert compare_gradient(torch.empty(0), torch.empty(0), "g")["ok"]


ACCURATE_GELU = """
import torch
from compat import Dim, Op, Tensor, register_op

def gelu_sigmoid(x):  # the fused kernel's formula, computed in float32
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return x * torch.sigmoid(2 * u)

def gelu_tanh(x):  # eager's formula
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1 + torch.tanh(u))

register_op(Op(name="gelu_sigmoid", doc="tanh-GELU as z * sigmoid(2u)", shipped=gelu_sigmoid, reference=gelu_tanh,
               inputs=(Tensor("x", ("rows", "cols")),), dims=(Dim("rows", example=4, checks=(1, 3, 5), max=64),
               Dim("cols", example=8, checks=(8,))), dtypes=("float32",), devices=("cpu",)))
"""


@pytest.mark.slow
def test_a_first_accept_fuzzes_so_accept_then_gate_is_green_for_an_op_more_accurate_than_eager(project):
    project.makepyfile(gelu_cases=ACCURATE_GELU)
    project.makeini("[pytest]\ncompat_cases = gelu_cases\n")
    args = (
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "test_fuzz.py",
        "--compat-stages=eager",
        "--compat-results=r.json",
    )
    project.runpytest_subprocess(*args, "--compat-accept").assert_outcomes(passed=2)  # the cell and its fuzz test
    assert [f["id"] for f in json.loads((project.path / "r.json").read_text())["fuzz"]] == [
        "gelu_sigmoid-as_shipped-eager-float32-cpu"
    ]
    project.runpytest_subprocess(*args).assert_outcomes(passed=2)


@pytest.mark.slow
def test_a_first_accept_records_what_the_fuzz_tests_find(project):
    wrong_on_views = ACCURATE_GELU.replace(
        "def gelu_sigmoid(x):",
        "def gelu_sigmoid(x):\n    x = torch.as_strided(x, x.shape, (x.shape[-1], 1), x.storage_offset())",
    )
    project.makepyfile(gelu_cases=wrong_on_views)
    project.makeini("[pytest]\ncompat_cases = gelu_cases\n")
    project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "test_fuzz.py",
        "--compat-accept",
        "--compat-stages=eager",
        "--compat-results=r.json",
    ).assert_outcomes(passed=2)
    rows = cell_view(yaml.safe_load((project.path / "expectations.yaml").read_text()), "test")
    (row,) = rows["fuzz"]["gelu_sigmoid-as_shipped-eager-*-cpu"]
    # The view bug, pinned by its finding: a view's layout and the example that shows it (the command that
    # reproduces it follows from the two, and the run prints it).
    assert row["outcome"] == "mismatch" and row["findings"] and "reproducer" not in row, row
    assert all(f["layout"] != "contiguous" and "example" in f for f in row["findings"]), row
    assert os.environ.get("TRITON_INTERPRET") is None  # nothing here ran under the interpreter


def test_where_the_exact_value_overflows_the_dtype_any_non_finite_output_passes_and_a_finite_one_fails():
    exact = torch.tensor([1e60, -1e60, 1.0], dtype=torch.float64)
    eager = torch.tensor([float("nan"), float("-inf"), 1.0])  # eager's summation order overflowed to these
    assert compare_elementwise(torch.tensor([float("inf"), float("nan"), 1.0]), eager, "mm", ref64=exact)["ok"]
    finite = compare_elementwise(torch.tensor([3e38, float("nan"), 1.0]), eager, "mm", ref64=exact)
    assert not finite["ok"] and "overflows float32" in finite["why"]
    assert not compare_elementwise(torch.tensor([float("inf"), float("nan"), float("nan")]), eager, "mm", ref64=exact)[
        "ok"
    ]  # NaN where the exact value is 1


def test_a_reference_that_writes_into_its_inputs_cannot_widen_the_bound():
    """An in-place op's reference (y += alpha x) run first in the dtype would hand the float64 run what it wrote, and
    a float64 result far from eager's would excuse any output: the float64 run goes first, on copies."""
    from compat.child.checks import compare_call
    from compat.matrix.cells import parse_cell_id

    cell = parse_cell_id("axpy_inplace-triton_op-eager-float32-cpu_interpret", "test")

    class InPlace(torch.nn.Module):
        def forward(self, x, y):
            return (y.add_(2.0 * x),)

    x, y = torch.randn(64, generator=torch.Generator().manual_seed(1)), torch.randn(64)
    wrong = (2.0 * x,)  # y lost, as reset_to_zero's zeroing loses it
    (result,) = compare_call(wrong, InPlace(), (x.clone(), y.clone()), "batch", cell)
    assert not result["ok"] and result["eager_err"] < 1e-5  # float32 rounding, not the write


def test_a_declared_tolerance_replaces_the_dtypes_and_tf32_loosens_float32_only():
    from compat import Op
    from compat.errors import RegistryError
    from compat.evidence.numerics import TF32, TOL, declared_tolerance

    base = dict(doc="d", shipped=torch.relu, reference=lambda x: x, inputs=(Tensor("x"),))
    own = Op(name="t_tol", tolerances={"bfloat16": 0.08}, **base)
    assert declared_tolerance(own, "bfloat16") == 0.08 and declared_tolerance(own, "float32") is None
    tf32 = Op(name="t_tf32", tf32=True, **base)
    assert declared_tolerance(tf32, "float32") == TF32 > TOL["float32"] and declared_tolerance(tf32, "float16") is None
    ref = torch.ones(8)
    assert not compare(ref * (1 + 1e-3), ref, "x")["ok"]
    assert compare(ref * (1 + 1e-3), ref, "x", tol=declared_tolerance(tf32, "float32"))["ok"]
    with pytest.raises(RegistryError, match="tolerances"):
        Op(name="t_bad_tol", tolerances={"float64": 0.1}, **base)


def test_where_a_declared_error_scale_overflows_the_dtype_the_reference_need_not_show_an_exact_value():
    """A reference that computes in float32 (matmul's a.float() @ b.float()) overflows in its float64 run too: the
    error scale (the terms' magnitudes) says where the sum overflowed."""
    eager = torch.tensor([float("nan"), float("inf"), 2.0])
    ref64 = eager.double()  # no exact value where float32 overflowed
    terms = torch.tensor([1e60, float("inf"), 2.0], dtype=torch.float64)  # a float32 error scale overflows too
    assert compare_elementwise(torch.tensor([float("inf"), float("nan"), 2.0]), eager, "mm", terms, ref64=ref64)["ok"]
    assert not compare_elementwise(torch.tensor([1.0, float("nan"), 2.0]), eager, "mm", terms, ref64=ref64)["ok"]


@pytest.mark.slow
def test_a_reproducer_reruns_a_users_op_from_their_repository(project):
    """The command a finding prints runs in a child that imports the repository's cases, as the run's children do."""
    import subprocess
    import sys

    project.makepyfile(gelu_cases=ACCURATE_GELU)
    project.makeini("[pytest]\ncompat_cases = gelu_cases\npythonpath = .\n")
    example = (
        '{"shape":[3,8],"layout":"transposed","seed":1,"scale":1.0,"sign":"mixed","specials":[],'
        '"sizes":[["rows",3],["cols",8]]}'
    )
    out = subprocess.run(
        [sys.executable, "-m", "compat", "fuzz", "gelu_sigmoid-as_shipped-eager-float32-cpu", "--example", example],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stdout.rstrip().endswith("gelu_sigmoid-as_shipped-eager-float32-cpu: passed")


def test_a_comparison_that_breaks_is_a_harness_error_never_a_finding():
    from compat.errors import HarnessError

    with pytest.raises(HarnessError, match="compat.evidence.numerics.compare_elementwise raised RuntimeError"):
        compare_elementwise(torch.ones(4), torch.ones(4), "x", scale=torch.ones(3))  # a scale of the wrong shape
