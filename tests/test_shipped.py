"""Ops as shipped (compat.Op, style as_shipped) and the contract's parts real kernels need: a user's op is proved by
what it launched, never reported missing; choices, unions, optional tensors, explicit configs, saved tensors and a
backward that writes are declared and run; a declaration's fault is a harness error naming it; a cases module that
reads the GPU at import runs with forked children, imported after the fork; the ops of a namespace are listed with
their declarations."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.fx
import triton
import yaml
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table, triton_kernel_wrapper_mutation

from compat import Backward, Dim, Kernel, Module, OneOf, Op, Scalar, Tensor, Tunable
from compat.child import launches
from compat.errors import CompatError, RegistryError
from compat.evidence.expectations import cell_view
from compat.matrix.cases import import_cases
from compat.matrix.cells import Cell, why_not_applicable
from compat.matrix.contract import GIVEN
from compat.matrix.kernels import launch_silu, silu_kernel, silu_reference
from compat.matrix.model import error_scales, output_names, pair
from compat.matrix.styles import STYLES
from tests.projects import ROOT

EXAMPLE = ROOT / "examples" / "my_kernels"
ROWS = Dim("rows", example=4, checks=(1, 3, 5), max=8)


def test_choices_are_variants_every_stage_runs_the_defaults_first():
    k = Kernel(
        name="t_variants",
        doc="choices",
        jit=silu_kernel,
        launch=launch_silu,
        reference=lambda x, bias, mode, offset: x,
        inputs=(
            Tensor("x", ("rows",)),
            Tensor("bias", ("rows",), optional=True),
            Scalar("mode", "plain", choices=("fused",)),
            OneOf("offset", Scalar("offset", 0), Tensor("offset", ("rows",), dtype="int32")),
        ),
        dims=(ROWS,),
    )
    variants = k.variants()
    assert len(variants) == 2 * 2 * 2
    assert variants[0] == {"x": GIVEN, "bias": GIVEN, "mode": "plain", "offset": 0}  # the defaults first
    assert {v["bias"] is None for v in variants} == {True, False}
    assert [t.name for t in k.tensors] == ["x", "bias", "offset"]  # the union's tensor is one of the model's inputs
    assert k.variant_label({**variants[0], "mode": "fused", "bias": None}) == "bias=None, mode='fused'"
    assert output_names(k)[:2] == ["output 0", "offset=a tensor, output 0"]


def test_a_union_keeps_out_the_styles_that_register_an_op_and_says_why():
    k = Kernel(
        name="t_union",
        doc="a union",
        jit=silu_kernel,
        launch=launch_silu,
        reference=lambda x, offset: x,
        inputs=(Tensor("x"), OneOf("offset", Scalar("offset", 0), Tensor("offset", dtype="int32"))),
    )
    assert "schema" not in k.features()
    assert STYLES["triton_op"].why_not(k) == "an argument is a union (OneOf), which no torch.library schema can declare"
    assert STYLES["raw_jit"].why_not(k) is None


def test_a_declared_choice_must_have_the_scalars_type():
    with pytest.raises(RegistryError, match="its choices \\('two',\\) are not all int"):
        Kernel(
            name="t_bad",
            doc="bad",
            jit=silu_kernel,
            launch=launch_silu,
            reference=lambda x, n: x,
            inputs=(Tensor("x"), Scalar("n", 1, choices=("two",))),
        )


def test_explicit_autotune_configs_keep_their_own_warps_and_stages():
    configs = (
        triton.Config({"BLOCK_SIZE": 256}, num_warps=2, num_stages=2),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=8, num_stages=4),
    )
    tunable = Tunable(configs=configs, key=("n_elements",), threshold=4096)
    made = tunable.triton_configs()
    assert [(c.kwargs, c.num_warps, c.num_stages) for c in made] == [
        ({"BLOCK_SIZE": 256}, 2, 2),
        ({"BLOCK_SIZE": 1024}, 8, 4),
    ]
    assert tunable.names == ("BLOCK_SIZE",) and tunable.smallest() == {"BLOCK_SIZE": 256}
    Kernel(
        name="t_configs", doc="configs", jit=silu_kernel, launch=launch_silu, reference=silu_reference, tunable=tunable
    )  # a declaration that names them is valid


def test_register_autograd_declares_what_the_backward_writes_and_hands_it_what_the_forward_saved():
    def launch(kernel, meta, a, b):
        return a * b, a + b  # the output, then a tensor saved for the backward

    def backward(kernel, meta, a, b, saved, grad):
        a.copy_(grad * b)  # written into its argument, as Liger-Kernel's SwiGLU backward does
        return a, grad * saved

    k = Kernel(
        name="t_writes",
        doc="a backward that writes",
        jit=silu_kernel,
        launch=launch,
        reference=lambda a, b: a * b,
        inputs=(Tensor("a"), Tensor("b")),
        saved=("saved",),
        backward=Backward(silu_kernel, backward, mutates=("a",)),
    )
    STYLES["register_autograd"].build(k)
    schema = str(torch.ops.compat.t_writes_register_autograd_backward.default._schema)
    assert "Tensor(a0!) a" in schema and "Tensor saved" in schema and "Tensor grad_out" in schema
    assert str(torch.ops.compat.t_writes_register_autograd.default._schema).endswith("-> (Tensor, Tensor)")
    with pytest.raises(RegistryError, match="the backward mutates \\['c'\\], which are not among its arguments"):
        Kernel(
            name="t_writes_bad",
            doc="bad",
            jit=silu_kernel,
            launch=launch,
            reference=lambda a, b: a,
            inputs=(Tensor("a"), Tensor("b")),
            backward=Backward(silu_kernel, backward, mutates=("c",)),
        )


def test_error_scale_takes_every_argument_of_the_op_scalars_too():
    seen = []

    def error_scale(x, scale):
        seen.append(scale)
        return (x.abs() * scale,)

    k = Kernel(
        name="t_scale",
        doc="scaled",
        jit=silu_kernel,
        launch=launch_silu,
        reference=lambda x, scale: x,
        inputs=(Tensor("x"), Scalar("scale", 2.0, choices=(3.0,))),
        error_scale=error_scale,
    )
    _, reference = pair(k, k.reference, "float32", "cpu", embedded=False)
    scales = error_scales(k, reference, (torch.ones(3),))
    assert seen == [2.0, 3.0] and [s.tolist() for s in scales] == [[2.0] * 3, [3.0] * 3]


def test_a_shipped_module_and_its_reference_share_parameters_by_name_not_by_object():
    op = Op(
        name="t_module",
        doc="a module",
        shipped=Module(torch.nn.Linear, 4, 4),
        reference=lambda m, x: x @ m.weight.T + m.bias,
        inputs=(Tensor("x", ("rows", 4)),),
        dims=(ROWS,),
    )
    model, reference = pair(op, op.shipped, "float32", "cpu")
    assert (
        dict(model.named_parameters()).keys()
        == dict(reference.named_parameters()).keys()
        == {"module.weight", "module.bias"}
    )
    assert all(p.abs().max() <= 1 for p in model.parameters())  # drawn uniform in [-1, 1] from the seed
    assert model.module.weight is not reference.module.weight
    x = torch.randn(3, 4)
    torch.testing.assert_close(model(x)[0], reference(x)[0])


# ---- the graph proof, for each kind an op is shipped as --------------------------------------------------------


@triton.jit
def _kernel(x_ptr, n, BLOCK: triton.language.constexpr):
    pass


def _graph(targets=(), kernels=()):
    """A graph as a traced stage leaves it: a call of each op, a kernel-wrapper node for each kernel."""
    graph = torch.fx.Graph()
    for target in targets:
        graph.call_function(target, ())
    for kernel in kernels:
        graph.call_function(
            triton_kernel_wrapper_mutation,
            (),
            {
                "kernel_idx": kernel_side_table.add_kernel(kernel),
                "constant_args_idx": 0,
                "grid": [(1, 1, 1)],
                "tma_descriptor_metadata": {},
                "kwargs": {},
            },
        )
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _missing(launched, graph):
    from compat.child.checks import graph_targets

    return launches.missing(launched, graph_targets([graph]), launches.graph_kernels([graph]))


@pytest.mark.parametrize("kind", ["triton_op", "custom_op", "library_fragment", "module_calling_an_op"])
def test_a_library_op_is_proved_by_its_own_node_never_reported_missing(kind):
    # What eager recorded for each of these kinds: the op, and the kernel it launched inside.
    launched = launches.Launched(ops={"aten.relu.default": ["_kernel"]})
    assert _missing(launched, _graph([torch.ops.aten.relu.default])) == []  # its overload (export, AOTAutograd)
    assert _missing(launched, _graph([torch.ops.aten.relu])) == []  # its packet (Dynamo's graph of a Library op)
    assert _missing(launched, _graph(kernels=[_kernel])) == []  # decompose_custom_triton_ops: its kernels instead
    assert _missing(launched, _graph([torch.ops.aten.sin.default])) == ["the op aten.relu.default"]


@pytest.mark.parametrize("kind", ["autograd_function", "plain_function"])
def test_a_raw_launch_is_proved_by_its_kernels_wrapper_node_through_autotune(kind):
    launched = launches.Launched(kernels=["_kernel"])
    tuned = triton.autotune(configs=[triton.Config({})], key=["n"])(_kernel)
    assert _missing(launched, _graph(kernels=[tuned])) == []  # named by its jit function under the autotuner
    assert _missing(launched, _graph([torch.ops.aten.relu.default])) == ["the Triton kernel _kernel"]


RECORD = textwrap.dedent("""
    import json, torch
    import my_kernels.cases
    from compat.matrix.cells import Cell
    from compat.child.checks import eager_launches
    print(json.dumps({name: eager_launches(Cell(name, "as_shipped", "eager", "float32", "cpu_interpret")).describe()
                      for name in ("my_rms_norm", "my_gelu_tanh", "my_scaled_add", "my_swish", "my_rms_norm_module",
                                   "my_bias_relu")}))
