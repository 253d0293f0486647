"""Stage axis: what a wrapped kernel is pushed through.

Each stage's `run(cell, session)` runs in the test process and returns the cell's Outcome; the work happens in child
processes (`child_*` below, run by `compat.isolation`), so a crash is the cell's outcome. Probe stages (a `check`
function) share one child per (kernel, style, dtype, device); the export-based stages share one build per export
mode, which exports, saves, decomposes and packages once (`compat.session`). Adding a stage means adding one
`Stage(...)` to `STAGES` with its check, or a phase of `child_build` it owns.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from . import model as workload
from . import numerics, outcomes
from .cells import Cell, parse_cell_id
from .environment import crash_remedy
from .outcomes import Outcome

if TYPE_CHECKING:
    from .isolation import Journal
    from .session import RunSession


@dataclass(frozen=True)
class Stage:
    name: str
    doc: str
    run: Callable[[Cell, "RunSession"], Outcome]
    # The budget of the stage's own child process: a hang past it is the cell's `timed_out`. None: the stage has no
    # child of its own; it reads the shared build, bounded by compat.session.BUILD_TIMEOUT.
    timeout_s: float | None
    export_mode: str | None = None  # "strict" / "nonstrict": the exported program this stage uses
    packaged: bool = False  # needs the AOTI package of that exported program
    custom_op_only: bool = False  # applies only to styles that register a torch.library op
    # Work that runs in a child: probe stages share one child per (kernel, style, dtype, device), see _probed.
    check: Callable[[Cell], Outcome] | None = None

    @property
    def probe(self) -> bool:
        return self.check is not None


# ---- child side: runs in a fresh interpreter with the device's environment --------------------------------------

def _cell(cell: str) -> Cell:
    return parse_cell_id(cell, "child task")


def _models(cell: Cell):
    """The model around the style's op, and the same model around the kernel's eager reference."""
    from .kernels import KERNELS
    from .styles import build_op

    kernel = KERNELS[cell.kernel]
    op = build_op(cell.style, cell.kernel)
    return (workload.build(lambda h: kernel.use(op, h), cell.dtype, cell.device),
            workload.build(lambda h: kernel.use(kernel.reference, h), cell.dtype, cell.device))


def _check_batches(fn, reference, cell: Cell, batches=workload.CHECK_BATCHES, detail: dict | None = None) -> Outcome:
    import torch

    comparisons = []
    with torch.no_grad():
        for batch in batches:
            x = workload.make_input(batch, cell.dtype, cell.device)
            comparisons.append(numerics.compare(fn(x), reference(x), f"batch {batch}"))
    return outcomes.from_comparisons(comparisons, detail)


def _graph_targets(graph_modules) -> list[str]:
    """Call targets of FX graph modules and their nested subgraphs (autograd.Function, control flow), by name
    (builtins without their memory address, so results diff cleanly)."""
    import torch
    import torch.fx

    names = []
    for gm in graph_modules:
        for module in gm.modules():
            if not isinstance(module, torch.fx.GraphModule):
                continue
            for node in module.graph.nodes:
                if node.op == "call_function":
                    name = str(node.target)
                    names.append(getattr(node.target, "__name__", name) if name.startswith("<built-in") else name)
                    # A mutating op appears as an argument of the HOP that functionalizes it (auto_functionalized).
                    names.extend(str(a) for a in node.args[:1] if isinstance(a, torch._ops.OpOverload))
    return names


def _missing_node(cell: Cell, targets: list[str], also: tuple[str, ...] = ()) -> Outcome | None:
    from .kernels import KERNELS
    from .styles import STYLES

    markers = (STYLES[cell.style].graph_marker(KERNELS[cell.kernel]), *also)
    if any(m in t for t in targets for m in markers):
        return None
    return Outcome("failed", "MissingKernelNode", f"no graph node matches {' or '.join(map(repr, markers))}; "
                                                   f"the kernel was not traced", detail={"graph": sorted(set(targets))})


def _eager(c: Cell) -> Outcome:
    model, reference = _models(c)
    return _check_batches(model, reference, c)


def _flop_count(c: Cell) -> Outcome:
    """Under FlopCounterMode the op must still compute, and its FLOPs must be counted (exactly the registered
    formula's, for a style that registers one)."""
    from torch.utils.flop_counter import FlopCounterMode

    from .kernels import KERNELS
    from .styles import STYLES

    model, reference = _models(c)
    batch = workload.CHECK_BATCHES[1]
    flops = {}
    for name, m in (("model", model), ("reference", reference)):
        with FlopCounterMode(display=False) as counter:
            result = _check_batches(m, reference, c, batches=(batch,))
        flops[name] = counter.get_total_flops()
    kernel_flops = flops["model"] - flops["reference"]  # the reference's Linears are the only other FLOPs
    result.detail.update(kernel_flops=kernel_flops, linear_flops=flops["reference"])
    if result.kind != "passed":
        return result
    if STYLES[c.style].flop_formula:
        want = KERNELS[c.kernel].flops_per_element * batch * workload.HIDDEN
        if kernel_flops != want:
            return Outcome("failed", "FlopCountWrong", f"the kernel added {kernel_flops} FLOPs; its registered "
                                                       f"formula says {want}", detail=result.detail)
    elif kernel_flops <= 0:
        return Outcome("failed", "FlopsNotCounted", f"the kernel added {kernel_flops} FLOPs to the count (the "
                                                    f"Linears alone: {flops['reference']})", detail=result.detail)
    return result


def _opcheck(c: Cell) -> Outcome:
    import torch

    from .kernels import KERNELS
    from .styles import STYLES, build_op, op_name

    kernel, style = KERNELS[c.kernel], STYLES[c.style]
    build_op(c.style, c.kernel)
    op = getattr(getattr(torch.ops, "compat"), op_name(kernel, c.style)).default
    x = workload.make_input(workload.CHECK_BATCHES[1], c.dtype, c.device)[:, :workload.HIDDEN].contiguous()
    # A style with a backward gets an input that requires grad, so opcheck tests its autograd registration too.
    x.requires_grad_("backward" in style.needs)
    args = (x, torch.empty_like(x)) if kernel.mutates else (x,)
    return Outcome("passed", detail={"opcheck": {k: str(v) for k, v in torch.library.opcheck(op, args).items()}})


def _compiled(model, backend: str, **kwargs):
    import torch
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend(backend)
    return torch.compile(model, backend=counter, fullgraph=True, **kwargs), counter


def _proof(c: Cell, counter, result: Outcome) -> Outcome:
    """Proof that it compiled rather than ran eager: the backend saw frames, and their graphs hold the kernel."""
    targets = _graph_targets(counter.graphs)
    result.detail.update(frames=counter.frame_count, graph=sorted(set(targets)))
    if counter.frame_count == 0:
        return Outcome("failed", "NotCompiled", "torch.compile handed no frame to the backend", detail=result.detail)
    return _missing_node(c, targets) or result


# How each compile stage calls torch.compile: (backend, options). The fuzz tests compile the op the same way.
COMPILERS = {"compile_eager": ("eager", {}), "compile_aot_eager": ("aot_eager", {}),
             "compile_inductor": ("inductor", {}), "compile_dynamic": ("inductor", {"dynamic": True})}


def compiled_for(stage: str, model):
    backend, options = COMPILERS[stage]
    return _compiled(model, backend, **options)


def _compile(c: Cell) -> Outcome:
    model, reference = _models(c)
    compiled, counter = compiled_for(c.stage, model)
    return _proof(c, counter, _check_batches(compiled, reference, c))


def _compile_dynamic(c: Cell) -> Outcome:
    """`dynamic=True`: one graph with a symbolic batch serves a second batch size without recompiling."""
    import torch

    model, reference = _models(c)
    compiled, counter = compiled_for(c.stage, model)
    first, second = workload.CHECK_BATCHES[1:]
    with torch.no_grad():
        compiled(workload.make_input(first, c.dtype, c.device))
    frames_after_first = counter.frame_count
    symbolic = [str(v.shape) for g in counter.graphs for n in g.graph.nodes if n.op == "placeholder"
                for v in [n.meta.get("example_value")]
                if isinstance(v, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in v.shape)]
    result = _proof(c, counter, _check_batches(compiled, reference, c, batches=(first, second)))
    result.detail.update(frames_after_first=frames_after_first, symbolic_inputs=symbolic)
    if result.kind != "passed":
        return result
    if not symbolic:
        return Outcome("failed", "NotDynamic", "no graph input has a symbolic size: dynamic=True specialised",
                       detail=result.detail)
    if counter.frame_count != frames_after_first:
        return Outcome("failed", "Recompiled", f"batch {second} recompiled: {counter.frame_count} frames after "
                                               f"{frames_after_first}", detail=result.detail)
    return result


def _compile_backward(c: Cell) -> Outcome:
    """Gradients of the input and of every parameter through the compiled model, against eager PyTorch's."""
    import torch

    model, reference = _models(c)
    batch = workload.CHECK_BATCHES[1]

    def grads(m, fn) -> dict:
        m.zero_grad(set_to_none=True)
        x = workload.make_input(batch, c.dtype, c.device).requires_grad_(True)
        out = fn(x)
        cotangent = torch.randn(out.shape, generator=torch.Generator().manual_seed(workload.SEED)).to(out)
        out.backward(cotangent)
        return {"x": x.grad, **{name: p.grad for name, p in m.named_parameters()}}

    compiled, counter = _compiled(model.train(), "inductor")
    got, want = grads(model, compiled), grads(reference.train(), reference)
    missing = [name for name, g in got.items() if g is None]
    if missing:
        return Outcome("failed", "MissingGradient", f"no gradient reached {', '.join(missing)}: the wrapped "
                                                    f"kernel is not differentiable in this style",
                       detail={"frames": counter.frame_count})
    comparisons = [numerics.compare(got[name], want[name], f"grad of {name}") for name in want]
    return _proof(c, counter, outcomes.from_comparisons(comparisons))


def child_probe(journal: "Journal", cell: str, stages: list[str]) -> None:
    """The probe stages of one (kernel, style, dtype, device), one phase each, in one process."""
    import dataclasses

    c = _cell(cell)
    for stage in stages:
        journal.run(stage, functools.partial(STAGES[stage].check, dataclasses.replace(c, stage=stage)))


def child_stage(journal: "Journal", cell: str) -> None:
    """One probe stage alone: when the shared probe child died before finishing it."""
    c = _cell(cell)
    journal.run(c.stage, functools.partial(STAGES[c.stage].check, c))


def child_build(journal: "Journal", cell: str, mode: str, program_path: str, package_path: str | None) -> None:
    """Export once, then everything made from that exported program: its module run, a save + load round trip,
    decompositions and, if asked, the AOTI package. Each is a phase; the stages read the phases they own."""
    import torch

    from .styles import RAW_MARKER

    c = _cell(cell)
    holder = {}

    def export() -> Outcome:
        model, holder["reference"] = _models(c)  # in the phase: building a style's op may itself raise
        example = workload.make_input(workload.EXAMPLE_BATCH, c.dtype, c.device)
        # strict= always explicit: its default changed in torch 2.8.
        ep = torch.export.export(model, (example,), dynamic_shapes=workload.dynamic_shapes(), strict=mode == "strict")
        holder["ep"] = ep
        targets = _graph_targets([ep.graph_module])
        return _missing_node(c, targets) or Outcome("passed", detail={"graph": targets})

    if journal.run("export", export).kind != "passed":
        return
    ep, reference = holder["ep"], holder["reference"]
    journal.run("module_run", lambda: _check_batches(ep.module(), reference, c))

    def save_load() -> Outcome:
        torch.export.save(ep, program_path)
        return _check_batches(torch.export.load(program_path).module(), reference, c)

    journal.run("save_load", save_load)

    def decompose(**kwargs) -> Outcome:
        decomposed = ep.run_decompositions(**kwargs)
        targets = _graph_targets([decomposed.graph_module])
        # Decomposing a triton_op may replace its node by the kernel's own wrapper node: either proves the kernel.
        return _missing_node(c, targets, also=(RAW_MARKER,)) or _check_batches(decomposed.module(), reference, c,
                                                                               detail={"graph": sorted(set(targets))})

    journal.run("decompose", decompose)
    journal.run("decompose_triton_ops", lambda: decompose(decompose_custom_triton_ops=True))
    if package_path:
        def package() -> Outcome:
            start = time.monotonic()
            torch._inductor.aoti_compile_and_package(ep, package_path=package_path)
            return Outcome("passed", detail={"compile_seconds": round(time.monotonic() - start, 1)})

        journal.run("aoti_compile", package)


def child_load_program(journal: "Journal", cell: str, program_path: str) -> None:
    """`torch.export.load` in a fresh process that, as a user's would, first imports the library defining the op."""
    import torch

    c = _cell(cell)
    holder = {}

    def load() -> Outcome:
        _, holder["reference"] = _models(c)  # registers the style's op, as importing the user's library would
        holder["ep"] = torch.export.load(program_path)
        return Outcome("passed")

    if journal.run("load_fresh", load).kind == "passed":
        journal.run("run_fresh", lambda: _check_batches(holder["ep"].module(), holder["reference"], c))


def child_aoti_run(journal: "Journal", cell: str, package_path: str) -> None:
    import torch

    c = _cell(cell)
    holder = {}

    def load() -> Outcome:
        _, holder["reference"] = _models(c)
        holder["runner"] = torch._inductor.aoti_load_package(package_path)
        return Outcome("passed")

    if journal.run("aoti_load", load).kind == "passed":
        journal.run("aoti_run", lambda: _check_batches(holder["runner"], holder["reference"], c))


# ---- parent side ------------------------------------------------------------------------------------------------

def _probed(cell: Cell, session: "RunSession") -> Outcome:
    """A probe stage's outcome from the shared probe child; a phase that crashed or hung there (possibly because of
    an earlier phase in the same process), or was never reached, runs again alone, so its outcome is its own."""
    result = session.probe(cell)
    shared = result.phases.get(cell.stage)
    if shared is not None and shared.kind not in ("crashed", "timed_out"):
        return result.outcome(cell.stage, among=(cell.stage,))
    return session.child(cell, "compat.stages.child_stage", {"cell": cell.id}, STAGES[cell.stage].timeout_s
                         ).outcome(cell.stage)


def _owned(build, *phases: str) -> Outcome:
    """The outcome of a stage that owns some phases of the shared build: it fails as the export did, or as its own
    phases did."""
    outcome = build.result.outcome(phases[-1], among=("export", *phases))
    if "export" in build.result.phases:
        outcome.detail.setdefault("graph", build.result.phases["export"].detail.get("graph"))
    return outcome


def _from_build(*phases: str) -> Callable[[Cell, "RunSession"], Outcome]:
    return lambda cell, session: _owned(session.artifact(cell), *phases)


def _saved(cell: Cell, session: "RunSession") -> Outcome:
    build = session.artifact(cell)
    saved = _owned(build, "save_load")
    if saved.kind != "passed":
        return saved
    return session.child(cell, "compat.stages.child_load_program", {"cell": cell.id, "program_path": build.program},
                         STAGES[cell.stage].timeout_s).outcome("run_fresh")


def _packaged(cell: Cell, session: "RunSession") -> Outcome:
    build = session.artifact(cell)
    compiled = build.result.phases.get("aoti_compile")
    if compiled is None:  # export failed or the build died: there is no package; the cell fails as the build did
        return build.result.outcome("aoti_compile", among=("export",))
    if compiled.kind != "passed":
        return _blame_environment(cell, session, _with_phase(compiled, "aoti_compile"))
    run = session.child(cell, "compat.stages.child_aoti_run", {"cell": cell.id, "package_path": build.package},
                        STAGES[cell.stage].timeout_s).outcome("aoti_run")
    run.detail["compile_seconds"] = compiled.detail.get("compile_seconds")
    return _blame_environment(cell, session, run)


def _blame_environment(cell: Cell, session: "RunSession", outcome: Outcome) -> Outcome:
    """A failing AOTI cell consults the canary: if a plain model fails too, the environment is at fault."""
    from .doctor import canary_device

    remedy = crash_remedy(outcome)
    if outcome.kind == "passed":
        return outcome
    canary = session.canary(canary_device(cell.device))
    if canary.kind != "passed":
        outcome.detail["environment_failure"] = (
            f"the AOTI canary (a plain model with no Triton kernel) fails too on {canary_device(cell.device)}: "
            f"{canary.summary()}; AOTInductor is broken here for every model")
        remedy = remedy or crash_remedy(canary)
    if remedy:
        outcome.detail["remedy"] = remedy
    return outcome


def _with_phase(outcome: Outcome, phase: str) -> Outcome:
    outcome.detail.setdefault("phase", phase)
    return outcome


# Budgets: eager and a load-and-run are seconds of work, compile is tens; the export and AOTI compile that the
# stages built on an export wait for are bounded by BUILD_TIMEOUT in compat.session.
def _export_stages(mode: str, flag: str) -> tuple[Stage, ...]:
    return (
        Stage(f"export_{mode}", f"`torch.export.export(strict={flag})`, dynamic batch, then `.module()` run.",
              _from_build("module_run"), None, export_mode=mode),
        Stage(f"save_load_{mode}", f"The {mode} export through `torch.export.save` + `load`, run in the same process, "
                                   f"then loaded and run in a fresh one.", _saved, 300.0, export_mode=mode),
        Stage(f"decompose_{mode}", f"`run_decompositions()` of the {mode} export, then again with "
                                   f"`decompose_custom_triton_ops=True`; each run.",
              _from_build("decompose", "decompose_triton_ops"), None, export_mode=mode),
        Stage(f"aoti_{mode}", f"`aoti_compile_and_package` of the {mode} export, loaded and run in a fresh process.",
              _packaged, 300.0, export_mode=mode, packaged=True),
    )


STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage("eager", "The wrapped op inside the model, run eagerly.", _probed, 300.0, check=_eager),
        Stage("flop_count", "The model under `FlopCounterMode`: the op must still compute and its FLOPs be counted.",
              _probed, 300.0, check=_flop_count),
        Stage("opcheck", "`torch.library.opcheck` on the style's op (custom-op styles only).", _probed, 600.0,
              check=_opcheck, custom_op_only=True),
        *(Stage(f"compile_{backend}", f"`torch.compile(backend={backend!r}, fullgraph=True)`; counts frames and checks "
                                      f"the graph holds the kernel.", _probed, 600.0, check=_compile)
          for backend in ("eager", "aot_eager", "inductor")),
        Stage("compile_dynamic", "`torch.compile(dynamic=True, fullgraph=True)` with inductor: a symbolic batch, and "
                                 "a second batch size runs without recompiling.", _probed, 600.0,
              check=_compile_dynamic),
        Stage("compile_backward", "Inductor-compiled forward and backward: input and parameter gradients against "
                                  "eager PyTorch's; a missing gradient fails.", _probed, 600.0,
              check=_compile_backward),
        *_export_stages("strict", "True"),
        *_export_stages("nonstrict", "False"),
    )
}
