"""The matrix's export-based work: one build per (kernel, style, export mode, dtype, device) that exports the model
and makes every artifact of compat.child.artifacts from it, one phase each (the phases of compat.matrix.stages.BUILD_PHASES),
and the fresh children that load a saved program or an AOTI package in a process that did not build it."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch

from ..evidence.outcomes import Outcome
from ..matrix import model as workload
from ..matrix.kernels import KERNELS
from ..matrix.stages import BUILD_PHASES, FRESH_PHASES
from ..matrix.styles import RAW_MARKER
from . import artifacts, latency
from .checks import check_batches, fresh_autotuners, graph_targets, missing_node, models, on_every_config

if TYPE_CHECKING:
    from ..matrix.cells import Cell
    from .journal import Journal


def build(journal: "Journal", cell: "Cell", mode: str, workdir: str, libraries: list[str]) -> None:
    """Export once, then everything made from that exported program, with the AOTI `libraries` (families) its
    cells asked for. Each is a phase; the stages read the phases their family owns."""
    kernel = KERNELS[cell.kernel]
    cell = dataclasses.replace(cell, stage=f"export_{mode}")  # whichever cell asked, the phases here are the export's
    holder = {}

    def export() -> Outcome:
        model, holder["reference"] = models(cell)  # in the phase: building a style's op may itself raise
        example = workload.example_inputs(kernel, cell.dtype, cell.device)
        # strict= always explicit: its default changed in torch 2.8.
        holder["ep"] = torch.export.export(
            model, example, dynamic_shapes=workload.dynamic_shapes(kernel), strict=mode == "strict"
        )
        targets = graph_targets([holder["ep"].graph_module])
        return missing_node(cell, [holder["ep"].graph_module]) or Outcome("passed", detail={"graph": targets})

    if journal.run("export", export).kind != "passed":
        return
    ep, reference, where = holder["ep"], holder["reference"], Path(workdir)
    ((_, module),) = artifacts.module(ep, where)
    journal.run(
        "module_run",
        pinned(cell, lambda: check_batches(module, reference, cell, inference_mode=True), lambda: ep.graph_module),
    )
    saved: dict[str, Any] = {}

    def save_load() -> Outcome:
        saved.setdefault("module", artifacts.saved(ep, where)[0][1])  # saved once, run on every config
        return check_batches(saved["module"], reference, cell)

    journal.run("save_load", pinned(cell, save_load, lambda: ep.graph_module))
    decompositions: dict[Callable, Any] = {}  # made once, run on every config

    def decomposed_by(make):
        if make not in decompositions:
            decompositions[make] = make()
        return decompositions[make]

    for name, make in artifacts.decompositions(ep):

        def decompose(make=make) -> Outcome:
            decomposed = decomposed_by(make)
            targets = graph_targets([decomposed.graph_module])
            # Decomposing a triton_op may replace its node by the kernel's own wrapper node: either proves the kernel.
            return missing_node(cell, [decomposed.graph_module], also=(RAW_MARKER,)) or check_batches(
                decomposed.module(), reference, cell, detail={"graph": sorted(set(targets))}
            )

        def graph(make=make) -> torch.fx.GraphModule:
            return decomposed_by(make).graph_module

        journal.run(name, pinned(cell, decompose, graph))
    for family in libraries:

        def build(family=family, filename=artifacts.LIBRARIES[family][0]) -> Outcome:
            return Outcome("passed", detail=artifacts.compile_library(family, ep, str(where / filename)))

        journal.run(BUILD_PHASES[family][0], build)


def pinned(
    cell: "Cell", check: Callable[[], Outcome], graph: Callable[[], torch.fx.GraphModule]
) -> Callable[[], Outcome]:
    """A phase that runs an exported program in this process starts as a user's first call does (nothing tuned
    yet) and, where the kernel is launched through its autotuner at run time (inside an op's body), is judged on
    every config as the probe stages are (checks.on_every_config). A traced raw launch holds the grid of each
    config it was traced with, so pinning one afterwards breaks the graph, not the op: that phase runs unpinned
    and says so. An AOTI library holds the one config Inductor picked while compiling (docs/EVIDENCE.md)."""

    def phase() -> Outcome:
        fresh_autotuners()
        if any(RAW_MARKER in target for target in graph_targets([graph()])):
            result = check()
            result.detail["configs"] = "not pinned: the traced launch holds the grid of every config"
            return result
        return on_every_config(lambda _: check(), cell)

    return phase


def load_program(journal: "Journal", cell: "Cell", program_path: str) -> None:
    """`torch.export.load` in a fresh process that, as a user's would, first imports the library defining the op."""
    holder = {}

    def load() -> Outcome:
        _, holder["reference"] = models(cell)  # registers the style's op, as importing the user's library would
        holder["ep"] = torch.export.load(program_path)
        return Outcome("passed")

    if journal.run("load_fresh", load).kind == "passed":
        ep, module = holder["ep"], holder["ep"].module()
        journal.run(
            "run_fresh",
            pinned(
                cell,
                lambda: check_batches(module, holder["reference"], cell, inference_mode=True),
                lambda: ep.graph_module,
            ),
        )


def run_library(journal: "Journal", cell: "Cell", family: str, path: str) -> None:
    """An AOTI family's library loaded and run in a fresh process."""
    holder = {}
    load_phase, run_phase = FRESH_PHASES[family]

    def load() -> Outcome:
        _, holder["reference"] = models(cell)
        # The device is up before the clock starts, as the C++ runner's is (its inputs are on it first): a model
        # without parameters (the op alone) would otherwise count CUDA's initialisation as its load.
        torch.empty(0, device=workload.torch_device(cell.device))
        holder["since"] = time.perf_counter()  # the first call's latency counts from the load
        holder["runner"], said = artifacts.LIBRARIES[family][2](path, workload.torch_device(cell.device))
        holder["detail"] = {"deprecation": said} if said else {}
        return Outcome("passed", detail=dict(holder["detail"]))

    if journal.run(load_phase, load).kind == "passed":
        journal.run(
            run_phase,
            lambda: check_batches(
                holder["runner"],
                holder["reference"],
                cell,
                detail=holder["detail"],
                inference_mode=True,
                first=latency.FirstCall(holder["since"]),
            ),
        )
