"""The kernel contract: a declaration is checked when it is made, and names the module, the kernel and the problem;
the styles build their ops from the declared signature; what does not apply says why."""

import pytest
import torch

from compat import Dim, Kernel, Scalar, Tensor, Tunable, register_kernel, register_op
from compat.errors import RegistryError
from compat.matrix.cells import Cell, why_not_applicable
from compat.matrix.kernels import KERNELS, launch_silu, silu_kernel, silu_reference


def declare(**overrides):
    spec = dict(name="t_ok", doc="a test kernel", jit=silu_kernel, launch=launch_silu, reference=silu_reference)
    return Kernel(**{**spec, **overrides})


@pytest.mark.parametrize(
    "overrides, problem",
    [
        (dict(name="Bad-Name"), "the name must be lower case letters"),
        (dict(doc=""), "doc is empty"),
        (dict(jit=object()), "jit is not a @triton.jit function"),
        (dict(inputs=(Tensor("x"), Tensor("x"))), "input names repeat"),
        (dict(mutates=("y",)), "mutates ['y'], which are not tensor inputs"),
        (dict(inputs=(Tensor("x", ("rows",)),)), "names undeclared dims ['rows']"),
        (dict(inputs=(Tensor("x", ("n",)),), dims=(Dim("n", example=8, checks=(1, 9), max=4),)), "dim 'n': example 8"),
        (  # the dynamic stages compile at the second check and run the third: two checks crashed the harness
            dict(inputs=(Tensor("x", ("n",)),), dims=(Dim("n", example=8, checks=(1, 9), max=64),)),
            "dim 'n' is dynamic (it has a max) and is checked at 2 size(s)",
        ),
        (dict(reference=lambda y: y), "the reference's parameters ['y'] are not the inputs ['x']"),
        (dict(tunable=Tunable({"BLOCK": (1, 2)}, key=("n_elements",), threshold=4)), "tunable names ['BLOCK']"),
        (dict(embedding="graph"), "embedding 'graph' is none of"),
        (dict(inputs=(Tensor("x"), Scalar("s", b"text"))), "scalar 's': type bytes is none of int, float, bool, str"),
        (
            dict(inputs=(Tensor("x"), Scalar("s", 1, choices=(1, "two")))),
            "scalar 's': its choices (1, 'two') are not all int",
        ),
        (dict(inputs=(Tensor("x"), Scalar("s", 1.5, int))), "scalar 's': its default 1.5 is not int"),
        (dict(fuzz_compiles=0), "fuzz_compiles is 0: a whole number of compiles, at least 1, or None"),
    ],
)
def test_a_bad_declaration_names_the_module_the_kernel_and_the_problem(overrides, problem):
    with pytest.raises(RegistryError) as raised:
        declare(**overrides)
    assert str(raised.value).startswith(f"{__name__}: kernel {overrides.get('name', 't_ok')!r}: ")
    assert problem in str(raised.value)


def test_a_name_is_declared_once():
    with pytest.raises(RegistryError, match="kernel 'silu' is already declared by compat.matrix.kernels"):
        register_kernel(declare(name="silu"))


def test_the_ops_schema_comes_from_the_declared_inputs_and_outputs():
    from torch._library.infer_schema import infer_schema

    def schema(kernel):
        def prototype(*args):
            raise NotImplementedError

        prototype.__signature__ = kernel.signature()
        return infer_schema(prototype, mutates_args=kernel.mutates)

    assert schema(KERNELS["silu"]) == "(Tensor x) -> Tensor"
    assert schema(KERNELS["silu_out"]) == "(Tensor x, Tensor(a1!) out) -> ()"
    assert schema(KERNELS["sigmoid_silu"]) == "(Tensor x) -> (Tensor, Tensor)"
    assert schema(KERNELS["rms_norm"]) == "(Tensor x, Tensor weight, float eps=1e-06) -> Tensor"
    assert schema(KERNELS["axpy_inplace"]) == "(Tensor x, Tensor(a1!) y, float alpha=2.0) -> ()"