""")


@pytest.mark.slow
def test_eager_records_what_each_kind_of_op_launched():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}"}
    out = subprocess.run([sys.executable, "-c", RECORD], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    recorded = json.loads(out.stdout.strip().splitlines()[-1])
    assert recorded == {
        "my_rms_norm": {"ops": {"my_kernels.rms_norm.default": ["_rms_norm_fwd"]}, "kernels": []},  # triton_op
        "my_gelu_tanh": {"ops": {"my_kernels.gelu_tanh.default": ["_gelu_tanh"]}, "kernels": []},  # custom_op
        "my_scaled_add": {"ops": {"my_kernels.scaled_add.default": ["_scaled_add"]}, "kernels": []},  # Library
        "my_swish": {"ops": {}, "kernels": ["_swish_fwd"]},  # autograd.Function launching raw kernels
        "my_rms_norm_module": {"ops": {"my_kernels.rms_norm.default": ["_rms_norm_fwd"]}, "kernels": []},  # module
        "my_bias_relu": {"ops": {}, "kernels": ["_bias_relu"]},  # a plain function
    }


# ---- failing clearly ---------------------------------------------------------------------------------------------

FAULTY = """
import torch
from compat import Dim, Op, Tensor, register_op

def reference(x):
    return x.no_such_method()  # the declaration's bug, not the op's

