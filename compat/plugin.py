"""The pytest plugin: parametrizes `test_cell` over the matrix (and `test_fuzz` over its passing cells), gates each
outcome on its expectation, and writes the results file and the matrix summary at the end of the run (in the xdist
controller, from the workers' reports). An interrupted run (SIGINT, SIGTERM) stops every child, writes what it
measured, marked as interrupted, and leaves no process behind."""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest

from .atomic import check_writable
from .cases import import_cases
from .errors import CompatError, HarnessError
from .options import AXES, OPTIONS

RECORD = {"cells": "compat_cell", "fuzz": "compat_fuzz"}  # user_properties name per expectations section
ISA_FILE = "isa.json"  # in the run directory: the CPU ISAs Inductor detected, once per run


CASES_GROUP = "triton_export_compat.cases"  # entry points of installed packages that declare kernels


def pytest_addoption(parser):
    group = parser.getgroup("compat", "triton-export-compat matrix")
    for flags, options in OPTIONS:
        group.addoption(*flags, **options)
    parser.addini("compat_cases", type="args", default=[],
                  help="modules that declare the kernels to test (imported here and in every child before any cell "
                       "is resolved), e.g. mypkg.compat_cases; naming any turns the plugin on")
    parser.addini("compat_expectations", default=None,
                  help="the expectations YAML, relative to the ini file (default: expectations.yaml in the rootdir); "
                       "accept creates it")
    for axis in AXES:
        parser.addini(f"compat_{axis}s", default=None, help=f"the {axis} names to run unless --compat-{axis}s says")
    parser.addini("compat_require_declared", type="args", default=[],
                  help="torch.library namespaces whose every registered op must be declared as shipped (compat.Op)")


def case_modules(config) -> tuple[str, ...]:
    """The modules that declare kernels: the ini's `compat_cases`, and the entry points of installed packages."""
    from importlib.metadata import entry_points

    installed = [ep.value.split(":")[0] for ep in entry_points(group=CASES_GROUP)]
    return tuple(dict.fromkeys([*config.getini("compat_cases"), *installed]))


def active(config) -> bool:
    """The plugin acts only where asked: kernel modules named (ini or entry point), or a --compat option given."""
    defaults = {options.get("dest") or flags[0].lstrip("-").replace("-", "_"): options.get("default")
                for flags, options in OPTIONS}
    return bool(case_modules(config)) or any(config.getoption(dest) not in (default, False)
                                             for dest, default in defaults.items())


