"""The CLI's commands (compat.__main__ parses, these do): run the matrix under pytest, render, diff, accept, merge,
the versions page, one fuzz example, a namespace's coverage. Each returns its exit status (compat.__main__ lists
them); bad input raises CompatError."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ..atomic import check_writable, write_atomic
from ..errors import CompatError
from ..evidence import diff, results
from ..evidence.baseline import neighbours
from ..evidence.expectations import Expectations, Run, accept_run, dump, measured_on
from ..evidence.outcomes import Outcome
from ..matrix.cases import import_cases, installed_case_modules
from ..matrix.cells import (
    check_names,
    gated_kernels,
    in_matrix,
    lane,
    matrix,
    parse_cell_id,
    read_cell_list,
    split_cell_id,
    why_none,
    why_not_applicable,
)
from ..matrix.strategies import DEFAULT_PROFILE, Example
from ..report import coverage, index, page, profile, report, upgrade, versions
from ..report import describe as described
from ..report.summary import needs_reason_lines
from . import configuration, runfiles, schedule
from .doctor import main as doctor
from .environment import describe
from .launcher import Launcher
from .options import AXES, RUNS_DIR
from .session import child_env, fuzz_task, grouped, sequence_task

# The matrix's tests ship in the package: pytest collects this file (imported here, it would load the plugin first).
MATRIX_TESTS = Path(__file__).resolve().parents[1] / "testing.py"
ROOT = Path(__file__).resolve().parents[2]  # the checkout: the suite's own expectations.yaml
DOCS = {"md": "SUPPORT_MATRIX.md", "html": "support_matrix.html"}
VERSION_DOCS = {"md": "VERSIONS.md", "html": "versions.html"}
OK, FOUND, USAGE, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 130
# pytest's exit codes in the rule above: tests failed, interrupted, internal error, usage error, nothing collected.
PYTEST_EXIT = {0: OK, 1: FOUND, 2: INTERRUPTED, 3: INTERNAL, 4: USAGE, 5: USAGE}

# The plugins this process imports before pytest can mark them for assertion rewriting: Hypothesis's, and this suite's
# own (its entry point names the package `compat`).
PREIMPORTED_PLUGINS = ("_hypothesis_globals", "hypothesis", "compat")


def _gating_ini(config: pytest.Config, command: str, way_out: str) -> Path | None:
    """The ini of the repository a command gates: one whose compat_cases (or an installed package's entry point)
    declare kernels (None: an installed package's, with no ini). Without one the command would gate the suite's own
    kernels, or write the suite's own expectations, from a folder that is not the suite's: a usage error that says
    so, never a green run of the wrong repository."""
    ini = config.inipath
    if config.getini("compat_cases") or installed_case_modules():
        return ini
    found = f"{ini} has no compat_cases" if ini else "no pytest configuration (pytest.ini, pyproject.toml, ...)"
    raise CompatError(
        f"{command}: {found} from {Path.cwd()} upward, so there is no repository of yours to gate here and "
        f"it would use the suite's own kernels and expectations; run it from your repository (whose "
        f"pytest ini names compat_cases = yourpkg.compat_cases), or {way_out}"
    )


def _repository(config: pytest.Config) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """Make the repository's own kernels known, as its pytest run would (its compat_cases, importable through its
    pythonpath), from the folder of its ini or any folder under it; return the expectations file its ini names, if
    any, and the modules and paths a child needs to know them too."""
    root = _root(config)
    paths = tuple(str(p) for p in config.getini("pythonpath"))
    sys.path[:0] = paths
    modules = tuple(dict.fromkeys([*config.getini("compat_cases"), *installed_case_modules()]))
    import_cases(modules, forks=False)  # this process forks nothing
    named = config.getini("compat_expectations")
    default = root / "expectations.yaml" if config.inipath and config.getini("compat_cases") else None
    expectations = str(root / named) if named else (str(default) if default else None)
    return expectations, modules, (*paths, str(root))


def _root(config: pytest.Config) -> Path:
    """The folder of the ini pytest found from here upward, else this one."""
    return config.inipath.parent if config.inipath else Path.cwd()


def _expectations_path(args: argparse.Namespace) -> str:
    """The expectations accept and merge use: the one named, else the repository's (its ini's compat_expectations,
    else the expectations.yaml beside its ini), else the folder's own expectations.yaml."""
    if args.expectations:
        return args.expectations
    here = Path.cwd() / "expectations.yaml"
    if here.exists() and not args.configuration.getini("compat_cases"):
        return str(here)  # the folder's own file, where no repository's ini names one
    _gating_ini(args.configuration, f"python -m compat {args.command}", "name the file with --expectations")
    return args.repository_expectations


