"""Command line: `python -m compat run [pytest args...]` runs the matrix and prints its report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(args: argparse.Namespace, extra: list[str]) -> int:
    import pytest

    from .environment import describe, machine_label

    results = args.results or str(Path("results") / f"{machine_label(describe())}.json")
    pytest_args = [str(ROOT / "tests" / "test_matrix.py"), "--rootdir", str(ROOT), "-n", args.workers,
                   f"--compat-results={results}", *extra]
    print(f"pytest {' '.join(pytest_args)}", flush=True)
    return int(pytest.main(pytest_args))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the matrix (pytest under xdist) and write results/<torch>_<triton>_<gpu>.json",
                         epilog="Arguments it does not know go to pytest, e.g. --compat-accept or --compat-styles.")
    run.add_argument("--results", help="results path (default: results/torch-<v>_triton-<v>_<gpu>.json)")
    run.add_argument("-n", "--workers", default="auto", help="xdist workers (default: auto)")
    args, extra = parser.parse_known_args(argv)
    if args.command == "run":
        return _run(args, extra)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
