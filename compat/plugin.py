"""The pytest plugin: parametrizes `test_cell` over the matrix, gates each outcome on its expectation, and writes the
results file and the matrix summary at the end of the run (in the xdist controller, from the workers' reports)."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from .atomic import check_writable
from .errors import CompatError

AXES = ("kernel", "style", "stage", "dtype", "device")
RECORD = "compat_cell"


def pytest_addoption(parser):
    g = parser.getgroup("compat", "triton-export-compat matrix")
    g.addoption("--compat-results", default="compat-results.json", metavar="PATH",
                help="results JSON written at the end of the run (default: compat-results.json)")
    g.addoption("--compat-expectations", default=None, metavar="PATH",
                help="expectations YAML (default: expectations.yaml in the rootdir)")
    g.addoption("--compat-accept", action="store_true",
                help="record observed outcomes into the expectations file instead of failing on differences")
    g.addoption("--compat-run-dir", default=None, metavar="DIR",
                help="where children, artifacts, logs and caches go (default: a new temporary directory, removed "
                     "after a green run)")
    g.addoption("--compat-cells", default=None, metavar="FILE",
                help="run only the cell ids listed in FILE, one per line (with the axis options, both apply)")
    for axis in AXES:
        g.addoption(f"--compat-{axis}s", default=None, metavar="NAMES",
                    help=f"comma-separated {axis} names to run (default: all)")


class CompatRun:
    """Per-process state of a matrix run."""

    def __init__(self, config):
        from .expectations import Expectations

        self.config = config
        self.accept = config.getoption("compat_accept")
        self.is_worker = hasattr(config, "workerinput")
        path = config.getoption("compat_expectations") or Path(config.rootpath) / "expectations.yaml"
        self.expectations = Expectations.load(path)
        self.select = {}
        for axis in AXES:
            names = config.getoption(f"compat_{axis}s")
            if names:
                from .cells import check_names

                self.select[axis] = [n.strip() for n in names.split(",") if n.strip()]
                check_names(axis, self.select[axis], f"--compat-{axis}s")
        self.only = _read_cell_list(config.getoption("compat_cells"))
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
            self.own_run_dir = not given
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        # Warm Inductor/Triton caches can hide failures: every run, and every worker, starts from empty ones.
        for var, sub in (("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
            os.environ[var] = str(self.run_dir / "cache" / worker / sub)
        self.records: dict[tuple, dict] = {}  # (nodeid, worker) -> cell record, from every worker's reports
        self.started = time.monotonic()
        self.session = None  # a RunSession, once the cells are collected
        self.doc = None
        self.accepted: list[str] = []
        self.kept_run_dir = False

    @functools.cached_property
    def env(self) -> dict:
        from .environment import describe

        return describe()

    @functools.cached_property
    def run(self):
        from .expectations import Run

        return Run.from_env(self.env)

    def check(self, cell, node) -> None:
        from .expectations import verdict
        from .outcomes import skipped
        from .stages import STAGES

        start = time.monotonic()
        reason = cell.unavailable_reason()
        outcome = skipped(reason) if reason else STAGES[cell.stage].run(cell, self.session)
        expectation = None if reason else self.expectations.lookup(cell.id, self.run)
        complaint = None if reason else verdict(cell.id, expectation, outcome, self.run, self.expectations.path)
        if complaint and outcome.detail.get("environment_failure"):
            complaint += f"\n  ENVIRONMENT FAILURE: {outcome.detail['environment_failure']}"
        if complaint and outcome.detail.get("remedy"):
            complaint += f"\n  remedy: {outcome.detail['remedy']}"
        node.user_properties.append((RECORD, {
            "id": cell.id, "axes": cell.axes(), "outcome": outcome.to_dict(), "first_line": outcome.first_line,
            "expected": expectation.row if expectation else None,
            "expected_at": f"cells.{expectation.cell_id}[{expectation.index}]" if expectation else None,
            "verdict": complaint, "duration_s": round(time.monotonic() - start, 2),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "gpu": _gpu_used(outcome) if cell.device == "cuda" and not reason else None}))
        if reason:
            pytest.skip(reason)
        if complaint and not self.accept:
            pytest.fail(complaint, pytrace=False)


    # ---- hooks (this object is registered as a plugin) ----

    def pytest_collection_finish(self, session):
        from .session import RunSession

        cells = [item.callspec.params["cell"] for item in session.items
                 if hasattr(item, "callspec") and "cell" in item.callspec.params]
        self.session = RunSession(self.run_dir, cells)

    def pytest_runtest_logreport(self, report):
        for name, record in report.user_properties:
            if name == RECORD:  # by node and worker: under `--dist each` every worker runs every cell
                self.records[(report.nodeid, record["worker"])] = record

    def pytest_sessionfinish(self, session, exitstatus):
        if self.is_worker:
            return
        self._write_results()
        # Packages and caches take gigabytes: a green run leaves nothing behind; a failed one keeps its logs.
        self.kept_run_dir = exitstatus != 0 or not self.own_run_dir
        if not self.kept_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def _write_results(self):
        if not self.records:
            return
        from . import results
        from .expectations import accept, measured_on
        from .outcomes import Outcome
        from .session import build_counts

        cells = list(self.records.values())
        if self.accept:
            observed = {c["id"]: Outcome.from_dict(c["outcome"]) for c in cells}
            self.accepted = accept(self.expectations, observed, self.run, measured_on(self.env))
        options = {"accept": self.accept, "select": self.select, "cells_file": self.config.getoption("compat_cells"),
                   "run_dir": str(self.run_dir),
                   "workers": self.config.getoption("numprocesses", None)}
        self.doc = results.document(self.env, cells, build_counts(self.run_dir), time.monotonic() - self.started,
                                    options)
        results.write(self.results_path, self.doc)

    def pytest_terminal_summary(self, terminalreporter):
        if self.doc is None:
            return
        from .report import summary_lines

        terminalreporter.section("triton-export-compat matrix")
        for line in summary_lines(self.doc, str(self.results_path)):
            terminalreporter.write_line(line)
        for change in self.accepted:
            terminalreporter.write_line(f"accepted: {change}")
        if self.accept:
            terminalreporter.write_line(f"--compat-accept: {len(self.accepted)} change(s) written to "
                                        f"{self.expectations.path}")
        if self.kept_run_dir:
            terminalreporter.write_line(f"run directory (child logs, artifacts): {self.run_dir}")


_KEY = pytest.StashKey[CompatRun]()


def _read_cell_list(path: str | None) -> set[str] | None:
    if path is None:
        return None
    from .cells import parse_cell_id

    try:
        lines = Path(path).read_text().split()
    except OSError as exc:
        raise CompatError(f"--compat-cells {path}: cannot be read ({exc.strerror})") from None
    return {parse_cell_id(line, f"--compat-cells {path}").id for line in lines}


def _state(config) -> CompatRun:
    return config.stash[_KEY]


def _gpu_used(outcome) -> str:
    """The GPU the cell's work ran on: its child's (an export cell's build may have run in another worker)."""
    child = outcome.detail.get("child") or {}
    return child.get("CUDA_VISIBLE_DEVICES") or os.environ.get("CUDA_VISIBLE_DEVICES") or "default"


def pytest_configure(config):
    try:
        state = CompatRun(config)
    except CompatError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_KEY] = state
    config.pluginmanager.register(state, "compat-run")


