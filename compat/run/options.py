"""The plugin's command-line options, declared once: pytest registers them (compat.plugin) and `python -m compat run
--help` lists them (compat.__main__), without importing the plugin before pytest can; it imports nothing of the
suite's, so loading the plugin in a pytest that does not ask for it costs nothing."""

from __future__ import annotations

import sys
from typing import Any

AXES = ("kernel", "style", "stage", "dtype", "device")
# How children start (compat.run.launcher): forked from a warm server per worker, or a fresh interpreter per task.
MODES = ("forked", "fresh")
DEFAULT_MODE = "forked" if sys.platform.startswith("linux") else "fresh"
# Where the compilers' caches live. `kernels`: Triton's compiled kernels, content-addressed (source, constants,
# target), one cache per run that every worker shares; Inductor's caches private to each child, as a user's first
# compile is: shared across a run's cells they changed 4 of 548 outcomes on the H100 (an in-place autotuned kernel
# passed where its own compile gives wrong values; docs/EVIDENCE.md). `child`: both private to each child.
COMPILE_CACHES = {"kernels": ("TORCHINDUCTOR_CACHE_DIR",), "child": ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
RUNS_DIR = "compat-results"  # where `python -m compat run` writes by default: never the committed results/
SHARDS_DIR = "compat-shards"  # where `shard` writes its cell lists by default
REPORT_DIR = "compat-report"  # where `report` and `versions` write by default: never the published docs/

OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (
        ("--compat-results",),
        dict(
            default=None,
            metavar="PATH",
            help="results JSON written at the end of the run (default: a new file under compat-results/ in the "
            "rootdir, one per run, and compat-results/latest.json linking the newest run no later run cut short "
            "or narrowed)",
        ),
    ),
    (
        ("--compat-expectations",),
        dict(default=None, metavar="PATH", help="expectations YAML (default: expectations.yaml in the rootdir)"),
    ),
    (
        ("--compat-baseline",),
        dict(
            default=None,
            metavar="OLD.json",
            help="for cells without rows for this torch/triton, fail only on what changed "
            "against this results file (default: the rows of the nearest recorded version "
            "below this one, on this host)",
        ),
    ),
    (
        ("--compat-accept",),
        dict(
            action="store_true",
            help="record observed outcomes into the expectations file instead of failing on differences",
        ),
    ),
    (
        ("--compat-overwrite-read-only",),
        dict(
            action="store_true",
            help="with --compat-accept: replace the expectations file even where "
            "it is read-only (0444); refused before any cell otherwise",
        ),
    ),
    (
        ("--compat-run-dir",),
        dict(
            default=None,
            metavar="DIR",
            help="where children, artifacts, logs and caches go (default: a new temporary "
            "directory, removed after a green run)",
        ),
    ),
    (
        ("--compat-cells",),
        dict(
            default=None,
            metavar="FILE",
            help="run only the cell ids listed in FILE, one per line (with the axis options, both apply)",
        ),
    ),
    (
        ("--compat-tier",),
        dict(
            default="full",
            choices=("full", "quick", "sample"),
            help="full (default): every cell; quick, a PR gate: every stage in float32, the other "
            "dtypes only for eager, compile_inductor and the stages that train; sample, the check before "
            "landing a change of the harness: each kernel, style, stage and device at least once; fuzz "
            "tests follow their cells (README: what quick would have missed)",
        ),
    ),
    (
        ("--compat-fuzz-profile",),
        dict(
            default=None,
            metavar="NAME",
            help="Hypothesis profile of the fuzz tests: ci (derandomized, 25 examples) or "
            "thorough (100 examples); default: $COMPAT_HYPOTHESIS_PROFILE, else ci",
        ),
    ),
    (
        ("--compat-require-declared",),
        dict(
            default=None,
            metavar="NAMESPACES",
            help="comma-separated torch.library namespaces whose every registered op "
            "must be declared as shipped (compat.Op): the run fails naming the "
            "others (default: ini compat_require_declared)",
        ),
    ),
    (
        ("--compat-children",),
        dict(
            default=None,
            choices=MODES,
            help=f"how children start: forked from a warm server per worker (fast; a cases "
            f"module whose import touches CUDA is imported by each child after its "
            f"fork) or fresh interpreters; default: ini compat_children, else "
            f"{DEFAULT_MODE}",
        ),
    ),
    (
        ("--compat-compile-cache",),
        dict(
            default="kernels",
            choices=tuple(COMPILE_CACHES),
            help="kernels (default): Triton's compiled kernels shared by the run's "
            "workers, Inductor's caches empty in each child; child: both empty in "
            "each child",
        ),
    ),
    (
        ("--compat-durations",),
        dict(
            action="append",
            default=None,
            metavar="RESULTS.json",
            help="a results file whose recorded durations order the run, longest shared child first; again for "
            "another device's (default: ini compat_durations, else the collection's order)",
        ),
    ),
    *(
        (
            (
                (f"--compat-{axis}s",),
                dict(default=None, metavar="NAMES", help=f"comma-separated {axis} names to run (default: all)"),
            )
            for axis in AXES
        )
    ),
)


def children_mode(config) -> str:
    """How the run's children start: --compat-children, else the ini's compat_children, else the default."""
    mode = config.getoption("compat_children") or config.getini("compat_children") or DEFAULT_MODE
    if mode not in MODES:
        import pytest  # only when asked: this module imports nothing at load

        raise pytest.UsageError(f"compat_children = {mode} in {config.inipath}: children start {' or '.join(MODES)}")
    return mode