class CompatRun:
    """Per-process state of a matrix run."""

    def __init__(self, config):
        from .expectations import Expectations

        self.config = config
        self.cases = case_modules(config)
        # Before any name is checked: they add kernels to the registries.
        import_cases(self.cases, forks=config.getoption("compat_children") == "forked")
        self.accept = config.getoption("compat_accept")
        self.is_worker = hasattr(config, "workerinput")
        self.has_workers = False  # xdist workers run the cells (known at session start)
        named, ini = config.getoption("compat_expectations"), config.getini("compat_expectations")
        default = Path(config.inipath).parent / ini if ini and config.inipath else Path(config.rootpath) / (
            ini or "expectations.yaml")
        self.expectations = Expectations.for_run(named or default, named is not None, self.accept)
        if self.accept and not hasattr(config, "workerinput"):  # the file accept writes at the end: now or never
            try:
                check_writable(self.expectations.path)
            except OSError as exc:
                raise pytest.UsageError(f"--compat-accept: {self.expectations.path} cannot be written ({exc}); no "
                                        f"cell was run") from None
        self.baseline_path = config.getoption("compat_baseline")
        if self.baseline_path and not hasattr(config, "workerinput"):  # bad input stops the run before any cell
            from .errors import ResultsError

            try:
                _ = self.baseline  # loads the file once, for the whole run
            except ResultsError as exc:
                raise pytest.UsageError(f"--compat-baseline: {exc}; no cell was run") from None
        self.select = {}
        for axis in AXES:
            names = config.getoption(f"compat_{axis}s") or config.getini(f"compat_{axis}s")
            if names:
                from .cells import check_names

                self.select[axis] = [n.strip() for n in names.split(",") if n.strip()]
                check_names(axis, self.select[axis], f"--compat-{axis}s")
        self.only = _read_cell_list(config.getoption("compat_cells"))
        named = config.getoption("compat_require_declared")
        self.require_declared = ([n.strip() for n in named.split(",") if n.strip()] if named
                                 else config.getini("compat_require_declared"))
        if self.select and not self.selected:
            # Each name is valid, but together they name nothing the matrix holds (say, a CUDA-only stage on a CPU
            # device): a usage error, not a green run of nothing.
            raise pytest.UsageError("the selection matches no cell of the matrix: the chosen stages, styles, dtypes "
                                    "and devices do not apply to one another (compat/cells.py, why_not_applicable); "
                                    "no cell was run")
        from .strategies import DEFAULT_PROFILE, PROFILE_ENV, profile_settings

        self.profile = config.getoption("compat_fuzz_profile") or os.environ.get(PROFILE_ENV) or DEFAULT_PROFILE
        profile_settings(self.profile)  # an unknown name is a usage error now, not in every fuzz test
        self.isa_detection = None  # the process that detects the CPU ISAs once per run (forked children only)
        if self.is_worker:
            self.run_dir = Path(config.workerinput["compat_run_dir"])
            if "compat_gpu" in config.workerinput:  # before anything in this worker initialises CUDA
                os.environ["CUDA_VISIBLE_DEVICES"] = config.workerinput["compat_gpu"]
        else:
            self.results_path = Path(config.getoption("compat_results"))
            try:
                check_writable(self.results_path)
            except OSError as exc:
                raise pytest.UsageError(f"--compat-results {self.results_path}: cannot be written ({exc}); "
                                        f"no cell was run") from None
            given = config.getoption("compat_run_dir")
            self.run_dir = Path(given) if given else Path(tempfile.mkdtemp(prefix="compat-run-"))
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.own_run_dir = not given
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        # Warm Inductor/Triton caches can hide failures: every run, and every worker, starts from empty ones.
        for var, sub in (("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
            os.environ[var] = str(self.run_dir / "cache" / worker / sub)
        self.records: dict[str, dict[tuple, dict]] = {s: {} for s in RECORD}  # per section: (nodeid, worker) ->
        # cell record, from every worker's reports
        self.started = time.monotonic()
        self.session = None  # a RunSession, once the cells are collected
        self.doc = None
        self.accepted: list[str] = []
        self.kept_run_dir = False
        self.fuzz_collected = False  # the fuzz tests were collected (maybe as an empty parameter set)
        self.harness_errors: list[dict] = []
        self.interrupted: str | None = None
        self.changes_path: Path | None = None

    @functools.cached_property
    def env(self) -> dict:
        from .environment import describe

        return describe()

    @functools.cached_property
    def run(self):
        from .expectations import Run

        return Run.from_env(self.env)

    @functools.cached_property
    def baseline(self):
        """What a cell without rows for this run is compared against (compat.baseline), or None."""
        from . import baseline

        return baseline.for_run(self.expectations, self.run, self.baseline_path)

    @functools.cached_property
    def selected(self) -> list:
        from .cells import matrix

        return [c for c in matrix(self.select) if self.only is None or c.id in self.only]

    def check(self, cell, node, section: str = "cells") -> None:
        """Run the cell (section "cells": its stage; "fuzz": its fuzz test), gate it on its expectation, record it."""
        from .expectations import verdict
        from .outcomes import skipped

        start = time.monotonic()
        reason = cell.unavailable_reason()
        run = self.session.outcome if section == "cells" else self.session.fuzz_outcome
        try:
            outcome = skipped(reason) if reason else run(cell)
        except HarnessError as exc:  # the harness failed, not the cell: never recorded as an outcome or accepted
            node.user_properties.append(("compat_harness_error", {"id": cell.id, "section": section,
                                                                   "error": str(exc)}))
            pytest.fail(f"HARNESS ERROR in {cell.id} (not the cell's outcome; nothing recorded or accepted): {exc}",
                        pytrace=False)
        expectation = None if reason else self.expectations.lookup(cell.id, self.run, section)
        complaint = None if reason else verdict(cell.id, expectation, outcome, self.run, self.expectations.path,
                                                section)
        against = None
        if not reason and expectation is None and self.baseline is not None:
            from .baseline import complaint as changed

            ref, change = self.baseline.compare(cell.id, outcome, section)
            if ref is not None:  # unchanged passes, naming the baseline it matched; a change fails, saying what
                against = {"baseline": self.baseline.name, "reference": ref.describe, "change": change}
                complaint = changed(cell.id, change, ref, outcome, self.expectations.path) if change \
                    else None
        if complaint and outcome.detail.get("environment_failure"):
            complaint += f"\n  ENVIRONMENT FAILURE: {outcome.detail['environment_failure']}"
        if complaint and outcome.detail.get("remedy"):
            complaint += f"\n  remedy: {outcome.detail['remedy']}"
        node.user_properties.append((RECORD[section], {
            "id": cell.id, "axes": cell.axes(), "outcome": outcome.to_dict(), "first_line": outcome.first_line,
            "expected": expectation.row if expectation else None,
            "expected_at": expectation.where if expectation else None,
            "verdict": complaint, "against_baseline": against, "duration_s": round(time.monotonic() - start, 2),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "gpu": _gpu_used(outcome) if cell.device == "cuda" and not reason else None}))
        if reason:
            pytest.skip(reason)
        if complaint and not self.accept:
            pytest.fail(complaint, pytrace=False)

    # ---- hooks (this object is registered as a plugin) ----

    def pytest_sessionstart(self, session):
        if self.is_worker:
            return
        self.has_workers = self.config.pluginmanager.has_plugin("dsession")
        # SIGINT and SIGTERM end the run alike: children stopped, results written, nothing left running. Told apart
        # from pytest's other stops (a collection error, -x), which are no interruption. A SIGINT the shell told
        # this process to ignore stays ignored.
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, self._signalled)

    def _signalled(self, signum, frame):
        self.interrupted = f"interrupted by {signal.Signals(signum).name}: the cells done so far"
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def start_isa_detection(self, nodeids) -> None:
        """Once the tests are known: if any will compile an AOTI package, find the CPU ISAs now, once, in the
        background (forked children wait for it; fresh ones detect on their own, the old way)."""
        from .launcher import start_isa_detection
        from .stages import STAGES

        tests = [found for found in map(cell_of, nodeids) if found]
        if self.isa_detection is None and self.config.getoption("compat_children") == "forked" and any(
                STAGES[cell.stage].packaged for cell, _ in tests):
            self.isa_detection = start_isa_detection(self.run_dir / ISA_FILE)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.start_isa_detection(ids)

    def pytest_collection_finish(self, session):
        from .cells import Cell
        from .launcher import Launcher
        from .session import RunSession

        def params(name):  # an empty parameter set leaves a NOTSET placeholder, not a cell
            return [item.callspec.params[name] for item in session.items if hasattr(item, "callspec")
                    and isinstance(item.callspec.params.get(name), Cell)]

        if not self.is_worker:
            self.start_isa_detection([item.nodeid for item in session.items])
        fuzz_cells = params("fuzz_cell")
        known = {c.id: [e.row["example"] for e in [self.expectations.lookup(c.id, self.run, "fuzz")]
                        if e is not None and "example" in e.row] for c in fuzz_cells}
        # Children wait for the ISA file only when they compile a package, which a collected AOTI test started.
        launcher = Launcher(self.run_dir, self.config.getoption("compat_children"), imports=self.cases,
                            paths=(str(self.config.rootpath),), isa_file=str(self.run_dir / ISA_FILE))
        self.session = RunSession(self.run_dir, params("cell"), fuzz_cells, self.profile, known, launcher)

    def pytest_collection_modifyitems(self, session, config, items):
        # One test per namespace whose ops must all be declared: a gate failure that names the undeclared ones.
        items.extend(NamespaceCoverage.from_parent(session, name=f"compat_require_declared[{namespace}]",
                                                   namespace=namespace) for namespace in self.require_declared)

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
        from .launcher import INTERRUPTED

        if self.session is not None:
            self.session.close()
        if self.is_worker:
            return
        if self.interrupted:
            (self.run_dir / INTERRUPTED).touch()  # workers then take their children's deaths as the stop
            _stop_descendants(below_workers=self.has_workers)
            _exit_within(EXIT_WITHIN_S)
        if self.isa_detection is not None and self.isa_detection.poll() is None:
            self.isa_detection.kill()
            self.isa_detection.wait()
        self._write_results()
        # Packages and caches take gigabytes: a green run leaves nothing behind; a failed one keeps its logs.
        self.kept_run_dir = not self.own_run_dir or (exitstatus != 0 and any(self.run_dir.iterdir()))
        if not self.kept_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def pytest_unconfigure(self, config):
        if self.is_worker:
            return
        for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
            if signal.getsignal(sig) == self._signalled:
                signal.signal(sig, default)
        # A run that ended before its session finished (a usage or internal error) leaves no empty run directory.
        if self.own_run_dir and self.run_dir.is_dir() and not any(self.run_dir.iterdir()):
            self.run_dir.rmdir()

    def _write_results(self):
        if not (any(self.records.values()) or self.fuzz_collected or self.harness_errors or self.interrupted):
            return  # none of the plugin's tests ran: nothing to write about
        from . import results
        from .expectations import accept, measured_on
        from .outcomes import Outcome
        from .session import build_counts

        cells = list(self.records["cells"].values())
        if self.accept and not self.interrupted:
            observed = {c["id"]: Outcome.from_dict(c["outcome"]) for c in cells}
            from .baseline import neighbours

            # The rows of each cell's nearest recorded version below: widened, not copied.
            self.accepted = accept(self.expectations, observed, self.run, measured_on(self.env),
                                   neighbours=neighbours(self.expectations, self.run))
            findings = {f["id"]: Outcome.from_dict(f["outcome"]) for f in self.records["fuzz"].values()}
            self.accepted += accept(self.expectations, findings, self.run, measured_on(self.env), section="fuzz")
        options = {"accept": self.accept, "select": self.select, "cells_file": self.config.getoption("compat_cells"),
                   "run_dir": str(self.run_dir), "children": self.config.getoption("compat_children"),
                   "workers": self.config.getoption("numprocesses", None), "fuzz_profile": self.profile,
                   "interrupted": self.interrupted, "baseline": self.baseline.name if self.baseline else None}
        counts = build_counts(self.run_dir)
        counts["children"]["interpreters"] += self.isa_detection is not None  # the ISA detection's own
        self.doc = results.document(self.env, cells, counts, time.monotonic() - self.started, options,
                                    fuzz=list(self.records["fuzz"].values()), harness_errors=self.harness_errors,
                                    fuzz_collected=self.fuzz_collected)
        results.write(self.results_path, self.doc)
        from .baseline import markdown as changes_markdown

        changes = changes_markdown(self.doc)
        if changes:  # the pull-request comment of an upgrade: what changed against the baseline
            from .atomic import write_atomic

            self.changes_path = self.results_path.with_name(f"{self.results_path.stem}.changes.md")
            write_atomic(self.changes_path, changes)

    def pytest_terminal_summary(self, terminalreporter):
        if self.doc is None:
            return
        from .summary import summary_lines

        terminalreporter.section("triton-export-compat matrix")
        if self.interrupted:
            terminalreporter.write_line(f"INTERRUPTED: {self.results_path} holds {self.interrupted}")
        for line in summary_lines(self.doc, str(self.results_path), width=terminalreporter._tw.fullwidth):
            terminalreporter.write_line(line)
        if self.changes_path:
            terminalreporter.write_line(f"changes against the baseline, as Markdown: {self.changes_path}")
        for change in self.accepted:
            terminalreporter.write_line(f"accepted: {change}")
        if self.accept:
            terminalreporter.write_line(f"--compat-accept: {len(self.accepted)} change(s) written to "
                                        f"{self.expectations.path}" + (" (none: the run was interrupted)"
                                                                       if self.interrupted else ""))
        if self.kept_run_dir:
            terminalreporter.write_line(f"run directory (child logs, artifacts): {self.run_dir}")


class NamespaceCoverage(pytest.Item):
    """Every op registered under a namespace has a declaration as shipped (compat.coverage)."""

    def __init__(self, *, namespace: str, **kwargs):
        super().__init__(**kwargs)
        self.namespace = namespace

    def runtest(self):
        from . import coverage

        if not coverage.registered(self.namespace):
            pytest.fail(f"no op is registered under {self.namespace!r}: is the package that registers them imported "
                        f"by a compat_cases module?", pytrace=False)
        missing = coverage.undeclared(self.namespace)
        if missing:
            pytest.fail(f"{len(missing)} op(s) of {self.namespace!r} have no declaration as shipped (compat.Op): "
                        f"{', '.join(missing)}", pytrace=False)

    def reportinfo(self):
        return self.path, None, self.name


_KEY = pytest.StashKey[CompatRun]()


EXIT_WITHIN_S = 30.0  # an interrupted run that has not ended by then (xdist still waiting on a worker) is ended


def _exit_within(seconds: float) -> None:
    """Make sure an interrupted run ends: if it still runs after `seconds` (its results are written by then), dump
    every thread's stack (the evidence of what held it), stop every process it started, workers too, and exit 130."""
    import faulthandler
    import threading

    faulthandler.dump_traceback_later(seconds - 1, exit=False)

    def end():
        time.sleep(seconds)
        print(f"triton-export-compat: the interrupted run did not end within {seconds:.0f} s; stopping its workers",
              file=sys.stderr, flush=True)
        _stop_descendants(below_workers=False)
        os._exit(130)

    threading.Thread(target=end, name="compat-exit-within", daemon=True).start()


def _stop_descendants(below_workers: bool) -> None:
    """Kill every process this run started below its xdist workers (warm servers, children, their compilers), or
    below this process when it has no workers; the workers themselves are xdist's to stop. Linux: read from /proc."""
    if not sys.platform.startswith("linux"):
        return
    for _ in range(3):  # a server may fork once more before it dies
        children: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        roots = children.get(os.getpid(), []) if below_workers else [os.getpid()]
        doomed, stack = [], [c for root in roots for c in children.get(root, [])]
        while stack:
            pid = stack.pop()
            doomed.append(pid)
            stack.extend(children.get(pid, []))
        if not doomed:
            return
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def _read_cell_list(path: str | None) -> set[str] | None:
    if path is None:
        return None
    from .cells import parse_cell_id

    try:
        lines = Path(path).read_text().split()
    except OSError as exc:
        raise CompatError(f"--compat-cells {path}: cannot be read ({exc.strerror})") from None
    return {parse_cell_id(line, f"--compat-cells {path}").id for line in lines}


def _state(config) -> CompatRun | None:
    return config.stash.get(_KEY, None)


INACTIVE = ("the triton-export-compat plugin is off in this repository: name the modules that declare your kernels "
            "in your pytest ini (compat_cases = mypkg.compat_cases), or give a --compat option")


def _gpu_used(outcome) -> str:
    """The GPU the cell's work ran on: its child's (an export cell's build may have run in another worker)."""
    child = outcome.detail.get("child") or {}
    return child.get("CUDA_VISIBLE_DEVICES") or os.environ.get("CUDA_VISIBLE_DEVICES") or "default"


def pytest_configure(config):
    if not active(config):
        return  # installed everywhere, inert unless asked: no run directory, no results file, no hooks at work
    try:
        state = CompatRun(config)
    except CompatError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_KEY] = state
    config.pluginmanager.register(state, "compat-run")
    # Select with -m: the matrix alone (-m "not fuzz"), its fuzz tests alone (-m fuzz), everything else (-m "not
    # matrix").
    config.addinivalue_line("markers", "matrix: a cell of the matrix or its fuzz test")
    config.addinivalue_line("markers", "fuzz: a fuzz test of a cell")