# ---- pytest-xdist hooks (optional: the plugin works without xdist) ----

@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    from .workers import auto_workers, gib_per_worker, visible_gpus

    return auto_workers(os.cpu_count() or 1, visible_gpus(), gib_per_worker())


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    from .workers import gpu_for, visible_gpus

    state = _state(node.config)
    node.workerinput["compat_run_dir"] = str(state.run_dir)
    gpus = visible_gpus()
    if gpus:
        node.workerinput["compat_gpu"] = gpu_for(node.gateway.id, gpus)


def pytest_generate_tests(metafunc):
    if "cell" in metafunc.fixturenames:
        from .cells import matrix
        from .session import probe_group
        from .stages import STAGES

        # Under `--dist loadgroup` (the project's default) the probe stages of one (kernel, style, dtype, device) go
        # to one worker, which runs them all in one child process.
        state = _state(metafunc.config)
        cells = [pytest.param(c, id=c.id, marks=[pytest.mark.xdist_group(probe_group(c))] if STAGES[c.stage].probe
                              else []) for c in matrix(state.select) if state.only is None or c.id in state.only]
        metafunc.parametrize("cell", cells)


@pytest.fixture
def compat(request) -> CompatRun:
    return _state(request.config)


def _config_snapshot() -> dict[str, str]:
    import torch._dynamo.config
    import torch._inductor.config

    return {f"{module.__name__}.{key}": repr(value)
            for module in (torch._dynamo.config, torch._inductor.config)
            for key, value in module.get_config_copy().items()}


_CONFIG_BEFORE = pytest.StashKey[dict]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    item.stash[_CONFIG_BEFORE] = _config_snapshot()  # before any fixture of the test is set up
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Fail a test that leaves torch._dynamo or torch._inductor config changed for the tests after it.

    Checked after every fixture is torn down, so fixtures have restored what they patched."""
    result = yield
    before, after = item.stash.get(_CONFIG_BEFORE, None), _config_snapshot()
    leaked = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)) if before else []
    if leaked:
        pytest.fail(f"this test leaked config changes into the next: {', '.join(leaked)}; restore them with "
                    f"torch._dynamo.config.patch / torch._inductor.config.patch", pytrace=False)
    return result
