"""An autotuned cell is judged on every config the autotuner may pick, not on the one that won a timing race."""

import gc

import torch
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner

from compat.child import checks
from compat.child.checks import on_every_config
from compat.evidence.outcomes import Outcome


@triton.jit
def _copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


def test_a_config_that_gives_wrong_values_decides_the_cell_and_is_named():
    tuner = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=[])(_copy)
    calls = []

    def check(cell):  # stands in for a stage: right unless the autotuner can only pick BLOCK 32
        calls.append([c.kwargs["BLOCK"] for c in tuner.configs])
        if [c.kwargs["BLOCK"] for c in tuner.configs] == [32]:
            return Outcome("mismatch", message="output 0: max abs err 1 > 1e-4 x scale 1")
        return Outcome("passed")

    result = on_every_config(check, None, jit=_copy)
    assert calls[:1] == [[16, 32]] and [16] in calls and [32] in calls  # as a user's call, then each pinned
    assert result.kind == "mismatch" and "BLOCK: 32" in result.message
    assert result.detail["configs"] == {str(tuner.configs[0]): "passed", str(tuner.configs[1]): "mismatch"}
    assert [c.kwargs["BLOCK"] for c in tuner.configs] == [16, 32]  # restored


def test_a_cell_that_passes_on_every_config_passes_and_says_so():
    tuner = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})], key=[])(_copy)
    result = on_every_config(lambda cell: Outcome("passed"), None, jit=_copy)
    assert result.kind == "passed"
    assert result.detail["configs"][str(tuner.configs[1])] == "passed"


def test_an_autotuner_the_warm_server_made_before_it_froze_its_heap_is_found_by_a_childs_walk(monkeypatch):
    """The warm server freezes its heap (gc.freeze), and a frozen object is hidden from a child's walk of the heap:
    an Autotuner no constructor call recorded (one made before compat.child.checks loaded) is handed to the walk."""
    tuner = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=[])(_other)
    monkeypatch.setattr(checks, "_AUTOTUNERS", type(checks._AUTOTUNERS)())  # as if made before tracking began
    monkeypatch.setattr(checks, "_frozen", [])
    gc.freeze()
    try:
        monkeypatch.setattr(checks, "_walked_heap", False)
        assert tuner not in checks.live_autotuners()  # frozen and untracked: the walk alone misses it
        gc.unfreeze()
        monkeypatch.setattr(checks, "_AUTOTUNERS", type(checks._AUTOTUNERS)())
        checks.before_freeze()  # the server, before it freezes
        gc.freeze()
        monkeypatch.setattr(checks, "_walked_heap", False)  # a child's first ask
        assert tuner in checks.live_autotuners()
    finally:
        gc.unfreeze()  # into the oldest generation: the other tests' dead Autotuners with it, collected here
        gc.collect()


@triton.jit
def _other(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)


def test_only_the_kernels_own_autotuners_are_pinned_not_another_librarys():
    # Earlier tests' dead Autotuners of _copy collected first: one collected between the pinning and the count below
    # was pinned but not counted (a failure that came and went with the order of the fast tier's tests).
    gc.collect()
    triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=[])(_other)
    calls = []
    result = on_every_config(lambda cell: calls.append(cell) or Outcome("passed"), None, jit=_copy)
    own = [t for t in gc.get_objects() if issubclass(type(t), Autotuner) and t.fn is _copy]
    assert len(calls) == 1 + sum(len(t.configs) for t in own)  # _other's autotuner is never pinned
    assert result.kind == "passed"


