"""The probe stages' checks, and what every check of a model shares: the model around the style's op and around
the kernel's eager reference, the comparison at the checked batches, and the proof that a traced graph holds the
kernel."""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import re
import time
import weakref
from typing import TYPE_CHECKING, Callable, cast

import torch
import torch._functorch.config
import torch.fx
from torch._dynamo.testing import CompileCounterWithBackend
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table
from torch._inductor import config
from torch.utils.flop_counter import FlopCounterMode
from triton.runtime.autotuner import Autotuner, Heuristics

from ..errors import DeclarationError
from ..evidence import numerics, outcomes
from ..evidence.outcomes import Outcome
from ..matrix import model as workload
from ..matrix.kernels import KERNELS
from ..matrix.stages import STAGES
from ..matrix.styles import OP_NAMESPACE, STYLES, build_op, op_name
from . import latency, launches, toolchain

if TYPE_CHECKING:
    from ..matrix.cells import Cell
    from ..matrix.contract import Kernel, Op
    from .journal import Journal


def models(cell: "Cell"):
    """The model around the style's op, and the same model around the kernel's eager reference."""
    return workload.pair(KERNELS[cell.kernel], build_op(cell.style, cell.kernel), cell.dtype, cell.device)


def inputs(cell: "Cell", point) -> tuple:
    return workload.inputs_at(KERNELS[cell.kernel], point, cell.dtype, cell.device)


def check_points(cell: "Cell") -> list:
    return workload.points(KERNELS[cell.kernel])


def compare_outputs(
    got,
    want,
    label: str,
    names: list[str] | None = None,
    computed_in: str | None = None,
    want64=None,
    tol: float | None = None,
) -> list[dict]:
    """One comparison per output (a model's use of several outputs, a sum, could cancel); `names`: how each output
    is called (its variant and index, compat.matrix.model.output_names); `want64`: the reference's outputs in
    float64 (compat.evidence.numerics says how they judge)."""
    got, want = produced(got), kernel_outputs(want)
    if len(got) != len(want):
        return [
            {
                "input": label,
                "ok": False,
                "why": f"{label}: {len(got)} outputs, eager has {len(want)}",
                "outputs": [len(got), len(want)],
            }
        ]
    exact = want64 if want64 is not None and len(want64) == len(want) else (None,) * len(want)
    if len(want) == 1:
        return [numerics.compare(got[0], want[0], label, computed_in, exact[0], tol)]
    names = names if names and len(names) == len(want) else [f"output {i}" for i in range(len(want))]
    return [
        numerics.compare(g, w, f"{label}, {n}", computed_in, w64, tol)
        for n, g, w, w64 in zip(names, got, want, exact, strict=False)
    ]


def declared_tolerance(c: "Cell") -> float | None:
    """The cell's declaration's own tolerance for its dtype, or None (compat.evidence.numerics.declared_tolerance)."""
    return numerics.declared_tolerance(KERNELS[c.kernel], c.dtype)


def expected(reference, args) -> tuple[tuple, tuple | None]:
    """The reference's outputs on `args`, and in float64 on the same values (None where it cannot run there). The
    float64 run goes first, on copies: a reference that writes into its inputs (an in-place op's) would otherwise
    hand it what it wrote, and a float64 result that disagrees with eager widens the bound eager's error sets."""
    exact = workload.in_float64(reference, args)
    return kernel_outputs(reference(*args)), exact


def compare_call(got, reference, args, label: str, cell: "Cell") -> list[dict]:
    """A model's outputs against its reference run on `args` (inputs of its own, never the model's)."""
    want, want64 = expected(reference, args)
    return compare_outputs(got, want, label, output_names(cell), cell.dtype, want64, declared_tolerance(cell))


