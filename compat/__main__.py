"""triton-export-compat: which ways of wrapping a Triton kernel for PyTorch survive torch.compile, torch.export
and AOTInductor, and do they still match eager? Run the matrix, gate it on its expectations, and publish it.

  run [pytest args...]               the matrix and its fuzz tests under pytest-xdist, from any directory (its
                                     pytest ini and expectations.yaml configure the run); writes a results file
  report RESULTS.json                the support matrix as Markdown and HTML
  diff OLD.json NEW.json             what changed between two runs, as Markdown (a pull-request comment)
  accept RESULTS.json                record a run's outcomes into the expectations file (as --compat-accept)
  merge OUT.json RESULTS.json...     one results file from partial runs (shards, runs cut short)
  versions RESULTS.json...           the support matrix across torch versions, from one results file per version
  fuzz CELL --example JSON           rerun one generated example (the command a failing fuzz test prints)
  coverage NAMESPACE...              the torch.library ops registered under namespaces, and which are declared
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

ROOT = Path(__file__).resolve().parent.parent
DOCS = {"md": "SUPPORT_MATRIX.md", "html": "support_matrix.html"}
VERSION_DOCS = {"md": "VERSIONS.md", "html": "versions.html"}
RUNS_DIR = "compat-results"  # where `run` writes by default: never the committed results/
REPORT_DIR = "compat-report"  # where `report` writes by default: never the published docs/
OK, FOUND, USAGE, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 130
# pytest's exit codes in the rule above: tests failed, interrupted, internal error, usage error, nothing collected.
PYTEST_EXIT = {0: OK, 1: FOUND, 2: INTERRUPTED, 3: INTERNAL, 4: USAGE, 5: USAGE}


INI_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def _ini_file(where: Path) -> Path | None:
    """The pytest configuration of the directory the run starts from (its compat_cases, its expectations)."""
    for name in INI_FILES:
        path = where / name
        if path.is_file() and (name.startswith(("pytest", ".pytest")) or "pytest" in path.read_text(errors="replace")):
            return path
    return None


def _ini_settings(where: Path) -> dict[str, list[str]]:
    """compat_cases, compat_expectations and pythonpath from the pytest configuration of `where`."""
    ini = _ini_file(where)
    if ini is None:
        return {}
    if ini.name == "pyproject.toml":
        import tomllib

        table = tomllib.loads(ini.read_text()).get("tool", {}).get("pytest", {}).get("ini_options", {})
        return {k: [str(x) for x in v] if isinstance(v, list) else [str(v)] for k, v in table.items()}
    import configparser

    parser = configparser.ConfigParser()
    parser.read(ini)
    section = next((s for s in ("pytest", "tool:pytest") if parser.has_section(s)), None)
    return {k: v.split() for k, v in parser.items(section)} if section else {}


def _repository(where: Path) -> str | None:
    """Make the directory's own kernels known, as its pytest run would (its compat_cases, importable through its
    pythonpath); return the expectations file its ini names, if any."""
    from .matrix.cases import import_cases
    from .plugin import CASES_GROUP

    settings = _ini_settings(where)
    sys.path[:0] = [str(where / p) for p in settings.get("pythonpath", [])]
    from importlib.metadata import entry_points

    modules = [*settings.get("compat_cases", []), *(ep.value.split(":")[0] for ep in entry_points(group=CASES_GROUP))]
    import_cases(dict.fromkeys(modules), forks=False)  # this process forks nothing
    named = settings.get("compat_expectations")
    return str(where / named[0]) if named else None


def _expectations_path(args: argparse.Namespace) -> str:
    """The expectations accept and merge use: the one named, else the directory's (its ini's, or its
    expectations.yaml), else the suite's own."""
    here = Path.cwd()
    return args.expectations or args.repository_expectations or next(
        (str(p) for p in [here / "expectations.yaml"] if p.exists()), str(ROOT / "expectations.yaml"))