def _run(args: argparse.Namespace, extra: list[str]) -> int:
    here = Path.cwd()
    # The matrix's tests ship with the package, so the run works from any folder of a repository: its ini (found
    # upward, as pytest finds it) gives the configuration (compat_cases, compat_expectations) and the rootdir.
    config = configuration.read()
    if any(a.startswith("--compat-kernels") for a in extra):  # the kernels named: the suite's own, if no ini
        ini = config.inipath
    else:
        ini = _gating_ini(config, "python -m compat run", "name the suite's kernels with --compat-kernels")
    root = ini.parent if ini else here
    suite = "none found: the suite's own kernels, named with --compat-kernels"
    print(f"configuration: {ini or suite}", flush=True)
    pytest_args = [
        str(MATRIX_TESTS),
        "--rootdir",
        str(root),
        *(["-c", str(ini)] if ini else []),
        "-p",
        "compat.plugin",
        "-n",
        args.workers,
        "--dist",
        "loadgroup",
        # This process imported them before pytest could mark them for assertion rewriting: pytest would warn about
        # it in every run of a repository whose ini does not ignore it; they hold no test of the user's.
        *(
            f"-Wignore:Module already imported so cannot be rewritten; {m}:pytest.PytestAssertRewriteWarning"
            for m in PREIMPORTED_PLUGINS
        ),
        *([f"--compat-results={args.results}"] if args.results else []),  # else a file of its own in compat-results/
        *extra,
    ]
    print(f"pytest {' '.join(pytest_args)}", flush=True)
    code = int(pytest.main(pytest_args))
    if code == 5:
        print("error: the selection matched no cell", file=sys.stderr)
    return PYTEST_EXIT.get(code, INTERNAL)


def render_docs(results_path: str, out_dir: Path | None = None) -> dict[str, str]:
    """The documentation pages generated from one results file, by file name; into `out_dir`, linking the version
    answers and upgrade diffs there, and with its index.html where those are there too (compat.report.index)."""
    doc = results.load(results_path)
    latency = report.latency_markdown(doc, results_path)
    pages: dict[str, str] = {
        DOCS["md"]: report.markdown(doc, results_path),
        **report.kernel_pages(doc, results_path),
        DOCS["html"]: page.html_page(doc, results_path),
        **page.kernel_html_pages(doc, results_path),
    }
    latency_html = page.latency_page(doc, results_path) if latency else None  # its own pass over every cell
    if latency and latency_html:  # both, or neither: where a cell was timed
        pages |= {report.LATENCY_PAGE: latency, page.LATENCY_HTML: latency_html}
    pages = {name: index.launches_in_code(t) if name.endswith(".md") else t for name, t in pages.items()}
    if out_dir is None:
        return pages
    md, html = (index.elsewhere(out_dir, DOCS[kind]) for kind in ("md", "html"))
    if md:
        title, rest = pages[DOCS["md"]].split("\n\n", 1)
        pages[DOCS["md"]] = f"{title}\n\n{index.markdown_line(md)}\n\n{rest}"
        pages[DOCS["html"]] = index.with_html_line(pages[DOCS["html"]], html)
        pages[index.INDEX] = index.index_html(out_dir)
    return pages


def _writable(path: Path, option: str) -> None:
    try:
        check_writable(path)
    except OSError as exc:
        raise CompatError(f"{option} {path}: cannot be written ({exc}); nothing was written") from None


def _runs_folder(config: pytest.Config) -> Path:
    """The repository's compat-results/ (beside the pytest ini found from here upward, as pytest finds it)."""
    return _root(config) / RUNS_DIR


