"""The gate's judgement, in one place: from what a run observed and what was expected to a verdict.

A verdict is None where the outcome is what its row (or, without one, its baseline) expects, else the complaint a
user reads. It is pure: an outcome, the row and the baseline in, a verdict out; it reads no file and no clock. The
run (compat.run.controller), `accept`, `merge` and the regrade of committed results (`regrade`) all call it, so a
change of judgement shows at once in what it does to every committed results file.

What it reads of an outcome is what was observed (`regraded`): a comparison's worst error, its scale, eager's own
error and the tolerance's dtype; a fuzz finding's class and worst error; the largest error a passing example showed.
It judges that evidence again with today's tolerances and classes, so a results file made by older code is judged
as today's code would judge the same observations.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import ResultsError
from ..matrix.cells import split_cell_id
from ..matrix.kernels import KERNELS
from . import findings
from .catalogue import by_key, explain
from .diff import GROUPS
from .findings import DIFFERENCES, Finding, is_overflow
from .numerics import EAGER_MULTIPLE, TOL, declared_tolerance
from .outcomes import Outcome

TITLES = {key: title for key, title, _ in GROUPS}  # the gate and the upgrade diff name a change alike
# The reason accept gives a row no catalogue entry explains: the gate fails on it until someone says why.
UNEXPLAINED = "unexplained: recorded by --compat-accept; replace with the reason"


class Row(Protocol):
    """An expectation row as the judgement reads it (compat.evidence.expectations.Expectation, which imports this
    module)."""

    @property
    def row(self) -> dict[str, Any]: ...

    @property
    def section(self) -> str: ...

    @property
    def full(self) -> dict[str, Any]: ...

    @property
    def where(self) -> str: ...

    def describe(self) -> str: ...


class Versions(Protocol):
    @property
    def torch(self) -> str: ...

    @property
    def triton(self) -> str: ...

    @property
    def host(self) -> str: ...

    @property
    def gpu(self) -> str | None: ...


class Unreadable(ResultsError):
    """A record lacks what today's judgement reads, or holds what it no longer knows: only a new run regrades it."""


@dataclass(frozen=True)
class Judgement:
    complaint: str | None  # None: as expected
    against: dict[str, Any] | None = None  # the baseline it was compared with, where no row applied


# ---- the evidence, as today's judgement reads it ----


def tolerance(cell_id: str, dtype: str | None = None) -> float:
    """The relative tolerance of an output of `dtype` (default: the cell's) in the cell: the declaration's, else the
    coarser of the output's dtype's and the cell's (compat.evidence.numerics)."""
    cell = split_cell_id(cell_id, "a verdict")
    kernel = KERNELS.get(cell.kernel)
    declared = declared_tolerance(kernel, cell.dtype) if kernel is not None else None
    if declared is not None:
        return declared
    return max(TOL.get(dtype or cell.dtype, 0.0), TOL.get(cell.dtype, 0.0))


def _within(result: dict[str, Any], tol: float) -> bool:
    """A comparison judged again at `tol`: a whole-output comparison (compat.evidence.numerics.compare) by its worst
    error, scale and eager's own error; an element-wise one by its worst error beyond eager's, over the scale,
    which is what the tolerance bounds (its other classes do not follow the tolerance)."""
    if "eager_err" in result:
        bound = tol * result["ref_scale"] + EAGER_MULTIPLE * result["eager_err"]
        return result["nonfinite"] == 0 and result["max_abs_err"] <= bound
    if result.get("difference") not in (None, "wrong_values"):
        return False
    return result["max_rel_err"] <= tol


