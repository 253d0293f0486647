"""The plugin's command-line options, declared once: pytest registers them (compat.plugin) and `python -m compat run
--help` lists them (compat.__main__), without importing the plugin before pytest can; it imports nothing of the
suite's, so loading the plugin in a pytest that does not ask for it costs nothing."""

from __future__ import annotations

import sys

AXES = ("kernel", "style", "stage", "dtype", "device")
# How children start (compat.run.launcher): forked from a warm server per worker, or a fresh interpreter per task.
MODES = ("forked", "fresh")
DEFAULT_MODE = "forked" if sys.platform.startswith("linux") else "fresh"
# Where Inductor's and Triton's caches live: one per run that every worker shares (what is identical compiles once),
# one per xdist worker (the old way, for the benchmark), or one per child that starts empty (the check that sharing
# changes no outcome).
COMPILE_CACHES = ("run", "worker", "child")
RUNS_DIR = "compat-results"  # where `python -m compat run` writes by default: never the committed results/
SHARDS_DIR = "compat-shards"  # where `shard` writes its cell lists by default
REPORT_DIR = "compat-report"  # where `report` and `versions` write by default: never the published docs/

OPTIONS = (
    (("--compat-results",), dict(default="compat-results.json", metavar="PATH",
                                 help="results JSON written at the end of the run (default: compat-results.json)")),
    (("--compat-expectations",), dict(default=None, metavar="PATH",
                                      help="expectations YAML (default: expectations.yaml in the rootdir)")),
    (("--compat-baseline",), dict(default=None, metavar="OLD.json",
                                  help="for cells without rows for this torch/triton, fail only on what changed "
                                       "against this results file (default: the rows of the nearest recorded version "
                                       "below this one, on this host)")),
    (("--compat-accept",), dict(action="store_true", help="record observed outcomes into the expectations file "
                                                          "instead of failing on differences")),
    (("--compat-run-dir",), dict(default=None, metavar="DIR",
                                 help="where children, artifacts, logs and caches go (default: a new temporary "
                                      "directory, removed after a green run)")),
    (("--compat-cells",), dict(default=None, metavar="FILE", help="run only the cell ids listed in FILE, one per "
                                                                  "line (with the axis options, both apply)")),
    (("--compat-fuzz-profile",), dict(default=None, metavar="NAME",
                                      help="Hypothesis profile of the fuzz tests: ci (derandomized, 25 examples) or "
                                           "thorough (100 examples); default: $COMPAT_HYPOTHESIS_PROFILE, else ci")),
    (("--compat-require-declared",), dict(default=None, metavar="NAMESPACES",
                                          help="comma-separated torch.library namespaces whose every registered op "
                                               "must be declared as shipped (compat.Op): the run fails naming the "
                                               "others (default: ini compat_require_declared)")),
    (("--compat-children",), dict(default=DEFAULT_MODE, choices=MODES,
                                  help=f"how children start: forked from a warm server per worker (fast) or fresh "
                                       f"interpreters (the old way, for comparison); default: {DEFAULT_MODE}")),
    (("--compat-compile-cache",), dict(default=COMPILE_CACHES[0], choices=COMPILE_CACHES,
                                       help="Inductor's and Triton's caches: one per run shared by every worker "
                                            "(default), one per worker, or an empty one per child")),
    (("--compat-durations",), dict(default=None, metavar="RESULTS.json",
                                   help="a results file whose recorded durations order the run, longest shared "
                                        "child first (default: ini compat_durations, else the collection's order)")),
    *((((f"--compat-{axis}s",), dict(default=None, metavar="NAMES",
                                     help=f"comma-separated {axis} names to run (default: all)")) for axis in AXES)),
)