def _latest_results(config: pytest.Config) -> str:
    runs = _runs_folder(config)
    found = runfiles.latest(runs)
    if found is None:
        raise CompatError(
            f"no results file named and no run in {runs} yet: run `python -m compat run` first, or name "
            f"a results file; nothing was written"
        )
    return str(found)


def _report(args: argparse.Namespace) -> int:
    args.results = args.results or _latest_results(args.configuration)
    out = Path(args.out_dir)
    pages = render_docs(args.results, out)
    readme = None
    if args.readme:  # checked before anything is written
        try:
            readme = report.readme_with_summary(Path(args.readme).read_text(), results.load(args.results), args.results)
        except (OSError, ValueError) as exc:
            raise CompatError(f"--readme {args.readme}: {exc}; nothing was written") from None
        _writable(Path(args.readme), "--readme")
    for name in pages:
        _writable(out / name, "--out-dir")  # makes the kernel pages' folder
    for name, text in pages.items():
        write_atomic(out / name, text)
        print(out / name)
    if readme is not None:
        write_atomic(Path(args.readme), readme)
        print(args.readme)
    return OK


def _profile(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise CompatError(f"--top {args.top}: expected a positive number of lanes")
    if args.bound is not None and args.bound <= 0:
        raise CompatError(f"--bound {args.bound:g}: expected a positive number of seconds")
    path = args.results or _latest_results(args.configuration)
    print(f"{path}:\n{profile.text(results.load(path), top=args.top, bound=args.bound)}", end="")
    return OK


def _diff(args: argparse.Namespace) -> int:
    old, new = results.load(args.old), results.load(args.new)
    if args.output:
        _writable(Path(args.output), "--output")
        # The comment form within GitHub's limit; what it leaves out goes to a full listing beside it.
        output = Path(args.output)
        full = output.with_name(f"{output.stem}.full{output.suffix or '.md'}")
        text, left_out = upgrade.markdown(old, new, args.old, args.new, limit=diff.COMMENT_LIMIT, full_link=full.name)
        if left_out:
            write_atomic(full, index.launches_in_code(upgrade.markdown(old, new, args.old, args.new)[0]))
        elif full.exists():
            full.unlink()  # an earlier, longer diff's listing would no longer match the comment
        write_atomic(output, index.launches_in_code(text))
        # The same page for a browser (the docs' index and versions page link it): titled, and back to the index.
        title = f"Upgrade diff: {output.stem}"
        write_atomic(output.with_suffix(".html"), upgrade.html_page(index.launches_in_code(text), title))
    else:
        text, _ = upgrade.markdown(old, new, args.old, args.new)
    print(text, end="")
    # Across hosts, a regression the host explains (no GPU on the new side) is not the version's: it does not count.
    return FOUND if diff.regressed(diff.compare(old, new), host_effects=False) else OK


def _accept(args: argparse.Namespace) -> int:
    path = _expectations_path(args)
    doc = results.load(args.results)
    try:
        check_writable(path, args.overwrite_read_only)
    except OSError as exc:
        fix = " (--overwrite-read-only replaces it)" if isinstance(exc, PermissionError) else ""
        raise CompatError(f"--expectations {path}: cannot be written ({exc}){fix}; nothing was accepted") from None
    exp = Expectations.for_run(path, named=True, accept=True)  # created where it does not exist yet, as a run's accept
    observed = {c["id"]: Outcome.from_dict(c["outcome"]) for c in doc["cells"]}
    run = Run.from_env(doc["environment"])
    findings = {f["id"]: Outcome.from_dict(f["outcome"]) for f in doc.get("fuzz") or []}
    try:
        done = accept_run(
            exp, observed, findings, run, measured_on(doc["environment"]), neighbours(exp, run, above=True)
        )
        if not exp.path.exists():  # nothing to change: the file still exists afterwards, as the user asked
            write_atomic(exp.path, dump(exp.data))
    except OSError as exc:  # writable a moment ago; no longer
        print(f"error: cannot write {path} ({exc}); {args.results} is untouched", file=sys.stderr)
        return INTERNAL
    for change in done.changes:
        print(f"accepted: {change}")
    left_out = sum(not in_matrix(cell_id) for cell_id in observed)
    print(
        f"{len(done.changes)} change(s) written to {exp.path}"
        + (f"; {left_out} cell(s) no longer in the matrix left out" if left_out else "")
    )
    for line in needs_reason_lines(done.needs_reason, exp.path):
        print(line)
    return FOUND if done.needs_reason else OK


def _regrade(args: argparse.Namespace) -> int:
    exp = Expectations.load(_expectations_path(args))
    green = True
    for path in args.results:
        done = results.regrade(results.load(path), exp)
        green &= done.green
        for line in [*done.differ, *done.unreadable]:
            print(line)
        stale = f"; {len(done.stale)} fuzz records made before findings were recorded" if done.stale else ""
        print(
            f"{path}: {done.records} records, {len(done.differ)} not as expected, {len(done.unreadable)} unreadable"
            f"{stale}" + ("" if done.green else " (run its cells again on its host and merge the run into it)")
        )
    return OK if green else FOUND


def render_versions(docs: list, exp: Expectations, out: Path) -> dict[str, str]:
    """The answers across versions, as they are written into `out`: with the way to the other pages there, and to
    the committed upgrade diff of any two of these files."""
    md = versions.markdown(docs, exp, index.upgrades(out))
    html = versions.html_page(docs, exp, index.upgrades(out, as_html=True))
    around = [(link, words) for link, words in index.present(out) if link not in VERSION_DOCS.values()]
    if around:  # under the title, as the support pages have it
        title, rest = md.split("\n\n", 1)
        md = f"{title}\n\n{index.markdown_line(around)}\n\n{rest}"
        links = [(link, words) for link, words in index.present(out, as_html=True) if link not in VERSION_DOCS.values()]
        head, tail = html.split("</h1>", 1)
        html = f"{head}</h1>{index.html_line(links)}{tail}"
    return {VERSION_DOCS["md"]: index.launches_in_code(md), VERSION_DOCS["html"]: html}


def _versions(args: argparse.Namespace) -> int:
    docs = [(p, results.load(p)) for p in args.results]
    exp = Expectations.load(_expectations_path(args))
    out = Path(args.out_dir)
    _writable(out / VERSION_DOCS["md"], "--out-dir")
    for name, text in render_versions(docs, exp, out).items():
        write_atomic(out / name, text)
        print(out / name)
    if (out / DOCS["html"]).is_file():  # the support pages are there too: the folder's front page
        write_atomic(out / index.INDEX, index.index_html(out))
        print(out / index.INDEX)
    return OK


def _merge(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not any(out.resolve() == Path(p).resolve() for p in args.results):
        # OUT is written from the RESULTS alone: a committed file named only as OUT would lose every record it held
        raise CompatError(
            f"OUT {out} exists and is not among the RESULTS: the merge would replace its records with "
            f"the RESULTS' alone; name it first among the RESULTS to add to it (merge {out} {out} "
            f"RUN...), or remove it first; nothing was written"
        )
    doc = results.merge(args.results, Expectations.load(_expectations_path(args)))
    if not doc["options"]["one_commit"]:
        doc["options"]["code_differs_in"] = _code_differs_in(doc["options"]["merged_from"])
    _writable(Path(args.out), "OUT")
    results.write(args.out, doc)
    s = doc["summary"]
    fuzz = s["fuzz"]
    differ = s["unexpected"] + fuzz.get("unexpected", 0)
    print(
        f"{args.out}: {s['cells']} cells and {fuzz['cells']} fuzz tests from {len(args.results)} runs, "
        f"{s['unexpected']} cells and {fuzz.get('unexpected', 0)} fuzz tests differ from expectations"
    )
    if not doc["options"]["one_commit"]:
        differs = doc["options"]["code_differs_in"]
        print(
            f"{args.out}: its runs are not shown to be one commit's code (options.merged_from names each run's)"
            + (
                f"; between their commits compat/ differs in: {', '.join(differs) or 'nothing'}"
                if differs is not None
                else ""
            )
        )
    return FOUND if differ else OK  # the merged run, gated as one: a cell or fuzz test that differs is found


def _code_differs_in(sources: list[dict]) -> list[str] | None:
    """The files of compat/ that differ between the merged runs' commits (so a reader sees whether they differ in
    what observes or only in what judges); None where that cannot be told: a run without a commit, or with
    uncommitted changes, or a commit this checkout lacks."""
    commits = sorted({(s.get("commits") or {}).get("compat") or "" for s in sources})
    if any(not c or c.endswith("+changes") for c in commits):
        return None
    root = Path(__file__).resolve().parents[2]
    files: set[str] = set()
    for other in commits[1:]:
        try:
            diff = subprocess.run(
                ["git", "-C", str(root), "diff", "--name-only", commits[0], other, "--", "compat/"],
                capture_output=True,
                text=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if diff.returncode != 0:
            return None
        files.update(diff.stdout.split())
    return sorted(files)


def _selected(args: argparse.Namespace) -> list:
    """The cells of the repository's selection, as its runs make it: the options, else its ini's compat_<axis>s; a
    selection of none says why (exit 2)."""
    select = {}
    config = args.configuration
    if args.kernels:  # the kernels named: the suite's own, where no repository's ini declares others
        ini_path = config.inipath
    else:
        ini_path = _gating_ini(config, f"python -m compat {args.command}", "name the suite's kernels with --kernels")
    for axis in AXES:
        given = getattr(args, f"{axis}s")
        names = given or config.getini(f"compat_{axis}s")
        if names:
            select[axis] = [n.strip() for n in names.split(",") if n.strip()]
            check_names(axis, select[axis], f"--{axis}s" if given else f"compat_{axis}s in {ini_path}")
    select.setdefault("kernel", gated_kernels([*config.getini("compat_cases"), *installed_case_modules()]))
    cells = matrix(select)
    if not cells:
        raise CompatError("the selection matches no cell of the matrix: " + "; ".join(why_none(select)[:6]))
    listed = read_cell_list(args.cells, "--cells")
    if listed is not None:  # a list's cells, as a run with --compat-cells holds them (the rest of a cut shard)
        cells = [c for c in cells if c.id in listed]
        if not cells:
            raise CompatError(f"--cells {args.cells}: none of its cells is in the selection")
    return cells


def _cells(args: argparse.Namespace) -> int:
    cells = _selected(args)
    print("".join(f"{c.id}\n" for c in cells), end="")
    return OK


def _shard(args: argparse.Namespace) -> int:
    cells = _selected(args)
    groups = {lane(c, "cells") for c in cells}
    if not 1 <= args.count <= len(groups):
        raise CompatError(
            f"--count {args.count}: between 1 and {len(groups)} (the shared children of the selected "
            f"{len(cells)} cells, which never split); nothing was written"
        )
    recorded = schedule.recorded_seconds(results.load(args.durations))
    out = Path(args.out_dir)
    names = [out / f"shard-{i + 1}-of-{args.count}.txt" for i in range(args.count)]
    for path in names:
        _writable(path, "--out-dir")
    for path, shard in zip(names, schedule.shards(cells, recorded, args.count), strict=True):
        write_atomic(path, "".join(f"{c.id}\n" for c in shard))
        seconds = sum(schedule.weights({lane(c, s) for c in shard for s in schedule.SECTIONS}, recorded).values())
        print(f"{path}: {len(shard)} cells, about {seconds:.0f} s as recorded")
    return OK


def _fuzz(args: argparse.Namespace) -> int:
    """One example through the cell's artifact, built in a child with the cell's environment, as the fuzz test did."""
    cell = parse_cell_id(args.cell, "python -m compat fuzz")
    try:
        Example.from_json(args.example)
    except (ValueError, KeyError, TypeError) as exc:
        raise CompatError(
            f"--example: not an example's JSON ({exc}); copy it from the failing test's reproducer"
        ) from None
    if args.after:
        try:
            calls = grouped(args.after)
        except (ValueError, KeyError, TypeError) as exc:
            raise CompatError(
                f"--after: not a sequence of calls ({exc}); copy it from the failing test's reproducer"
            ) from None
        task, task_args, timeout = sequence_task(cell, calls, args.example, [], DEFAULT_PROFILE)
    else:
        task, task_args, timeout = fuzz_task(cell, [cell.stage], DEFAULT_PROFILE, args.example)
    with tempfile.TemporaryDirectory(prefix="compat-fuzz-") as workdir:
        # The child imports the repository's cases as a run's children do: a user's reproducer runs their op.
        # Imported after the fork: one child either way, and a module that reads the GPU at import still runs.
        launcher = Launcher(
            Path(workdir), imports=args.repository_cases, paths=args.repository_paths, after_fork=args.repository_cases
        )
        try:
            outcome = launcher.run(
                task,
                {"cell": cell.id, **task_args},
                workdir=Path(workdir) / "child",
                env=child_env(cell),
                timeout=timeout,
            ).outcome(cell.stage, among=("export", cell.stage))
        finally:
            launcher.close()
    print(json.dumps(outcome.to_dict(), indent=1, default=str))
    print(f"{cell.id}: {outcome.summary()}")
    return OK if outcome.kind == "passed" else FOUND


def _coverage(args: argparse.Namespace) -> int:
    """The ops a package registers under each namespace (once the directory's compat_cases are imported), and the
    declarations as shipped that gate them."""
    _gating_ini(
        args.configuration, "python -m compat coverage", "run it from the folder of a repository that declares them"
    )
    for line in coverage.lines(args.namespaces):
        print(line)
    if any(not coverage.registered(ns) for ns in args.namespaces):
        raise CompatError(
            f"no op is registered under {', '.join(ns for ns in args.namespaces if not coverage.registered(ns))}"
            f": name a namespace a compat_cases module's imports register"
        )
    return FOUND if args.fail_undeclared and any(coverage.undeclared(ns) for ns in args.namespaces) else OK


def _describe(args: argparse.Namespace) -> int:
    kernels = gated_kernels(args.repository_cases)
    if args.cell is None:
        out = Path(args.out_dir) / described.AXES_DOC
        _writable(out, "--out-dir")
        write_atomic(out, index.launches_in_code(described.axes_markdown(kernels)))
        print(out)
        return OK
    cell = split_cell_id(args.cell, "python -m compat describe")
    for axis, name in cell.axes().items():
        try:
            check_names(axis, [name], f"python -m compat describe: cell {args.cell!r}")
        except CompatError as exc:
            if args.repository_cases:
                raise
            # No repository here declares it: say that first, rather than blame the name.
            _gating_ini(args.configuration, "python -m compat describe", f"check the name ({exc})")
    if why_not_applicable(cell):  # a question worth its answer: what the cell would be, and why it is not there
        print("\n".join(described.cell_lines(cell, None, None, [])))
        return OK
    # Every run of this repository and its committed evidence: the newest record of the cell is shown.
    runs = _runs_folder(args.configuration)
    found = [p for p in runs.glob("*.json") if p.name != runfiles.LATEST] + list(
        (runs.parent / "results").glob("*.json*")
    )
    paths = args.results or sorted(os.path.relpath(p) for p in found)
    docs = [(p, results.load(p)) for p in paths]
    exp = Expectations.for_run(args.repository_expectations or ROOT / "expectations.yaml", named=False)
    print("\n".join(described.cell_lines(cell, exp, Run.from_env(describe()), docs)))
    return OK


def dispatch(args: argparse.Namespace, extra: list[str]) -> int:
    """Run the parsed command; `extra`: the arguments `run` passes on to pytest."""
    if args.command == "run":
        return _run(args, extra)
    if args.command == "doctor":
        return doctor()
    # The directory's own kernels, so that their cell ids resolve here as in its pytest runs.
    args.configuration = configuration.read()
    args.repository_expectations, args.repository_cases, args.repository_paths = _repository(args.configuration)
    return {
        "report": _report,
        "diff": _diff,
        "accept": _accept,
        "merge": _merge,
        "regrade": _regrade,
        "versions": _versions,
        "fuzz": _fuzz,
        "coverage": _coverage,
        "shard": _shard,
        "cells": _cells,
        "describe": _describe,
        "profile": _profile,
    }[args.command](args)
