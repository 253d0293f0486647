"""A fuzz row pins what it saw (compat.evidence.findings): the gate fails on any difference its findings do not
explain, and on a pinned one that no longer shows; an accept records findings, and names those without a reason."""

import json
from pathlib import Path

import pytest
import torch
import yaml

from compat.errors import ExpectationsError
from compat.evidence.expectations import (
    UNEXPLAINED,
    Expectation,
    Expectations,
    Run,
    accept_run,
    cell_view,
    dump,
    validate,
)
from compat.evidence.findings import ERROR_MARGIN, Finding, pins
from compat.evidence.gate import judge
from compat.evidence.numerics import compare_elementwise, compare_gradient
from compat.evidence.outcomes import Outcome

CELL = "silu-triton_op-eager_backward-float32-cpu_interpret"
RUN = Run("2.13.0", "3.7.1", "cpu-only")
MEASURED = {"torch": "2.13.0", "triton": "3.7.1", "device": "cpu", "date": "2026-11-27"}
EXAMPLE = '{"shape":[4,8],"layout":"contiguous","seed":0,"scale":1.0,"sign":"mixed","specials":[[0,"max"]]}'


def finding(**changed) -> Finding:
    base = dict(output="eager grad of x", layout="contiguous", difference="wrong_values", cause="ordinary values")
    return Finding(**{**base, "example": EXAMPLE, "max_rel_err": 0.5, **changed})


def test_a_pin_explains_its_own_family_layout_and_cause_up_to_twice_its_error():
    pin = finding()
    assert pin.explains(finding(max_rel_err=0.5 * ERROR_MARGIN))
    assert pin.explains(finding(difference="nonfinite", max_rel_err=None))  # a view bug reads NaN padding too
    assert not pin.explains(finding(max_rel_err=1.01 * ERROR_MARGIN))
    for other, words in (
        (dict(layout="sliced"), "another layout (sliced; pinned: contiguous)"),
        (dict(output="eager grad of w"), "another output (eager grad of w; pinned: eager grad of x)"),
        (dict(cause="special values"), "another cause (special values; pinned: ordinary values)"),
        (dict(difference="error", error="RuntimeError", max_rel_err=None), "another kind of difference (error"),
    ):
        seen = finding(**other)
        assert not pin.explains(seen) and words in pin.unlike(seen)
    assert "a larger error (max rel err 5 > 2 x the pinned 0.5)" in pin.unlike(finding(max_rel_err=5.0))


def test_a_view_pin_explains_the_same_difference_on_any_view_and_never_on_a_contiguous_input():
    """An op that reads a view as contiguous goes wrong on whichever view an example draws (measured on the H200:
    my_bias_relu's AOTI package, pinned on sliced and transposed inputs, met a strided one)."""
    pin = finding(layout="sliced")
    assert pin.explains(finding(layout="strided")) and pin.explains(finding(layout="transposed"))
    assert not pin.explains(finding(layout="contiguous"))
    assert "another layout (contiguous; pinned: sliced)" in pin.unlike(finding(layout="contiguous"))


def test_a_finding_that_needs_earlier_calls_explains_its_signature_at_any_error():
    after = '[["compile_backward",' + EXAMPLE + "]]"
    pin = finding(after=after)
    assert pin.explains(finding(max_rel_err=10 * ERROR_MARGIN))
    # The calls are its cause: any layout, from any values, NaN as wrong values (measured on the H200: RMSNorm's
    # 1-token gradient after other token counts, NaN on a sliced input, wrong on a transposed one)
    assert pin.explains(finding(layout="sliced", cause="special values", difference="nonfinite", max_rel_err=None))
    assert not pin.explains(finding(output="eager grad of w")) and "another output" in pin.unlike(
        finding(output="eager grad of w", layout="sliced")
    )
    assert "layout" not in pin.unlike(finding(output="eager grad of w", layout="sliced"))
    assert not pin.explains(finding(difference="error", error="RuntimeError", max_rel_err=None))
    assert "after 1 earlier calls" in pin.text()


