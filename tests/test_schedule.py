"""The order of a run and its shards, from recorded seconds (compat.run.schedule)."""

from compat.matrix.cells import lane, matrix
from compat.run import schedule

SELECT = {"kernel": ["silu", "axpy_inplace"], "device": ["cuda"], "dtype": ["float32"]}


def test_a_group_without_a_record_weighs_the_median_of_its_kind():
    recorded = {"probe-a": 10.0, "probe-b": 30.0, "probe-c": 20.0, "build-a": 4.0}
    assert schedule.weights(["probe-a", "probe-z", "build-z", "fuzz-z"], recorded) == {
        "probe-a": 10.0,
        "probe-z": 20.0,
        "build-z": 4.0,
        "fuzz-z": 0.0,
    }
    assert schedule.longest_first({"a": 1.0, "b": 3.0, "c": 3.0}) == ["b", "c", "a"]


def test_shards_keep_each_shared_child_whole_cover_every_cell_once_and_balance_the_seconds():
    cells = matrix(SELECT)
    groups = sorted({lane(c, "cells") for c in cells})
    recorded = {g: float(1 + i % 7) for i, g in enumerate(groups)}
    dealt = schedule.shards(cells, recorded, 3)
    assert sorted(c.id for shard in dealt for c in shard) == sorted(c.id for c in cells)
    owner = {lane(c, "cells"): i for i, shard in enumerate(dealt) for c in shard}
    assert all(owner[lane(c, "cells")] == i for i, shard in enumerate(dealt) for c in shard)
    loads = [sum(recorded[g] for g in {lane(c, "cells") for c in shard}) for shard in dealt]
    assert max(loads) - min(loads) <= max(recorded.values())  # the greedy rule's bound: one group apart at most


def test_without_recorded_seconds_shards_balance_the_cells():
    dealt = schedule.shards(matrix(SELECT), {}, 4)
    sizes = [len(shard) for shard in dealt]
    assert min(sizes) > 0 and max(sizes) - min(sizes) <= max(
        sum(1 for c in matrix(SELECT) if lane(c, "cells") == g) for g in {lane(c, "cells") for c in matrix(SELECT)}
    )


def test_the_devices_where_inductor_compiles_cpu_kernels_are_the_cpu_devices():
    from compat.matrix.cells import DEVICES
    from compat.matrix.stages import CPU_DEVICES, STAGES

    assert set(CPU_DEVICES) == set(DEVICES) - {"cuda"}
    assert STAGES["compile_cpp_wrapper"].compiles_cpp("cuda") and STAGES["aoti_strict"].compiles_cpp("cuda")
    assert not STAGES["compile_inductor"].compiles_cpp("cuda") and STAGES["compile_inductor"].compiles_cpp("cpu")


def test_a_lane_that_took_too_long_alone_splits_into_a_lane_per_stage_and_weighs_its_stages_own_seconds():
    cells = [c for c in matrix(SELECT) if c.kernel == "silu" and c.style == "triton_op"]
    eager, inductor = (next(c for c in cells if c.stage == s) for s in ("eager", "compile_inductor"))
    base = lane(eager, "fuzz")
    recorded = {base: 61.0, f"{base}-eager": 50.0, f"{base}-compile_inductor": 11.0}
    recorded |= {lane(eager, "cells"): 8.0, "probe-other": 30.0}
    split = schedule.split_lanes(recorded, cells, workers=2)
    assert split == {base}  # the bound: a quarter of 69 s over 2 workers is 8.6 s, under the floor, 10 s
    # The bound follows the run: with a 400 s build, a quarter of 469 s over 2 workers is 58.6 s, over 1 worker 117 s.
    build = lane(next(c for c in cells if c.stage == "export_strict"), "cells")
    many = recorded | {build: 400.0}
    assert schedule.split_lanes(many, cells, workers=2) == {base, build}
    assert schedule.split_lanes(many, cells, workers=1) == {build}

    assert lane(eager, "fuzz", split) == f"{base}-eager" and lane(inductor, "fuzz", split) != lane(eager, "fuzz", split)
    assert lane(eager, "cells", split) == lane(inductor, "cells", split) == lane(eager, "cells")
    # A stage's own seconds weigh its lane; the medians of unrecorded lanes are the lanes', never a stage's.
    assert schedule.weights([f"{base}-eager", "probe-z"], recorded) == {f"{base}-eager": 50.0, "probe-z": 19.0}


def test_a_passing_cell_whose_fuzz_test_did_not_finish_lends_it_its_own_seconds():
    """A run cut at its deadline records no fuzz test for some passing cells: each then weighs what its cell took
    (it compiles the stage again), so a long one splits and starts first rather than weighing the median."""
    cells = [c for c in matrix(SELECT) if c.kernel == "silu" and c.style == "triton_op"]
    inductor, eager = (next(c for c in cells if c.stage == s) for s in ("compile_inductor", "eager"))
    passed = {"kind": "passed"}
    doc = {
        "cells": [
            {"id": inductor.id, "outcome": passed, "duration_s": 120.0},
            {"id": eager.id, "outcome": passed, "duration_s": 3.0},
            {"id": next(c for c in cells if c.stage == "opcheck").id, "outcome": passed, "duration_s": 7.0},
        ],
        "fuzz": [{"id": eager.id, "outcome": passed, "duration_s": 2.0}],
    }
    recorded = schedule.recorded_seconds(doc)
    fuzz = lane(inductor, "fuzz")
    assert recorded[f"{fuzz}-compile_inductor"] == 120.0  # unfinished: its cell's seconds
    assert recorded[f"{fuzz}-eager"] == 2.0  # recorded: its own, never its cell's besides
    assert recorded[fuzz] == 122.0  # opcheck is not fuzzed: it lends nothing
    assert schedule.split_lanes(recorded, cells, workers=4) >= {fuzz}
