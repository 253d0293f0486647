"""The latency a results file records (compat.child.latency measures it), as the documentation and the upgrade diff
read it: never a verdict, always beside one.

- `steady_table`: per kernel on CUDA, the steady-state latency of every style at each timed stage, at the smallest
  check point (where the call's own overhead shows most: a triton_op's dispatch, an opaque custom_op's call).
- `first_call_rows`: write-up 002's comparison from the matrix's own cells: from the start of a load or compile to
  the first output, torch.compile (Inductor) against the AOTI package loaded from Python and from C++.
- `changes`: the latency of cells two results files share, where it moved beyond the noise band.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..matrix.stages import STAGES

# The noise bands, from two `-n auto` runs of the same 55 cells on the same H100 (README, "Latency"): first calls
# differed by 1.12x at the median and 1.75x at most; steady states, taken while the other cells compile and run
# beside them, by up to 98x (median of calls) and 32x (best call). A change inside its band is not reported.
FIRST_CALL_BAND = (2.0, 200.0)  # (ratio, and milliseconds) a first call must move by, both
STEADY_BAND = (40.0, 20.0)  # (ratio, and microseconds) the best call of a steady state must move by, both
FIRST_CALL_STAGES = ("compile_inductor", "aoti_nonstrict", "aoti_cpp_nonstrict")
TABLE_DTYPE = "float32"


def of(cell: dict[str, Any]) -> dict[str, Any] | None:
    """A passing cell's latency record, or None."""
    outcome = cell["outcome"]
    return outcome["detail"].get("latency") if outcome["kind"] == "passed" else None


def first_point(latency: dict[str, Any]) -> tuple[str, float]:
    """The smallest check point's label and steady-state microseconds (points are recorded in check order)."""
    return next(iter(latency["steady_us"].items()))


def _timed(doc: dict[str, Any]) -> dict[tuple, dict[str, Any]]:
    """(kernel, style, stage) -> the cell, for the CUDA cells of TABLE_DTYPE of timed stages."""
    return {
        (a["kernel"], a["style"], a["stage"]): c
        for c in doc["cells"]
        for a in [c["axes"]]
        if a["device"] == "cuda" and a["dtype"] == TABLE_DTYPE and a["stage"] in STAGES and STAGES[a["stage"]].timed
    }


def _text(cell: dict[str, Any] | None, value) -> str:
    if cell is None:
        return ""
    latency = of(cell)
    if latency is None:
        return {"passed": "—", "skipped": ""}.get(cell["outcome"]["kind"], "fails")
    return value(latency)


def steady_text(latency: dict[str, Any]) -> str:
    """The median and, where recorded, the best call at the smallest check point: "median / best"."""
    point, median = first_point(latency)
    best = latency.get("steady_best_us", {}).get(point)
    return f"{median:.0f}" + (f" / {best:.0f}" if best is not None else "")


def first_call_text(latency: dict[str, Any]) -> str:
    return f"{latency['first_call_ms']:,.0f}"


@dataclass
class Table:
    columns: list[str]
    rows: list[tuple[str, list[str]]]  # (style, one text per column)
    point: str  # the check point the steady-state numbers are at


def steady_table(doc: dict[str, Any], kernel: str, styles: list[str]) -> Table | None:
    """Steady-state µs per style (rows, in `styles` order) and timed stage (columns, in registry order)."""
    cells = {k: c for k, c in _timed(doc).items() if k[0] == kernel}
    if not any(of(c) for c in cells.values()):
        return None
    columns = [s for s in STAGES if any(k[2] == s for k in cells)]
    rows = [
        (style, [_text(cells.get((kernel, style, s)), steady_text) for s in columns])
        for style in styles
        if any(k[1] == style for k in cells)
    ]
    point = next(first_point(lat)[0] for c in cells.values() if (lat := of(c)))
    return Table(columns, rows, point)


def first_call_rows(doc: dict[str, Any], kernels: list[str], styles: list[str]) -> list[tuple[str, str, list[str]]]:
    """(kernel, style, first-call ms per FIRST_CALL_STAGES) for every pair with a first call at each of them."""
    cells = _timed(doc)
    rows = []
    for kernel in kernels:
        for style in styles:
            got = [of(c) if c is not None else None for s in FIRST_CALL_STAGES for c in [cells.get((kernel, style, s))]]
            timed = [lat for lat in got if lat]
            if len(timed) == len(got):
                rows.append((kernel, style, [first_call_text(lat) for lat in timed]))
    return rows


@dataclass
class Change:
    id: str
    what: str  # "first call" or "steady state at <point>"
    old: float
    new: float
    unit: str

    @property
    def ratio(self) -> float:
        return self.new / self.old if self.old > 0 else float("inf")


def changes(old_doc: dict[str, Any], new_doc: dict[str, Any]) -> list[Change]:
    """Latency of the cells both files time that moved beyond its noise band, the largest change first."""
    old = {c["id"]: of(c) for c in old_doc["cells"] if of(c)}
    found = []
    for cell in new_doc["cells"]:
        before, after = old.get(cell["id"]), of(cell)
        if not (before and after):
            continue
        pairs = [("first call", before["first_call_ms"], after["first_call_ms"], "ms", FIRST_CALL_BAND)]
        best_before, best_after = before.get("steady_best_us", {}), after.get("steady_best_us", {})
        pairs += [
            (f"best steady-state call at {p}", best_before[p], best_after[p], "µs", STEADY_BAND)
            for p in best_after
            if p in best_before
        ]
        for what, a, b, unit, (ratio, floor) in pairs:
            if abs(b - a) >= floor and max(a, b) >= ratio * min(a, b):
                found.append(Change(cell["id"], what, a, b, unit))
    return sorted(found, key=lambda c: -max(c.ratio, 1 / c.ratio if c.ratio else float("inf")))


def band() -> str:
    return (
        f"a first call counts as moved at {FIRST_CALL_BAND[0]:g}x and {FIRST_CALL_BAND[1]:g} ms or more, the best "
        f"steady-state call at {STEADY_BAND[0]:g}x and {STEADY_BAND[1]:g} µs (two runs of the same cells on one "
        f"H100 differed by up to 1.75x and 32x)"
    )
