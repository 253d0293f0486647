"""What both roles of a run share, as pytest objects (compat.plugin registers one per process): the selected cells,
the expectations, the matrix's parametrization and a cell's check through its children (`MatrixRun`); and the role
of an xdist worker (`Worker`). The session's own process is the `Controller` (compat.run.controller)."""

from __future__ import annotations

import functools
import os
import pickle
import time
from pathlib import Path

import pytest

from ..errors import DeclarationError, HarnessError, ResultsError
from ..evidence import baseline, findings, gate, results
from ..evidence.expectations import Expectations, Run
from ..evidence.outcomes import Outcome, skipped
from ..matrix.cases import import_cases
from ..matrix.cells import (
    Cell,
    lane,
)
from ..matrix.stages import STAGES
from ..matrix.strategies import DEFAULT_PROFILE, PROFILE_ENV, profile_settings
from . import schedule
from .declared import NamespaceCoverage
from .environment import describe
from .launcher import Launcher, compiler_caches
from .loadgroup import shared_child_group
from .options import COMPILE_CACHES, children_mode
from .selection import selection
from .session import RunSession

RECORD = {"cells": "compat_cell", "fuzz": "compat_fuzz"}  # user_properties name per expectations section
ISA_FILE = "isa.json"  # in the run directory: the CPU ISAs Inductor detected, once per run
# In the run directory: the expectations and recorded seconds as the controller read them, for its workers. Each
# worker parsed both files itself before (2-3 CPU-s a worker on the CI's machine, where a nested run of 2 workers
# costs about 20 CPU-s in all), and a file edited while the workers started could give them rows the controller
# never read.
READ_ONCE = "read-once.pickle"


