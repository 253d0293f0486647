"""The upgrade diff: every changed cell, grouped by severity; non-zero exit on regressions; bad input named."""

import json
from pathlib import Path

import pytest

from compat.__main__ import main
from compat.errors import ResultsError
from compat.evidence import diff
from compat.report import upgrade

from .docs_fixtures import DATA_PTR, cell, doc, writeup

ROOT = Path(__file__).resolve().parent.parent


def test_each_kind_of_change_lands_in_its_group():
    old = doc(
        [
            cell("eager", "passed"),
            cell("compile", "failed", error="E", message="a"),
            cell("export_strict", "passed", rel=1e-4),
            cell("export_nonstrict", "failed", error="RuntimeError", message=DATA_PTR),
            cell("aoti_strict", "failed", error="E", message="x"),
            cell("aoti_nonstrict", "passed"),
            cell("eager", "passed", style="triton_op"),
        ]
    )
    new = doc(
        [
            cell("eager", "mismatch"),
            cell("compile", "passed"),
            cell("export_strict", "passed", rel=5e-3),
            cell(
                "export_nonstrict", "failed", error="RuntimeError", message="Raw Triton kernel calls are not supported"
            ),
            cell("aoti_strict", "crashed", error="SIGSEGV", message="killed"),
            cell("aoti_nonstrict", "skipped", message="no CUDA"),
            cell("eager", "passed", style="triton_op_cpu_fallback"),
        ]
    )
    groups = {k: [c.cell for c in v] for k, v in diff.compare(old, new).items()}
    assert groups == {
        "broken": ["silu-raw_jit-eager-bfloat16-cuda"],
        "worse": ["silu-raw_jit-aoti_strict-bfloat16-cuda"],
        "drift": ["silu-raw_jit-export_strict-bfloat16-cuda"],
        "message": ["silu-raw_jit-export_nonstrict-bfloat16-cuda"],
        "fixed": ["silu-raw_jit-compile-bfloat16-cuda"],
        "not_run": ["silu-raw_jit-aoti_nonstrict-bfloat16-cuda"],
        "added": ["silu-triton_op_cpu_fallback-eager-bfloat16-cuda"],
        "removed": ["silu-triton_op-eager-bfloat16-cuda"],
    }
    md, _ = upgrade.markdown(old, new, "old.json", "new.json")
    # Regressions first, then what was fixed, then what changed.
    assert (
        md.index("Newly broken")
        < md.index("Worse failure")
        < md.index("Newly fixed")
        < md.index("Numerics drift")
        < md.index("Failure changed")
    )
    # Cells with nothing to compare against are counted in a line each, never listed.
    assert "1 cells ran on one side only" in md and "1 cells only in the after run: not compared." in md
    assert "silu-triton_op_cpu_fallback-eager" not in md
    assert "**Regressions found.**" in md


def test_a_failure_that_names_a_file_the_run_generated_is_the_same_failure_in_another_run():
    at = 'aoti_torch_call_dispatcher("ns::op", "", dispatch_vars.data()) API call failed at {}/cache/gw0/x.main.cpp, line 43'
    old = doc([cell("compile_cpp_wrapper", "failed", error="RuntimeError", message=at.format("/tmp/compat-run-ab12"))])
    new = doc([cell("compile_cpp_wrapper", "failed", error="RuntimeError", message=at.format("/tmp/compat-run-cd34"))])
    assert not diff.compare(old, new)["message"]
    other = doc([cell("compile_cpp_wrapper", "failed", error="RuntimeError", message="another cause")])
    assert diff.compare(old, other)["message"]


def test_exit_status_follows_regressions(tmp_path, capsys):
    same, fixed = writeup(), writeup()
    fixed["cells"][2] = cell("export_nonstrict", "passed")
    for name, d in {"a.json": same, "b.json": fixed}.items():
        (tmp_path / name).write_text(json.dumps(d))
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "a.json")]) == 0
    assert "No regressions. Nothing changed." in capsys.readouterr().out
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0  # newly fixed is good news
    assert main(["diff", str(tmp_path / "b.json"), str(tmp_path / "a.json"), "--output", str(tmp_path / "d.md")]) == 1
    assert "Newly broken" in (tmp_path / "d.md").read_text()


