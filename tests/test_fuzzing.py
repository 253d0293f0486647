"""The fuzz contract, with stand-in artifacts on CPU tensors: eager's values or a clear refusal of a non-contiguous
input pass; wrong values, NaN where eager has none, reading past a view, or an unclear error are falsifying
examples, reported with a command that reproduces them."""

import dataclasses
import json

import pytest
import torch

from compat.child.fuzz import fuzz
from compat.matrix.cells import parse_cell_id
from compat.matrix.kernels import KERNELS
from compat.matrix.model import as_function
from compat.matrix.strategies import Example, boundary_examples

CELL = parse_cell_id("silu-triton_op_cpu_fallback-eager-float32-cpu", "test")
KERNEL = KERNELS[CELL.kernel]


def reference(x):
    (out,) = as_function(KERNEL, KERNEL.reference)(x)  # the one output of the stand-in artifacts below
    return out


def run(artifact, example=None):
    return fuzz(CELL, [("artifact", artifact)], reference, exported=False, profile="ci", example=example)


def refuse_strided(x):
    if not x.is_contiguous():
        raise AssertionError("Input tensor must be contiguous")
    return reference(x)


def raw_pointer(x):
    """A launch that trusts the pointer: reads the input's storage as if it were contiguous."""
    flat = torch.as_strided(x, x.shape, torch.empty(x.shape).stride(), x.storage_offset())
    return reference(flat.contiguous())


def test_eager_itself_passes_with_every_example_counted():
    outcome = run(reference)
    tally = outcome.detail["tally"]
    assert outcome.kind == "passed", outcome.summary()
    # Errors are measured against the reference run in float64, beyond eager's own: eager itself has none beyond it.
    assert tally["examples"] >= 25 and tally["informative"] > 0 and tally["max_rel_err"] == 0
    assert outcome.detail["profile"] == "ci"


def test_a_clear_refusal_of_non_contiguous_inputs_passes_and_is_counted_per_layout():
    outcome = run(refuse_strided)
    assert outcome.kind == "passed", outcome.summary()
    assert set(outcome.detail["tally"]["refused"]) <= {"transposed", "sliced", "strided"}
    assert outcome.detail["tally"]["refused"], "the ci profile drew no non-contiguous input"
    assert "must be contiguous" in next(iter(outcome.detail["tally"]["refusals"].values()))


@pytest.mark.slow  # 30 s of Hypothesis in-process
def test_reading_past_a_view_is_a_mismatch_with_a_reproducer_that_reproduces():
    outcome = run(raw_pointer)
    assert outcome.kind == "mismatch", outcome.summary()
    command = outcome.detail["reproducer"]
    assert command.startswith(f"python -m compat fuzz {CELL.id} --example ")
    example = Example.from_json(json.dumps(outcome.detail["example"]))
    assert example.layout != "contiguous"
    again = run(raw_pointer, example=example.to_json())
    assert again.kind == "mismatch" and run(reference, example=example.to_json()).kind == "passed"


def test_nan_where_eager_has_none_is_caught_and_nan_eager_puts_must_come_out():
    assert run(lambda x: torch.nan_to_num(reference(x))).kind == "mismatch"  # drops eager's NaN and inf
    outcome = run(lambda x: reference(x).masked_fill(x == 0, float("nan")))  # NaN where eager has zeros
    assert outcome.kind == "mismatch" and "NaN" in outcome.summary()


@pytest.mark.slow  # 30 s of Hypothesis in-process
def test_an_unclear_error_or_a_refused_contiguous_input_fails():
    def unclear(x):
        if not x.is_contiguous():
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return reference(x)

    outcome = run(unclear)
    assert outcome.kind == "failed" and outcome.error_type == "RuntimeError"
    assert "falsifying example" in outcome.message and outcome.detail["reproducer"]

    def refuse_everything(x):
        raise AssertionError("Input tensor must be contiguous")

    assert run(refuse_everything).kind == "failed"