@triton.jit
def _scaled(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


def test_torchs_traced_copies_of_an_autotuner_over_heuristics_are_not_pinned():
    """Tracing an autotuner over heuristics, torch keeps a copy of its configs with the heuristics folded in, an
    autotuner on the bare kernel in its side table; each compile copies again. The copies are made here as
    triton_kernel_wrap makes them (a CPU interpreter's trace goes through the autotuner instead)."""
    import copy

    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    original = triton.autotune(configs=[triton.Config({}, num_warps=2), triton.Config({}, num_warps=4)], key=[])(
        triton.heuristics({"BLOCK": lambda args: 16})(_scaled)
    )
    for _ in range(3):  # three earlier traces
        traced = triton.autotune(configs=copy.deepcopy(original.configs), key=[])(_scaled)
        kernel_side_table.add_kernel(traced)
    calls = []
    result = on_every_config(lambda cell: calls.append(len(original.configs)) or Outcome("passed"), None, jit=_scaled)
    assert calls == [2, 1, 1]  # as a user's call, then each of the original's configs alone; no copy pinned
    assert list(result.detail["configs"]) == [str(c) for c in original.configs]


def test_a_cell_that_fails_unpinned_is_not_run_again():
    triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=[])(_copy)
    calls = []
    result = on_every_config(
        lambda cell: calls.append(cell) or Outcome("failed", "RuntimeError", "0 active drivers"), None, jit=_copy
    )
    assert result.kind == "failed" and len(calls) == 1 and "configs" not in result.detail


def test_a_build_phase_that_runs_the_program_is_judged_on_every_config():
    from compat.child.builds import pinned
    from compat.child.checks import autotuners_of, models
    from compat.matrix.cells import parse_cell_id
    from compat.matrix.kernels import KERNELS

    cell = parse_cell_id("silu-autotune_triton_op-export_strict-float32-cpu_interpret", "test")
    models(cell)  # the style's op and its autotuner, as the build makes them
    (tuner,) = [t for t in autotuners_of(KERNELS["silu"].jit) if len(t.configs) > 1]
    seen = []
    program = torch.fx.symbolic_trace(torch.nn.ReLU())  # the op's own node: its body launches through the tuner
    result = pinned(cell, lambda: seen.append(len(tuner.configs)) or Outcome("passed"), lambda: program)()
    assert seen == [len(tuner.configs)] + [1] * len(tuner.configs)  # as a user's call, then each config alone
    assert result.kind == "passed" and len(result.detail["configs"]) == len(tuner.configs)


def test_a_traced_raw_launch_is_not_pinned_and_says_so():
    """The graph of a traced raw launch holds a grid per config it was traced with: pinning one afterwards fails
    in Inductor's grid code (an AssertionError on the H100), a fault of the pinning, not of the op."""
    from compat.child.builds import pinned
    from compat.matrix.cells import parse_cell_id

    cell = parse_cell_id("silu-autotune_raw-export_strict-float32-cpu_interpret", "test")
    graph = torch.fx.Graph()
    graph.call_function(_fake_raw_launch, ())
    calls = []
    result = pinned(cell, lambda: calls.append(1) or Outcome("passed"), lambda: torch.fx.GraphModule({}, graph))()
    assert calls == [1] and result.kind == "passed" and result.detail["configs"].startswith("not pinned")


def _fake_raw_launch():
    """Named as the higher-order op Dynamo puts a traced raw launch into."""


_fake_raw_launch.__name__ = "triton_kernel_wrapper_mutation"


def test_a_pinned_config_compiles_anew_past_aot_autograds_cache():
    """AOTAutograd's cache keys a traced triton_op by its kernels' source, not their configs: a pinned compile must not
    reuse the first compile (tuned over every config), so only the pinned calls run with that cache off."""
    tuner = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=[])(_copy)
    cached = []

    def check(cell):
        cached.append((len(tuner.configs), torch._functorch.config.enable_autograd_cache))
        return Outcome("passed")

    before = torch._functorch.config.enable_autograd_cache
    on_every_config(check, None, jit=_copy)
    assert cached[0] == (2, before)  # the user's call: as configured
    assert cached[1:] == [(1, False), (1, False)]  # each pinned config
    assert torch._functorch.config.enable_autograd_cache == before