register_op(Op(name="faulty", doc="an op whose reference is wrong", shipped=torch.relu, reference=reference,
               inputs=(Tensor("x", ("rows",)),), dims=(Dim("rows", example=4, checks=(4,)),), dtypes=("float32",),
               devices=("cpu",)))
"""
FAULTY_CELL = "faulty-as_shipped-eager-float32-cpu"


@pytest.mark.slow
def test_a_faulty_reference_is_a_declaration_error_exit_2_naming_the_declaration_never_an_outcome(project):
    project.makepyfile(faulty_cases=FAULTY)
    project.makeini("[pytest]\ncompat_cases = faulty_cases\n")
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "--compat-accept",
        "--compat-kernels=faulty",
        "--compat-stages=eager",
        "--compat-results=r.json",
    )
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # bad input, the README's rule: the user's to fix
    result.stdout.fnmatch_lines(
        [
            f"*DECLARATION ERROR in {FAULTY_CELL}*DeclarationError: faulty_cases: op 'faulty': its "
            "reference raised AttributeError*no_such_method*",
            "*a declaration error is the declaration's to fix (exit 2): accepting records nothing for it*",
        ]
    )
    doc = json.loads((project.path / "r.json").read_text())
    assert doc["cells"] == [] and [e["id"] for e in doc["harness_errors"]] == [FAULTY_CELL]
    assert not (project.path / "expectations.yaml").exists()  # nothing accepted


@pytest.mark.slow
def test_a_first_accept_creates_the_expectations_file_it_is_told_to_write(project):
    project.makepyfile(mine_cases=FAULTY.replace("x.no_such_method()", "torch.relu(x)"))
    project.makeini("[pytest]\ncompat_cases = mine_cases\n")
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "--compat-accept",
        "--compat-kernels=faulty",
        "--compat-stages=eager",
        "--compat-expectations=gate/mine.yaml",
    )
    result.assert_outcomes(passed=1)
    rows = cell_view(yaml.safe_load((project.path / "gate" / "mine.yaml").read_text()), "test")["cells"]
    assert rows[FAULTY_CELL.replace("float32", "*")][0]["outcome"] == "passed"


@pytest.mark.slow
@pytest.mark.parametrize(
    "reads",
    ["props = torch.cuda.get_device_properties(0)", "DEVICE = triton.runtime.driver.active.get_active_torch_device()"],
)
def test_a_cases_module_that_reads_the_gpu_at_import_runs_with_forked_children(project, reads):
    """As Triton's tutorials do (on a machine without a GPU the call fails, which the module here ignores): the
    run finds that its import touches CUDA, its warm servers leave it to each child, which imports it after its
    fork; the default workers and children run it, and the children did import it."""
    project.makepyfile(
        tutorial_cases=f"import os, pathlib, torch, triton\ntry:\n    {reads}\nexcept Exception:\n"
        f"    pass\npathlib.Path('imported-by').joinpath(str(os.getpid())).touch()\n"
    )
    (project.path / "imported-by").mkdir()
    project.makeini("[pytest]\ncompat_cases = tutorial_cases compat.matrix.kernels\n")
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "--compat-results=r.json",
        "--compat-kernels=silu",
        "--compat-styles=triton_op_cpu_fallback",
        "--compat-stages=eager,compile_inductor",
        "--compat-devices=cpu",
        "--compat-dtypes=float32",
    )
    result.assert_outcomes(passed=2)
    doc = json.loads((project.path / "r.json").read_text())
    assert doc["options"]["children"] == "forked"
    children = {str(c["outcome"]["detail"]["child"]["pid"]) for c in doc["cells"]}
    assert children and children <= {p.name for p in (project.path / "imported-by").iterdir()}


def test_a_module_the_warm_server_imports_that_touches_cuda_is_named_with_the_fix(tmp_path, monkeypatch):
    """A warm server forks: an import of its that touches CUDA (one a cases module imports in turn, which the run
    did not see first) is refused, naming the module, where, and what to do."""
    (tmp_path / "gpu_reading_cases_for_test.py").write_text(
        "import torch\ntry:\n    torch.cuda.get_device_properties(0)\nexcept Exception:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "gpu_reading_cases_for_test", raising=False)
    with pytest.raises(
        CompatError, match="the warm server: importing 'gpu_reading_cases_for_test' (probes for a GPU|initialises CUDA)"
    ) as refused:
        import_cases(["gpu_reading_cases_for_test"], "the warm server")
    assert "name the module in compat_cases" in str(refused.value)


@pytest.mark.slow
def test_the_ini_says_children_start_fresh_and_a_cuda_reading_cases_module_then_runs(project):
    project.makepyfile(
        tutorial_cases="import torch\ntry:\n    torch.cuda.get_device_properties(0)\nexcept Exception:\n    pass\n"
    )
    project.makeini("[pytest]\ncompat_cases = tutorial_cases compat.matrix.kernels\ncompat_children = fresh\n")
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "--compat-results=r.json",
        "--compat-kernels=silu",
        "--compat-styles=triton_op_cpu_fallback",
        "--compat-stages=eager",
        "--compat-devices=cpu",
        "--compat-dtypes=float32",
    )
    result.assert_outcomes(passed=1)
    assert json.loads((project.path / "r.json").read_text())["options"]["children"] == "fresh"


NAMESPACE = """
import torch
from compat import Dim, Op, Tensor, register_op

