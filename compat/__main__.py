"""triton-export-compat: which ways of wrapping a Triton kernel for PyTorch survive torch.compile, torch.export
and AOTInductor, and do they still match eager? Run the matrix, gate it on its expectations, and publish it.

  run [pytest args...]               the matrix and its fuzz tests under pytest-xdist, from any folder of a
                                     repository (the pytest ini found upward, as pytest finds it, and its
                                     compat_cases and expectations configure the run); writes a results file
  report [RESULTS.json]              the support matrix as Markdown and HTML (default: the latest run)
  diff OLD.json NEW.json             what changed between two runs, as Markdown (a pull-request comment)
  accept RESULTS.json                record a run's outcomes into the expectations file (as --compat-accept)
  shard --count N --durations R.json N cell lists of about equal recorded seconds, one per CI runner (run each with
                                     --compat-cells, then merge their results)
  cells [--kernels K ...]            the cell ids a run of that selection would run, one per line
  merge OUT.json RESULTS.json...     one results file from partial runs (shards, runs cut short)
  regrade RESULTS.json...            each record judged again by today's code against the expectations file
  versions RESULTS.json...           the support matrix across torch versions, from one results file per version
  fuzz CELL --example JSON           rerun one generated example (the command a failing fuzz test prints)
  coverage NAMESPACE...              the torch.library ops registered under namespaces, and which are declared
  describe [CELL_ID]                 docs/AXES.md from the registries; or what one cell does, the expectation
                                     it meets, its catalogue entry, its latest evidence and how to rerun it
  doctor                             versions, GPUs, and the AOTI canary

Exit status, every command: 0 done and nothing to report; 1 the check found something (a cell differs from its
expectation, a regression, a failing canary or example); 2 bad input or usage (nothing was run or written);
3 an internal error of the harness (a bug: please report it); 130 interrupted (a run writes what it measured).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__
from .errors import CompatError
from .run.options import AXES, OPTIONS, REPORT_DIR, RUNS_DIR, SHARDS_DIR

USAGE = 2  # the exit status of bad input (compat.run.commands has them all)


def _pytest_options() -> str:
    lines = ["options it passes to pytest (the plugin's):"]
    for flags, options in OPTIONS:
        lines.append(f"  {flags[0]} {options.get('metavar', '')}".rstrip())
        lines.append(f"      {options['help']}")
    return "\n".join(lines)


def parser(prog: str) -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"triton-export-compat {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _running(sub)
    _recording(sub)
    _reading(sub)
    return top


def _running(sub) -> None:
    """run, and what reads its results at once: report, diff, accept."""
    run = sub.add_parser(
        "run",
        help="run the matrix (pytest under xdist) and write its results file",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the matrix and its fuzz tests (compat.testing) under pytest-xdist, configured by the pytest "
        "ini of the directory it starts from. Arguments it does not know go to pytest.",
        epilog=_pytest_options() + "\n\nexample: python -m compat run --compat-devices=cuda --compat-accept",
    )
    run.add_argument(
        "--results",
        metavar="PATH",
        help=f"results file (default: a file of its own, {RUNS_DIR}/torch-<v>_triton-<v>_<gpu>_<time>.json, and "
        f"{RUNS_DIR}/latest.json linking the newest whole run; the committed results/ change only when named here)",
    )
    run.add_argument("-n", "--workers", default="auto", help="xdist workers (default: auto)")
    rep = sub.add_parser("report", help="render the support matrix (Markdown and HTML) from a results file")
    rep.add_argument(
        "results",
        nargs="?",
        help=f"a results JSON written by a run (default: the repository's {RUNS_DIR}/latest.json, its newest run "
        f"that no later run cut short or narrowed)",
    )
    rep.add_argument(
        "--out-dir",
        default=REPORT_DIR,
        metavar="DIR",
        help=f"where the pages go (default: {REPORT_DIR}; the published pages: --out-dir docs)",
    )
    rep.add_argument(
        "--readme",
        metavar="README.md",
        help="also fill the ops' summary block of a repository's README (between the lines "
        "'<!-- compat report --readme: ...' and '<!-- end of the generated summary -->')",
    )
    dif = sub.add_parser(
        "diff",
        help="list cells whose outcome changed between two results files",
        description="Every cell whose outcome changed, grouped by severity, as Markdown; failures "
        "are compared by their root cause. Exit 1 when anything regressed (newly broken, "
        "or now crashes or hangs); across two hosts, only what the host does not explain "
        "counts.",
    )
    dif.add_argument("old", metavar="OLD.json", help="the results before (say, the current torch)")
    dif.add_argument("new", metavar="NEW.json", help="the results after (say, the upgraded torch)")
    dif.add_argument(
        "--output",
        metavar="PATH",
        help="also write the Markdown to PATH, within a pull-request comment's 65,536 characters; rows "
        "left out go to PATH's .full.md beside it, which the comment links",
    )
    acc = sub.add_parser("accept", help="record the outcomes of a results file into the expectations file")
    acc.add_argument("results", help="a results JSON written by a run")
    acc.add_argument(
        "--expectations",
        metavar="PATH",
        help="the expectations YAML to update, created if missing (default: the one the repository's "
        "pytest ini names, found from here upward as pytest finds it, else the expectations.yaml "
        "beside that ini)",
    )
    acc.add_argument(
        "--overwrite-read-only",
        action="store_true",
        help="replace the expectations file even where it is read-only (0444); refused otherwise",
    )


def _recording(sub) -> None:
    """What splits, lists, joins and judges again the cells of runs: shard, cells, merge, regrade."""
    sha = sub.add_parser(
        "shard",
        help="split the matrix into N cell lists of about equal recorded seconds",
        description="Each shared child's cells stay together; the longest go first to the lightest "
        "shard. Run shard i with `run -- --compat-cells DIR/shard-i-of-N.txt`, then "
        "`merge` the N results files.",
    )
    sha.add_argument("--count", type=int, required=True, metavar="N", help="how many shards (one per runner)")
    sha.add_argument(
        "--durations",
        required=True,
        metavar="RESULTS.json",
        help="a results file of the same matrix, whose recorded seconds balance the shards",
    )
    sha.add_argument("--out-dir", default=SHARDS_DIR, metavar="DIR", help=f"where the lists go (default: {SHARDS_DIR})")
    cel = sub.add_parser(
        "cells",
        help="print the cell ids a run of this selection would run, one per line",
        description="The repository's cells (its pytest ini's compat_cases), as `run` selects them; "
        "a list for --compat-cells, or to count before a run.",
    )
    for parser, verb in ((sha, "shard"), (cel, "list")):
        for axis in AXES:
            parser.add_argument(
                f"--{axis}s",
                metavar="NAMES",
                help=f"comma-separated {axis} names to {verb} (default: the pytest ini's compat_{axis}s, else all)",
            )
        parser.add_argument("--cells", metavar="LIST", help=f"only the selected cells this file lists to {verb}")
    mer = sub.add_parser("merge", help="merge partial runs of one torch/triton into one results file")
    mer.add_argument("out", metavar="OUT.json", help="the merged results JSON to write")
    mer.add_argument(
        "results", nargs="+", metavar="RESULTS.json", help="results JSONs, oldest first (a later run's cell wins)"
    )
    mer.add_argument(
        "--expectations", metavar="PATH", help="the expectations to recompute verdicts against (default: as for accept)"
    )
    reg = sub.add_parser(
        "regrade",
        help="judge results files again with today's code against the expectations file",
        description="Each record's verdict recomputed from what it observed (compat.evidence.gate): the check that a "
        "change of judgement or of expectations leaves committed evidence as expected. Exit 1 where a record's "
        "verdict is not as expected or holds what today's judgement does not read.",
    )
    reg.add_argument("results", nargs="+", metavar="RESULTS.json", help="results files (committed evidence)")
    reg.add_argument("--expectations", metavar="PATH", help="the expectations to judge against (default: as accept)")


def _reading(sub) -> None:
    """What explains the evidence: versions, fuzz, coverage, describe, profile, doctor."""
    ver = sub.add_parser(
        "versions",
        help="the support matrix across torch versions (Markdown and HTML)",
        description="For each style and stage, on each device, the torch versions where it works, "
        "from results files (one per version and host) and the rows that cite upstream.",
    )
    ver.add_argument("results", nargs="+", metavar="RESULTS.json", help="results JSONs, one per torch version and host")
    ver.add_argument(
        "--out-dir",
        default=REPORT_DIR,
        metavar="DIR",
        help=f"where the pages go (default: {REPORT_DIR}; the published pages: --out-dir docs)",
    )
    ver.add_argument("--expectations", metavar="PATH", help="the rows that cite upstream (default: as for accept)")
    fz = sub.add_parser("fuzz", help="rerun one generated example through a cell's artifact")
    fz.add_argument("cell", help="the cell id, e.g. silu-triton_op-export_strict-float32-cuda")
    fz.add_argument("--example", required=True, help="the example's JSON, as the failing fuzz test printed it")
    fz.add_argument(
        "--after",
        help="the calls to make first, in a fresh process, as the reproducer of a finding that needs them names "
        "them (JSON: [[stage, example], ...])",
    )
    cov = sub.add_parser(
        "coverage",
        help="list the torch.library ops registered under namespaces, and which are declared as shipped (compat.Op)",
    )
    cov.add_argument("namespaces", nargs="+", metavar="NAMESPACE", help="a torch.library namespace, e.g. my_kernels")
    cov.add_argument("--fail-undeclared", action="store_true", help="exit 1 when an op has no declaration")
    des = sub.add_parser(
        "describe",
        help="write docs/AXES.md from the registries, or describe one cell",
        description="Without CELL_ID: write AXES.md (every kernel, style, stage, device and catalogue entry of the "
        "repository's matrix) into --out-dir. With one: what the cell does, the expectation row it meets on this "
        "machine, its catalogue entry, its newest record among the results files, and the command that reruns it.",
    )
    des.add_argument("cell", nargs="?", metavar="CELL_ID", help="e.g. silu-triton_op-export_nonstrict-float32-cuda")
    des.add_argument("--out-dir", default="docs", metavar="DIR", help="where AXES.md goes (default: docs)")
    des.add_argument(
        "--results",
        nargs="+",
        metavar="RESULTS.json",
        help=f"results files to look the cell up in (default: every run in the repository's {RUNS_DIR}/ and its "
        f"committed results/*.json*)",
    )
    pro = sub.add_parser(
        "profile",
        help="where a run's time went: phases by stage family, the critical path, the longest lanes, workers, GPUs",
    )
    pro.add_argument("results", nargs="?", help="a results file (default: the latest run)")
    pro.add_argument("--top", type=int, default=10, metavar="N", help="how many of the longest lanes (default: 10)")
    pro.add_argument(
        "--bound",
        type=float,
        metavar="SECONDS",
        help="list every lane longer than this (a quarter of the run's target, say), its longest phases and when it "
        "started",
    )
    sub.add_parser("doctor", help="print torch, triton, CUDA, driver and GPUs; check that AOTInductor works at all")


def _prog() -> str:
    name = Path(sys.argv[0]).name
    return "python -m compat" if name in ("__main__.py", "-c", "") else name


def main(argv: list[str] | None = None) -> int:
    cli = parser(_prog())
    args, extra = cli.parse_known_args(argv)
    if extra and args.command != "run":
        cli.error(f"unrecognized arguments: {' '.join(extra)}")  # exits 2
    # Here, not at the top: the commands import torch (3 to 6 s, measured), which --help and usage errors need not.
    from .run import commands

    try:
        return commands.dispatch(args, extra)
    except CompatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:  # a signal after pytest's own handling ended (seen at a run's end, cut by `timeout`)
        print("interrupted", file=sys.stderr)
        return commands.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