def check_batches(
    fn,
    reference,
    cell: "Cell",
    points=None,
    detail: dict | None = None,
    inference_mode: bool = False,
    first: "latency.FirstCall | None" = None,
) -> Outcome:
    """`fn` against the reference at every check point (the kernel's own unless `points`), each side on inputs
    of its own (an op may write into them), under `torch.no_grad()`; with `inference_mode`, then again under
    `torch.inference_mode()` (a deployed model's usual mode, whose tensors refuse some in-place and view ops).

    `first` times the first call (one that times a load too, or one made before); where the cell's latency is
    recorded (compat.child.latency), a pass carries it under detail["latency"]."""
    first = first or latency.FirstCall()
    points = points or check_points(cell)
    result = _compare_at(fn, reference, cell, points, detail, torch.no_grad, first)
    if inference_mode and result.kind == "passed":
        try:
            again = _compare_at(fn, reference, cell, points, detail, torch.inference_mode)
        except Exception as exc:  # noqa: BLE001 - under no_grad it ran: this failure is the mode's, said so
            again = outcomes.from_exception(exc)
        if again.kind != "passed":
            again.message = f"{INFERENCE_MODE}: {again.message or ''}"
            again.detail["grad_mode"] = "inference_mode"
        result = again
    if latency.wanted(cell) and result.kind == "passed":
        result.detail["latency"] = latency.measure(fn, first, points, lambda p: inputs(cell, p), workload.label)
    return result


INFERENCE_MODE = "under torch.inference_mode(), where torch.no_grad() passes"


def output_names(cell: "Cell") -> list[str]:
    return workload.output_names(KERNELS[cell.kernel])


def _compare_at(
    fn, reference, cell: "Cell", points, detail: dict | None, grad_mode, first: "latency.FirstCall | None" = None
) -> Outcome:
    comparisons = []
    call = first or (lambda f, *args: f(*args))
    with grad_mode():
        for point in points:
            comparisons += compare_call(
                call(fn, *inputs(cell, point)), reference, inputs(cell, point), workload.label(point), cell
            )
    return outcomes.from_comparisons(comparisons, dict(detail or {}))


def graph_targets(graph_modules) -> list[str]:
    """Call targets of FX graph modules and their nested subgraphs (autograd.Function, control flow), by name
    (builtins without their memory address, so results diff cleanly)."""
    names = []
    for gm in graph_modules:
        for module in gm.modules():
            if not isinstance(module, torch.fx.GraphModule):
                continue
            for node in module.graph.nodes:
                if node.op == "call_function":
                    name = str(node.target)
                    # A builtin or a plain function (allow_in_graph) by its name, without its memory address.
                    names.append(
                        getattr(node.target, "__name__", name) if name.startswith(("<built-in", "<function")) else name
                    )
                    # A mutating op appears as an argument of the HOP that functionalizes it (auto_functionalized).
                    names.extend(str(a) for a in node.args[:1] if isinstance(a, torch._ops.OpOverload))
    return names


def missing_node(cell: "Cell", graphs, also: tuple[str, ...] = ()) -> Outcome | None:
    """Whether the traced graphs hold the kernel: the style's node, or, for an op as shipped, what it launched in
    eager (compat.child.launches)."""
    targets = graph_targets(graphs)
    marker = STYLES[cell.style].graph_marker
    if marker is None:
        return _unlaunched(cell, graphs, targets)
    markers = (marker(cast("Kernel", KERNELS[cell.kernel])), *also)  # a style's marker: never an op as shipped
    if any(m in t for t in targets for m in markers):
        return None
    return Outcome(
        "failed",
        "MissingKernelNode",
        f"no graph node matches {' or '.join(map(repr, markers))}; the kernel was not traced",
        detail={"graph": sorted(set(targets))},
    )


def _unlaunched(cell: "Cell", graphs, targets: list[str]) -> Outcome | None:
    launched = eager_launches(dataclasses.replace(cell, stage="eager"))
    if launched is None:  # the op fails in eager: nothing to hold the graph to (the eager cell says why)
        return None
    absent = launches.missing(launched, targets, launches.graph_kernels(graphs))
    if not absent:
        return None
    return Outcome(
        "failed",
        "MissingKernelNode",
        f"the graph does not hold {', '.join(absent)}, which the op launched in eager; it was not traced",
        detail={"graph": sorted(set(targets)), "launched": launched.describe()},
    )


WAIT_WORTH_NAMING_S = 0.1  # a detection that is done answers in milliseconds