@torch.library.custom_op("mine_ns::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2

@torch.library.custom_op("mine_ns::unshipped", mutates_args=())
def unshipped(x: torch.Tensor) -> torch.Tensor:
    return x * 3

register_op(Op(name="mine_double", doc="a declared op", shipped=double, reference=lambda x: x * 2,
               inputs=(Tensor("x", ("rows",)),), dims=(Dim("rows", example=4, checks=(4,)),), dtypes=("float32",),
               devices=("cpu",)))
"""


@pytest.mark.slow
def test_the_gate_fails_on_an_undeclared_op_of_a_namespace_it_must_cover(project):
    project.makepyfile(ns_cases=NAMESPACE)
    project.makeini("[pytest]\ncompat_cases = ns_cases\ncompat_require_declared = mine_ns\n")
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "--compat-accept",
        "--compat-kernels=mine_double",
        "--compat-stages=eager",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*compat_require_declared[[]mine_ns[]]*",
            "*1 op(s) of 'mine_ns' have no declaration as shipped (compat.Op): mine_ns::unshipped*",
        ]
    )


@pytest.mark.slow
def test_coverage_lists_the_examples_declared_and_undeclared_ops():
    out = subprocess.run(
        [sys.executable, "-m", "compat", "coverage", "my_kernels", "--fail-undeclared"],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 1, out.stderr
    assert out.stdout.splitlines() == [
        "my_kernels::gelu_tanh  declared: my_gelu_tanh",
        "my_kernels::rms_norm  declared: my_rms_norm",
        "my_kernels::rms_norm_backward  UNDECLARED",
        "my_kernels::scaled_add  declared: my_scaled_add",
        "my_kernels: 3 of 4 ops declared",
    ]
    unknown = subprocess.run(
        [sys.executable, "-m", "compat", "coverage", "no_such_ns"],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert unknown.returncode == 2 and "no op is registered under no_such_ns" in unknown.stderr


@pytest.mark.slow
def test_every_kind_of_op_as_shipped_has_its_cells():
    """One op of each kind the issue names, each declared in examples/my_kernels (its own repository)."""
    env = {**os.environ, "PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}", "TRITON_INTERPRET": "1"}
    script = (
        "import my_kernels.cases\nfrom compat.matrix.cells import matrix\n"
        "print(sorted({c.kernel for c in matrix({'style': ['as_shipped']})}))"
    )
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == str(
        sorted(["my_rms_norm", "my_gelu_tanh", "my_scaled_add", "my_swish", "my_rms_norm_module", "my_bias_relu"])
    )


def test_a_style_that_wraps_a_kernel_never_applies_to_an_op_as_shipped_and_says_why():
    op = Op(name="t_op", doc="an op", shipped=torch.relu, reference=torch.relu, inputs=(Tensor("x"),))
    assert STYLES["triton_op"].why_not(op).startswith("it is an op as shipped (compat.Op)")
    assert STYLES["as_shipped"].why_not(op) is None
    assert why_not_applicable(Cell("silu", "as_shipped", "eager", "float32", "cuda")).startswith(
        "it is a bare Triton kernel"
    )


TUNED = """
import time

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

from compat import Dim, Op, Tensor, register_op

DEVICE = "cpu_interpret"
SPIN = 300 if DEVICE == "cpu_interpret" else 20_000  # the wrong config's extra work, far past a benchmark's noise

@triton.jit
def _double(x_ptr, y_ptr, n, BLOCK: tl.constexpr, OFF_BY: tl.constexpr, SPIN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    for _ in range(SPIN):  # the wrong config is the slow one too: no benchmark here picks it
        tl.atomic_add(y_ptr + offs, 0.0, mask=mask)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + OFF_BY, mask=mask)


def _timed(kernel_call):
    start = time.perf_counter()
    kernel_call()
    return time.perf_counter() - start


def _wall_clock(kernel_call, quantiles=None, **kwargs):  # triton's own benchmark needs a GPU; the interpreter has none
    kernel_call()  # compiles
    return [min(_timed(kernel_call) for _ in range(3))] * 3  # the fastest of three: a busy machine's pause left out


_tuned = triton.autotune(  # Inductor tunes it again with its own benchmark, by time alone
    configs=[triton.Config({"BLOCK": 64, "OFF_BY": 0, "SPIN": 0}), triton.Config({"BLOCK": 64, "OFF_BY": 1, "SPIN": SPIN})],
    key=["n"],
    do_bench=_wall_clock if DEVICE == "cpu_interpret" else None,
)(_double)


@triton_op("tuned_cases::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    wrap_triton(_tuned)[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    return y


register_op(Op(name="tuned_double", doc="an op whose own autotuner has a wrong config the benchmark never picks",
               shipped=torch.ops.tuned_cases.double, reference=lambda x: x * 2, inputs=(Tensor("x", ("rows",)),),
               dims=(Dim("rows", example=100, checks=(8, 100)),), dtypes=("float32",), devices=(DEVICE,)))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "device, stages",
    [
        ("cpu_interpret", "eager"),  # the interpreter measures eager alone
        pytest.param(  # on a GPU, Inductor runs the op's autotuner too: pinned there as well
            "cuda",
            "eager,compile_inductor",
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
        ),
    ],
)
def test_an_ops_own_autotuner_is_checked_config_by_config_whichever_the_benchmark_picks(project, device, stages):
    """The config that gives wrong values is never this machine's pick (another GPU's benchmark may pick it): the
    op's eager call shows the autotuner it goes through, and each of its configs runs pinned."""
    project.makepyfile(tuned_cases=TUNED.replace('DEVICE = "cpu_interpret"', f'DEVICE = "{device}"'))
    project.makeini("[pytest]\ncompat_cases = tuned_cases\n")
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "--compat-kernels=tuned_double",
        f"--compat-stages={stages}",
        "--compat-accept",
        "--compat-results=r.json",
    )
    assert result.ret == pytest.ExitCode.OK  # accepted: the mismatch is recorded as this op's outcome
    cells = json.loads((project.path / "r.json").read_text())["cells"]
    assert sorted(c["axes"]["stage"] for c in cells) == sorted(stages.split(","))
    for cell in cells:
        outcome = cell["outcome"]
        assert outcome["kind"] == "mismatch", (cell["id"], outcome)
        assert "with the autotuner pinned to BLOCK: 64, OFF_BY: 1" in outcome["message"]
        assert sorted(outcome["detail"]["configs"].values()) == ["mismatch", "passed"]


