"""Tiers of the matrix (`--compat-tier`): `full`, every cell (the default, and the one behind the published pages);
`quick`, a PR gate: every stage in float32, the other dtypes only at the stages whose numerics are what they ask
(`Stage.every_dtype_in_quick_tier`: eager, Inductor's own code, the gradients). Fuzz tests follow their cells.

What the quick tier leaves out is measured on recorded results (`missed`): a (kernel, style, stage) whose outcome
differs by dtype at a stage the quick tier runs in float32 only is a difference it cannot see."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from .cells import Cell, split_cell_id
from .stages import STAGES

TIERS = ("full", "quick")
QUICK_DTYPE = "float32"


def in_tier(cell: Cell, tier: str) -> bool:
    if tier not in TIERS:
        raise ValueError(f"tier {tier!r}: tiers are {', '.join(TIERS)}")
    return tier == "full" or cell.dtype == QUICK_DTYPE or STAGES[cell.stage].every_dtype_in_quick_tier


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