def _run(args: argparse.Namespace, extra: list[str]) -> int:
    import pytest

    from . import testing
    from .run.environment import describe, machine_label

    here = Path.cwd()
    results = args.results or str(Path(RUNS_DIR) / f"{machine_label(describe())}.json")
    ini = _ini_file(here)
    # The matrix's tests ship with the package, so the run works from any directory; the directory it starts from
    # gives the configuration: its ini (compat_cases, compat_expectations) and its expectations.yaml.
    pytest_args = [testing.__file__, "--rootdir", str(here), *(["-c", str(ini)] if ini else []), "-p", "compat.plugin",
                   "-n", args.workers, "--dist", "loadgroup", f"--compat-results={results}", *extra]
    print(f"pytest {' '.join(pytest_args)}", flush=True)
    code = int(pytest.main(pytest_args))
    if code == 5:
        print("error: the selection matched no cell", file=sys.stderr)
    return PYTEST_EXIT.get(code, INTERNAL)


def render_docs(results_path: str) -> dict[str, str]:
    """The documentation pages generated from one results file, by file name."""
    from .evidence import results
    from .report import page, report

    doc = results.load(results_path)
    return {DOCS["md"]: report.markdown(doc, results_path), DOCS["html"]: page.html_page(doc, results_path)}


def _writable(path: Path, option: str) -> None:
    from .atomic import check_writable

    try:
        check_writable(path)
    except OSError as exc:
        raise CompatError(f"{option} {path}: cannot be written ({exc}); nothing was written") from None


def _report(args: argparse.Namespace) -> int:
    from .atomic import write_atomic

    pages = render_docs(args.results)
    out = Path(args.out_dir)
    for name in pages:
        _writable(out / name, "--out-dir")
    for name, text in pages.items():
        write_atomic(out / name, text)
        print(out / name)
    return OK


def _diff(args: argparse.Namespace) -> int:
    from .evidence import diff, results
    from .report import upgrade

    old, new = results.load(args.old), results.load(args.new)
    if args.output:
        _writable(Path(args.output), "--output")
    if args.output:
        from .atomic import write_atomic

        # The comment form within GitHub's limit; what it leaves out goes to a full listing beside it.
        output = Path(args.output)
        full = output.with_name(f"{output.stem}.full{output.suffix or '.md'}")
        text, left_out = upgrade.markdown(old, new, args.old, args.new, limit=diff.COMMENT_LIMIT, full_link=full.name)
        if left_out:
            write_atomic(full, upgrade.markdown(old, new, args.old, args.new)[0])
        elif full.exists():
            full.unlink()  # an earlier, longer diff's listing would no longer match the comment
        write_atomic(output, text)
    else:
        text, _ = upgrade.markdown(old, new, args.old, args.new)
    print(text, end="")
    # Across hosts, a regression the host explains (no GPU on the new side) is not the version's: it does not count.
    return FOUND if diff.regressed(diff.compare(old, new), host_effects=False) else OK


def _accept(args: argparse.Namespace) -> int:
    from .evidence import results
    from .evidence.expectations import Expectations, Run, accept, measured_on
    from .evidence.outcomes import Outcome
    from .matrix.cells import in_matrix

    path = _expectations_path(args)
    doc = results.load(args.results)
    exp = Expectations.load(path)
    observed = {c["id"]: Outcome.from_dict(c["outcome"]) for c in doc["cells"]}
    from .evidence.baseline import neighbours

    run = Run.from_env(doc["environment"])
    changes = accept(exp, observed, run, measured_on(doc["environment"]), neighbours=neighbours(exp, run, above=True))
    findings = {f["id"]: Outcome.from_dict(f["outcome"]) for f in doc.get("fuzz") or []}
    changes += accept(exp, findings, run, measured_on(doc["environment"]), section="fuzz")
    for change in changes:
        print(f"accepted: {change}")
    left_out = sum(not in_matrix(cell_id) for cell_id in observed)
    print(f"{len(changes)} change(s) written to {exp.path}"
          + (f"; {left_out} cell(s) no longer in the matrix left out" if left_out else ""))
    return OK


