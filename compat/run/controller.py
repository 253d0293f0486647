"""The run's pytest objects, as pytest-xdist shapes its own: compat.plugin registers a `Controller` in the process
that runs the session (the xdist controller, or the only process), or a `Worker` in each xdist worker; each holds its
own hooks. Both parametrize the matrix's tests and run a cell through its children (`MatrixRun`); the controller alone
schedules, handles signals, gathers the workers' records, and writes the results file and the summary."""

from __future__ import annotations

import datetime
import faulthandler
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from xdist.scheduler import LoadGroupScheduling

from ..atomic import check_writable, write_atomic
from ..errors import DeclarationError, HarnessError, ResultsError
from ..evidence import baseline, findings, gate, results
from ..evidence.expectations import Expectations, Run, accept_run, measured_on
from ..evidence.outcomes import Outcome, skipped
from ..matrix import tiers
from ..matrix.cases import import_cases
from ..matrix.cells import (
    DEVICES,
    SUITE_CASES,
    Cell,
    check_names,
    gated_kernels,
    in_matrix,
    lane,
    matrix,
    parse_cell_id,
    read_cell_list,
    why_none,
)
from ..matrix.stages import STAGES
from ..matrix.strategies import DEFAULT_PROFILE, PROFILE_ENV, profile_settings
from ..processes import stop_descendants
from ..report import coverage
from ..report.summary import needs_reason_lines, summary_lines
from . import runfiles, schedule
from .environment import describe, machine_label
from .launcher import INTERRUPTED, Launcher, compiler_caches, start_isa_detection
from .options import AXES, COMPILE_CACHES, children_mode
from .session import RunSession, build_counts, cut_short
from .workers import gpu_for, visible_gpus

RECORD = {"cells": "compat_cell", "fuzz": "compat_fuzz"}  # user_properties name per expectations section
ISA_FILE = "isa.json"  # in the run directory: the CPU ISAs Inductor detected, once per run
EXIT_WITHIN_S = 30.0  # an interrupted run that has not ended by then (xdist still waiting on a worker) is ended
TEST_GROUPS = re.compile(r"::(?P<test>test_cell|test_fuzz)\[(?P<cell>[^\]]+)\]")


