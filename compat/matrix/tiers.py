"""Tiers of the matrix (`--compat-tier`): `full`, every cell (the default, and the one behind the published pages);
`quick`, a PR gate: every stage in float32, the other dtypes only at the stages whose numerics are what they ask
(`Stage.every_dtype_in_quick_tier`: eager, Inductor's own code, the gradients); `sample`, the check before landing a
change of the harness: each kernel or op, style, stage and device of the selection at least once, in float32, in as
few cells as a greedy cover finds (`sample`). Fuzz tests follow their cells.

What the quick tier leaves out is measured on recorded results (`missed`): a (kernel, style, stage) whose outcome
differs by dtype at a stage the quick tier runs in float32 only is a difference it cannot see."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from .cells import Cell, split_cell_id
from .stages import STAGES

TIERS = ("full", "quick", "sample")
QUICK_DTYPE = "float32"
COVERED = ("kernel", "style", "stage", "device")  # what the sample holds each name of at least once


def in_tier(cell: Cell, tier: str) -> bool:
    """Whether the full or the quick tier holds the cell (the sample is a cover of a selection: `select`)."""
    if tier not in TIERS:
        raise ValueError(f"tier {tier!r}: tiers are {', '.join(TIERS)}")
    return tier in ("full", "sample") or cell.dtype == QUICK_DTYPE or STAGES[cell.stage].every_dtype_in_quick_tier


def select(cells: list[Cell], tier: str) -> list[Cell]:
    """The cells of a selection that the tier holds, in the selection's order."""
    kept = [c for c in cells if in_tier(c, tier)]
    if tier != "sample":
        return kept
    chosen = {c.id for c in sample(kept)}
    return [c for c in kept if c.id in chosen]


def sample(cells: list[Cell]) -> list[Cell]:
    """Each kernel, style, stage and device of `cells` at least once: float32 cells where the kernel has them,
    picked greedily (the cell that names the most names not yet covered; the first in order among equals), so the
    same selection gives the same sample on every machine."""
    pool = [c for c in cells if c.dtype == QUICK_DTYPE] + [c for c in cells if c.dtype != QUICK_DTYPE]
    names = {c.id: {(axis, getattr(c, axis)) for axis in COVERED} for c in pool}
    need = set().union(*names.values()) if names else set()
    chosen: list[Cell] = []
    while need:
        best = max(pool, key=lambda c: len(names[c.id] & need))
        chosen.append(best)
        need -= names[best.id]
    return chosen


def missed(records: Iterable[dict[str, Any]]) -> tuple[list[str], int]:
    """(the (kernel, style, stage, device) triples whose recorded outcome differs by dtype at a stage the quick tier
    runs in float32 only, how many triples were recorded in more than one dtype)."""
    kinds: dict[tuple, set[str]] = defaultdict(set)
    dtypes: dict[tuple, set[str]] = defaultdict(set)
    for record in records:
        cell = split_cell_id(record["id"], "a results file")
        if cell.stage not in STAGES or record["outcome"]["kind"] == "skipped":
            continue
        triple = (cell.kernel, cell.style, cell.stage, cell.device)
        kinds[triple].add(record["outcome"]["kind"])
        dtypes[triple].add(cell.dtype)
    several = [t for t in dtypes if len(dtypes[t]) > 1]
    return sorted(
        "-".join(t) for t in several if len(kinds[t]) > 1 and not STAGES[t[2]].every_dtype_in_quick_tier
    ), len(several)