def _versions(args: argparse.Namespace) -> int:
    from .atomic import write_atomic
    from .evidence import results, versions
    from .evidence.expectations import Expectations

    docs = [(p, results.load(p)) for p in args.results]
    exp = Expectations.load(_expectations_path(args))
    out = Path(args.out_dir)
    _writable(out / VERSION_DOCS["md"], "--out-dir")
    for name, text in ((VERSION_DOCS["md"], versions.markdown(docs, exp)), (VERSION_DOCS["html"],
                                                                              versions.html_page(docs, exp))):
        write_atomic(out / name, text)
        print(out / name)
    return OK


def _merge(args: argparse.Namespace) -> int:
    from .evidence import results
    from .evidence.expectations import Expectations

    doc = results.merge(args.results, Expectations.load(_expectations_path(args)))
    _writable(Path(args.out), "OUT")
    results.write(args.out, doc)
    s = doc["summary"]
    print(f"{args.out}: {s['cells']} cells from {len(args.results)} runs, {s['unexpected']} differ from expectations")
    return OK


def _fuzz(args: argparse.Namespace) -> int:
    """One example through the cell's artifact, built in a child with the cell's environment, as the fuzz test did."""
    import json
    import tempfile

    from .matrix.cells import parse_cell_id
    from .matrix.strategies import DEFAULT_PROFILE, Example
    from .run.launcher import Launcher
    from .run.session import child_env, fuzz_task

    cell = parse_cell_id(args.cell, "python -m compat fuzz")
    try:
        Example.from_json(args.example)
    except (ValueError, KeyError, TypeError) as exc:
        raise CompatError(f"--example: not an example's JSON ({exc}); copy it from the failing test's reproducer")
    task, task_args, timeout = fuzz_task(cell, [cell.stage], DEFAULT_PROFILE, args.example)
    with tempfile.TemporaryDirectory(prefix="compat-fuzz-") as workdir:
        launcher = Launcher(Path(workdir))
        try:
            outcome = launcher.run(task, {"cell": cell.id, **task_args}, workdir=Path(workdir) / "child",
                                   env=child_env(cell), timeout=timeout).outcome(cell.stage, among=("export", cell.stage))
        finally:
            launcher.close()
    print(json.dumps(outcome.to_dict(), indent=1, default=str))
    print(f"{cell.id}: {outcome.summary()}")
    return OK if outcome.kind == "passed" else FOUND


def _coverage(args: argparse.Namespace) -> int:
    """The ops a package registers under each namespace (once the directory's compat_cases are imported), and the
    declarations as shipped that gate them."""
    from .report import coverage

    for line in coverage.lines(args.namespaces):
        print(line)
    if any(not coverage.registered(ns) for ns in args.namespaces):
        raise CompatError(f"no op is registered under {', '.join(ns for ns in args.namespaces if not coverage.registered(ns))}"
                          f": name a namespace a compat_cases module's imports register")
    return FOUND if args.fail_undeclared and any(coverage.undeclared(ns) for ns in args.namespaces) else OK


def _pytest_options() -> str:
    from .run.options import OPTIONS

    lines = ["options it passes to pytest (the plugin's):"]
    for flags, options in OPTIONS:
        lines.append(f"  {flags[0]} {options.get('metavar', '')}".rstrip())
        lines.append(f"      {options['help']}")
    return "\n".join(lines)