class MatrixRun:
    """What both roles share: the selected cells, the expectations, the parametrization, and a cell's check."""

    def __init__(self, config, cases: tuple[str, ...], run_dir: Path):
        self.config, self.cases, self.run_dir = config, cases, run_dir
        # Before any name is checked: they add kernels to the registries.
        # Where one touches CUDA as it is imported, the warm servers import none of them: each child imports them
        # after its fork (this process and its workers fork nothing, so CUDA may be initialised here).
        self.after_fork = tuple(cases) if import_cases(cases, forks=False) else ()
        self.accept = config.getoption("compat_accept")
        named, ini = config.getoption("compat_expectations"), config.getini("compat_expectations")
        default = (
            Path(config.inipath).parent / ini
            if ini and config.inipath
            else Path(config.rootpath) / (ini or "expectations.yaml")
        )
        self.expectations = Expectations.for_run(named or default, named is not None, self.accept)
        ini_durations = config.getini("compat_durations")
        self.durations_path = config.getoption("compat_durations") or (
            str(Path(config.inipath).parent / ini_durations) if ini_durations and config.inipath else ini_durations
        )
        self.baseline_path = config.getoption("compat_baseline")
        self.select = {}
        for axis in AXES:
            given = config.getoption(f"compat_{axis}s")
            names = given or config.getini(f"compat_{axis}s")
            if names:
                self.select[axis] = [n.strip() for n in names.split(",") if n.strip()]
                check_names(
                    axis, self.select[axis], f"--compat-{axis}s" if given else f"compat_{axis}s in {config.inipath}"
                )
        # A device this run asks for that the machine cannot run stops it (the ini's list is a repository's default,
        # for laptops too: its devices skip as ever).
        for device in self.select.get("device", []) if config.getoption("compat_devices") else []:
            reason = DEVICES[device].unavailable_reason()
            if reason:
                raise pytest.UsageError(
                    f"--compat-devices names {device}, which this machine cannot run: {reason}; no cell was run"
                )
        self.only = read_cell_list(config.getoption("compat_cells"))
        # What this run's command line narrowed the repository's selection to (a results file's name says it).
        self.narrowed = {
            f"{axis}s": names for axis, names in self.select.items() if config.getoption(f"compat_{axis}s")
        }
        if config.getoption("compat_cells"):
            self.narrowed["cells"] = [Path(config.getoption("compat_cells")).stem]
        if config.getoption("compat_tier") != "full":
            self.narrowed["tier"] = [config.getoption("compat_tier")]
        if "kernel" not in self.select and self.only is None:  # a cell list names its kernels itself
            self.select["kernel"] = gated_kernels(cases)
            if not self.select["kernel"]:
                raise pytest.UsageError(
                    f"compat_cases ({', '.join(cases)}) declare no kernel or op: declare yours "
                    f"with register_kernel / register_op (the suite's own kernels are gated where "
                    f"compat_cases names {SUITE_CASES}, or with --compat-kernels); no cell was "
                    f"run"
                )
        named = config.getoption("compat_require_declared")
        self.require_declared = (
            [n.strip() for n in named.split(",") if n.strip()] if named else config.getini("compat_require_declared")
        )
        if self.select and not self.selected:
            # Each name is valid, but together they name nothing the matrix holds (say, a CUDA-only stage on a CPU
            # device): a usage error, not a green run of nothing.
            raise pytest.UsageError(
                "the selection matches no cell of the matrix: " + "; ".join(why_none(self.select)[:6]) + "; no cell "
                "was run"
            )
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
    def selected(self) -> list:
        tier = self.config.getoption("compat_tier")
        return tiers.select([c for c in matrix(self.select) if self.only is None or c.id in self.only], tier)

    @functools.cached_property
    def recorded_seconds(self) -> dict[str, float]:
        try:
            return schedule.recorded_seconds(results.load(self.durations_path))
        except ResultsError as exc:
            raise pytest.UsageError(f"--compat-durations: {exc}; no cell was run") from None

    @functools.cached_property
    def split_lanes(self) -> frozenset[str]:
        """The lanes that took too long alone in the recorded run, split into a lane per stage (every process of
        the run computes the same)."""
        if not self.durations_path:
            return frozenset()
        return schedule.split_lanes(self.recorded_seconds, self.selected, self.worker_count)

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
            metafunc.parametrize("cell", [pytest.param(c, id=c.id, marks=pytest.mark.matrix) for c in self.selected])
        if "fuzz_cell" in metafunc.fixturenames:
            # Every cell expected to pass on this run (torch, triton, host), in the stages whose artifact is fuzzed.
            metafunc.parametrize(
                "fuzz_cell",
                [
                    pytest.param(c, id=c.id, marks=(pytest.mark.matrix, pytest.mark.fuzz))
                    for c in self.selected
                    if self.fuzzed(c)
                ],
            )

    def pytest_collection_modifyitems(self, session, config, items):
        if self.durations_path:  # the longest shared child first (compat.run.schedule); every worker sorts alike
            groups = {item.nodeid: shared_child_group(item.nodeid, self.split_lanes) for item in items}
            weight = schedule.weights(set(groups.values()) - {None}, self.recorded_seconds)
            items.sort(key=lambda item: -weight.get(groups[item.nodeid], float("inf")))
        # One test per namespace whose ops must all be declared: a gate failure that names the undeclared ones.
        items.extend(
            NamespaceCoverage.from_parent(session, name=f"compat_require_declared[{namespace}]", namespace=namespace)
            for namespace in self.require_declared
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
        # Children wait for the ISA file only when they compile a package, which a collected AOTI test started.
        launcher = Launcher(
            self.run_dir,
            children_mode(self.config),
            imports=self.cases,
            paths=(str(self.config.rootpath),),
            isa_file=str(self.run_dir / ISA_FILE),
            private_caches=self.private_caches,
            after_fork=self.after_fork,
        )
        self.session = RunSession(
            self.run_dir, params("cell"), fuzz_cells, self.profile, pinned, launcher, self.split_lanes
        )

    @pytest.hookimpl(tryfirst=True)  # before xdist waits for its workers: results first, within seconds
    def pytest_sessionfinish(self, session, exitstatus):
        if self.session is not None:
            self.session.close()


class Worker(MatrixRun):
    """An xdist worker: runs the cells it is sent in the controller's run directory, on the GPU it is pinned to."""

    def __init__(self, config, cases: tuple[str, ...]):
        if "compat_gpu" in config.workerinput:  # before anything in this worker initialises CUDA
            os.environ["CUDA_VISIBLE_DEVICES"] = config.workerinput["compat_gpu"]
        super().__init__(config, cases, Path(config.workerinput["compat_run_dir"]))


class Controller(MatrixRun):
    """The session's process: the run directory, the schedule, the signals, the workers' records, the results."""

    def __init__(self, config, cases: tuple[str, ...]):
        given = config.getoption("compat_run_dir")
        self.own_run_dir = not given
        run_dir = Path(given) if given else Path(tempfile.mkdtemp(prefix="compat-run-"))
        run_dir.mkdir(parents=True, exist_ok=True)
        super().__init__(config, cases, run_dir)
        # A file of its own for this run (compat.run.runfiles), unless one is named.
        named = config.getoption("compat_results")
        self.own_results = named is None
        self.results_path = (
            Path(named)
            if named
            else runfiles.new_path(
                Path(config.rootpath),
                machine_label(self.env),
                datetime.datetime.now(datetime.timezone.utc),
                self.narrowed,
            )
        )
        read_only_ok = config.getoption("compat_overwrite_read_only")
        for option, path in (
            ("--compat-results", self.results_path),
            *([("--compat-accept", self.expectations.path)] if self.accept else []),
        ):
            try:  # what the run writes at the end: writable now, or the run does not start
                check_writable(path, read_only_ok and option == "--compat-accept")
            except OSError as exc:
                fix = " (--compat-overwrite-read-only replaces it)" if isinstance(exc, PermissionError) else ""
                raise pytest.UsageError(f"{option} {path}: cannot be written ({exc}){fix}; no cell was run") from None
        if self.durations_path:
            _ = self.recorded_seconds  # bad input stops the run before any cell
        if self.baseline_path:
            try:
                _ = self.baseline  # bad input stops the run before any cell; loaded once, for the whole run
            except ResultsError as exc:
                raise pytest.UsageError(f"--compat-baseline: {exc}; no cell was run") from None
        self.isa_detection: subprocess.Popen | None = (
            None  # the process that detects the CPU ISAs once per run (forked children only)
        )
        self.has_workers = False  # xdist workers run the cells (known at session start)
        self.records: dict[str, dict[tuple, dict]] = {s: {} for s in RECORD}  # per section: (nodeid, worker) ->
        # cell record, from every worker's reports
        self.started = time.monotonic()
        self.doc = None
        self.latest: str | None = None  # what became of compat-results/latest.json
        self.accepted: list[str] = []
        self.needs_reason: list[str] = []  # fuzz findings the accept recorded without a reason (exit 1)
        self.accept_error: str | None = None  # the expectations could not be written at the end (exit 3)
        self.kept_run_dir = False
        self.fuzz_collected = False  # the fuzz tests were collected (maybe as an empty parameter set)
        self.harness_errors: list[dict] = []
        self.interrupted: str | None = None
        self.changes_path: Path | None = None
        self.nothing_ran: str | None = None  # why, where every cell the run recorded was skipped

    def pytest_sessionstart(self, session):
        self.has_workers = self.config.pluginmanager.has_plugin("dsession")
        _ = self.env, self.baseline  # now, not after a signal: the results' environment is the run's start
        # SIGINT and SIGTERM end the run alike: children stopped, results written, nothing left running. Told apart
        # from pytest's other stops (a collection error, -x), which are no interruption. A SIGINT the shell told
        # this process to ignore stays ignored.
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, self._signalled)

    def _signalled(self, signum, frame):
        if self.interrupted:  # a second signal (`timeout` signals the run and then its process group) while the
            return  # first is handled: raised again there it broke pytest's ending (an INTERNALERROR, on the H100)
        self.interrupted = f"interrupted by {signal.Signals(signum).name}"
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def start_isa_detection(self, nodeids) -> None:
        """Once the tests are known: if any will compile C++ (an AOTI package, a C++ wrapper, CPU kernels), find the
        CPU ISAs now, once, in the background (every child that compiles C++ waits for it, forked or fresh)."""
        tests = [found for found in map(cell_of, nodeids) if found]
        if self.isa_detection is None and any(STAGES[cell.stage].compiles_cpp(cell.device) for cell, _ in tests):
            self.isa_detection = start_isa_detection(self.run_dir / ISA_FILE)

    # ---- the schedule (pytest-xdist's hooks, optional: the plugin works without xdist) ----

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.start_isa_detection(ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput["compat_run_dir"] = str(self.run_dir)
        gpus = visible_gpus()
        if gpus:
            node.workerinput["compat_gpu"] = gpu_for(node.gateway.id, gpus)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config, log):
        """`--dist loadgroup` (the project's default) sends the tests of one shared child to one worker, which runs
        the child once. The groups come from the cell ids, not from xdist_group marks: xdist 3.8 groups by an
        `@group` suffix it writes into item._nodeid, which pytest 9 no longer reads, so marks alone would silently
        scatter a group."""
        if config.getvalue("dist") != "loadgroup":
            return None
        if self.durations_path:  # the collection is already longest first: xdist's reorder by test count would undo it
            config.option.loadscopereorder = False
        return SharedChildScheduling(config, log, split=self.split_lanes)

    def pytest_collection_finish(self, session):
        self.start_isa_detection([item.nodeid for item in session.items])
        super().pytest_collection_finish(session)

    def pytest_runtest_logreport(self, report):
        sections = {name: section for section, name in RECORD.items()}
        self.fuzz_collected |= "::test_fuzz[" in report.nodeid  # also its empty-parameter-set placeholder
        for name, record in report.user_properties:
            if name in sections:  # by node and worker: under `--dist each` every worker runs every cell
                self.records[sections[name]][(report.nodeid, record["worker"])] = record
            elif name == "compat_harness_error" and record not in self.harness_errors:
                self.harness_errors.append(record)

    @pytest.hookimpl(tryfirst=True)  # before xdist waits for its workers: results first, within seconds
    def pytest_sessionfinish(self, session, exitstatus):
        super().pytest_sessionfinish(session, exitstatus)
        if self.interrupted:
            (self.run_dir / INTERRUPTED).touch()  # workers then take their children's deaths as the stop
            _exit_within(EXIT_WITHIN_S)
        if self.isa_detection is not None and self.isa_detection.poll() is None:
            self.isa_detection.kill()
            self.isa_detection.wait()
        self._write_results()  # before anything else of an interrupted run's ending: what it measured, within seconds
        if self.interrupted:
            stop_descendants(below_children=self.has_workers)
        self.nothing_ran = None if self.interrupted else nothing_ran(self.records)
        if self.accept_error:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        elif self.needs_reason and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a wrong value recorded without a reason is found
        if any(e.get("declaration") for e in self.harness_errors):
            session.exitstatus = pytest.ExitCode.USAGE_ERROR  # a declaration to fix is bad input: exit 2
        if self.nothing_ran and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a gate that checked nothing is no green gate
        # Packages and caches take gigabytes: a green run leaves nothing behind; a failed one keeps its logs.
        self.kept_run_dir = not self.own_run_dir or (exitstatus != 0 and any(self.run_dir.iterdir()))
        if not self.kept_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def pytest_unconfigure(self, config):
        for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
            if signal.getsignal(sig) == self._signalled:
                signal.signal(sig, default)
        # A run that ended before its session finished (a usage or internal error) leaves no empty run directory.
        if self.own_run_dir and self.run_dir.is_dir() and not any(self.run_dir.iterdir()):
            self.run_dir.rmdir()

    def _write_results(self):
        if not (any(self.records.values()) or self.fuzz_collected or self.harness_errors or self.interrupted):
            return  # none of the plugin's tests ran: nothing to write about
        if self.interrupted:  # what the cut children finished: measured, so written
            recorded = {r["id"] for r in self.records["cells"].values()}
            selected = {c.id: c for c in self.selected}
            for cell_id, outcome in cut_short(self.run_dir).items():
                if cell_id in selected and cell_id not in recorded:
                    self.records["cells"][(cell_id, "cut short")] = self.judged(selected[cell_id], outcome, "cells")
        cells = list(self.records["cells"].values())
        options = {
            "accept": self.accept,
            "select": self.select,
            "cells_file": self.config.getoption("compat_cells"),
            "run_dir": str(self.run_dir),
            "children": children_mode(self.config),
            "workers": self.config.getoption("numprocesses", None),
            "fuzz_profile": self.profile,
            "compile_cache": self.compile_cache,
            "durations": self.durations_path,
            "tier": self.config.getoption("compat_tier"),
            "interrupted": self.interrupted,
            "baseline": self.baseline.name if self.baseline else None,
        }
        counts = build_counts(self.run_dir)
        counts["children"]["interpreters"] += self.isa_detection is not None  # the ISA detection's own
        self.doc = results.document(
            self.env,
            cells,
            counts,
            time.monotonic() - self.started,
            options,
            fuzz=list(self.records["fuzz"].values()),
            harness_errors=self.harness_errors,
            fuzz_collected=self.fuzz_collected,
        )
        results.write(self.results_path, self.doc)  # first: an accept that cannot write its file loses no run
        if self.own_results:
            self.latest = runfiles.update_latest(self.results_path, self.doc)
        if self.accept and not self.interrupted:
            self._accept(cells)
        changes = baseline.markdown(self.doc)
        if changes:  # the pull-request comment of an upgrade: what changed against the baseline
            self.changes_path = self.results_path.with_name(f"{self.results_path.stem}.changes.md")
            write_atomic(self.changes_path, changes)

    def _accept(self, cells: list[dict]) -> None:
        observed = {c["id"]: Outcome.from_dict(c["outcome"]) for c in cells}
        found = {f["id"]: Outcome.from_dict(f["outcome"]) for f in self.records["fuzz"].values()}
        try:
            # The rows of each cell's nearest recorded version below: widened, not copied.
            done = accept_run(
                self.expectations,
                observed,
                found,
                self.run,
                measured_on(self.env),
                baseline.neighbours(self.expectations, self.run),
            )
            self.accepted, self.needs_reason = done.changes, done.needs_reason
        except OSError as exc:  # writable when the run began; no longer
            self.accept_error = (
                f"--compat-accept: cannot write {self.expectations.path} ({exc}); nothing was "
                f"accepted; the results are in {self.results_path}: accept them with python -m "
                f"compat accept {self.results_path} once the file can be written"
            )

    def pytest_terminal_summary(self, terminalreporter):
        if self.doc is None:
            return
        terminalreporter.section("triton-export-compat matrix")
        if self.interrupted:
            terminalreporter.write_line(
                f"INTERRUPTED: {self.interrupted}; {self.results_path} holds the cells done so far"
            )
        for line in summary_lines(self.doc, str(self.results_path), width=terminalreporter._tw.fullwidth):
            terminalreporter.write_line(line)
        if self.latest:
            terminalreporter.write_line(self.latest)
        if self.nothing_ran:
            terminalreporter.write_line(
                f"NOTHING RAN: every selected cell was skipped here ({self.nothing_ran}): the "
                f"gate checked nothing, so the run fails"
            )
        if self.changes_path:
            terminalreporter.write_line(f"changes against the baseline, as Markdown: {self.changes_path}")
        for change in self.accepted:
            terminalreporter.write_line(f"accepted: {change}")
        for line in needs_reason_lines(self.needs_reason, self.expectations.path):
            terminalreporter.write_line(line, red=True)
        if self.accept_error:
            terminalreporter.write_line(f"ERROR {self.accept_error}", red=True)
        elif self.accept:
            terminalreporter.write_line(
                f"--compat-accept: {len(self.accepted)} change(s) written to "
                f"{self.expectations.path}" + (" (none: the run was interrupted)" if self.interrupted else "")
            )
        if self.kept_run_dir:
            terminalreporter.write_line(f"run directory (child logs, artifacts): {self.run_dir}")


