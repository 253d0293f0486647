"""The session's process as a pytest object (compat.plugin registers it where the session runs: the xdist controller,
or the only process): it orchestrates. It makes the run directory, checks what the run will write, starts the ISA
detection, hands xdist its scheduler (compat.run.loadgroup), handles the signals, gathers the workers' records, and
writes the results file, the accept and the summary. What it shares with the workers is compat.run.matrix_run's."""

from __future__ import annotations

import datetime
import os
import pickle
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from ..atomic import check_writable, write_atomic
from ..errors import ResultsError
from ..evidence import baseline, results
from ..evidence.expectations import accept_run, measured_on
from ..evidence.outcomes import Outcome
from ..matrix.cells import Cell
from ..matrix.stages import STAGES
from ..processes import exit_within, stop_descendants
from ..report import baseline_changes
from ..report.summary import needs_reason_lines, summary_lines
from . import runfiles
from .environment import machine_label
from .launcher import INTERRUPTED, start_isa_detection
from .loadgroup import SharedChildScheduling, cell_of
from .matrix_run import ISA_FILE, READ_ONCE, RECORD, MatrixRun
from .options import children_mode
from .session import build_counts, child_env, cut_short
from .workers import gpu_for, visible_gpus

EXIT_WITHIN_S = 30.0  # an interrupted run that has not ended by then (xdist still waiting on a worker) is ended


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
                self.selection.narrowed,
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
        if self.durations_paths:
            _ = self.recorded_seconds  # bad input stops the run before any cell
        self.write_read_once()
        if self.baseline_path:
            try:
                _ = self.baseline  # bad input stops the run before any cell; loaded once, for the whole run
            except ResultsError as exc:
                raise pytest.UsageError(f"--compat-baseline: {exc}; no cell was run") from None
        self.isa_detection: subprocess.Popen | None = (
            None  # the process that detects the CPU ISAs once per run (forked children only)
        )
        self.has_workers = False  # xdist workers run the cells (known at session start)
        self.prestarted = False  # the ISA detection and the warm servers (prestart)
        self.records: dict[str, dict[tuple, dict]] = {s: {} for s in RECORD}  # per section: (nodeid, worker) ->
        # cell record, from every worker's reports
        self.started = time.monotonic()
        self.doc: dict | None = None
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

    def write_read_once(self) -> None:
        """What this process read for the run, for its workers (compat.run.matrix_run.READ_ONCE)."""
        read = {
            "expectations": self.expectations,
            "recorded_seconds": self.recorded_seconds if self.durations_paths else {},
        }
        with open(self.run_dir / READ_ONCE, "wb") as f:
            pickle.dump(read, f, protocol=pickle.HIGHEST_PROTOCOL)

    def pytest_sessionstart(self, session):
        self.has_workers = self.config.pluginmanager.has_plugin("dsession")
        _ = self.env, self.baseline  # now, not after a signal: the results' environment is the run's start
        # SIGINT and SIGTERM end the run alike: children stopped, results written, nothing left running. Told apart
        # from pytest's other stops (a collection error, -x), which are no interruption. A SIGINT the shell told
        # this process to ignore stays ignored.
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, self._signalled)
        # Before xdist starts the workers (its hook runs last), where the selected cells are the run's; a `-k`, `-m` or
        # a test's node id may deselect them all (the test suite's fast tier does), so such a run waits for its
        # collection: one fuzz test named by its id started every device's server and the ISA detection (20 CPU-s).
        named = any("::" in arg for arg in self.config.args)
        if not (self.config.option.keyword or self.config.option.markexpr or named):
            self.prestart(self.selection.cells)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.prestart([found[0] for found in map(cell_of, ids) if found])

    def pytest_collection_finish(self, session):
        self.prestart([found[0] for found in (cell_of(item.nodeid) for item in session.items) if found])
        super().pytest_collection_finish(session)

    def prestart(self, cells: list[Cell]) -> None:
        """What the run's first children would wait for, started once, as early as the cells to run are known: on one
        H100 the workers took 20 s to start and collect, and then each one's first child waited 16 s for the warm
        server (results/benchmark/warm-server-prestart). The ISA detection, where a cell compiles C++, and the warm
        server of each device environment the cells run in."""
        if self.prestarted or self.config.option.collectonly:  # a collection runs no child
            return
        self.prestarted = True
        cells = [cell for cell in cells if cell.unavailable_reason() is None]
        if any(STAGES[cell.stage].compiles_cpp(cell.device) for cell in cells):
            self.isa_detection = start_isa_detection(self.run_dir / ISA_FILE)
        gpus = visible_gpus() if self.has_workers else []  # each worker's children run on its GPU (workers.py)
        pinned = sorted({gpu_for(f"gw{i}", gpus) for i in range(self.worker_count)}) if gpus else []
        per_gpu = [{"CUDA_VISIBLE_DEVICES": gpu} for gpu in pinned] or [{}]
        one_per_device = {cell.device: cell for cell in cells}.values()
        self.launcher.prestart([child_env(cell, self.run_dir) | gpu for cell in one_per_device for gpu in per_gpu])

    def _signalled(self, signum, frame):
        if self.interrupted:  # a second signal (`timeout` signals the run and then its process group) while the
            return  # first is handled: raised again there it broke pytest's ending (an INTERNALERROR, on the H100)
        self.interrupted = f"interrupted by {signal.Signals(signum).name}"
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # ---- the schedule (pytest-xdist's hooks, optional: the plugin works without xdist) ----

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput["compat_run_dir"] = str(self.run_dir)
        node.workerinput["compat_owner"] = os.getpid()
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
        if self.durations_paths:  # the collection is already longest first: xdist's reorder by test count would undo it
            config.option.loadscopereorder = False
        return SharedChildScheduling(config, log, split=self.split_lanes)

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
            exit_within(EXIT_WITHIN_S)
        if self.isa_detection is not None and self.isa_detection.poll() is None:
            self.isa_detection.kill()
            self.isa_detection.wait()
        if self.has_workers:  # the workers' cells are done: the run's warm servers are this process's to stop
            self.launcher.close()
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
            selected = {c.id: c for c in self.selection.cells}
            for cell_id, outcome in cut_short(self.run_dir).items():
                if cell_id in selected and cell_id not in recorded:
                    self.records["cells"][(cell_id, "cut short")] = self.judged(selected[cell_id], outcome, "cells")
        cells = list(self.records["cells"].values())
        options = {
            "accept": self.accept,
            "select": self.selection.axes,
            "cells_file": self.config.getoption("compat_cells"),
            "run_dir": str(self.run_dir),
            "children": children_mode(self.config),
            "workers": self.config.getoption("numprocesses", None),
            "fuzz_profile": self.profile,
            "compile_cache": self.compile_cache,
            "durations": self.durations_paths,
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
        changes = baseline_changes.markdown(self.doc)
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


def nothing_ran(records: dict[str, dict]) -> str | None:
    """Why no cell ran, where the run recorded cells and skipped every one (a GPU runner without its GPU, a cell list
    of CUDA cells on a CPU machine); else None."""
    outcomes = [r["outcome"] for section in records.values() for r in section.values()]
    if not outcomes or any(o["kind"] != "skipped" for o in outcomes):
        return None
    return "; ".join(sorted({o["message"] for o in outcomes}))