def parser(prog: str) -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"triton-export-compat {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser(
        "run", help="run the matrix (pytest under xdist) and write its results file",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the matrix and its fuzz tests (compat.testing) under pytest-xdist, configured by the pytest "
                    "ini of the directory it starts from. Arguments it does not know go to pytest.",
        epilog=_pytest_options() + "\n\nexample: python -m compat run --compat-devices=cuda --compat-accept")
    run.add_argument("--results", metavar="PATH",
                     help=f"results file (default: {RUNS_DIR}/torch-<v>_triton-<v>_<gpu>.json; the committed results/ "
                          f"change only when named here)")
    run.add_argument("-n", "--workers", default="auto", help="xdist workers (default: auto)")
    rep = sub.add_parser("report", help="render the support matrix (Markdown and HTML) from a results file")
    rep.add_argument("results", help="a results JSON written by a run")
    rep.add_argument("--out-dir", default=REPORT_DIR, metavar="DIR",
                     help=f"where the pages go (default: {REPORT_DIR}; the published pages: --out-dir docs)")
    dif = sub.add_parser("diff", help="list cells whose outcome changed between two results files",
                         description="Every cell whose outcome changed, grouped by severity, as Markdown; failures "
                                     "are compared by their root cause. Exit 1 when anything regressed (newly broken, "
                                     "or now crashes or hangs); across two hosts, only what the host does not explain "
                                     "counts.")
    dif.add_argument("old", metavar="OLD.json", help="the results before (say, the current torch)")
    dif.add_argument("new", metavar="NEW.json", help="the results after (say, the upgraded torch)")
    dif.add_argument("--output", metavar="PATH",
                     help="also write the Markdown to PATH, within a pull-request comment's 65,536 characters; rows "
                          "left out go to PATH's .full.md beside it, which the comment links")
    acc = sub.add_parser("accept", help="record the outcomes of a results file into the expectations file")
    acc.add_argument("results", help="a results JSON written by a run")
    acc.add_argument("--expectations", metavar="PATH",
                     help="the expectations YAML to update (default: the one this directory's pytest ini names, else "
                          "its expectations.yaml, else the suite's own)")
    mer = sub.add_parser("merge", help="merge partial runs of one torch/triton into one results file")
    mer.add_argument("out", metavar="OUT.json", help="the merged results JSON to write")
    mer.add_argument("results", nargs="+", metavar="RESULTS.json",
                     help="results JSONs, oldest first (a later run's cell wins)")
    mer.add_argument("--expectations", metavar="PATH",
                     help="the expectations to recompute verdicts against (default: as for accept)")
    ver = sub.add_parser("versions", help="the support matrix across torch versions (Markdown and HTML)",
                         description="For each style and stage, on each device, the torch versions where it works, "
                                     "from results files (one per version and host) and the rows that cite upstream.")
    ver.add_argument("results", nargs="+", metavar="RESULTS.json", help="results JSONs, one per torch version and host")
    ver.add_argument("--out-dir", default=REPORT_DIR, metavar="DIR",
                     help=f"where the pages go (default: {REPORT_DIR}; the published pages: --out-dir docs)")
    ver.add_argument("--expectations", metavar="PATH", help="the rows that cite upstream (default: as for accept)")
    fz = sub.add_parser("fuzz", help="rerun one generated example through a cell's artifact")
    fz.add_argument("cell", help="the cell id, e.g. silu-triton_op-export_strict-float32-cuda")
    fz.add_argument("--example", required=True, help="the example's JSON, as the failing fuzz test printed it")
    cov = sub.add_parser("coverage", help="list the torch.library ops registered under namespaces, and which are "
                                          "declared as shipped (compat.Op)")
    cov.add_argument("namespaces", nargs="+", metavar="NAMESPACE", help="a torch.library namespace, e.g. my_kernels")
    cov.add_argument("--fail-undeclared", action="store_true", help="exit 1 when an op has no declaration")
    sub.add_parser("doctor", help="print torch, triton, CUDA, driver and GPUs; check that AOTInductor works at all")
    return top


def _prog() -> str:
    name = Path(sys.argv[0]).name
    return "python -m compat" if name in ("__main__.py", "-c", "") else name


def main(argv: list[str] | None = None) -> int:
    cli = parser(_prog())
    args, extra = cli.parse_known_args(argv)
    if extra and args.command != "run":
        cli.error(f"unrecognized arguments: {' '.join(extra)}")  # exits 2
    try:
        if args.command == "run":
            return _run(args, extra)
        # The directory's own kernels, so that their cell ids resolve here as in its pytest runs.
        args.repository_expectations = _repository(Path.cwd()) if args.command != "doctor" else None
        if args.command == "doctor":
            from .run.doctor import main as doctor

            return doctor()
        return {"report": _report, "diff": _diff, "accept": _accept, "merge": _merge, "versions": _versions,
                "fuzz": _fuzz, "coverage": _coverage}[args.command](args)
    except CompatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE


if __name__ == "__main__":
    sys.exit(main())