class SharedChildScheduling(LoadGroupScheduling):
    """xdist's loadgroup, its groups read from the cell ids: the tests of one shared child go to one worker."""

    def __init__(self, config, log=None, split: frozenset[str] = frozenset()):
        super().__init__(config, log)
        self.split = split

    def _split_scope(self, nodeid: str) -> str:
        return shared_child_group(nodeid, self.split) or super()._split_scope(nodeid)


class NamespaceCoverage(pytest.Item):
    """Every op registered under a namespace has a declaration as shipped (compat.report.coverage)."""

    def __init__(self, *, namespace: str, **kwargs):
        super().__init__(**kwargs)
        self.namespace = namespace

    def runtest(self):
        if not coverage.registered(self.namespace):
            pytest.fail(
                f"no op is registered under {self.namespace!r}: is the package that registers them imported "
                f"by a compat_cases module?",
                pytrace=False,
            )
        missing = coverage.undeclared(self.namespace)
        if missing:
            pytest.fail(
                f"{len(missing)} op(s) of {self.namespace!r} have no declaration as shipped (compat.Op): "
                f"{', '.join(missing)}; declare each, or, where it is a helper your users never call (a "
                f"register_autograd backward op), list it in helpers=(...) of the Op that calls it",
                pytrace=False,
            )

    def reportinfo(self):
        return self.path, None, self.name