def test_errors_within_the_dtype_tolerance_pass_and_are_reported():
    outcome = run(lambda x: reference(x) * (1 - 1e-6))  # shrinks: no overflow at the dtype max
    assert outcome.kind == "passed" and 0 < outcome.detail["tally"]["max_rel_err"] < 1e-4
    assert run(lambda x: reference(x) * (1 - 1e-3)).kind == "mismatch"


def test_a_recorded_example_is_replayed_first_so_a_known_finding_is_found_every_run():
    rare = Example((7, 11), "transposed", 12345, 1e3, "negative", ((5, "max"),))

    def wrong_on_rare(x):
        out = reference(x)
        return out + 1 if tuple(x.shape) == rare.shape and x.stride() == (1, 7) else out

    assert run(wrong_on_rare).kind == "passed"  # the profile alone does not draw it
    replayed = {"pins": [{"example": rare.to_json()}]}  # a row that recorded its example: replayed first
    outcome = fuzz(CELL, [("artifact", wrong_on_rare)], reference, exported=False, profile="ci", known=replayed)
    assert outcome.kind == "mismatch" and tuple(outcome.detail["example"]["shape"]) == rare.shape


@pytest.mark.slow
def test_the_reproducer_command_reruns_one_example_in_the_cells_environment():
    import subprocess
    import sys

    ex = Example((33,), "strided", 4, 1.0, "mixed", ((0, "nan"),)).to_json()
    cmd = [sys.executable, "-m", "compat", "fuzz", "silu-raw_jit-eager-float32-cpu_interpret", "--example", ex]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr  # raw_jit's launcher refuses the view, clearly
    assert '"TRITON_INTERPRET": "1"' in done.stdout and '"strided": 1' in done.stdout
    bad = subprocess.run(cmd[:-1] + ['{"shape": [3]}'], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--example: not an example's JSON" in bad.stderr


def test_shrinking_a_new_finding_stops_at_its_bound(monkeypatch):
    """A property that fails on every view, slowly (the explicit examples, contiguous, pass; a generated view fails
    and is shrunk): unbounded, Hypothesis made 224 calls in 36 s here; bounded, it stops soon after the bound and
    still reports a falsifying example."""
    import time

    from hypothesis.internal.conjecture import engine

    from compat.child import fuzz as fuzzing

    monkeypatch.setattr(fuzzing, "SHRINK_SECONDS", 0.5)
    monkeypatch.setattr(fuzzing, "MAX_NEW_FINDINGS", 1)  # one round: the later ones do not shrink
    calls = []

    def slow_and_wrong(x):
        calls.append(x.numel())
        time.sleep(0.05)
        return reference(x) + (not x.is_contiguous())

    outcome = run(slow_and_wrong)
    assert outcome.kind == "mismatch" and "example" in outcome.detail
    # 25 draws at most, then shrinking for 0.5 s of 0.05 s calls (a slower machine makes fewer calls, not more).
    assert len(calls) <= 25 + 0.5 / 0.05 + 5
    assert engine.MAX_SHRINKING_SECONDS == 300  # put back


@pytest.mark.slow  # three in-process fuzz tests, about 40 s
def test_pinned_findings_are_counted_and_the_search_goes_on_past_them():
    """A row's pinned finding (a read of views as contiguous, on one view layout) explains the same bug on every view
    (which view an example draws is chance), counted while the search goes on; a wrong value on contiguous inputs
    planted beside it is new. A row recorded before findings were pinned (its example alone) explains the bug on
    every view too."""
    first = run(raw_pointer)
    layouts = {f["layout"] for f in first.detail["findings"]}
    assert len(layouts) > 1 and "contiguous" not in layouts, first.detail["findings"]
    pin = {k: v for k, v in first.detail["findings"][0].items() if k not in ("pinned", "seen")}
    again = fuzz(CELL, [("artifact", raw_pointer)], reference, exported=False, profile="ci", known={"pins": [pin]})
    assert not again.detail["new"] and not again.detail["unreproduced"] and again.detail["tally"]["explained"] > 1
    pinned_only = fuzz(
        CELL,
        [("artifact", lambda x: raw_pointer(x) * (1.01 if x.is_contiguous() else 1.0))],
        reference,
        exported=False,
        profile="ci",
        known={"pins": [pin]},
    )
    assert any(text.startswith("artifact output 0, contiguous: ") for text in pinned_only.detail["new"])
    legacy = {"pins": [{"example": pin["example"]}]}
    replayed = fuzz(CELL, [("artifact", raw_pointer)], reference, exported=False, profile="ci", known=legacy)
    assert replayed.kind == "mismatch" and not replayed.detail["new"] and replayed.detail["tally"]["explained"] > 1
    assert {f["layout"] for f in replayed.detail["findings"]} == layouts

    def also_wrong_on_contiguous(x):
        return raw_pointer(x) * (1.01 if x.is_contiguous() else 1.0)

    planted = fuzz(
        CELL, [("artifact", also_wrong_on_contiguous)], reference, exported=False, profile="ci", known=legacy
    )
    assert any(text.startswith("artifact output 0, contiguous: ") for text in planted.detail["new"])


class WrongAfterAnotherShape:
    """A stand-in for a compiled function that goes dynamic once it meets a second shape (automatic dynamic shapes),
    and whose dynamic graph is wrong on one row: right at 1 row called first, wrong at 1 row called after others."""

    def __init__(self):
        self.shapes = set()

    def __call__(self, x):
        self.shapes.add(tuple(x.shape))
        out = reference(x)
        return out * 2 if len(self.shapes) > 1 and x.shape[0] == 1 and x.dim() == 2 else out


@pytest.mark.slow  # 35 s of Hypothesis in-process
def test_a_finding_that_needs_earlier_calls_keeps_them_and_they_show_it_again():
    found = run(WrongAfterAnotherShape())
    assert found.kind == "mismatch", found.summary()
    example = json.dumps(found.detail["example"], separators=(",", ":"))
    calls = [c for c in found.detail["calls"] if c != example]
    assert len({Example.from_json(c).shape for c in calls}) > 1  # every call, in order: other shapes before it
    assert run(WrongAfterAnotherShape(), example=example).kind == "passed"  # alone, in a fresh state
    again = fuzz(
        CELL, [("artifact", WrongAfterAnotherShape())], reference, False, "ci", example, known={"calls": calls}
    )
    assert again.kind == "mismatch" and again.detail["findings"][0]["output"] == found.detail["findings"][0]["output"]
    made = fuzz(
        CELL, [("artifact", reference)], reference, False, "ci", example, known={"calls": calls, "calls_only": True}
    )
    assert made.kind == "passed" and made.detail["calls"] == [Example.from_json(c).to_json() for c in calls]


class BrokenAfterARefusal:
    """Torch 2.11's CUDA graph trees (the catalogue's fuzz_cudagraphs_after_op_error): an op that raises inside the
    compiled function leaves the tree broken, the next call fails on a bare assertion, once, and Hypothesis's replay
    of that example passes (its FlakyFailure)."""

    def __init__(self):
        self.broken = False

    def __call__(self, x):
        if self.broken:
            self.broken = False
            raise AssertionError
        if not x.is_contiguous():
            self.broken = True
            raise AssertionError("Input tensor must be contiguous")
        return reference(x)


@pytest.mark.slow  # 20 s of Hypothesis in-process
def test_an_error_the_calls_before_decided_is_what_its_first_call_raised_and_they_show_it_again():
    found = run(BrokenAfterARefusal())
    assert found.kind == "failed" and found.error_type == "AssertionError", found.summary()
    assert found.detail["replay_differed"]  # Hypothesis's replay passed: its FlakyFailure is not the observation
    example = json.dumps(found.detail["example"], separators=(",", ":"))
    *calls, last = found.detail["calls"]  # up to the call that raised first: the state it met
    assert Example.from_json(last) == Example.from_json(example)
    again = fuzz(CELL, [("artifact", BrokenAfterARefusal())], reference, False, "ci", example, known={"calls": calls})
    assert again.kind == "failed" and again.error_type == "AssertionError", again.summary()
    first, shown = found.detail["findings"][0], again.detail["findings"][0]
    assert [shown[k] for k in ("output", "layout", "error")] == [first[k] for k in ("output", "layout", "error")]


@pytest.mark.slow
def test_a_sequence_reproducer_makes_its_calls_then_judges_its_example_in_one_command():
    import subprocess
    import sys

    from compat.evidence.findings import sequence_json

    calls = [
        ("eager", Example((8,), "contiguous", 0, 1.0, "mixed")),
        ("eager", Example((16,), "sliced", 1, 1.0, "mixed")),
    ]
    ex = Example((33,), "contiguous", 4, 1.0, "mixed").to_json()
    cmd = [sys.executable, "-m", "compat", "fuzz", "silu-raw_jit-eager-float32-cpu_interpret", "--example", ex]
    done = subprocess.run([*cmd, "--after", sequence_json(calls)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.rstrip().endswith(": passed"), done.stdout + done.stderr
    outcome = json.loads(done.stdout.rstrip().rsplit("\n", 1)[0])
    made = [Example.from_json(c).shape for c in outcome["detail"]["calls"]]
    assert made == [(8,), (16,), (33,)]  # the sequence's calls, then the example judged


@pytest.mark.parametrize("bound", [None, 2])
def test_an_op_with_a_compile_bound_meets_each_boundary_size_first_with_ordinary_values(monkeypatch, bound):
    """A bounded op's few compiles go to sizes it is checked at: a reduction over the boundary examples' NaN and inf
    tells nothing (Liger's fused linear cross entropy, bounded to two compiles, found no evidence on the H200 at
    f7bf154). An op without a bound meets each boundary size with the special values first, as before."""
    monkeypatch.setitem(KERNELS, CELL.kernel, dataclasses.replace(KERNEL, fuzz_compiles=bound))
    first: dict[tuple[int, ...], bool] = {}  # each shape's first call: whether it held a special value

    def recording(x):
        first.setdefault(tuple(x.shape), bool((x.abs() >= torch.finfo(x.dtype).max).any()))  # inf or the largest value
        return reference(x)

    assert run(recording).kind == "passed"
    boundary = {e.shape for e in boundary_examples(KERNEL, "float32", exported=False)}
    assert boundary <= first.keys()
    assert all(first[shape] is (bound is None) for shape in boundary)


class LosesTheContext:
    """A stand-in for a sticky CUDA error (`warmup_launch`'s misaligned address on a sliced input, on the H200): the
    first view's call fails and leaves the GPU's context unusable, so that every later call fails too, on any input."""

    def __init__(self):
        self.lost = False

    def __call__(self, x):
        if self.lost or not x.is_contiguous():
            self.lost = True
            raise torch.AcceleratorError("CUDA error: misaligned address")  # "align": no refusal for all that
        return reference(x)


def test_an_error_that_loses_the_gpus_context_is_the_finding_and_nothing_after_it_is_judged(monkeypatch):
    """Hypothesis shrank such a finding onto a contiguous input that fails only in the lost context (and shows nothing
    in a fresh process): the finding is the example that lost it, and the examples after it are counted, not judged;
    pinned, it is explained and the search ends there."""
    import compat.child.fuzz as fuzz_module

    artifact = LosesTheContext()
    monkeypatch.setattr(fuzz_module, "_context_lost", lambda cell: artifact.lost)
    found = run(artifact)
    assert found.kind == "failed" and found.error_type == "torch.AcceleratorError", found.summary()
    (finding,) = found.detail["findings"]
    assert finding["layout"] != "contiguous", finding
    assert found.detail["tally"]["after_context_lost"] > 0
    pin = {k: v for k, v in finding.items() if k not in ("pinned", "seen")}
    artifact = LosesTheContext()
    again = fuzz(CELL, [("artifact", artifact)], reference, exported=False, profile="ci", known={"pins": [pin]})
    assert not again.detail["new"] and again.detail["tally"]["explained"] == 1, again.summary()
    assert again.detail["tally"]["after_context_lost"] > 0