@pytest.mark.parametrize(
    "content, fragment",
    [
        (None, "no such results file"),
        ('{"schema": 1, "cells": [', "not valid JSON (truncated?)"),
        ('{"schema": 7, "cells": []}', "results schema 7; this version reads schema 1"),
    ],
)
def test_bad_input_is_named(tmp_path, capsys, content, fragment):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(writeup()))
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    assert main(["diff", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and fragment in err


def test_real_runs_torch_2_12_against_2_13_and_a_gpu_against_a_cpu():
    from compat.evidence import results

    gpu, before, after = (
        results.load(ROOT / "results" / name)
        for name in (
            "torch-2.11.0-cu130_triton-3.6.0_NVIDIA-H200.json.gz",
            "torch-2.12.1-cu130_triton-3.7.1_cpu.json.gz",
            "torch-2.13.0-cpu_triton-3.7.1_cpu.json.gz",
        )
    )
    # torch 2.13's wrap_triton hands back an interpreted kernel instead of rejecting it: eager works again.
    assert "silu-triton_op-eager-float32-cpu_interpret" in [c.cell for c in diff.compare(before, after)["fixed"]]
    # The CUDA cells did not run on the CPU machine: reported, not counted as regressions.
    groups = diff.compare(gpu, after)
    recorded = {c["id"] for c in after["cells"]}
    cuda = [c["id"] for c in gpu["cells"] if c["axes"]["device"] == "cuda"]
    assert len(groups["not_run"]) == sum(cid in recorded for cid in cuda) > 0
    assert len(groups["removed"]) == sum(cid not in recorded for cid in cuda)
    assert not diff.regressed(groups)


def test_merge_takes_each_cells_latest_run_and_regrades_it(tmp_path):
    from compat.evidence import results
    from compat.evidence.expectations import Expectations, dump

    first, second = writeup(), writeup()
    second["cells"] = [c for c in second["cells"] if c["axes"]["stage"] == "export_nonstrict"]
    for c in second["cells"]:
        c["outcome"] = {**c["outcome"], "kind": "passed", "error_type": None, "message": None}
    paths = []
    for name, d in (("a.json", first), ("b.json", second)):
        (tmp_path / name).write_text(json.dumps(d))
        paths.append(str(tmp_path / name))
    exp_path = tmp_path / "expectations.yaml"
    exp_path.write_text(dump({"schema": 1, "cells": {}}))
    merged = results.merge(paths, Expectations.load(exp_path))
    by_id = {c["id"]: c for c in merged["cells"]}
    assert len(by_id) == len(first["cells"])
    assert by_id["silu-raw_jit-export_nonstrict-bfloat16-cuda"]["outcome"]["kind"] == "passed"  # the later run
    assert by_id["silu-raw_jit-export_nonstrict-bfloat16-cuda"]["source"] == paths[1]
    assert all("no expectation" in c["verdict"] for c in merged["cells"])  # regraded against the empty file
    assert [m["path"] for m in merged["options"]["merged_from"]] == paths
    assert merged["options"]["one_commit"] is False  # these runs recorded no commit: not shown to be one code's
    # The later run by date wins whatever the order of the paths (a folder's glob sorts a cut run's rest first).
    first["environment"] = {**first["environment"], "date": "2026-11-27T10:00:00+00:00"}
    second["environment"] = {**second["environment"], "date": "2026-11-28T10:00:00+00:00"}
    for name, d in (("a.json", first), ("b.json", second)):
        (tmp_path / name).write_text(json.dumps(d))
    by_id = {c["id"]: c for c in results.merge(paths[::-1], Expectations.load(exp_path))["cells"]}
    assert by_id["silu-raw_jit-export_nonstrict-bfloat16-cuda"]["source"] == paths[1]
    for d, commit in ((first, "a" * 40), (second, "a" * 40)):
        d["environment"] = {**d["environment"], "commits": {"compat": commit, "repository": "the harness's"}}
        (tmp_path / ("a.json" if d is first else "b.json")).write_text(json.dumps(d))
    assert results.merge(paths, Expectations.load(exp_path))["options"]["one_commit"] is True
    second["environment"]["commits"] = {"compat": "b" * 40 + "+changes", "repository": "the harness's"}
    (tmp_path / "b.json").write_text(json.dumps(second))
    assert results.merge(paths, Expectations.load(exp_path))["options"]["one_commit"] is False
    second["environment"] = {**second["environment"], "torch": "2.14.0"}
    (tmp_path / "b.json").write_text(json.dumps(second))
    with pytest.raises(ResultsError, match="different torch / triton versions"):
        results.merge(paths, Expectations.load(exp_path))


def test_a_diff_across_hosts_says_so_keeps_host_effects_apart_and_fits_a_comment(tmp_path):
    from .docs_fixtures import ENV

    gpu = doc([cell("eager", "passed", device="cpu"), cell("export_strict", "passed", device="cpu")])
    cpu = doc(
        [
            cell("eager", "failed", device="cpu", error="RuntimeError", message="0 active drivers ([])."),
            cell("export_strict", "failed", device="cpu", error="RuntimeError", message=DATA_PTR),
        ],
        env={**ENV, "torch": "2.13.0", "gpus": []},
    )
    md, left_out = upgrade.markdown(gpu, cpu, "gpu.json", "cpu.json")
    assert md.index("**Two hosts:**") < md.index("### Version effects") < md.index("### Host effects")
    version_part = md[md.index("### Version effects") : md.index("### Host effects")]
    assert "export_strict" in version_part and "eager-" not in version_part and left_out == 0
    assert diff.regressed(diff.compare(gpu, cpu), host_effects=False)  # the data-pointer one is the version's
    many = doc(
        [cell("export_strict", "failed", style=f"s{i}", error="E", message=f"x{i} " + "xx " * 100) for i in range(400)]
    )
    changed = doc(
        [cell("export_strict", "failed", style=f"s{i}", error="E", message=f"y{i} " + "yy " * 100) for i in range(400)]
    )
    md, left_out = upgrade.markdown(many, changed, "a.json", "b.json", limit=diff.COMMENT_LIMIT, full_link="d.full.md")
    assert len(md.encode()) <= diff.COMMENT_LIMIT and left_out > 0 and "[the full diff](d.full.md)" in md


def test_cells_that_made_the_same_change_fold_into_one_row_with_its_reason_and_rewrite():
    old = doc([cell("export_strict", "failed", style=f"s{i}", error="E", message="before") for i in range(30)])
    new = doc(
        [cell("export_strict", "failed", style=f"s{i}", error="E", message="after") for i in range(30)]
        + [cell("export_strict", "failed", style="other", error="E", message="after")]
    )
    for c in new["cells"]:
        c["expected"] = {"outcome": "failed", "reason": "the cause changed upstream", "rewrite": "do this instead"}
    changes = diff.compare(old, new)["message"]
    ((row, cells),) = upgrade.transitions(changes)
    assert len(cells) == 30 and row.reason == "the cause changed upstream"
    md, left_out = upgrade.markdown(old, new, "old.json", "new.json", limit=diff.COMMENT_LIMIT)
    assert "(30 cells, 1 change)" in md and "<summary>30 cells</summary>" in md and left_out == 0
    assert "the cause changed upstream **Instead:** do this instead" in md


def test_a_diff_between_torch_builds_says_so():
    from .docs_fixtures import ENV

    a = doc([cell("eager", "passed")], env={**ENV, "torch": "2.12.1+cu130"})
    b = doc([cell("eager", "passed")], env={**ENV, "torch": "2.13.0+cpu"})
    md, _ = upgrade.markdown(a, b, "a.json", "b.json")
    assert "**Another torch build:** `+cu130` before, `+cpu` after" in md
    assert "Another torch build" not in upgrade.markdown(a, a, "a.json", "a.json")[0]


def test_merging_a_merged_file_keeps_the_runs_it_came_from(tmp_path):
    from compat.evidence import results
    from compat.evidence.expectations import Expectations, dump

    paths = []
    for name in ("a.json", "b.json"):
        d = writeup()
        d["cells"] = [c for c in d["cells"] if (c["axes"]["style"] == "triton_op") == (name == "b.json")]
        (tmp_path / name).write_text(json.dumps(d))
        paths.append(str(tmp_path / name))
    exp_path = tmp_path / "expectations.yaml"
    exp_path.write_text(dump({"schema": 1, "cells": {}}))
    exp = Expectations.load(exp_path)
    results.write(tmp_path / "ab.json", results.merge(paths[:1], exp))
    merged = results.merge([str(tmp_path / "ab.json"), paths[1]], exp)
    assert [(m["path"], m["cells"]) for m in merged["options"]["merged_from"]] == [(paths[0], 3), (paths[1], 2)]
    assert {c["source"] for c in merged["cells"]} == set(paths)


def test_a_merged_inputs_fuzz_profiles_are_named_once(tmp_path):
    from compat.evidence import results
    from compat.evidence.expectations import Expectations, dump

    paths = []
    for name, profile in (("merged.json", "ci, thorough"), ("ci.json", "ci")):
        d = writeup()
        d["fuzz"], d["options"]["fuzz_profile"] = [d["cells"][len(paths)]], profile
        (tmp_path / name).write_text(json.dumps(d))
        paths.append(str(tmp_path / name))
    exp_path = tmp_path / "expectations.yaml"
    exp_path.write_text(dump({"schema": 1, "cells": {}}))
    assert results.merge(paths, Expectations.load(exp_path))["options"]["fuzz_profile"] == "ci, thorough"


def test_a_merged_file_names_its_runs_as_their_repository_does_from_any_folder(tmp_path, monkeypatch):
    from compat.evidence import results
    from compat.evidence.expectations import Expectations, dump

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "results" / "runs").mkdir(parents=True)
    (repo / "examples" / "mine").mkdir(parents=True)
    (repo / "results" / "runs" / "a.json").write_text(json.dumps(writeup()))
    exp_path = tmp_path / "expectations.yaml"
    exp_path.write_text(dump({"schema": 1, "cells": {}}))
    monkeypatch.chdir(repo / "examples" / "mine")  # an example repository's folder, as its runs are merged
    merged = results.merge(["../../results/runs/a.json"], Expectations.load(exp_path))
    assert [m["path"] for m in merged["options"]["merged_from"]] == ["results/runs/a.json"]


def test_merge_refuses_to_replace_an_existing_out_it_was_not_given(tmp_path, capsys):
    # Found by use: `merge TOP.json.gz RUN` wrote TOP from RUN alone, dropping its 8,341 cells and 1,804 fuzz records.
    from compat.evidence.expectations import dump

    (tmp_path / "expectations.yaml").write_text(dump({"schema": 1, "cells": {}}))
    top, run = tmp_path / "top.json", tmp_path / "run.json"
    top.write_text(json.dumps(writeup()))
    run.write_text(json.dumps(writeup()))
    before = top.read_text()
    common = ["--expectations", str(tmp_path / "expectations.yaml")]
    assert main(["merge", *common, str(top), str(run)]) == 2
    assert "not among the RESULTS" in capsys.readouterr().err and top.read_text() == before
    # Named among the inputs: added to. Its cells have no rows here, so they differ: found (exit 1), as a run's.
    assert main(["merge", *common, str(top), str(top), str(run)]) == 1


def test_fixed_and_broken_rows_say_why_from_the_catalogue_where_no_row_does():
    """A version without rows: the fixed row names the catalogue entry its before-failure matched, the broken row
    the entry of its new failure, or that none explains it."""
    old = doc([cell("compile_inductor", "failed", error="RuntimeError", message=DATA_PTR), cell("eager", "passed")])
    new = doc([cell("compile_inductor", "passed"), cell("eager", "failed", error="ValueError", message="brand new")])
    for c in [*old["cells"], *new["cells"]]:
        c["expected"] = None  # no expectation rows for either version
    groups = diff.compare(old, new)
    (fixed,), (broken,) = groups["fixed"], groups["broken"]
    assert fixed.reason.startswith("it failed before, as `raw_launch_data_ptr`: ")
    assert broken.reason == "no catalogue entry explains it: a failure not seen before"
    md, _ = upgrade.markdown(old, new, "old.json", "new.json")
    assert "| | |" not in md.replace("| … ", "")  # no empty why column


def test_a_group_lists_a_few_ids_and_says_when_it_touches_only_the_interpreter_or_the_build():
    old = doc([cell("eager", "passed", device="cpu_interpret", style=s) for s in ("raw_jit", "triton_op")])
    new = doc(
        [
            cell("eager", "failed", device="cpu_interpret", style=s, error="E", message="m")
            for s in ("raw_jit", "triton_op")
        ],
        env={**old["environment"], "torch": "2.13.0+cu130"},
    )
    old["environment"] = {**old["environment"], "torch": "2.13.0+cpu"}
    md, _ = upgrade.markdown(old, new, "old.json", "new.json")
    heading = next(line for line in md.splitlines() if "Newly broken" in line)
    assert "only on Triton's interpreter (`cpu_interpret`, test-only)" in heading
    assert "only the torch build changed (`+cpu` → `+cu130`)" in heading
    assert "`silu-raw_jit-eager-bfloat16-cpu_interpret`, `silu-triton_op-eager-bfloat16-cpu_interpret`" in md
    assert "<details>" not in md


def test_a_diff_flags_a_triton_change_and_counts_the_cells_each_side_knows_nothing_of():
    from .docs_fixtures import ENV

    a = doc([cell("eager", "passed"), cell("compile_inductor", "skipped")], env={**ENV, "triton": "3.7.1"})
    b = doc([cell("eager", "passed"), cell("compile_inductor", "passed")], env={**ENV, "triton": "3.8.0"})
    md, _ = upgrade.markdown(a, b, "a.json", "b.json")
    assert "**Another Triton:** 3.7.1 before, 3.8.0 after" in md
    assert "Unknown: 1 cells before and 0 after were not run there" in md
    same, _ = upgrade.markdown(b, b, "b.json", "b.json")
    assert "Another Triton" not in same and "Unknown:" not in same


def test_an_upgrade_page_says_first_what_it_compared_and_gives_no_verdict_for_a_device_neither_ran():
    """Two CPU-only runs say nothing of CUDA: the heading counts the cells compared per device, and the page names
    the device it gives no verdict for."""
    cpu = [cell("eager", "passed", device="cpu"), cell("compile_inductor", "passed", device="cpu")]
    a = doc([*cpu, cell("eager", "skipped"), cell("compile_inductor", "skipped")])
    b = doc([cell("eager", "failed", device="cpu", error="RuntimeError"), cpu[1], cell("eager", "skipped")])
    md, _ = upgrade.markdown(a, b, "a.json", "b.json")
    lines = md.splitlines()
    assert lines[0] == "## Support matrix diff: 2 cells compared (cpu 2)"
    assert "No verdict for `cuda`: no cell of it ran on both sides." in md
    assert "**Regressions found.**" in md
    nothing, _ = upgrade.markdown(doc([cell("eager", "skipped")]), doc([cell("eager", "skipped")]), "a", "b")
    assert nothing.splitlines()[0] == "## Support matrix diff: nothing compared"
    assert "No verdict: no cell ran on both sides." in nothing and "No regressions" not in nothing


@pytest.mark.slow  # runs git
def test_a_merge_of_several_commits_names_the_files_of_compat_they_differ_in():
    """A reader of a patchwork sees whether its commits differ in what observes or only in what judges."""
    import subprocess

    from compat.run.commands import _code_differs_in

    root = Path(__file__).resolve().parents[1]
    head, parent = (
        subprocess.run(["git", "-C", str(root), "rev-parse", ref], capture_output=True, text=True).stdout.strip()
        for ref in ("HEAD", "HEAD~1")
    )
    touched = subprocess.run(
        ["git", "-C", str(root), "diff", "--name-only", parent, head, "--", "compat/"], capture_output=True, text=True
    ).stdout.split()
    of = lambda *commits: [{"commits": {"compat": c}} for c in commits]  # noqa: E731
    assert _code_differs_in(of(head, head)) == []
    assert _code_differs_in(of(parent, head)) == sorted(touched)
    assert _code_differs_in(of(head, head + "+changes")) is None  # uncommitted changes: cannot be told
    assert _code_differs_in(of(head, "f" * 40)) is None  # a commit this checkout lacks
    assert _code_differs_in([{"commits": None}, *of(head)]) is None  # a run from before runs named commits