def test_omitted_scalars_take_their_defaults():
    kernel = KERNELS["silu_mul"]
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(kernel.with_defaults(kernel.reference)(x, y), kernel.reference(x, y, 0.5))


@pytest.mark.parametrize(
    "case, why",
    [
        (Cell("rms_norm", "autotune_raw", "eager", "float32", "cuda"), "no tunable constexprs"),
        (Cell("matmul", "autograd_function", "eager", "float32", "cuda"), "no backward kernel"),
        (Cell("silu_mul", "triton_op_subclass", "eager", "float32", "cuda"), "one-tensor-in, one-tensor-out"),
        (Cell("silu_out", "autotune_raw", "eager", "float32", "cuda"), "varies the op's signature"),
        (Cell("silu", "raw_jit", "opcheck", "float32", "cuda"), "checks a torch.library op"),
        (Cell("silu", "raw_jit", "eager", "float32", "cpu"), "no CPU kernel"),
        (Cell("silu", "triton_op", "aoti_strict", "float32", "cpu_interpret"), "interpreter in an AOTI package"),
    ],
)
def test_what_does_not_apply_says_why(case, why):
    assert why in why_not_applicable(case)


@pytest.fixture(scope="module")
def typed_op():
    @torch.library.custom_op("compat_test::typed", mutates_args=())
    def typed(x: torch.Tensor, scale: float, n: int, bias: torch.Tensor | None) -> torch.Tensor:
        return x * scale

    @torch.library.custom_op("compat_test::typed_backward", mutates_args=())
    def typed_backward(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    return typed, typed_backward


@pytest.mark.parametrize(
    "inputs, problem",
    [
        ((Tensor("x"), Scalar("scale", "1.5"), Scalar("n", 2), Tensor("bias")), "input 'scale': passes '1.5' (str)"),
        ((Tensor("x"), Scalar("scale", 1.5), Scalar("n", 2.5), Tensor("bias")), "input 'n': passes 2.5 (float)"),
        ((Tensor("x"), Tensor("scale"), Scalar("n", 2), Tensor("bias")), "input 'scale': declared a Tensor, but"),
        (
            (Tensor("x"), Scalar("scale", 1.5, optional=True, choices=(None,)), Scalar("n", 2)),
            "'scale': passes None, but",
        ),
        ((Tensor("x"), Scalar("scale", 1.5), Scalar("n", 2), Tensor("bias"), Scalar("k", 1)), "'k': compat_test::"),
        ((Tensor("x"), Scalar("scale", 1.5), Scalar("n", 2), Tensor("bias", optional=True)), None),
        ((Tensor("x"), Scalar("scale", 2), Scalar("n", True)), None),  # torch takes an int for a float, a bool an int
    ],
)
def test_an_ops_inputs_are_checked_against_its_schema_when_declared(typed_op, inputs, problem):
    from compat import Op

    reference = eval(f"lambda {', '.join(a.name for a in inputs)}: x")  # noqa: S307 - the declared parameters
    declare_op = dict(name="t_typed", doc="typed", shipped=typed_op[0], reference=reference, inputs=inputs)
    if problem is None:
        Op(**declare_op)
        return
    with pytest.raises(RegistryError, match="op 't_typed': " + ".*" + problem.replace("(", r"\(").replace(")", r"\)")):
        Op(**declare_op)


def test_a_helper_op_counts_as_declared_and_must_be_a_library_op(typed_op):
    from compat import Op
    from compat.report.coverage import declarations

    spec = dict(name="t_helped", doc="d", shipped=typed_op[0], reference=lambda x, scale, n: x)
    inputs = (Tensor("x"), Scalar("scale", 1.5), Scalar("n", 2))
    with pytest.raises(RegistryError, match="helpers: .* is not a torch.library op"):
        Op(inputs=inputs, helpers=(torch.relu,), **spec)
    register_op(Op(inputs=inputs, helpers=(typed_op[1],), **spec))
    try:
        assert declarations("compat_test") == {
            "compat_test::typed": ["t_helped"],
            "compat_test::typed_backward": ["t_helped's helper"],
        }
    finally:
        del KERNELS["t_helped"]
