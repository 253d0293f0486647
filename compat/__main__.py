"""Command line.

  python -m compat run [pytest args...]          the matrix under pytest-xdist; results/<torch>_<triton>_<gpu>.json
  python -m compat report RESULTS.json           docs/SUPPORT_MATRIX.md and docs/support_matrix.html from a run
  python -m compat diff OLD.json NEW.json        what changed, as Markdown; exit 1 when anything regressed
  python -m compat accept RESULTS.json           record a run's outcomes into expectations.yaml (as --compat-accept)
  python -m compat merge OUT.json RESULTS.json..  one results file from partial runs (shards, runs cut short)
  python -m compat fuzz CELL --example JSON      rerun one fuzz example (the command a failing fuzz test prints)
  python -m compat doctor                        versions, GPUs, and the AOTI canary (exit 1 if it fails)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import CompatError

ROOT = Path(__file__).resolve().parent.parent
DOCS = {"md": "SUPPORT_MATRIX.md", "html": "support_matrix.html"}


def _run(args: argparse.Namespace, extra: list[str]) -> int:
    import pytest

    from .environment import describe, machine_label

    results = args.results or str(Path("results") / f"{machine_label(describe())}.json")
    pytest_args = [str(ROOT / "tests" / "test_matrix.py"), str(ROOT / "tests" / "test_fuzz.py"), "--rootdir", str(ROOT), "-n", args.workers,
                   f"--compat-results={results}", *extra]
    print(f"pytest {' '.join(pytest_args)}", flush=True)
    return int(pytest.main(pytest_args))


def render_docs(results_path: str) -> dict[str, str]:
    """The documentation pages generated from one results file, by file name."""
    from . import report, results

    doc = results.load(results_path)
    return {DOCS["md"]: report.markdown(doc, results_path), DOCS["html"]: report.html_page(doc, results_path)}


def _report(args: argparse.Namespace) -> int:
    from .atomic import check_writable, write_atomic

    pages = render_docs(args.results)
    out = Path(args.out_dir)
    for name, text in pages.items():
        try:
            check_writable(out / name)
        except OSError as exc:
            raise CompatError(f"{out / name}: cannot be written ({exc})") from None
    for name, text in pages.items():
        write_atomic(out / name, text)
        print(out / name)
    return 0


def _diff(args: argparse.Namespace) -> int:
    from . import diff, results

    old, new = results.load(args.old), results.load(args.new)
    text = diff.markdown(old, new, args.old, args.new)
    if args.output:
        from .atomic import write_atomic

        write_atomic(args.output, text)
    print(text, end="")
    return 1 if diff.regressed(diff.compare(old, new)) else 0


def _accept(args: argparse.Namespace) -> int:
    from . import results
    from .cells import in_matrix
    from .expectations import Expectations, Run, accept, measured_on
    from .outcomes import Outcome

    doc = results.load(args.results)
    exp = Expectations.load(args.expectations)
    observed = {c["id"]: Outcome.from_dict(c["outcome"]) for c in doc["cells"]}
    changes = accept(exp, observed, Run.from_env(doc["environment"]), measured_on(doc["environment"]))
    for change in changes:
        print(f"accepted: {change}")
    left_out = sum(not in_matrix(cell_id) for cell_id in observed)
    print(f"{len(changes)} change(s) written to {exp.path}"
          + (f"; {left_out} cell(s) no longer in the matrix left out" if left_out else ""))
    return 0


def _merge(args: argparse.Namespace) -> int:
    from . import results
    from .expectations import Expectations

    doc = results.merge(args.results, Expectations.load(args.expectations))
    results.write(args.out, doc)
    s = doc["summary"]
    print(f"{args.out}: {s['cells']} cells from {len(args.results)} runs, {s['unexpected']} differ from expectations")
    return 0


def _fuzz(args: argparse.Namespace) -> int:
    """One example through the cell's artifact, built in a child with the cell's environment, as the fuzz test did."""
    import json
    import tempfile

    from .cells import parse_cell_id
    from .fuzzing import fuzz_task
    from .isolation import run_child
    from .session import child_env
    from .strategies import DEFAULT_PROFILE, Example

    cell = parse_cell_id(args.cell, "python -m compat fuzz")
    try:
        Example.from_json(args.example)
    except (ValueError, KeyError, TypeError) as exc:
        raise CompatError(f"--example: not an example's JSON ({exc}); copy it from the failing test's reproducer")
    fn, task, timeout = fuzz_task(cell, [cell.stage], DEFAULT_PROFILE, args.example)
    with tempfile.TemporaryDirectory(prefix="compat-fuzz-") as workdir:
        outcome = run_child(fn, task, workdir=Path(workdir), env=child_env(cell), timeout=timeout).outcome(
            cell.stage, among=("export", cell.stage))
    print(json.dumps(outcome.to_dict(), indent=1, default=str))
    print(f"{cell.id}: {outcome.summary()}")
    return 0 if outcome.kind == "passed" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the matrix (pytest under xdist) and write its results file",
                         epilog="Arguments it does not know go to pytest, e.g. --compat-accept or --compat-styles.")
    run.add_argument("--results", help="results path (default: results/torch-<v>_triton-<v>_<gpu>.json)")
    run.add_argument("-n", "--workers", default="auto", help="xdist workers (default: auto)")
    rep = sub.add_parser("report", help="render the support matrix (Markdown and HTML) from a results file")
    rep.add_argument("results", help="a results JSON written by a run")
    rep.add_argument("--out-dir", default="docs", help="where the pages go (default: docs)")
    dif = sub.add_parser("diff", help="list cells whose outcome changed between two results files")
    dif.add_argument("old")
    dif.add_argument("new")
    dif.add_argument("--output", help="also write the Markdown here")
    acc = sub.add_parser("accept", help="record the outcomes of a results file into the expectations file")
    acc.add_argument("results", help="a results JSON written by a run")
    acc.add_argument("--expectations", default=str(ROOT / "expectations.yaml"),
                     help="the expectations YAML to update (default: the project's)")
    mer = sub.add_parser("merge", help="merge partial runs of one torch/triton into one results file")
    mer.add_argument("out", help="the merged results JSON to write")
    mer.add_argument("results", nargs="+", help="results JSONs, oldest first (a later run's cell wins)")
    mer.add_argument("--expectations", default=str(ROOT / "expectations.yaml"),
                     help="the expectations to recompute verdicts against (default: the project's)")
    fz = sub.add_parser("fuzz", help="rerun one generated example through a cell's artifact")
    fz.add_argument("cell", help="the cell id, e.g. silu-triton_op-export_strict-float32-cuda")
    fz.add_argument("--example", required=True, help="the example's JSON, as the failing fuzz test printed it")
    sub.add_parser("doctor", help="print torch, triton, CUDA, driver and GPUs; check that AOTInductor works at all")
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "run":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "run":
            return _run(args, extra)
        if args.command == "doctor":
            from .doctor import main as doctor

            return doctor()
        if args.command == "accept":
            return _accept(args)
        if args.command == "merge":
            return _merge(args)
        if args.command == "fuzz":
            return _fuzz(args)
        return _report(args) if args.command == "report" else _diff(args)
    except CompatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
