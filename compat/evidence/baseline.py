"""The upgrade gate's baseline: what a cell did before, for a run on a version that has no rows of its own.

A run on a torch or triton nobody has recorded compares each cell without a row against a baseline and fails only
on what changed. The baseline is a results file the user names (`--compat-baseline OLD.json`), or else the nearest
recorded version below the running one on the same host, for each cell: the rows that version's run would use. Without a baseline
a cell without rows fails as "no expectation", as before.

Changes are classified as `compat.evidence.diff` classifies them (root causes compared), so the gate and the upgrade diff
agree on what changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from packaging.version import Version

from . import gate, results
from .diff import GROUPS, classify
from .expectations import Expectation, Expectations, Run, recorded_runs
from .outcomes import Outcome

SEVERITY = [key for key, _, _ in GROUPS]


@dataclass(frozen=True)
class Reference:
    """What the baseline says of one cell: its row (a recorded version's) or its record (a results file's)."""

    describe: str  # for a reader: the expected outcome and where it is written
    outcome: dict[str, Any] | None = None  # a results file's record of the cell's outcome
    row: Expectation | None = None


class Baseline:
    name: str  # how the summary and the Markdown name it

    def reference(self, cell_id: str, section: str) -> Reference | None:
        raise NotImplementedError

    def compare(self, cell_id: str, outcome: Outcome, section: str = "cells") -> tuple[Reference | None, str | None]:
        """The cell's reference, and the change against it (a `compat.evidence.diff` group key; None: unchanged)."""
        ref = self.reference(cell_id, section)
        if ref is None:
            return None, None
        if ref.row is not None:
            if gate.agrees(ref.row, outcome):
                return ref, None
            before = {"kind": ref.row.row["outcome"]}
            if before["kind"] == "failed":  # a row has no message: any other failure is a changed one
                return ref, "worse" if outcome.kind in ("crashed", "timed_out") else (
                    "fixed" if outcome.kind == "passed" else "message"
                )
            old: dict[str, Any] = {
                "outcome": {**before, "error_type": None, "message": None, "numerics": [], "detail": {}}
            }
        else:
            old = {"outcome": ref.outcome}
        change = classify(old, {"outcome": outcome.to_dict()})
        return ref, None if change == "not_run" else change


class RowsBaseline(Baseline):
    """For each cell, the rows of the nearest (torch, triton) below the run that the cell was measured on, on its
    host: a user's kernel recorded on other versions than the suite's finds its own."""

    def __init__(self, expectations: Expectations, run: Run):
        self.expectations, self.run = expectations, run
        self.name = (
            f"the rows of the nearest version below torch {run.torch}, triton {run.triton} measured for "
            f"each cell ({run.host})"
        )

    def reference(self, cell_id: str, section: str) -> Reference | None:
        recorded = nearest_below(self.expectations, self.run, cell_id)
        row = self.expectations.lookup(cell_id, recorded, section) if recorded else None
        if row is None or recorded is None:
            return None
        return Reference(f"{row.describe()} ({row.where}, torch {recorded.torch}, triton {recorded.triton})", row=row)


class ResultsBaseline(Baseline):
    """A results file's recorded outcomes; a cell it skipped has no reference."""

    def __init__(self, path: str, doc: dict[str, Any]):
        self.path = path
        env = doc["environment"]
        self.name = f"{path} (torch {env['torch']}, triton {env['triton']})"
        self.records = {section: {c["id"]: c for c in doc.get(section, [])} for section in ("cells", "fuzz")}

    def reference(self, cell_id: str, section: str) -> Reference | None:
        record = self.records[section].get(cell_id)
        if record is None or record["outcome"]["kind"] == "skipped":
            return None
        return Reference(
            f"{Outcome.from_dict(record['outcome']).summary()[:200]} ({self.path})", outcome=record["outcome"]
        )


def _order(r: Run) -> tuple:
    return Version(r.torch), Version(r.triton)


def nearest_below(expectations: Expectations, run: Run, cell_id: str | None = None) -> Run | None:
    """The newest recorded (torch, triton) on the run's host that is older than the run: a lower torch, or the same
    torch with a lower triton (a Triton-only upgrade). Of the cell's rows, where one is named."""
    older = [r for r in recorded_runs(expectations, cell_id) if r.host == run.host and _order(r) < _order(run)]
    return max(older, key=_order, default=None)


def nearest_above(expectations: Expectations, run: Run, cell_id: str | None = None) -> Run | None:
    """The oldest recorded (torch, triton) on the run's host that is newer than the run (accept widens its rows
    down to an older version measured after it)."""
    newer = [r for r in recorded_runs(expectations, cell_id) if r.host == run.host and _order(r) > _order(run)]
    return min(newer, key=_order, default=None)


def neighbours(expectations: Expectations, run: Run, above: bool = False):
    """For accept: a cell's nearest recorded versions below (and above), whose agreeing rows it widens."""

    def of(cell_id: str) -> tuple[Run, ...]:
        found = (
            nearest_below(expectations, run, cell_id),
            nearest_above(expectations, run, cell_id) if above else None,
        )
        return tuple(r for r in found if r)

    return of


def for_run(expectations: Expectations, run: Run, results_path: str | None) -> Baseline | None:
    if results_path:
        return ResultsBaseline(results_path, results.load(results_path))
    return RowsBaseline(expectations, run) if nearest_below(expectations, run) else None


def compared(doc: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """The baseline a run named, and its records (cells and fuzz tests) that were compared with it."""
    return doc["options"].get("baseline"), [
        r for s in ("cells", "fuzz") for r in doc.get(s, []) if r.get("against_baseline")
    ]


def changed_by_kind(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The records compared with the baseline that changed, by the kind of change (compat.evidence.diff.GROUPS)."""
    groups: dict[str, list[dict[str, Any]]] = {key: [] for key in SEVERITY}
    for section in ("cells", "fuzz"):
        for record in doc.get(section, []):
            against = record.get("against_baseline")
            if against and against["change"]:
                groups[against["change"]].append({**record, "section": section})
    return groups