class MatrixRun:
    """What both roles share: the selected cells, the expectations, the parametrization, and a cell's check."""

    def __init__(self, config, cases: tuple[str, ...], run_dir: Path):
        self.config, self.cases, self.run_dir = config, cases, run_dir
        # Before any name is checked: they add kernels to the registries.
        # Where one touches CUDA as it is imported, the warm servers import none of them: each child imports them
        # after its fork (this process and its workers fork nothing, so CUDA may be initialised here).
        self.after_fork = tuple(cases) if import_cases(cases, forks=False) else ()
        self.accept = config.getoption("compat_accept")
        self.expectations = self.read_expectations()
        # Where they come from, as an error names it: the option, else the ini's list (relative to the ini file).
        self.durations_source = (
            "--compat-durations" if config.getoption("compat_durations") else f"compat_durations ({config.inipath})"
        )
        self.durations_paths: list[str] = config.getoption("compat_durations") or [
            str(path) for path in config.getini("compat_durations")
        ]
        self.baseline_path = config.getoption("compat_baseline")
        self.selection = selection(config, cases)
        self.profile = config.getoption("compat_fuzz_profile") or os.environ.get(PROFILE_ENV) or DEFAULT_PROFILE
        profile_settings(self.profile)  # an unknown name is a usage error now, not in every fuzz test
        # Every run starts from empty compiler caches (one left by an earlier run could hide what changed since); what
        # each child keeps to itself: compat.run.options.COMPILE_CACHES.
        self.compile_cache = config.getoption("compat_compile_cache")
        self.private_caches = COMPILE_CACHES[self.compile_cache]
        os.environ.update(
            {var: path for var, path in compiler_caches(run_dir / "cache").items() if var not in self.private_caches}
        )
        self.session: RunSession | None = None  # once the cells are collected

    @property
    def server_owner(self) -> int | None:
        """The process that owns the run's warm servers (compat.run.servers): None, this one."""
        return None

    def read_expectations(self) -> Expectations:
        config = self.config
        named, ini = config.getoption("compat_expectations"), config.getini("compat_expectations")
        default = (
            Path(config.inipath).parent / ini
            if ini and config.inipath
            else Path(config.rootpath) / (ini or "expectations.yaml")
        )
        return Expectations.for_run(named or default, named is not None, self.accept)

    @functools.cached_property
    def env(self) -> dict:
        return describe(self.config.rootpath)

    @functools.cached_property
    def run(self) -> Run:
        return Run.from_env(self.env)

    @functools.cached_property
    def baseline(self):
        """What a cell without rows for this run is compared against (compat.evidence.baseline), or None."""
        return baseline.for_run(self.expectations, self.run, self.baseline_path)

    @functools.cached_property
    def recorded_seconds(self) -> dict[str, float]:
        try:
            return schedule.recorded_seconds(*map(results.load, self.durations_paths))
        except ResultsError as exc:
            raise pytest.UsageError(f"{self.durations_source}: {exc}; no cell was run") from None

    @functools.cached_property
    def split_lanes(self) -> frozenset[str]:
        """The lanes that took too long alone in the recorded run, split into a lane per stage (every process of
        the run computes the same)."""
        if not self.durations_paths:
            return frozenset()
        return schedule.split_lanes(self.recorded_seconds, self.selection.cells, self.worker_count)

    @property
    def worker_count(self) -> int:
        """The run's xdist workers (1 without xdist), the same in the controller and in every worker."""
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is not None:
            return int(workerinput["workercount"])
        return len(self.config.getoption("tx", None) or ()) or 1  # xdist's workers to start ("auto" resolved)

    def expected_to_pass(self, cell: Cell) -> bool:
        """Its row says it passes on this run; without a row, its baseline's does."""
        expectation = self.expectations.lookup(cell.id, self.run)
        if expectation is not None:
            return expectation.row["outcome"] == "passed"
        ref = self.baseline.reference(cell.id, "cells") if self.baseline is not None else None
        return ref is not None and (ref.row.row["outcome"] if ref.row else ref.outcome["kind"]) == "passed"

    def unknown(self, cell: Cell) -> bool:
        """Neither a row nor a baseline says how the cell ends on this run (a first accept's cells)."""
        return self.expectations.lookup(cell.id, self.run) is None and (
            self.baseline is None or self.baseline.reference(cell.id, "cells") is None
        )

    def fuzzed(self, cell: Cell) -> bool:
        """Whether the cell gets a fuzz test: expected to pass; or, in accept mode, not known yet (the test fuzzes it
        if it passes in this run, so a first accept records the fuzz tests' findings too)."""
        return STAGES[cell.stage].fuzzed and (self.expected_to_pass(cell) or self.accept and self.unknown(cell))

    def pinned(self, cell: Cell) -> list[dict]:
        """The findings the cell's fuzz test is held to: its row's; without one for this run, its baseline's (a
        recorded version's row, or a results file's record), so an upgrade fails only on a finding that is new."""
        row = self.expectations.lookup(cell.id, self.run, "fuzz")
        if row is not None:
            return findings.pins(row.row)
        ref = self.baseline.reference(cell.id, "fuzz") if self.baseline is not None else None
        if ref is None:
            return []
        if ref.row is not None:
            return findings.pins(ref.row.row)
        return findings.pins(findings.recorded(Outcome.from_dict(ref.outcome))) if ref.outcome else []

    @property
    def running(self) -> RunSession:
        """The run's session: there once the cells are collected, before any cell runs."""
        assert self.session is not None, "a cell ran before the run's session was made"
        return self.session

    def not_passing_here(self, cell: Cell, section: str) -> str | None:
        """A first accept fuzzes a cell nothing recorded only where the cell passes in this run: why not, or None."""
        if section != "fuzz" or not (self.accept and self.unknown(cell)):
            return None
        outcome = self.running.outcome(cell)
        return (
            None
            if outcome.kind == "passed"
            else f"the cell did not pass in this run ({outcome.first_line}): nothing to fuzz"
        )

    def check(self, cell, node, section: str = "cells") -> None:
        """Run the cell (section "cells": its stage; "fuzz": its fuzz test), gate it on its expectation, record it."""
        started_at, start, cpu = time.time(), time.monotonic(), self.running.launcher.cpu_seconds
        reason = cell.unavailable_reason() or self.not_passing_here(cell, section)
        run = self.running.outcome if section == "cells" else self.running.fuzz_outcome
        try:
            outcome = skipped(reason) if reason else run(cell)
        except HarnessError as exc:  # the harness failed, not the cell: never recorded as an outcome or accepted
            declaration = isinstance(exc, DeclarationError)
            node.user_properties.append(
                (
                    "compat_harness_error",
                    {"id": cell.id, "section": section, "error": str(exc), "declaration": declaration},
                )
            )
            what = "DECLARATION ERROR" if declaration else "HARNESS ERROR"
            pytest.fail(
                f"{what} in {cell.id} (not the cell's outcome; nothing recorded or accepted): {exc}", pytrace=False
            )
        record = self.judged(cell, outcome, section, gated=not reason)
        record.update(
            duration_s=round(time.monotonic() - start, 2),
            # The CPU time of the children this cell started (a shared child's goes to the first cell
            # that needed it).
            cpu_s=round(self.running.launcher.cpu_seconds - cpu, 2),
            gpu=_gpu_used(outcome) if cell.device == "cuda" and not reason else None,
            # Where the time went (python -m compat profile): the lane whose child it waited on, and when.
            lane=lane(cell, section, self.split_lanes),
            started_at=round(started_at, 2),
        )
        node.user_properties.append((RECORD[section], record))
        complaint = record["verdict"]
        if reason:
            pytest.skip(reason)
        if complaint and not self.accept:
            pytest.fail(complaint, pytrace=False)

    def judged(self, cell, outcome: Outcome, section: str, gated: bool = True) -> dict:
        """The cell's record: its outcome gated on its expectation (or, without one, on the baseline)."""
        expectation = self.expectations.lookup(cell.id, self.run, section) if gated else None
        judgement = (
            gate.judge(cell.id, expectation, outcome, self.run, self.expectations.path, section, self.baseline)
            if gated
            else gate.Judgement(None)
        )
        return {
            "id": cell.id,
            "axes": cell.axes(),
            "outcome": outcome.to_dict(),
            "first_line": outcome.first_line,
            "expected": expectation.full if expectation else None,
            "expected_at": expectation.where if expectation else None,
            "verdict": judgement.complaint,
            "against_baseline": judgement.against,
            "duration_s": None,
            "cpu_s": None,
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "gpu": None,
        }

    # ---- hooks of both roles (the object is registered as a plugin) ----

    def pytest_generate_tests(self, metafunc):
        if "cell" in metafunc.fixturenames:
            metafunc.parametrize(
                "cell", [pytest.param(c, id=c.id, marks=pytest.mark.matrix) for c in self.selection.cells]
            )
        if "fuzz_cell" in metafunc.fixturenames:
            # Every cell expected to pass on this run (torch, triton, host), in the stages whose artifact is fuzzed.
            metafunc.parametrize(
                "fuzz_cell",
                [
                    pytest.param(c, id=c.id, marks=(pytest.mark.matrix, pytest.mark.fuzz))
                    for c in self.selection.cells
                    if self.fuzzed(c)
                ],
            )

    def pytest_collection_modifyitems(self, session, config, items):
        if self.durations_paths:  # the longest shared child first (compat.run.schedule); every worker sorts alike
            groups = {item.nodeid: shared_child_group(item.nodeid, self.split_lanes) for item in items}
            weight = schedule.weights(set(groups.values()) - {None}, self.recorded_seconds)
            items.sort(key=lambda item: -weight.get(groups[item.nodeid], float("inf")))
        # One test per namespace whose ops must all be declared: a gate failure that names the undeclared ones.
        items.extend(
            NamespaceCoverage.from_parent(session, name=f"compat_require_declared[{namespace}]", namespace=namespace)
            for namespace in self.selection.require_declared
        )

    def pytest_collection_finish(self, session):
        def params(name):  # an empty parameter set leaves a NOTSET placeholder, not a cell
            return [
                item.callspec.params[name]
                for item in session.items
                if hasattr(item, "callspec") and isinstance(item.callspec.params.get(name), Cell)
            ]

        fuzz_cells = params("fuzz_cell")
        pinned = {c.id: self.pinned(c) for c in fuzz_cells}
        self.session = RunSession(
            self.run_dir, params("cell"), fuzz_cells, self.profile, pinned, self.launcher, self.split_lanes
        )

    @functools.cached_property
    def launcher(self) -> Launcher:
        """This process's starter of children (and of the run's warm servers, where it owns them)."""
        # Children wait for the ISA file only when they compile a package, which an AOTI test selected started.
        return Launcher(
            self.run_dir,
            children_mode(self.config),
            imports=self.cases,
            paths=(str(self.config.rootpath),),
            isa_file=str(self.run_dir / ISA_FILE),
            private_caches=self.private_caches,
            after_fork=self.after_fork,
            owner=self.server_owner,
            compiles=any(STAGES[cell.stage].compiles for cell in self.selection.cells),
        )

    @pytest.hookimpl(tryfirst=True)  # before xdist waits for its workers: results first, within seconds
    def pytest_sessionfinish(self, session, exitstatus):
        if self.session is not None:
            self.session.close()