def before_stage(c: "Cell", journal: "Journal") -> None:
    """What every stage of a shared child needs first: Autotuners that remember nothing, and where Inductor will compile
    C++, the run's detected CPU ISAs (without them it detects again: about 60 s per process on the H100, measured).
    A child that waited for the detection says how long (54 s each C++ lane of Liger's gate on one H100, which the
    profile could only show as time outside every phase)."""
    fresh_autotuners()
    if STAGES[c.stage].compiles_cpp(c.device):
        start = time.monotonic()
        toolchain.apply()
        if (waited := time.monotonic() - start) >= WAIT_WORTH_NAMING_S:
            journal.waited("the ISA detection", waited)


def _innermost(fn):
    """The Python function under any autotune, heuristics or jit wrapper."""
    while hasattr(fn, "fn"):
        fn = fn.fn
    return fn


# Every Autotuner alive in this process, in the order this module first saw it: those made before it loaded by one
# walk of the heap at the first ask, the later ones by their constructor. A walk per ask (every stage, every pinned
# config) cost a CPU run's children more than their compiles of Triton's interpreted kernels.
_AUTOTUNERS: weakref.WeakValueDictionary[int, Autotuner] = weakref.WeakValueDictionary()
_walked_heap = False
# The warm server's untracked Autotuners, found before it froze its heap (gc.freeze hides frozen objects from a
# child's walk); a child numbers them at its own first ask, as it numbered them when its walk found them.
_frozen: list[weakref.ref] = []
_made = itertools.count()