def test_an_overflow_where_eager_overflows_is_one_finding_on_any_layout_and_from_any_values():
    pin = finding(difference="overflow_only", cause="special values", max_rel_err=None)
    assert pin.explains(finding(difference="overflow_only", layout="sliced", max_rel_err=None))
    assert not pin.explains(finding(layout="sliced"))  # wrong values beside it are a new finding


def fuzz_row(findings: list[Finding] | None = None, **extra) -> dict:
    row = {"torch": "==2.13.*", "triton": "==3.7.*", "host": "cpu-only", "outcome": "mismatch", "reason": "why"}
    if findings is not None:
        row["findings"] = [f.to_row() for f in findings]
    return {**row, **extra, "provenance": {"measured": MEASURED}}


def fuzz_outcome(found: list[Finding], new: list[Finding] = (), unreproduced=()) -> Outcome:
    return Outcome(
        "mismatch",
        numerics=[{"ok": False, "why": "grad of x: differs"}],
        detail={
            "findings": [{**f.to_row(), "pinned": f not in new, "seen": 1} for f in found],
            "new": [f.text() for f in new],
            "unreproduced": list(unreproduced),
            "example": json.loads(EXAMPLE),
            "reproducer": f"python -m compat fuzz {CELL} --example '{EXAMPLE}'",
        },
    )


def test_the_gate_fails_a_new_finding_beside_a_pinned_one_and_says_how_it_differs(tmp_path):
    pin, views = finding(difference="nonfinite", cause="special values", max_rel_err=None), finding(layout="sliced")
    row = Expectation(CELL, 0, fuzz_row([pin]), "fuzz")
    assert judge(CELL, row, fuzz_outcome([pin]), RUN, tmp_path, "fuzz").complaint is None
    complaint = judge(CELL, row, fuzz_outcome([pin, views], new=[views]), RUN, tmp_path, "fuzz").complaint
    assert "its findings changed" in complaint and "new finding: eager grad of x, sliced: wrong_values" in complaint
    assert "another layout (sliced; pinned: contiguous)" in complaint
    gone = judge(CELL, row, fuzz_outcome([], unreproduced=[pin.text()]), RUN, tmp_path, "fuzz").complaint
    assert "pinned finding no longer shows" in gone
    assert "strict" in judge(CELL, row, Outcome("passed", detail={"findings": []}), RUN, tmp_path, "fuzz").complaint


def test_a_row_recorded_before_findings_were_pinned_is_pinned_by_its_examples_replay():
    assert pins(fuzz_row(None, example=EXAMPLE)) == [{"example": EXAMPLE}]
    assert pins(fuzz_row([finding()]))[0]["layout"] == "contiguous"


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"layout": "diagonal"}, "layout 'diagonal' is none of"),
        ({"difference": "odd"}, "difference 'odd' is none of"),
        ({"max_rel_err": float("nan")}, "max_rel_err nan is not a finite number"),
        ({"example": "{}"}, "not a fuzz example's JSON"),
        ({"colour": "red"}, "unknown: ['colour']"),
        ({"after": '{"stage": "eager"}'}, "after is not a sequence of calls"),
        ({"after": '[["eager", {}]]'}, "after is not a sequence of calls"),
    ],
)
def test_a_malformed_finding_is_refused_naming_the_row(bad, message):
    row = fuzz_row()
    row["findings"] = [{**finding().to_row(), **bad}]
    with pytest.raises(ExpectationsError, match=message.replace("[", r"\[").replace("]", r"\]")):
        validate({"schema": 2, "cells": {}, "fuzz": {CELL: [row]}}, "test.yaml")


def test_a_pin_recorded_under_another_declaration_is_refused_naming_the_row_and_what_does_not_fit():
    cell = "matmul-triton_op-eager-float32-cpu_interpret"
    example = '{"shape":[8,128],"layout":"contiguous","seed":0,"scale":1.0,"sign":"mixed","specials":[],'
    example += '"sizes":[["m",8],["k",128],["n",96]]}'
    for row in (fuzz_row([finding(example=example)]), fuzz_row(example=example)):
        with pytest.raises(
            ExpectationsError, match=rf"test.yaml: fuzz.{cell}\[0\]: the pinned .* k=128, but k is static"
        ):
            validate({"schema": 2, "cells": {}, "fuzz": {cell: [row]}}, "test.yaml")