def _numerics_regraded(outcome: Outcome, cell_id: str) -> Outcome:
    comparisons = outcome.numerics or []
    judged = [c for c in comparisons if "tol" in c and "max_rel_err" in c]
    if not judged or outcome.kind != ("mismatch" if any(not c["ok"] for c in comparisons) else "passed"):
        return outcome  # nothing measured, or something beside the numbers decided the kind: as recorded
    again = [{**c, "ok": _within(c, tolerance(cell_id, c.get("dtype")))} if c in judged else c for c in comparisons]
    kind = "mismatch" if any(not c["ok"] for c in again) else "passed"
    return Outcome(kind, outcome.error_type, outcome.message, again, outcome.detail)


# Hypothesis's wrapper for an example whose replay passed: today's fuzz test records what its first call raised.
REPLAY_WRAPPER = "hypothesis.errors.FlakyFailure"


def _fuzz_regraded(outcome: Outcome, cell_id: str) -> Outcome:
    detail = outcome.detail
    if outcome.error_type == REPLAY_WRAPPER:
        raise Unreadable("a FlakyFailure: today's judgement reads what the example's first call raised instead")
    rows = detail.get("findings")
    if rows is None:
        return outcome  # recorded before findings were: its kind stands
    tol = tolerance(cell_id)
    for f in rows:
        if f.get("difference") not in DIFFERENCES:
            raise Unreadable(f"a finding of class {f.get('difference')!r}, which today's judgement does not know")
    kept = [f for f in rows if not (f["difference"] == "wrong_values" and (f.get("max_rel_err") or 0.0) <= tol)]
    passed_beyond = (detail.get("tally") or {}).get("max_rel_err", 0.0) > tol
    if kept == rows and not passed_beyond and not (outcome.kind == "mismatch" and findings.overflow_only(outcome)):
        return outcome
    new_detail = {**copy.deepcopy(detail), "findings": kept}
    if passed_beyond:
        new_detail["beyond_tolerance"] = (
            f"examples it passed showed a relative error of {detail['tally']['max_rel_err']:.3g}, beyond today's "
            f"tolerance {tol:g}"
        )
    kind = outcome.kind
    if kind == "mismatch" and all(is_overflow(f) for f in kept):
        kind = "passed"  # nothing but an overflow where eager overflows too: as accurate as eager
    return Outcome(kind, outcome.error_type, outcome.message, outcome.numerics, new_detail)


def stale(outcome: Outcome, section: str) -> bool:
    """A fuzz record made before findings were recorded (by class, output and layout, their errors beyond eager's
    own): today's judgement holds it to its row by its kind alone; a new run records what it reads."""
    return section == "fuzz" and outcome.kind != "skipped" and "findings" not in outcome.detail


def regraded(outcome: Outcome, cell_id: str, section: str) -> Outcome:
    """The outcome today's judgement gives the observations a record holds (identical where nothing changed)."""
    if section == "fuzz":
        return _fuzz_regraded(outcome, cell_id)
    return _numerics_regraded(outcome, cell_id)


# ---- a row against an outcome ----


def _expects_pass(row: dict[str, Any]) -> bool:
    """A row that expects a pass: `passed`, or a fuzz row that pins only overflows where eager overflows too (no
    failure, as today's judgement reads it)."""
    pinned = row.get("findings") or []
    return row["outcome"] == "passed" or (bool(pinned) and all(is_overflow(f) for f in pinned))


def _explains(row: dict[str, Any], outcome: Outcome) -> bool:
    """Whether a fuzz row explains what the run met: each finding it met (an overflow where eager overflows too
    aside) is one of this row's, and no pin the run was held to went missing."""
    detail = outcome.detail
    pinned = [p for p in findings.pins(row) if not is_overflow(p)]
    if detail.get("unreproduced") and pinned:
        return False
    if "findings" not in detail:  # an outcome from before findings were recorded
        return not detail.get("new")
    rows = [Finding(**p) for p in pinned if "output" in p]
    if not rows:  # a row of an example alone, or none: the run's own judgement stands
        return not detail.get("new")
    met = [Finding(**{k: v for k, v in f.items() if k not in ("pinned", "seen")}) for f in detail["findings"]]
    return all(any(p.explains(f) for p in rows) for f in met if f.difference != "overflow_only")


