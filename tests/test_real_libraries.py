"""Declarations as real libraries need them: keyword arguments, an optional input users leave out, input domains,
and a Scalar declared by mistake named as the declaration's fault."""

import json

import pytest
import torch
import yaml

from compat import Dim, Op, Scalar, Tensor
from compat.errors import DeclarationError, RegistryError
from compat.evidence.findings import overflow_only
from compat.evidence.outcomes import Outcome
from compat.evidence.verdicts import of_doc
from compat.matrix.model import make_inputs
from compat.matrix.strategies import Example, materialize_inputs

GATED = """
import torch
from compat import Dim, Op, Scalar, Tensor, register_op


def gated_decay(q, k, *, g, initial_state=None, output_final_state=False):
    # As a real library's op: keyword-only options, a log-decay gate that must be <= 0, an optional state.
    if initial_state is not None or output_final_state:
        raise AssertionError("called with what its users leave out")
    return q * k * torch.exp(g).clamp(max=1.0)  # a log decay: exp(g) <= 1 is all it was written for


def reference(q, k, g, initial_state, output_final_state):
    return q * k * torch.exp(g)


register_op(Op(name="gated_decay", doc="q * k * exp(g), g <= 0, its options by keyword", shipped=gated_decay,
               reference=reference,
               inputs=(Tensor("q", ("rows", "cols")), Tensor("k", ("rows", "cols")),
                       Tensor("g", ("rows", "cols"), domain="negative", keyword=True),
                       Tensor("initial_state", ("rows", "cols"), optional=True, passed=False, keyword=True),
                       Scalar("output_final_state", False, keyword=True)),
               dims=(Dim("rows", example=4, checks=(1, 3, 5), max=64), Dim("cols", example=8, checks=(8,))),
               dtypes=("float32",), devices=("cpu",), differentiable=True))
"""
STAGES = "eager,eager_backward,compile_eager,compile_aot_eager,export_strict,export_nonstrict"


def _run(project, cases: str):
    project.makepyfile(gated_cases=cases)
    project.makeini("[pytest]\ncompat_cases = gated_cases\n")
    project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "test_fuzz.py",
        "--compat-accept",
        f"--compat-stages={STAGES}",
        "--compat-results=r.json",
    )
    return json.loads((project.path / "r.json").read_text())


@pytest.mark.slow
def test_an_op_called_by_keyword_with_an_input_left_out_and_a_domain_passes_as_its_users_call_it(project):
    doc = _run(project, GATED)
    outcomes = {c["id"]: c["outcome"]["kind"] for c in doc["cells"]}
    assert outcomes == {f"gated_decay-as_shipped-{s}-float32-cpu": "passed" for s in STAGES.split(",")}, outcomes
    # Each fuzz test passes, meeting at most overflows where eager overflows too (q * k at float32's largest values):
    # a pass marked as such, no row, so the accept needs no reason of the user's.
    assert doc["fuzz"], doc
    for f in doc["fuzz"]:
        outcome = Outcome.from_dict(f["outcome"])
        assert outcome.kind == "passed", f
    assert any(overflow_only(Outcome.from_dict(f["outcome"])) for f in doc["fuzz"]), "q * k overflows as eager's"
    verdicts = of_doc(doc)
    assert {verdicts[c["id"]].kind for c in doc["cells"]} == {"passes"}, verdicts
    assert not yaml.safe_load((project.path / "expectations.yaml").read_text()).get("fuzz")


@pytest.mark.slow
def test_without_its_domain_the_same_op_is_judged_on_inputs_it_was_never_written_for(project):
    doc = _run(project, GATED.replace(', domain="negative"', ""))
    eager = next(c for c in doc["cells"] if c["id"] == "gated_decay-as_shipped-eager-float32-cpu")
    assert eager["outcome"]["kind"] == "mismatch"


def _op(**tensor):
    return Op(
        name="t_domain",
        doc="x",
        shipped=torch.exp,
        reference=torch.exp,
        inputs=(Tensor("x", ("n",), **tensor),),
        dims=(Dim("n", example=64),),
    )


@pytest.mark.parametrize(
    "domain, low, high",
    [("positive", 0, float("inf")), ("negative", -float("inf"), 0), ("unit_interval", 0, 1), ((2.0, 3.0), 2, 3)],
)
def test_the_matrix_and_the_fuzz_tests_draw_inside_a_declared_domain(domain, low, high):
    op = _op(domain=domain)
    (x,) = make_inputs(op, {"n": 64}, "float32", "cpu")
    big = Example((), "transposed", 1, 1e30, "negative", ((0, "nan"), (1, "inf")), (("n", 64),))
    (y,) = materialize_inputs(op, big, "float32", "cpu")
    for t in (x, y):
        assert torch.isfinite(t).all() and (low <= t).all() and (t <= high).all(), (domain, t)


def test_a_bad_domain_or_a_scalar_given_its_choices_by_position_is_the_declarations_fault():
    with pytest.raises(RegistryError, match="domain 'positve' is none of positive, negative, unit_interval"):
        _op(domain="positve")
    with pytest.raises(
        DeclarationError,
        match=r"Scalar\('g', \.\.\.\) declared in tests\.test_real_libraries: "
        r"type=\(0\.5,\) is not a type.*choices=\(\.\.\.\)",
    ):
        Scalar("g", 1.0, (0.5,))


def test_an_input_left_out_is_no_tensor_of_the_model_and_is_passed_as_none():
    op = Op(
        name="t_left_out",
        doc="x",
        shipped=torch.relu,
        reference=torch.relu,
        inputs=(Tensor("x", ("n",)), Tensor("state", ("n",), optional=True, passed=False, keyword=True)),
        dims=(Dim("n", example=4),),
    )
    assert [t.name for t in op.tensors] == ["x"] and op.variants() == [{"x": op.variants()[0]["x"], "state": None}]
    seen = []
    op.call(lambda *a, **k: seen.append((a, k)) or a[0], torch.ones(4), None)
    assert len(seen[0][0]) == 1 and seen[0][1] == {"state": None}  # by keyword, as declared