def test_accept_records_findings_and_names_those_no_entry_explains(tmp_path):
    exp = Expectations(tmp_path / "expectations.yaml", {"schema": 2, "cells": {}})
    views = finding(layout="sliced")
    done = accept_run(exp, {}, {CELL: fuzz_outcome([views], new=[views])}, RUN, MEASURED, lambda cell_id: ())
    (row,) = cell_view(yaml.safe_load((tmp_path / "expectations.yaml").read_text()), "t")["fuzz"][
        "silu-triton_op-eager_backward-*-cpu_interpret"
    ]
    assert row["reason"] == UNEXPLAINED and row["findings"] == [views.to_row()] and "example" not in row
    (needs,) = done.needs_reason
    assert needs.startswith(f"fuzz {CELL}: eager grad of x, sliced: wrong_values") and "reproduce: python -m" in needs


def test_accept_pins_a_row_recorded_before_findings_were_pinned_for_this_cell_alone(tmp_path):
    """Its any-dtype row holds the other dtypes too, whose errors differ: the pinned row is the cell's own."""
    cell, any_dtype = "silu-triton_op-eager_backward-float32-cuda", "silu-triton_op-eager_backward-*-cuda"
    data = {"schema": 2, "cells": {}, "fuzz": {any_dtype: [fuzz_row(None, example=EXAMPLE, host="gpu")]}}
    exp = Expectations(tmp_path / "e.yaml", data)
    seen = finding(difference="nonfinite", cause="special values", max_rel_err=None)
    done = accept_run(exp, {}, {cell: fuzz_outcome([seen])}, Run("2.13.0", "3.7.1", "gpu"), MEASURED, lambda c: ())
    assert done.changes == [f"fuzz {cell}: pinned {seen.text()}"] and not done.needs_reason
    written = cell_view(yaml.safe_load(dump(exp.data)), "t")["fuzz"]
    # recorded for the GPU it showed on: another GPU misses it without failing
    assert (
        written[cell][0]["findings"] == [{**seen.to_row(), "gpu": MEASURED["device"]}]
        and "example" in written[any_dtype][0]
    )


# ---- judged against float64 at the dtype's edges ----

MAX = torch.finfo(torch.float32).max


def scaled_silu(x):  # eager's order: scale * x overflows at float32's largest value, then times a sigmoid of 0
    return 1.5 * x * torch.sigmoid(x)


def test_an_op_exact_where_eager_overflows_passes_and_one_that_overflows_as_eager_is_overflow_only():
    x = torch.tensor([MAX, -MAX, 1.0, -3.0])
    leaf, leaf64 = x.clone().requires_grad_(), x.double().requires_grad_()
    scaled_silu(leaf).backward(torch.full((4,), 2.0))
    scaled_silu(leaf64).backward(torch.full((4,), 2.0, dtype=torch.float64))
    eager, exact = leaf.grad, leaf64.grad  # eager NaN at both ends; float64 3 and 0
    assert eager[:2].isnan().all() and torch.isfinite(exact).all()
    s = torch.sigmoid(x)
    kernel = 2 * 1.5 * (s + x * s * (1 - s))  # exact at the dtype's largest value
    assert compare_gradient(kernel, eager, "grad", ref64=exact)["ok"]
    as_eager = compare_gradient(eager, eager, "grad", ref64=exact)
    assert not as_eager["ok"] and as_eager["difference"] == "overflow_only"
    assert "your op gives NaN where eager is NaN too but float64 is finite (eager NaN, float64 3)" in as_eager["why"]
    wrong = compare_gradient(kernel * torch.tensor([1.0, 1.0, 1.0, 1.5]), eager, "grad", ref64=exact)
    assert not wrong["ok"] and wrong["difference"] == "wrong_values"


def test_a_message_names_which_side_is_not_finite():
    ref = torch.tensor([1.0, 2.0])
    result = compare_elementwise(torch.tensor([float("nan"), 2.0]), ref, "out", ref64=ref.double())
    assert result["difference"] == "nonfinite"
    assert "your op gives NaN where float64 and eager are finite (eager 1, float64 1)" in result["why"]
    lost = compare_elementwise(torch.tensor([0.0, 2.0]), torch.tensor([float("nan"), 2.0]), "out")
    assert lost["difference"] == "finite_where_nonfinite" and "a NaN or inf lost" in lost["why"]


