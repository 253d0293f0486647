"""Stage axis: what a wrapped kernel is pushed through.

Each stage's `run(cell, session)` runs in the test process and returns the cell's Outcome; the heavy work happens in
child processes (`child_*` below, run by `compat.isolation`), so a crash is the cell's outcome. Exported programs and
AOTI packages come from `compat.artifacts`, built once per run and shared by the cells that need them. Adding a stage
means adding one `Stage(...)` to `STAGES` (and its child function, if it needs new work).
"""

from __future__ import annotations

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


# ---- child side: runs in a fresh interpreter with the device's environment --------------------------------------

def _models(cell: Cell):
    from .kernels import KERNELS
    from .styles import build_op

    kernel = KERNELS[cell.kernel]
    return (workload.build(build_op(cell.style, cell.kernel), cell.dtype, cell.device),
            workload.build(kernel.reference, cell.dtype, cell.device))


def _check_batches(fn, reference, cell: Cell, detail: dict | None = None) -> Outcome:
    import torch

    comparisons = []
    with torch.no_grad():
        for batch in workload.CHECK_BATCHES:
            x = workload.make_input(batch, cell.dtype, cell.device)
            comparisons.append(numerics.compare(fn(x), reference(x), f"batch {batch}"))
    return outcomes.from_comparisons(comparisons, detail)


def _graph_targets(graphs) -> list[str]:
    """Call targets of FX graphs, by name (builtins without their memory address, so results diff cleanly)."""
    names = []
    for graph in graphs:
        for node in graph.nodes:
            if node.op == "call_function":
                name = str(node.target)
                names.append(getattr(node.target, "__name__", name) if name.startswith("<built-in") else name)
    return names


def _missing_node(cell: Cell, targets: list[str]) -> Outcome | None:
    from .kernels import KERNELS
    from .styles import STYLES

    marker = STYLES[cell.style].graph_marker(KERNELS[cell.kernel])
    if any(marker in t for t in targets):
        return None
    return Outcome("failed", "MissingKernelNode", f"no graph node matches {marker!r}; the kernel was not traced",
                   detail={"graph": targets})


def child_eager(journal: "Journal", cell: str) -> None:
    c = parse_cell_id(cell, "child task")
    model, reference = _models(c)
    journal.run("eager", lambda: _check_batches(model, reference, c))


def child_compile(journal: "Journal", cell: str) -> None:
    import torch
    from torch._dynamo.testing import CompileCounterWithBackend

    c = parse_cell_id(cell, "child task")
    model, reference = _models(c)

    def compile_and_check() -> Outcome:
        torch._dynamo.reset()
        counter = CompileCounterWithBackend("inductor")
        compiled = torch.compile(model, backend=counter, fullgraph=True)
        result = _check_batches(compiled, reference, c)
        targets = _graph_targets(g.graph for g in counter.graphs)
        # Proof that it compiled rather than ran eager: the backend saw frames, and their graphs hold the kernel.
        result.detail.update(frames=counter.frame_count, graph=sorted(set(targets)))
        if counter.frame_count == 0:
            return Outcome("failed", "NotCompiled", "torch.compile handed no frame to the backend", detail=result.detail)
        return _missing_node(c, targets) or result

    journal.run("compile", compile_and_check)


def child_build(journal: "Journal", cell: str, mode: str, package_path: str | None) -> None:
    """Export once; run the exported program's module; then, if asked, compile the AOTI package."""
    import torch

    c = parse_cell_id(cell, "child task")
    model, reference = _models(c)
    holder = {}

    def export() -> Outcome:
        example = workload.make_input(workload.EXAMPLE_BATCH, c.dtype, c.device)
        # strict= always explicit: its default changed in torch 2.8.
        ep = torch.export.export(model, (example,), dynamic_shapes=workload.dynamic_shapes(), strict=mode == "strict")
        holder["ep"] = ep
        targets = _graph_targets([ep.graph])
        return _missing_node(c, targets) or Outcome("passed", detail={"graph": targets})

    if journal.run("export", export).kind != "passed":
        return
    journal.run("module_run", lambda: _check_batches(holder["ep"].module(), reference, c))
    if package_path:
        def package() -> Outcome:
            start = time.monotonic()
            torch._inductor.aoti_compile_and_package(holder["ep"], package_path=package_path)
            return Outcome("passed", detail={"compile_seconds": round(time.monotonic() - start, 1)})

        journal.run("aoti_compile", package)


def child_aoti_run(journal: "Journal", cell: str, package_path: str) -> None:
    import torch

    c = parse_cell_id(cell, "child task")
    _, reference = _models(c)
    holder = {}

    def load() -> Outcome:
        holder["runner"] = torch._inductor.aoti_load_package(package_path)
        return Outcome("passed")

    if journal.run("aoti_load", load).kind == "passed":
        journal.run("aoti_run", lambda: _check_batches(holder["runner"], reference, c))


# ---- parent side ------------------------------------------------------------------------------------------------

def _in_child(fn: str, final: str) -> Callable[[Cell, "RunSession"], Outcome]:
    def run(cell: Cell, session: "RunSession") -> Outcome:
        return session.child(cell, f"compat.stages.{fn}", {"cell": cell.id}, STAGES[cell.stage].timeout_s
                             ).outcome(final)

    return run


def _exported(cell: Cell, session: "RunSession") -> Outcome:
    build = session.artifact(cell)
    outcome = build.result.outcome("module_run")
    if "export" in build.result.phases:
        outcome.detail.setdefault("graph", build.result.phases["export"].detail.get("graph"))
    return outcome


def _packaged(cell: Cell, session: "RunSession") -> Outcome:
    build = session.artifact(cell)
    compiled = build.result.phases.get("aoti_compile")
    if compiled is None:  # export failed or crashed: there is no package; the cell fails as the export did
        return build.result.outcome("module_run")
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


# Budgets: eager and a load-and-run are seconds of work, compile is tens; the export and AOTI compile that
# export and AOTI stages wait for are bounded by BUILD_TIMEOUT in compat.session.
STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage("eager", "The wrapped op inside the model, run eagerly.", _in_child("child_eager", "eager"), 300.0),
        Stage("compile", "`torch.compile(fullgraph=True)` with inductor; counts frames and checks the graph holds "
                         "the kernel.", _in_child("child_compile", "compile"), 600.0),
        Stage("export_strict", "`torch.export.export(strict=True)`, dynamic batch, then `.module()` run.",
              _exported, None, export_mode="strict"),
        Stage("export_nonstrict", "`torch.export.export(strict=False)`, dynamic batch, then `.module()` run.",
              _exported, None, export_mode="nonstrict"),
        Stage("aoti_strict", "`aoti_compile_and_package` of the strict export, loaded and run in a fresh process.",
              _packaged, 300.0, export_mode="strict", packaged=True),
        Stage("aoti_nonstrict", "`aoti_compile_and_package` of the non-strict export, loaded and run in a fresh "
                                "process.", _packaged, 300.0, export_mode="nonstrict", packaged=True),
    )
}
