"""The tasks a child can run, by name: the parent asks for one by its name with JSON arguments
(compat.run.launcher), the child resolves it here and runs it against its journal.

A task that names a cell gets it resolved before it starts (an id the child cannot resolve is a harness error); each
task records phases, and every phase catches its own exceptions, so anything that escapes a task is the harness's.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import functools
import json
import os
from pathlib import Path
from typing import Any, Callable, cast

from ..matrix.cases import import_cases
from ..processes import STACKS_SIGNAL
from .journal import Journal

TASKS: dict[str, Callable[..., None]] = {}
# The task bodies (and _cell) import what they run (torch with it, seconds): the child's journal starts first, so a hang or a
# crash while importing is the outcome of a phase, not a child that never began.


def task(name: str):
    """Declare a child task under `name` (the suite's below; tests and user modules may add their own)."""

    def register(fn):
        TASKS[name] = fn
        return fn

    return register


def _cell(cell_id: str):
    from ..matrix.cells import parse_cell_id  # lazily, as the task bodies (see TASKS)

    return parse_cell_id(cell_id, "child task")


@task("probe")
def probe(journal: Journal, cell: str, stages: list[str]) -> None:
    """The probe stages of one (kernel, style, dtype, device), one phase each, in one process."""
    from ..matrix.stages import STAGES
    from . import compile_threads
    from .checks import CHECKS, before_stage, on_every_config

    c = _cell(cell)
    for stage in stages:
        before_stage(dataclasses.replace(c, stage=stage), journal)
        with compile_threads.of_stage(stage):
            journal.run(
                stage,
                functools.partial(
                    on_every_config, CHECKS[cast(str, STAGES[stage].check)], dataclasses.replace(c, stage=stage)
                ),
            )


@task("build")
def build(journal: Journal, cell: str, mode: str, workdir: str, libraries: list[str]) -> None:
    from . import builds

    builds.build(journal, _cell(cell), mode, workdir, libraries)


@task("load_program")
def load_program(journal: Journal, cell: str, program_path: str) -> None:
    from . import builds

    builds.load_program(journal, _cell(cell), program_path)


@task("run_library")
def run_library(journal: Journal, cell: str, family: str, path: str) -> None:
    from . import builds

    builds.run_library(journal, _cell(cell), family, path)


@task("run_cpp")
def run_cpp(journal: Journal, cell: str, package_path: str, runner_path: str, timeout_s: float) -> None:
    from . import cpp

    cpp.run(journal, _cell(cell), package_path, runner_path, timeout_s)


@task("cpp_runner_build")
def cpp_runner_build(journal: Journal, output: str) -> None:
    from . import cpp

    cpp.build(journal, output)


@task("fuzz_probe")
def fuzz_probe(
    journal: Journal,
    cell: str,
    stages: list[str],
    profile: str,
    example: str | None = None,
    known: dict[str, dict] | None = None,
) -> None:
    from . import fuzz

    fuzz.probe_stages(journal, _cell(cell), stages, profile, example, known or {})


@task("fuzz_export")
def fuzz_export(
    journal: Journal,
    cell: str,
    mode: str,
    stages: list[str],
    profile: str,
    example: str | None = None,
    known: dict[str, dict] | None = None,
) -> None:
    from . import fuzz

    fuzz.export_stages(journal, _cell(cell), mode, stages, profile, example, known or {})


@task("canary_build")
def canary_build(journal: Journal, device: str, package_path: str) -> None:
    from . import canary

    canary.build(journal, device, package_path)


@task("canary_run")
def canary_run(journal: Journal, device: str, package_path: str) -> None:
    from . import canary

    canary.run(journal, device, package_path)


@task("canary_cpp")
def canary_cpp(journal: Journal, device: str, package_path: str, runner_path: str) -> None:
    from . import canary

    canary.run_cpp(journal, device, package_path, runner_path)


def run(task_path: str, journal_path: str) -> None:
    """The child's main: read the task, import what it names, run it. What fails outside every phase is journaled as
    the harness's error and raised (the child then exits non-zero)."""
    spec: dict[str, Any] = json.loads(Path(task_path).read_text())
    os.environ.update(spec.get("env", {}))  # before anything reads it: a child's own compiler caches
    journal = Journal(journal_path)
    # Asked before it is killed for its time, the child writes its stacks to its log (compat.processes.kill_for_time).
    # On the parent's signal, not a watchdog thread's timer: that one walked a busy thread's frames and crashed it.
    faulthandler.register(STACKS_SIGNAL, all_threads=True)
    journal.start()
    try:
        # Modules that declare kernels or tasks of their own; a fresh child forks nothing, so CUDA may be initialised.
        import_cases(spec.get("imports", []), "child", forks=False)
        from .interpreter import lighten  # imports Triton: after the journal has started

        lighten()  # Triton's interpreter, where the environment asks for it
        if spec["task"] not in TASKS:
            raise KeyError(f"unknown child task {spec['task']!r}; tasks: {', '.join(sorted(TASKS))}")
        journal.ready()
        TASKS[spec["task"]](journal, **spec["args"])
    except Exception as exc:  # noqa: BLE001 - reported to the parent as the harness's failure, not the cell's
        journal.harness_error(exc)
        raise