def test_a_row_recorded_before_findings_explains_its_findings_on_other_views_but_not_on_contiguous_inputs():
    """It recorded the one example Hypothesis shrank to, so one view layout of the several it failed on."""
    replayed = finding(layout="transposed")
    assert replayed.explains_as_recorded_before(finding(layout="sliced", max_rel_err=50.0))
    assert not replayed.explains_as_recorded_before(finding(layout="contiguous"))  # a tail or a mask: new
    assert not replayed.explains_as_recorded_before(finding(layout="sliced", cause="special values"))
    assert not replayed.explains_as_recorded_before(finding(layout="sliced", output="eager grad of w"))


def test_a_row_with_findings_holds_whichever_of_them_a_run_meets_first(tmp_path):
    """A row pinning an error on views and an overflow: a run whose first explained example raised reports `failed`,
    one whose first was the overflow `mismatch`; both agree, as neither found anything the row does not pin."""
    error = finding(difference="error", error="RuntimeError", layout="sliced", max_rel_err=None)
    overflow = finding(difference="overflow_only", cause="special values", max_rel_err=None)
    row = Expectation(CELL, 0, fuzz_row([error, overflow]), "fuzz")
    detail = {"findings": [{**f.to_row(), "pinned": True, "seen": 1} for f in (error, overflow)], "new": []}
    raised = Outcome("failed", "RuntimeError", "aoti_torch_call_dispatcher(...) API call failed", detail=detail)
    assert judge(CELL, row, raised, RUN, tmp_path, "fuzz").complaint is None
    assert judge(CELL, row, fuzz_outcome([error, overflow]), RUN, tmp_path, "fuzz").complaint is None
    before = Outcome("failed", "RuntimeError", "aoti_torch_call_dispatcher(...) API call failed")  # no findings
    assert judge(CELL, row, before, RUN, tmp_path, "fuzz").complaint is not None


def test_a_record_from_before_findings_is_held_to_a_findings_row_by_its_kind_and_a_flaky_one_is_unreadable(tmp_path):
    """A record made before findings were recorded holds no findings to explain: a row that pins findings holds it by
    its kind alone (the regrade of the committed evidence). One recorded as Hypothesis's FlakyFailure lacks what its
    first call raised, which is what today's fuzz test records: only a new run regrades it."""
    from compat.evidence.gate import Unreadable, regraded

    row = Expectation(CELL, 0, fuzz_row([finding()]), "fuzz")
    before = Outcome("mismatch", numerics=[{"ok": False, "why": "grad of x: differs"}])
    assert judge(CELL, row, before, RUN, tmp_path, "fuzz").complaint is None
    assert judge(CELL, row, Outcome("passed"), RUN, tmp_path, "fuzz").complaint is not None
    flaky = Outcome("failed", "hypothesis.errors.FlakyFailure", "Hypothesis prop(...) produces unreliable results")
    with pytest.raises(Unreadable, match="what the example's first call raised"):
        regraded(flaky, CELL, "fuzz")


def test_a_pass_on_another_gpu_agrees_with_a_row_whose_findings_showed_on_one_gpu_alone(tmp_path):
    """A finding recorded for the GPU it showed on holds only runs there: a pass on another GPU is no fix, whether
    today's run or a record from before findings (the H100 file's silu_tma raw_jit compile_cudagraphs pass, against
    the H200's finding after ten calls). On the GPU it showed on, or where the run's GPU is not known, the pass
    still fails the row."""
    row = Expectation(CELL, 0, fuzz_row([finding(gpu="NVIDIA H200")]), "fuzz")
    fresh = Outcome("passed", detail={"findings": [], "new": [], "unreproduced": []})
    for gpu, holds in (("NVIDIA H100 80GB HBM3", False), ("NVIDIA H200", True), (None, True)):
        run = Run("2.11.0+cu130", "3.6.0", "gpu", gpu)
        for passed in (fresh, Outcome("passed")):
            assert (judge(CELL, row, passed, run, tmp_path, "fuzz").complaint is not None) is holds, (gpu, passed)
    anywhere = Expectation(CELL, 0, fuzz_row([finding()]), "fuzz")  # a finding recorded for any GPU
    h100 = Run("2.11.0+cu130", "3.6.0", "gpu", "NVIDIA H100 80GB HBM3")
    assert judge(CELL, anywhere, fresh, h100, tmp_path, "fuzz").complaint is not None