class Worker(MatrixRun):
    """An xdist worker: runs the cells it is sent in the controller's run directory, on the GPU it is pinned to, with
    the expectations and recorded seconds the controller read for the whole run (`READ_ONCE`)."""

    def __init__(self, config, cases: tuple[str, ...]):
        if "compat_gpu" in config.workerinput:  # before anything in this worker initialises CUDA
            os.environ["CUDA_VISIBLE_DEVICES"] = config.workerinput["compat_gpu"]
        run_dir = Path(config.workerinput["compat_run_dir"])
        with open(run_dir / READ_ONCE, "rb") as f:
            self.read_once: dict = pickle.load(f)
        super().__init__(config, cases, run_dir)

    def read_expectations(self) -> Expectations:
        return self.read_once["expectations"]

    @property
    def server_owner(self) -> int | None:
        return int(self.config.workerinput["compat_owner"])  # the controller: it stops the run's warm servers

    @functools.cached_property
    def recorded_seconds(self) -> dict[str, float]:
        return self.read_once["recorded_seconds"]


def _gpu_used(outcome) -> str:
    """The GPU the cell's work ran on: its child's (an export cell's build may have run in another worker)."""
    child = outcome.detail.get("child") or {}
    return child.get("CUDA_VISIBLE_DEVICES") or os.environ.get("CUDA_VISIBLE_DEVICES") or "default"