def _shown_elsewhere(row: dict[str, Any], gpu: str | None) -> bool:
    """Every finding the fuzz row pins showed on another GPU than `gpu`, the run's: a run there is not held to them
    (compat.evidence.findings), so its pass is no fix."""
    pinned = findings.pins(row)
    return gpu is not None and bool(pinned) and all(p.get("gpu") not in (None, gpu) for p in pinned)


def agrees(expectation: Row, outcome: Outcome, gpu: str | None = None) -> bool:
    """Whether the outcome is what the row expects, on the run's `gpu` (its name; None: not known)."""
    r = expectation.full
    if expectation.section == "fuzz":
        if _expects_pass(r):
            return outcome.kind == "passed" or (outcome.kind == "mismatch" and findings.overflow_only(outcome))
        if not _explains(r, outcome):
            return False  # a difference its findings do not explain, or a pinned one that no longer shows
        if outcome.kind == "passed" and _shown_elsewhere(r, gpu):
            return True
        if r.get("findings") and outcome.kind in ("mismatch", "failed") and not stale(outcome, "fuzz"):
            # Its findings say it all; which of them a run met first (a wrong value, an error) decides only the
            # outcome's kind and words, which follow the order of the examples, not the op.
            return True
    if outcome.kind != r["outcome"]:
        return False
    if r["outcome"] == "failed":
        cause = outcome.cause
        return (
            outcome.error_type == r["error"]
            and re.search(r["match"], outcome.searchable) is not None
            and r.get("cause", cause.error_type) == cause.error_type
        )
    if r["outcome"] == "crashed" and r.get("signal"):
        return outcome.error_type == r["signal"]
    return True


# ---- the verdict ----


def _fuzz_without_row(cell_id: str, outcome: Outcome, path) -> str | None:
    if outcome.kind == "passed":
        return None
    found = "".join(f"  {line}\n" for line in findings.disagreement({}, outcome))
    return (
        f"fuzz {cell_id}: a generated input shows the cell does not compute eager's function.\n"
        f"  observed: {outcome.summary()}\n{found}  {_fuzz_how(cell_id, outcome, path)}"
    )


def _fuzz_how(cell_id: str, outcome: Outcome, path) -> str:
    how = (
        f"Fix the op; or, where those inputs are outside what it takes, declare the input's domain; or record "
        f"the finding with --compat-accept (rewrites fuzz.{cell_id} in {path}) and give its row a reason."
    )
    return f"reproduce: {outcome.detail['reproducer']}\n  {how}" if outcome.detail.get("reproducer") else how


def unmeasurable(outcome: Outcome, row: dict[str, Any], cell_id: str) -> str | None:
    """Why the cell's device cannot measure its stage, where the failure is the device's (a catalogue entry with
    `unmeasurable`: the row's, else the one that explains the outcome), else None."""
    entry = by_key(str(row["known"])) if row.get("known") else explain(outcome, split_cell_id(cell_id, "a verdict"))
    return entry.unmeasurable if entry is not None else None