def test_a_finding_new_to_its_run_agrees_with_a_row_recorded_since_and_a_gone_pin_with_a_row_that_dropped_it(tmp_path):
    """A merge or an accept regrades a run against the rows as they are now: a finding the run met unpinned is
    explained by a row written since that pins it, and a pin the run missed matters only to a row that still pins."""
    views = finding(layout="sliced")
    met = fuzz_outcome([views], new=[views])
    assert judge(CELL, Expectation(CELL, 0, fuzz_row([views]), "fuzz"), met, RUN, tmp_path, "fuzz").complaint is None
    other = finding(layout="strided", max_rel_err=None, difference="error", error="RuntimeError")
    assert (
        judge(CELL, Expectation(CELL, 0, fuzz_row([other]), "fuzz"), met, RUN, tmp_path, "fuzz").complaint is not None
    )
    gone = Outcome("passed", detail={"findings": [], "new": [], "unreproduced": [views.text()]})
    passing = {k: v for k, v in fuzz_row().items() if k != "reason"} | {"outcome": "passed"}
    assert judge(CELL, Expectation(CELL, 0, passing, "fuzz"), gone, RUN, tmp_path, "fuzz").complaint is None
    assert (
        judge(CELL, Expectation(CELL, 0, fuzz_row([views]), "fuzz"), gone, RUN, tmp_path, "fuzz").complaint is not None
    )


def test_an_overflow_where_eager_overflows_is_no_failure_with_or_without_a_row(tmp_path):
    """As accurate as eager at the dtype's edge: today's fuzz test counts it and searches on; a run from before that
    recorded it as a mismatch regrades to a pass, and a row that pinned it expects a pass."""
    overflow = finding(difference="overflow_only", cause="special values", max_rel_err=None)
    assert judge(CELL, None, fuzz_outcome([overflow], new=[overflow]), RUN, tmp_path, "fuzz").complaint is None
    assert judge(CELL, None, Outcome("passed", detail={"findings": [overflow.to_row()]}), RUN, tmp_path, "fuzz") == (
        judge(CELL, None, Outcome("passed"), RUN, tmp_path, "fuzz")
    )
    pinned = Expectation(CELL, 0, fuzz_row([overflow]), "fuzz")
    assert judge(CELL, pinned, Outcome("passed", detail={"findings": []}), RUN, tmp_path, "fuzz").complaint is None
    both = judge(CELL, None, fuzz_outcome([overflow, finding()], new=[finding()]), RUN, tmp_path, "fuzz").complaint
    assert "does not compute eager's function" in both and "overflow" not in both.split("observed")[0]


def test_an_upgrade_without_rows_pins_the_baselines_findings():
    """A version nobody recorded holds each fuzz test to its baseline's findings: the rows of the nearest version
    below, or a results file's record, so the upgrade gate fails only on a finding that is new."""
    from types import SimpleNamespace

    from compat.evidence.baseline import Reference
    from compat.matrix.cells import parse_cell_id
    from compat.run.matrix_run import MatrixRun

    cell = parse_cell_id(CELL, "test")
    pin = finding()
    old_row = Expectation(CELL, 0, fuzz_row([pin]), "fuzz")
    record = {"kind": "mismatch", "detail": {"findings": [{**pin.to_row(), "pinned": False, "seen": 1}]}}
    empty = Expectations(Path("e.yaml"), {"schema": 2, "cells": {}})
    for ref in (Reference("rows", row=old_row), Reference("file", outcome=record)):
        run = SimpleNamespace(expectations=empty, run=RUN, baseline=SimpleNamespace(reference=lambda *a, ref=ref: ref))
        assert MatrixRun.pinned(run, cell) == [pin.to_row()]
    none = SimpleNamespace(expectations=empty, run=RUN, baseline=None)
    assert MatrixRun.pinned(none, cell) == []
