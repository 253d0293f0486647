"""The order of a run and its shards, from the seconds a results file recorded.

The unit is a lane (compat.matrix.cells.lane): its tests share one child, so they go to one worker; a lane that took
too long alone (`split_lanes`) splits into a lane per stage.
A group's weight is the seconds its cells and fuzz tests took in the recorded run (a shared child's time is on the
first of its tests to need it); a group the file does not hold weighs the median of the recorded groups of its kind
(probe, build, fuzz). Longest first: a run's workers take groups in that order, and `shards` deals them out to the
lightest shard (the longest-processing-time rule, within 4/3 of the best possible makespan).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any, Iterable

from ..matrix.cells import Cell, in_matrix, lane, parse_cell_id
from ..matrix.stages import STAGES

SECTIONS = ("cells", "fuzz")


# A lane that took longer alone in the recorded run than a quarter of the run's share per worker (its lanes' seconds
# over the workers) splits into a lane per stage, each its own child on any worker, so that no lane holds the run's
# end: Liger-Kernel's SwiGLU fuzz lane took 361 s of a 402 s run on the H100 (results/benchmark/profiles/). Its stages
# then pay a child each (a fork) and build nothing they shared, so a lane under MIN_SPLIT_SECONDS stays whole.
CRITICAL_SHARE = 0.25
MIN_SPLIT_SECONDS = 10.0


def recorded_seconds(*docs: dict[str, Any]) -> dict[str, float]:
    """Seconds per lane in results documents, and per stage of each lane (the lanes it would split into); cells no
    longer in the matrix left out. Each document a device's (a cell id names its device): where two hold the same
    lane, the longer.

    A passing cell of a fuzzed stage whose fuzz test the run did not finish (cut at its deadline, as Liger's fused
    linear cross entropy's were: they recompile at most token counts) lends its fuzz test its own seconds: that test
    compiles the stage again, so it weighs like its cell, not like the median fuzz lane, and starts early."""
    longest: dict[str, float] = {}
    for doc in docs:
        for name, took in _recorded_seconds(doc).items():
            longest[name] = max(took, longest.get(name, 0.0))
    return longest


def _recorded_seconds(doc: dict[str, Any]) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    fuzzed = {record["id"] for record in doc.get("fuzz") or []}

    def add(whole: str, stage: str, took: float) -> None:
        seconds[whole] += took
        seconds[f"{whole}-{stage}"] += took

    for section in SECTIONS:
        for record in doc.get(section) or []:
            if in_matrix(record["id"]):
                cell = parse_cell_id(record["id"], "durations")
                took = record.get("duration_s") or 0.0
                add(lane(cell, section), cell.stage, took)
                unfinished = section == "cells" and record["outcome"]["kind"] == "passed" and record["id"] not in fuzzed
                if unfinished and STAGES[cell.stage].not_fuzzed is None:
                    add(lane(cell, "fuzz"), cell.stage, took)
    return dict(seconds)


def split_lanes(recorded: dict[str, float], cells: Iterable[Cell], workers: int) -> frozenset[str]:
    """The lanes of `cells` (either section) that took longer in the recorded run than CRITICAL_SHARE of their
    seconds spread over `workers`, and longer than MIN_SPLIT_SECONDS."""
    lanes = {lane(c, section) for c in cells for section in SECTIONS}
    share = sum(recorded.get(name, 0.0) for name in lanes) / max(1, workers)
    bound = max(MIN_SPLIT_SECONDS, CRITICAL_SHARE * share)
    return frozenset(name for name in lanes if recorded.get(name, 0.0) > bound)


def _kind(group: str) -> str:
    return group.split("-", 1)[0]


def weights(groups: Iterable[str], recorded: dict[str, float]) -> dict[str, float]:
    """Each group's recorded seconds, or the median of its kind's recorded groups (0 where none is recorded)."""
    by_kind: dict[str, list[float]] = defaultdict(list)
    for group, seconds in recorded.items():
        if group.rsplit("-", 1)[-1] not in STAGES:  # a lane, not one of its stages' (compat.matrix.cells.lane)
            by_kind[_kind(group)].append(seconds)
    medians = {kind: statistics.median(values) for kind, values in by_kind.items()}
    return {g: recorded[g] if g in recorded else medians.get(_kind(g), 0.0) for g in groups}


def longest_first(groups: dict[str, float]) -> list[str]:
    """The groups by descending weight; ties keep their order."""
    return sorted(groups, key=lambda g: -groups[g])


def shards(cells: list[Cell], recorded: dict[str, float], count: int) -> list[list[Cell]]:
    """`cells` dealt into `count` shards of about equal recorded seconds, each group whole; each shard in the
    matrix's order. A cell's group weighs its probe or build child and the fuzz child of the same family."""
    groups: dict[str, list[Cell]] = defaultdict(list)
    for cell in cells:
        groups[lane(cell, "cells")].append(cell)
    fuzz = {g: lane(members[0], "fuzz") for g, members in groups.items()}
    weight = weights([*groups, *fuzz.values()], recorded)
    load = {g: weight[g] + weight[fuzz[g]] for g in groups}
    dealt: list[list[Cell]] = [[] for _ in range(count)]
    totals = [0.0] * count
    for group in longest_first(load):  # equal seconds (none recorded): the shard with fewer cells
        lightest = min(range(count), key=lambda i: (totals[i], len(dealt[i]), i))
        dealt[lightest] += groups[group]
        totals[lightest] += load[group]
    order = {c.id: i for i, c in enumerate(cells)}
    return [sorted(shard, key=lambda c: order[c.id]) for shard in dealt]