def _against_row(
    cell_id: str, expectation: Row | None, outcome: Outcome, run: Versions, path, section: str
) -> str | None:
    """The complaint against the cell's row (in the fuzz section, no row expects a pass), or None."""
    if section == "fuzz" and outcome.detail.get("beyond_tolerance"):
        return f"fuzz {cell_id}: regraded: {outcome.detail['beyond_tolerance']}.\n  observed: {outcome.summary()}"
    if expectation is None:
        if section == "fuzz":
            return _fuzz_without_row(cell_id, outcome, path)
        if outcome.kind != "passed" and unmeasurable(outcome, {}, cell_id):
            return None  # the device cannot run the stage at all: no verdict on the op here, rows or none
        return (
            f"{cell_id}: no expectation for torch {run.torch}, triton {run.triton}, host {run.host}.\n"
            f"  observed: {outcome.summary()}\n  If this is the new truth, record it: rerun with --compat-accept "
            f"(rewrites {path}) or edit cells.{cell_id} there by hand."
        )
    if agrees(expectation, outcome, run.gpu):
        if UNEXPLAINED not in str(expectation.full.get("reason", "")):
            return None
        return (
            f"{'fuzz ' if section == 'fuzz' else ''}{cell_id}: as its row records, and the row is unexplained.\n"
            f"  expected: {expectation.describe()}  ({expectation.where})\n  observed: {outcome.summary()}\n"
            f"  Say why it is not a bug: write its `reason:` in {path}, or register a catalogue entry (compat.Known, "
            f"register_known) and accept again; where the op is wrong, fix it."
        )
    kind = "expected failure now passes (strict)" if outcome.kind == "passed" else "outcome changed"
    if section == "fuzz" and outcome.kind == expectation.full["outcome"]:
        kind = "its findings changed"
    changed = findings.disagreement(expectation.row, outcome) if section == "fuzz" else []
    how = (
        _fuzz_how(cell_id, outcome, path)
        if section == "fuzz"
        else f"If this is the new truth, record it: rerun with --compat-accept (rewrites {path}) or edit "
        f"cells.{cell_id} there by hand."
    )
    return (
        f"{'fuzz ' if section == 'fuzz' else ''}{cell_id}: {kind}.\n  expected: {expectation.describe()}  "
        f"({expectation.where}, {expectation.full.get('reason', 'expected to pass')})\n  observed: "
        f"{outcome.summary()}\n" + "".join(f"  {line}\n" for line in changed) + f"  {how}"
    )


def _against_baseline(cell_id: str, change: str, describe: str, outcome: Outcome, path) -> str:
    strict = " (strict)" if change == "fixed" else ""
    return (
        f"{cell_id}: changed against the baseline, {TITLES[change].split(':')[0].lower()}{strict}.\n"
        f"  baseline: {describe}\n  observed: {outcome.summary()}\n"
        f"  If this is the new truth, record it: rerun with --compat-accept (writes rows to {path})."
    )


def judge(
    cell_id: str,
    expectation: Row | None,
    outcome: Outcome,
    run: Versions,
    path,
    section: str = "cells",
    baseline=None,
) -> Judgement:
    """The verdict on one cell or fuzz test: its outcome (read as today's judgement reads it) against its row; a
    cell without a row for this run, against the `baseline` (compat.evidence.baseline), which fails only on what
    changed. An environment failure (the AOTI canary fails too; the C++ runner cannot be built) is no outcome of
    the cell's: nothing accepts it. A skip is the environment's: no verdict."""
    if outcome.kind == "skipped":
        return Judgement(None)
    outcome = regraded(outcome, cell_id, section)
    if outcome.detail.get("environment_failure"):
        complaint: str | None = (
            f"{cell_id}: the environment failed, not the wrapping style; no expectation accepts that.\n"
            f"  observed: {outcome.summary()}\n  ENVIRONMENT FAILURE: {outcome.detail['environment_failure']}"
        )
        return Judgement(_with_remedy(complaint, outcome))
    complaint, against = _against_row(cell_id, expectation, outcome, run, path, section), None
    if expectation is None and baseline is not None and not outcome.detail.get("beyond_tolerance"):
        ref, change = baseline.compare(cell_id, outcome, section)
        if ref is not None:  # unchanged passes, naming the baseline it matched; a change fails, saying what
            against = {"baseline": baseline.name, "reference": ref.describe, "change": change}
            complaint = _against_baseline(cell_id, change, ref.describe, outcome, path) if change else None
    return Judgement(_with_remedy(complaint, outcome), against)


def _with_remedy(complaint: str | None, outcome: Outcome) -> str | None:
    if complaint and outcome.detail.get("remedy"):
        return f"{complaint}\n  remedy: {outcome.detail['remedy']}"
    return complaint