def _track(init: Callable) -> Callable:
    @functools.wraps(init)
    def tracked(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _AUTOTUNERS[next(_made)] = self

    return tracked


Autotuner.__init__ = _track(Autotuner.__init__)  # a subclass's init calls it too


def live_autotuners() -> list:
    global _walked_heap
    if not _walked_heap:
        for obj in _untracked([*gc.get_objects(), *filter(None, (ref() for ref in _frozen))]):
            _AUTOTUNERS[next(_made)] = obj
        _walked_heap = True
    return list(_AUTOTUNERS.values())


def before_freeze() -> None:
    """In the warm server, before it freezes its heap: its Autotuners that no constructor call recorded, for the
    children's first walk."""
    _frozen[:] = [weakref.ref(obj) for obj in _untracked(gc.get_objects())]


def _untracked(objects: list) -> list:
    known = {id(t) for t in _AUTOTUNERS.values()}
    # issubclass, not isinstance: isinstance raises on a weak proxy whose object is gone
    return [obj for obj in objects if issubclass(type(obj), Autotuner) and id(obj) not in known]


def autotuners_of(jit) -> list:
    """The Autotuners alive in this process that tune `jit` (under any wrapper): the style's own, never another
    library's that its import decorated (Liger-Kernel decorates dozens at import), nor torch's traced copies."""
    target = _innermost(jit)
    tuners = [obj for obj in live_autotuners() if _innermost(obj) is target]
    return [t for t in tuners if not _traced_copy(t, tuners)]


def _traced_copy(tuner, tuners: list) -> bool:
    """Whether torch made `tuner` while tracing an autotuner over heuristics: it folds the heuristics into a copy of
    that autotuner's configs at the moment, `autotune(configs=..., key=[])` on the bare kernel, kept in its kernel
    side table (torch._higher_order_ops.triton_kernel_wrap). Each compile traces again and copies the pin of the
    original, so a copy needs no pin; pinned anyway, every earlier trace's copy added a check per config to each
    later stage, and an H200 probe child of 11 stages ran past 400 s in its fourth."""
    return (
        not isinstance(tuner.fn, Heuristics)
        and tuner in kernel_side_table.kernel_to_id
        and any(isinstance(t.fn, Heuristics) for t in tuners)
    )


def on_every_config(check, c: "Cell", jit=None) -> Outcome:
    """An autotuned op's outcome must not depend on which config wins the benchmark, a timing race whose winner
    differs between GPU models. The check runs as a user's first call does (the autotuner benchmarks and picks),
    then again with each config of the kernel's autotuners pinned (the only one it has: nothing to benchmark); the
    cell's outcome is the first that is not a pass, naming its config, and detail["configs"] holds every config's.
    `jit`: the kernel whose autotuners count (default: the cell's Kernel's; an op as shipped declares none: its
    autotuners are those its eager call goes through, `eager_launches`)."""
    result = check(c)
    if result.kind != "passed":  # a cell that fails as a user's call does is already its worst
        return result
    if jit is None and c is not None:
        jit = getattr(KERNELS[c.kernel], "jit", None)
    tuners = [t for t in (autotuners_of(jit) if jit is not None else own_autotuners(c)) if len(t.configs) > 1]
    if not tuners:
        return result
    seen = {}
    for tuner in tuners:
        configs = list(tuner.configs)
        for pick in configs:
            fresh_autotuners()
            tuner.configs = [pick]
            try:
                with _uncached_autograd():
                    pinned = check(c)
            except DeclarationError:
                raise
            except Exception as exc:  # noqa: BLE001 - the pinned config's failure is the observation
                pinned = outcomes.from_exception(exc)
            finally:
                tuner.configs = configs
            seen[str(pick)] = pinned.kind
            if pinned.kind != "passed" and result.kind == "passed":
                pinned.message = f"with the autotuner pinned to {pick}: {pinned.message or ''}"
                pinned.detail["pinned_config"] = str(pick)
                result = pinned
    result.detail["configs"] = seen
    return result


def _uncached_autograd():
    """A pinned config compiles anew: AOTAutograd's cache keys a traced triton_op by its kernels' source alone, not
    their autotune configs (torch 2.13's `get_triton_source_codes_from_gm`), so a pinned compile would
    reuse the first compile, tuned over every config. Inductor's FX graph cache keys the configs: it stays."""
    return torch._functorch.config.patch(enable_autograd_cache=False)


def own_autotuners(c: "Cell | None") -> list:
    """The autotuners an op as shipped went through when run eagerly at its example (none where eager fails): a
    config that gives wrong values is found whichever config the benchmark picks on this GPU."""
    if c is None:
        return []
    launched = eager_launches(dataclasses.replace(c, stage="eager"))
    return list(launched.autotuners) if launched is not None else []


def fresh_autotuners() -> None:
    """Forget what every Autotuner in this process has chosen, so a stage's first call tunes as a user's first call
    does, whatever stage ran before it here: benchmarking an in-place kernel writes into its output, and an outcome
    must not depend on which cells share a process (11 cells of a 600-cell H100 sample passed only where another
    stage had tuned first)."""
    for tuner in live_autotuners():
        tuner.cache.clear()


@functools.cache
def eager_launches(cell: "Cell") -> "launches.Launched | None":
    """What the op launched when run eagerly at its example (once per process and cell of the eager stage), or
    None where eager fails."""
    model, _ = models(cell)
    try:
        return launches.record(model, *inputs(cell, workload.example(KERNELS[cell.kernel])))
    except DeclarationError:
        raise
    except Exception:  # noqa: BLE001 - the op's own failure is the eager cell's outcome, not the proof's
        return None


def eager(c: "Cell") -> Outcome:
    model, reference = models(c)
    result = check_batches(model, reference, c)
    counts = next((n["outputs"] for n in result.numerics or [] if "outputs" in n), None)
    if counts and _as_shipped(c):
        raise DeclarationError(
            f"{KERNELS[c.kernel].module}: op {c.kernel!r} returned {counts[0]} outputs where its "
            f"reference returns {counts[1]}; the declaration names "
            f"{len(KERNELS[c.kernel].outputs)} (outputs=...)"
        )
    if _as_shipped(c) and result.kind == "passed":
        launched = eager_launches(c)
        result.detail["launched"] = launched.describe() if launched else None
    return result


def _as_shipped(c: "Cell") -> bool:
    return STYLES[c.style].graph_marker is None


def flop_count(c: "Cell") -> Outcome:
    """Under FlopCounterMode the op must still compute, and its FLOPs must be counted (exactly the registered
    formula's, for a style that registers one). The kernel's FLOPs are the model's less its embedding's: the
    sandwich's Linears (its reference model's count), nothing for the op alone."""
    kernel = KERNELS[c.kernel]
    model, reference = models(c)
    point = check_points(c)[1]

    # Inputs no earlier stage used (the check point's, scaled by -0.75): a launch that FlopCounterMode skips leaves
    # its output as the allocator hands it back, and a block that held an earlier stage's answer must not pass.
    def counted(m):
        args = tuple(t.mul(-0.75) if t.is_floating_point() else t for t in inputs(c, point))  # fresh: ops mutate
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            out = m(*args)
        return out, counter.get_total_flops()

    got, model_flops = counted(model)
    want, reference_flops = counted(reference)
    embedding = reference_flops if kernel.embedding == "sandwich" else 0
    kernel_flops = model_flops - embedding
    with torch.no_grad():
        want64 = workload.in_float64(
            reference, tuple(t.mul(-0.75) if t.is_floating_point() else t for t in inputs(c, point))
        )
    result = outcomes.from_comparisons(
        compare_outputs(got, want, workload.label(point), output_names(c), c.dtype, want64, declared_tolerance(c)),
        {"kernel_flops": kernel_flops, "embedding_flops": embedding},
    )
    if result.kind != "passed":
        return result
    if STYLES[c.style].flop_formula:
        formula = workload.declared(kernel, cast(Callable, kernel.flops), "FLOP formula")  # the style needs one
        want_flops = sum(formula(*_formula_args(c, point, v)) for v in kernel.variants())
        if kernel_flops != want_flops:
            return Outcome(
                "failed",
                "FlopCountWrong",
                f"the kernel added {kernel_flops} FLOPs; the declared formula says {want_flops}",
                detail=result.detail,
            )
    elif kernel_flops <= 0:
        return Outcome(
            "failed",
            "FlopsNotCounted",
            f"the kernel added {kernel_flops} FLOPs to the count (the embedding alone: {embedding})",
            detail=result.detail,
        )
    return result


def _op_args(c: "Cell", point, variant=None) -> list:
    """The op's own arguments at a check point, for a variant of its choices: for the sandwich, its hidden
    activation."""
    kernel = KERNELS[c.kernel]
    if kernel.embedding == "sandwich":
        return workload.arguments(kernel, (inputs(c, point)[0][:, : workload.HIDDEN].contiguous(),), variant)
    return workload.arguments(kernel, inputs(c, point), variant)


def _formula_args(c: "Cell", point, variant=None) -> list:
    """A FLOP formula's arguments: tensors as their shapes, as FlopCounterMode hands them."""
    return [tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in _op_args(c, point, variant)]


def opcheck(c: "Cell") -> Outcome:
    """torch.library.opcheck on the style's op (an op as shipped: the op itself), with each variant's arguments."""
    kernel, style = KERNELS[c.kernel], STYLES[c.style]
    build_op(c.style, c.kernel)
    op = (
        cast("Op", kernel).library_op
        if _as_shipped(c)
        else getattr(getattr(torch.ops, OP_NAMESPACE), op_name(cast("Kernel", kernel), c.style)).default
    )
    # A style with a backward gets inputs that require grad, so opcheck tests its autograd registration too.
    gradients = "backward" in style.needs or _as_shipped(c) and "differentiable" in kernel.features()
    detail = {}
    for variant in kernel.variants():
        args = _op_args(c, check_points(c)[1], variant)
        for spec, a in zip(kernel.inputs, args, strict=False):
            if getattr(spec, "differentiable", False) and isinstance(a, torch.Tensor) and a.is_floating_point():
                a.requires_grad_(gradients and spec.name not in kernel.mutates)
        label = kernel.variant_label(variant) or "defaults"
        positional, keywords = kernel.by_keyword(args)
        checked = torch.library.opcheck(cast(torch._ops.OpOverload, op), tuple(positional), keywords)
        detail[label] = {k: str(v) for k, v in checked.items()}
    return Outcome("passed", detail={"opcheck": detail if len(detail) > 1 else next(iter(detail.values()))})


def _compiled(model, backend: str, mode: str | None = None, options: dict | None = None, dynamic: bool | None = None):
    """`torch.compile(fullgraph=True)` through a counting backend; for inductor, the backend `torch.compile` itself
    makes of a mode and options (so `mode="max-autotune"` means what it means to a user)."""
    torch._dynamo.reset()
    counter = CompileCounterWithBackend(
        torch._TorchCompileInductorWrapper(mode, options, dynamic)  # type: ignore[arg-type]  # any backend works
        if backend == "inductor"
        else backend
    )
    return torch.compile(model, backend=counter, fullgraph=True, dynamic=dynamic), counter


def proof(c: "Cell", counter, result: Outcome) -> Outcome:
    """Proof that it compiled rather than ran eager: the backend saw frames, and their graphs hold the kernel."""
    targets = graph_targets(counter.graphs)
    result.detail.update(frames=counter.frame_count, graph=sorted(set(targets)))
    if counter.frame_count == 0:
        return Outcome("failed", "NotCompiled", "torch.compile handed no frame to the backend", detail=result.detail)
    return missing_node(c, counter.graphs) or result


def compiled_for(stage: str, model):
    """The model compiled as the stage compiles it (Stage.compiler)."""
    return _compiled(model, **(STAGES[stage].compiler or {}))  # a compile stage's: never None


def compile_model(c: "Cell") -> Outcome:
    model, reference = models(c)
    compiled, counter = compiled_for(c.stage, model)
    return proof(c, counter, check_batches(compiled, reference, c))


def compile_cudagraphs(c: "Cell") -> Outcome:
    """CUDA graphs (cudagraph trees): each batch runs three times, warm-up, record, replay, each output compared before
    the next run overwrites it. `triton.cudagraph_or_error` turns a skipped graph into an error naming why; the
    counts of captures and replays prove the graph ran."""
    model, reference = models(c)
    compiled, counter = compiled_for(c.stage, model)
    counts = {"captures": 0, "replays": 0}
    graph_class = torch.cuda.CUDAGraph
    capture_begin, replay = graph_class.capture_begin, graph_class.replay

    def counted(name, method):
        def call(self, *args, **kwargs):
            counts[name] += 1
            return method(self, *args, **kwargs)

        return call

    graph_class.capture_begin = counted("captures", capture_begin)  # type: ignore[method-assign]
    graph_class.replay = counted("replays", replay)  # type: ignore[method-assign]
    comparisons, first = [], latency.FirstCall()
    try:
        with config.patch({"triton.cudagraph_or_error": True}), torch.no_grad():
            for point in check_points(c):
                for run in ("warm-up", "record", "replay"):  # compared at once: the next run may overwrite it
                    comparisons += compare_call(
                        first(compiled, *inputs(c, point)),
                        reference,
                        inputs(c, point),
                        f"{workload.label(point)}, {run}",
                        c,
                    )
            result = proof(c, counter, outcomes.from_comparisons(comparisons, {"cuda_graphs": counts}))
            if result.kind == "passed" and latency.wanted(c):  # replays: what reduce-overhead is for
                result.detail["latency"] = latency.measure(
                    compiled, first, check_points(c), lambda p: inputs(c, p), workload.label
                )
    finally:
        graph_class.capture_begin, graph_class.replay = capture_begin, replay  # type: ignore[method-assign]
    if result.kind == "passed" and not (counts["captures"] and counts["replays"]):
        missing = "recorded" if not counts["captures"] else "replayed"
        return Outcome(
            "failed",
            "NoCudaGraph",
            f"no CUDA graph was {missing} ({counts['captures']} captures, {counts['replays']} replays)",
            detail=result.detail,
        )
    return result


def export_static(c: "Cell") -> Outcome:
    """Export with no dynamic dimension, run at the example's shapes (the only ones a static program takes)."""
    kernel = KERNELS[c.kernel]
    model, reference = models(c)
    ep = torch.export.export(
        model, workload.example_inputs(kernel, c.dtype, c.device), strict=c.stage.endswith("_strict")
    )
    targets = graph_targets([ep.graph_module])
    return missing_node(c, [ep.graph_module]) or check_batches(
        ep.module(),
        reference,
        c,
        points=[workload.example(kernel)],
        detail={"graph": sorted(set(targets))},
        inference_mode=True,
    )


def compile_dynamic(c: "Cell") -> Outcome:
    """`dynamic=True`: one graph with symbolic sizes serves a second size without recompiling."""
    model, reference = models(c)
    compiled, counter = compiled_for(c.stage, model)
    first, second = check_points(c)[1:3]
    first_call = latency.FirstCall()
    with torch.no_grad():
        first_call(compiled, *inputs(c, first))
    frames_after_first = counter.frame_count
    result = proof(c, counter, check_batches(compiled, reference, c, points=(first, second), first=first_call))
    return stayed_dynamic([counter], frames_after_first, result, workload.label(second))


def stayed_dynamic(counters: list, frames_after_first: int, result: Outcome, second: str) -> Outcome:
    """A passing dynamic compile must have traced symbolic sizes, and the second size must not have recompiled."""
    symbolic = [
        str(v.shape)
        for counter in counters
        for g in counter.graphs
        for n in g.graph.nodes
        if n.op == "placeholder"
        for v in [n.meta.get("example_value")]
        if isinstance(v, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in v.shape)
    ]
    frames = sum(counter.frame_count for counter in counters)
    result.detail.update(frames_after_first=frames_after_first, symbolic_inputs=symbolic)
    if result.kind != "passed":
        return result
    if not symbolic:
        return Outcome(
            "failed", "NotDynamic", "no graph input has a symbolic size: dynamic=True specialised", detail=result.detail
        )
    if frames != frames_after_first:
        failed = [r for reasons in torch._dynamo.utils.guard_failures.values() for r in reasons]
        why = f"; the last recompile's failed guard came from {guard_origin(failed[-1])}" if failed else ""
        return Outcome(
            "failed",
            "Recompiled",
            f"{second} recompiled: {frames} frames after {frames_after_first}{why}",
            detail=result.detail,
        )
    return result


def guard_origin(reason: str) -> str:
    """Where a failed guard was made, as Dynamo's reason names it (`file.py:line in function`: the user's code, then
    the framework's), else the reason: the cause a catalogue entry can match, without the guard's expression
    (thousands of characters for a chunk size computed from a symbolic size)."""
    first = reason.split("\n", 1)[0]
    places = list(dict.fromkeys(re.findall(r"[\w./-]+\.py:\d+ in [\w<>]+", first)))
    return ", ".join(places[:3]) if places else first[:200]


# ---- gradients ----------------------------------------------------------------------------------------------------


def gradient_inputs(kernel, embedded: bool = True) -> tuple[list[str], set[str]]:
    """The model's input names, and those whose gradient is checked: what the op reads (an input it writes into is
    its output buffer). `embedded=False`: the op alone, as the fuzz tests run it, even where it has a sandwich."""
    if kernel.embedding == "sandwich" and embedded:
        return ["x"], {"x"}
    return (
        [t.name for t in kernel.tensors],
        {t.name for t in kernel.tensors if t.differentiable and t.name not in kernel.mutates},
    )


def cotangent(index: int, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The same cotangent for an output wherever it is computed: drawn from a seed, rounded to the cell's dtype."""
    gen = torch.Generator().manual_seed(workload.SEED + index)
    return torch.randn(like.shape, generator=gen).to(dtype).to(like)


def backward_through(fn, kernel, args, params: dict, dtype: torch.dtype, embedded: bool = True) -> dict:
    """Forward and backward through `fn` on `args` (leaves of their own, in their layout); every wanted input's and
    every parameter's gradient (None where none reached it)."""
    names, wanted = gradient_inputs(kernel, embedded)
    leaves = {
        n: a.detach().requires_grad_(n in wanted and a.is_floating_point()) for n, a in zip(names, args, strict=False)
    }
    outs = [
        (i, o)
        for i, o in enumerate(kernel_outputs(fn(*leaves.values())))
        if isinstance(o, torch.Tensor) and o.requires_grad
    ]
    if outs:  # no output that requires grad: nothing can reach the inputs
        torch.autograd.backward([o for _, o in outs], [cotangent(i, o, dtype) for i, o in outs])
    # The leaves that can have a gradient: a wanted floating input (an integer one, targets, has none to miss).
    return {**{n: a.grad for n, a in leaves.items() if a.requires_grad}, **{n: p.grad for n, p in params.items()}}


def reference_gradients64(
    kernel, reference: torch.nn.Module, args, dtype: torch.dtype, embedded: bool = True
) -> dict | None:
    """The reference's gradients in float64 (its parameters and inputs upcast), or None where it cannot run there."""
    params = {n: p.detach().double().requires_grad_() for n, p in reference.named_parameters()}
    buffers = {n: b.detach().double() if b.is_floating_point() else b for n, b in reference.named_buffers()}
    upcast = tuple(a.detach().to(torch.float64, copy=True) if a.is_floating_point() else a for a in args)
    try:
        with workload.KeepFloat64():
            return backward_through(
                lambda *a: torch.func.functional_call(reference, {**params, **buffers}, a),
                kernel,
                upcast,
                params,
                dtype,
                embedded,
            )
    except DeclarationError:  # the reference refuses float64: eager's gradients are the truth
        return None


def train(c: "Cell", compiler: dict | None, points: list) -> Outcome:
    """Forward and backward of the op's model (eagerly, or compiled with `compiler`, `_compiled`'s arguments) at
    `points`: every differentiable input's and parameter's gradient against the reference's, in float64 too. Each
    variant of the declaration's choices runs as a model of its own, and every run (the op, the reference, the
    float64 reference) gets inputs of its own: a backward may write into what it saved."""
    kernel, dtype = KERNELS[c.kernel], getattr(torch, c.dtype)
    comparisons, counters, frames_after_first = [], [], 0
    several = len(kernel.variants()) > 1
    for variant in kernel.variants():
        model, reference = workload.pair(kernel, build_op(c.style, c.kernel), c.dtype, c.device, variant=variant)
        fn = model.train()
        if compiler is not None:
            fn, counter = _compiled(fn, **compiler)
            counters.append(counter)
        reference.train()
        for i, point in enumerate(points):
            model.zero_grad(set_to_none=True)
            got = backward_through(fn, kernel, inputs(c, point), dict(model.named_parameters()), dtype)
            if i == 0:
                frames_after_first += sum(counter.frame_count for counter in counters[-1:])
            missing = [name for name, g in got.items() if g is None]
            if missing:
                return Outcome(
                    "failed",
                    "MissingGradient",
                    f"no gradient reached {', '.join(missing)}: the wrapped kernel is not differentiable in this style",
                    detail={"frames": sum(counter.frame_count for counter in counters)},
                )
            reference.zero_grad(set_to_none=True)
            want = backward_through(reference, kernel, inputs(c, point), dict(reference.named_parameters()), dtype)
            want64 = reference_gradients64(kernel, reference, inputs(c, point), dtype) or {}
            label = ", ".join(filter(None, (workload.label(point), several and kernel.variant_label(variant) or "")))
            comparisons += [
                numerics.compare(
                    got[name], want[name], f"{label}: grad of {name}", c.dtype, want64.get(name), declared_tolerance(c)
                )
                for name in want
            ]
    result = outcomes.from_comparisons(comparisons)
    for counter in counters:  # proof that each variant's model compiled
        result = proof(c, counter, result)
        if result.kind != "passed":
            break
    if compiler is None or not compiler.get("dynamic"):
        return result
    return stayed_dynamic(counters, frames_after_first, result, workload.label(points[-1]))


def eager_backward(c: "Cell") -> Outcome:
    """The op's own gradients, run eagerly: what a user's training step computes before any compiler touches it."""
    return train(c, None, check_points(c)[1:2])


def compile_backward(c: "Cell") -> Outcome:
    """Gradients of the differentiable inputs and of every parameter through the compiled model, against eager
    PyTorch's."""
    return train(c, STAGES[c.stage].compiler, check_points(c)[1:2])


def compile_dynamic_backward(c: "Cell") -> Outcome:
    """Training under `dynamic=True`: gradients at two sizes through one graph with symbolic sizes."""
    return train(c, STAGES[c.stage].compiler, check_points(c)[1:3])


def kernel_outputs(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def produced(value) -> tuple:
    """An artifact's outputs, each tensor's size and values read as a user's code reads them (its non-finite
    values counted): an output that holds no values, a fake tensor of tracing or a size that is a traced symbol
    (tracing leaked into the artifact: the static strict export of a subclass built in forward returned one on the
    H100), raises here, as the cell's outcome, since it raises for its users too; inside the comparison, whose own
    errors are the harness's, it ended the whole probe child."""
    outputs = kernel_outputs(value)
    for out in outputs:
        if isinstance(out, torch.Tensor):
            tuple(int(size) for size in out.shape)
            int((~torch.isfinite(out)).sum())
    return outputs


# The probe stages' checks by the name a stage declares (compat.matrix.stages: Stage.check).
CHECKS = {
    check.__name__: check
    for check in (
        eager,
        eager_backward,
        flop_count,
        opcheck,
        compile_model,
        compile_dynamic,
        compile_backward,
        compile_dynamic_backward,
        compile_cudagraphs,
        export_static,
    )
}
