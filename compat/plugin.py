"""The pytest plugin (the `pytest11` entry point `compat.plugin`), as thin as pytest-xdist's own: it declares the
options, and where a repository asks for it (a cases module named, or a --compat option given) its configure hook
registers a `Controller` (the session's process) or a `Worker` (an xdist worker) from compat.run.controller, which
holds the hooks that parametrize the matrix, run each cell, and write the results. Everywhere else it is inert and
imports nothing of the suite's: loading it costs a pytest that does not use it nothing."""

from __future__ import annotations

import pytest

from .errors import CompatError
from .matrix.cases import installed_case_modules
from .run.options import AXES, OPTIONS
from .run.workers import auto_workers, gib_per_worker, usable_cpus, visible_gpus

INACTIVE = (
    "the triton-export-compat plugin is off in this repository: name the modules that declare your kernels "
    "in your pytest ini (compat_cases = mypkg.compat_cases), or give a --compat option"
)
_KEY = pytest.StashKey[object]()


def pytest_addoption(parser):
    group = parser.getgroup("compat", "triton-export-compat matrix")
    for flags, options in OPTIONS:
        group.addoption(*flags, **options)
    parser.addini(
        "compat_cases",
        type="args",
        default=[],
        help="modules that declare the kernels to test (imported here and in every child before any cell "
        "is resolved), e.g. mypkg.compat_cases; naming any turns the plugin on",
    )
    parser.addini(
        "compat_expectations",
        default=None,
        help="the expectations YAML, relative to the ini file (default: expectations.yaml in the rootdir); "
        "accept creates it",
    )
    parser.addini(
        "compat_durations",
        type="paths",
        default=[],
        help="results files, relative to the ini file, whose recorded seconds order the run longest shared child "
        "first, one a device (--compat-durations overrides them)",
    )
    for axis in AXES:
        parser.addini(f"compat_{axis}s", default=None, help=f"the {axis} names to run unless --compat-{axis}s says")
    parser.addini(
        "compat_children",
        default=None,
        help="how children start, forked or fresh (--compat-children overrides it): fresh for a platform without fork",
    )
    parser.addini(
        "compat_require_declared",
        type="args",
        default=[],
        help="torch.library namespaces whose every registered op must be declared as shipped (compat.Op)",
    )


def case_modules(config) -> tuple[str, ...]:
    """The modules that declare kernels: the ini's `compat_cases`, and the entry points of installed packages."""
    return tuple(dict.fromkeys([*config.getini("compat_cases"), *installed_case_modules()]))


def active(config) -> bool:
    """The plugin acts only where asked: kernel modules named (ini or entry point), or a --compat option given."""
    defaults = {
        options.get("dest") or flags[0].lstrip("-").replace("-", "_"): options.get("default")
        for flags, options in OPTIONS
    }
    return bool(case_modules(config)) or any(
        config.getoption(dest) not in (default, False) for dest, default in defaults.items()
    )


def pytest_configure(config):
    if not active(config):
        return  # installed everywhere, inert unless asked: no run directory, no results file, no hooks at work
    # Here, not at the top: torch, triton and the suite load only where a repository asks for the plugin.
    from .run.controller import Controller
    from .run.matrix_run import Worker

    role = Worker if hasattr(config, "workerinput") else Controller
    try:
        state = role(config, case_modules(config))
    except CompatError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_KEY] = state
    config.pluginmanager.register(state, "compat-run")
    # Select with -m: the matrix alone (-m "not fuzz"), its fuzz tests alone (-m fuzz), everything else (-m "not
    # matrix").
    config.addinivalue_line("markers", "matrix: a cell of the matrix or its fuzz test")
    config.addinivalue_line("markers", "fuzz: a fuzz test of a cell")


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: xdist asks before any configure hook has run, so this one stays at module level."""
    if not active(config):
        return None
    return auto_workers(usable_cpus(), visible_gpus(), gib_per_worker())


def pytest_generate_tests(metafunc):
    if config_state(metafunc.config) is None and {"cell", "fuzz_cell"} & set(metafunc.fixturenames):
        raise pytest.UsageError(INACTIVE)


def config_state(config):
    """The run's Controller or Worker, or None where the plugin is inert."""
    return config.stash.get(_KEY, None)


@pytest.fixture
def compat(request):
    state = config_state(request.config)
    if state is None:
        raise pytest.UsageError(INACTIVE)
    return state