def nothing_ran(records: dict[str, dict]) -> str | None:
    """Why no cell ran, where the run recorded cells and skipped every one (a GPU runner without its GPU, a cell list
    of CUDA cells on a CPU machine); else None."""
    outcomes = [r["outcome"] for section in records.values() for r in section.values()]
    if not outcomes or any(o["kind"] != "skipped" for o in outcomes):
        return None
    return "; ".join(sorted({o["message"] for o in outcomes}))


def cell_of(nodeid: str):
    """(cell, section) of a matrix or fuzz test's node id, or None for any other test (and for an empty parameter
    set's NOTSET placeholder, which is no cell)."""
    m = TEST_GROUPS.search(nodeid)
    if m is None or not in_matrix(m["cell"]):
        return None
    return parse_cell_id(m["cell"], "xdist scheduler"), "fuzz" if m["test"] == "test_fuzz" else "cells"


def shared_child_group(nodeid: str, split: frozenset[str] = frozenset()) -> str | None:
    """The lane whose tests share one child process: a probe, a build, a fuzz child (compat.run.session)."""
    found = cell_of(nodeid)
    return lane(found[0], found[1], split) if found else None


def _gpu_used(outcome) -> str:
    """The GPU the cell's work ran on: its child's (an export cell's build may have run in another worker)."""
    child = outcome.detail.get("child") or {}
    return child.get("CUDA_VISIBLE_DEVICES") or os.environ.get("CUDA_VISIBLE_DEVICES") or "default"


def _exit_within(seconds: float) -> None:
    """Make sure an interrupted run ends: if it still runs after `seconds` (its results are written by then), dump
    every thread's stack (the evidence of what held it), stop every process it started, workers too, and exit 130."""
    faulthandler.dump_traceback_later(seconds - 1, exit=False)

    def end():
        time.sleep(seconds)
        print(
            f"triton-export-compat: the interrupted run did not end within {seconds:.0f} s; stopping its workers",
            file=sys.stderr,
            flush=True,
        )
        stop_descendants(below_children=False)
        os._exit(130)

    threading.Thread(target=end, name="compat-exit-within", daemon=True).start()