BOUNDED = """
import torch
from compat import Dim, Op, Tensor, register_op

register_op(Op(name="bounded_tanh", doc="an op whose every compile costs minutes, its fuzz tests bounded to one",
               shipped=torch.tanh, reference=torch.tanh, inputs=(Tensor("x", ("rows",)),),
               dims=(Dim("rows", example=100, checks=(8, 100)),), dtypes=("float32",), devices=("cpu",),
               fuzz_compiles=1))
"""


@pytest.mark.slow
def test_an_ops_fuzz_compiles_bound_counts_the_examples_past_it_and_checks_the_rest(project):
    """A static compile meets a new size with a recompile: past the op's bound of one, the example is counted and
    not checked, never run eager, and the examples of the first compile's size still are."""
    project.makepyfile(bounded_cases=BOUNDED)
    project.makeini("[pytest]\ncompat_cases = bounded_cases\n")
    for tests in ("test_matrix.py", "test_fuzz.py"):  # the cell's row first: a fuzz test runs a cell expected to pass
        result = project.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            tests,
            "--compat-stages=compile_eager",
            "--compat-accept",
            "--compat-results=r.json",
        )
        assert result.ret == pytest.ExitCode.OK
    doc = json.loads((project.path / "r.json").read_text())
    (fuzz,) = doc["fuzz"]
    tally = fuzz["outcome"]["detail"]["tally"]
    assert fuzz["outcome"]["kind"] == "passed" and tally["past_compile_bound"] > 0 and tally["informative"] > 0
    assert fuzz["outcome"]["detail"]["frames"] == 1  # one compile: proven compiled, never past its bound
    assert doc["summary"]["fuzz"]["past_compile_bound"] == tally["past_compile_bound"]
    result.stdout.fnmatch_lines([f"*{tally['past_compile_bound']} examples not checked, past their op's*"])