# ---- pytest-xdist hooks (optional: the plugin works without xdist) ----

@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    if _state(config) is None:
        return None
    from .workers import auto_workers, gib_per_worker, visible_gpus

    return auto_workers(os.cpu_count() or 1, visible_gpus(), gib_per_worker())


TEST_GROUPS = re.compile(r"::(?P<test>test_cell|test_fuzz)\[(?P<cell>[^\]]+)\]")


def cell_of(nodeid: str):
    """(cell, section) of a matrix or fuzz test's node id, or None for any other test (and for an empty parameter
    set's NOTSET placeholder, which is no cell)."""
    from .cells import in_matrix, parse_cell_id

    m = TEST_GROUPS.search(nodeid)
    if m is None or not in_matrix(m["cell"]):
        return None
    return parse_cell_id(m["cell"], "xdist scheduler"), "fuzz" if m["test"] == "test_fuzz" else "cells"


def shared_child_group(nodeid: str) -> str | None:
    """The group whose tests share one child process: a probe, a build, a fuzz child (compat.session)."""
    from .session import shared_group

    found = cell_of(nodeid)
    return shared_group(*found) if found else None


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` (the project's default) sends the tests of one shared child to one worker, which runs the
    child once. The groups come from the cell ids, not from xdist_group marks: xdist 3.8 groups by an `@group` suffix
    it writes into item._nodeid, which pytest 9 no longer reads, so marks alone would silently scatter a group."""
    if _state(config) is None or config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class SharedChildScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return shared_child_group(nodeid) or super()._split_scope(nodeid)

    return SharedChildScheduling(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    from .workers import gpu_for, visible_gpus

    state = _state(node.config)
    if state is None:
        return
    node.workerinput["compat_run_dir"] = str(state.run_dir)
    gpus = visible_gpus()
    if gpus:
        node.workerinput["compat_gpu"] = gpu_for(node.gateway.id, gpus)


def pytest_generate_tests(metafunc):
    from .stages import STAGES

    state = _state(metafunc.config)
    if state is None:
        if {"cell", "fuzz_cell"} & set(metafunc.fixturenames):
            raise pytest.UsageError(INACTIVE)
        return
    if "cell" in metafunc.fixturenames:
        metafunc.parametrize("cell", [pytest.param(c, id=c.id, marks=pytest.mark.matrix) for c in state.selected])
    if "fuzz_cell" in metafunc.fixturenames:
        # Every cell expected to pass on this run (torch, triton, host), in the stages whose artifact is fuzzed.
        metafunc.parametrize("fuzz_cell", [pytest.param(c, id=c.id, marks=(pytest.mark.matrix, pytest.mark.fuzz))
                                           for c in state.selected
                                           if STAGES[c.stage].fuzzed and _expected_to_pass(state, c)])


def _expected_to_pass(state: CompatRun, cell) -> bool:
    """Its row says it passes on this run; without a row, its baseline's does."""
    expectation = state.expectations.lookup(cell.id, state.run)
    if expectation is not None:
        return expectation.row["outcome"] == "passed"
    ref = state.baseline.reference(cell.id, "cells") if state.baseline is not None else None
    return ref is not None and (ref.row.row["outcome"] if ref.row else ref.outcome["kind"]) == "passed"


@pytest.fixture
def compat(request) -> CompatRun:
    state = _state(request.config)
    if state is None:
        raise pytest.UsageError(INACTIVE)
    return state
