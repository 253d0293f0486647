"""The upgrade gate's baseline, the root cause every comparison uses, and accept widening rows instead of copying."""

import json

import pytest
import yaml

from compat.evidence import baseline
from compat.evidence.expectations import UNEXPLAINED, Expectations, Run, accept, cell_view, dump, resolve, widen
from compat.evidence.gate import agrees
from compat.evidence.outcomes import Outcome, from_exception
from compat.evidence.rootcause import WRAPPER_LINES, root_cause

from .docs_fixtures import DATA_PTR, cell, doc
from .test_plugin import MINE, MINE_ONLY, mine  # noqa: F401 - the fixture, for the end-to-end test

ID = "silu-raw_jit-export_nonstrict-bfloat16-cuda"
MEASURED_213 = {"measured": {"torch": "2.13.0+cpu", "triton": "3.7.1", "device": "cpu", "date": "2026-11-22"}}
CPU = "cpu-only"
PASSES_213 = {"torch": "==2.13.*", "triton": "==3.7.*", "host": CPU, "outcome": "passed", "provenance": MEASURED_213}
FAILS_213 = {
    "torch": "==2.13.*",
    "triton": "==3.7.*",
    "host": CPU,
    "outcome": "failed",
    "error": "RuntimeError",
    "match": "Cannot access data pointer",
    "reason": "fake tensors have no data",
    "provenance": MEASURED_213,
}
DYNAMO = (
    "RuntimeError when making fake tensor call\n  Explanation: Dynamo failed to run FX node with fake tensors: "
    "call_function compat.op(*(FakeTensor(...),), **{}): got RuntimeError(%r)\n  Hint: ..."
)  # Dynamo's repr


def exp_with(tmp_path, cells) -> Expectations:
    path = tmp_path / "expectations.yaml"
    path.write_text(dump({"schema": 1, "cells": cells}))
    return Expectations.load(path)


# ---- root cause ----


def test_the_root_cause_is_read_from_the_chain_and_from_old_wrapped_messages():
    try:
        try:
            raise RuntimeError("wrap_triton only works on functions annotated with triton.jit")
        except RuntimeError as inner:
            raise ValueError("RuntimeError when making fake tensor call") from inner
    except ValueError as exc:
        outcome = from_exception(exc)
    assert outcome.cause.error_type == "RuntimeError" and outcome.cause.fragment.startswith("wrap_triton only")
    recorded = Outcome("failed", "torch._dynamo.exc.TorchRuntimeError", DYNAMO % DATA_PTR)
    assert (recorded.cause.error_type, recorded.cause.fragment) == ("RuntimeError", DATA_PTR[:160])
    inductor = Outcome("failed", "torch._inductor.exc.InductorError", "RuntimeError: 0 active drivers ([]).")
    assert root_cause(inductor.to_dict()).text() == "RuntimeError: 0 active drivers ([])."
    opcheck = Outcome(
        "failed", "OpCheckError", "opcheck(op, ...): test_schema failed with boom (scroll up for stack trace)"
    )
    assert opcheck.cause.fragment == "boom"
    plain = Outcome("failed", "KeyError", "'x'")
    assert plain.cause.text() == "KeyError: 'x'" and Outcome("passed").cause is None


def test_an_implicit_context_is_not_a_cause():
    try:
        try:
            {}["missing"]
        except KeyError:
            raise RuntimeError("the real failure")  # noqa: B904 - the point of the test
    except RuntimeError as exc:
        assert from_exception(exc).cause.text() == "RuntimeError: the real failure"


def test_one_wrapper_line_two_causes_are_two_outcomes_for_rows_and_diff(tmp_path):
    from compat.evidence import diff

    old, new = (
        Outcome("failed", "torch._dynamo.exc.TorchRuntimeError", DYNAMO % m)
        for m in ("wrap_triton only works on functions annotated with triton.jit", DATA_PTR)
    )
    row = {**FAILS_213, "error": "torch._dynamo.exc.TorchRuntimeError", "cause": "RuntimeError"}
    exp = exp_with(tmp_path, {ID: [row]})
    e = exp.lookup(ID, Run("2.13.0", "3.7.1", CPU))
    assert agrees(e, new) and not agrees(e, old)
    assert diff.classify({"outcome": old.to_dict()}, {"outcome": new.to_dict()}) == "message"


def test_no_committed_row_or_catalogue_entry_matches_only_a_wrappers_line():
    from pathlib import Path

    from compat.evidence.catalogue import KNOWN

    data = cell_view(yaml.safe_load((Path(__file__).resolve().parent.parent / "expectations.yaml").read_text()), "x")
    matches = [resolve(r).get("match") for s in ("cells", "fuzz") for rows in data.get(s, {}).values() for r in rows]
    assert not set(matches + [k.match for k in KNOWN]) & set(WRAPPER_LINES)


# ---- the baseline ----


def test_the_nearest_recorded_version_below_on_the_same_host_is_the_baseline(tmp_path):
    gpu_212 = {
        **PASSES_213,
        "torch": "==2.12.*",
        "host": "gpu",
        "provenance": {"measured": {**MEASURED_213["measured"], "torch": "2.12.0"}},
    }
    exp = exp_with(tmp_path, {ID: [PASSES_213, gpu_212]})
    assert baseline.nearest_below(exp, Run("2.15.0", "3.9.0", CPU)) == Run("2.13.0", "3.7.1", CPU)
    assert baseline.nearest_below(exp, Run("2.15.0", "3.9.0", "gpu")) == Run("2.12.0", "3.7.1", "gpu")
    assert baseline.nearest_below(exp, Run("2.13.0", "3.8.0", CPU)) == Run("2.13.0", "3.7.1", CPU)  # triton alone
    assert baseline.nearest_below(exp, Run("2.11.0", "3.6.0", CPU)) is None  # nothing older: no baseline


@pytest.mark.parametrize(
    "row, observed, change",
    [
        (PASSES_213, Outcome("passed"), None),
        (PASSES_213, Outcome("failed", "RuntimeError", DATA_PTR), "broken"),
        (FAILS_213, Outcome("failed", "RuntimeError", DATA_PTR), None),
        (FAILS_213, Outcome("passed"), "fixed"),
        (FAILS_213, Outcome("failed", "RuntimeError", "0 active drivers"), "message"),
        (FAILS_213, Outcome("crashed", "SIGSEGV", "killed"), "worse"),
    ],
)
def test_a_cell_without_rows_is_compared_with_the_baseline_rows(tmp_path, row, observed, change):
    exp = exp_with(tmp_path, {ID: [row]})
    run = Run("2.15.0", "3.9.0", CPU)
    base = baseline.for_run(exp, run, None)
    ref, got = base.compare(ID, observed)
    assert got == change and "torch 2.13.0" in ref.describe and "2.15.0" in base.name


def test_a_results_file_as_the_baseline_compares_outcomes_and_numerics(tmp_path):
    old = doc(
        [
            cell("eager", "passed", rel=1e-4),
            cell("export_strict", "failed", error="E", message="a"),
            cell("compile_eager", "skipped", message="no CUDA"),
        ]
    )
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    base = baseline.for_run(exp_with(tmp_path, {}), Run("2.15.0", "3.9.0", "gpu"), str(path))
    eager, strict, skipped = (c["id"] for c in old["cells"])
    drifted = Outcome("passed", numerics=[{"ok": True, "max_rel_err": 4e-3}])
    assert base.compare(eager, drifted)[1] == "drift"
    assert base.compare(strict, Outcome("failed", "E", "a"))[1] is None
    assert base.compare(skipped, Outcome("passed")) == (None, None)  # skipped there: nothing to compare with


@pytest.mark.slow
def test_a_run_without_rows_fails_only_on_what_changed_and_writes_the_changes(mine):  # noqa: F811
    # The rows were measured on a torch "below" this one (0.1), so this run is an upgrade without rows of its own.
    import torch

    host = "gpu" if torch.cuda.is_available() else CPU
    old = {"measured": {"torch": "0.1.0", "triton": "0.1.0", "device": "cpu", "date": "2026-01-01"}}
    project, CELL = mine, MINE  # noqa: F811 - a user's kernel: the suite's own rows, behind the project's, know nothing of it
    changed = CELL.replace("eager", "compile_eager")
    rows = {
        CELL: [{"torch": "==0.1.*", "host": host, "outcome": "passed", "provenance": old}],
        changed: [
            {
                "torch": "==0.1.*",
                "host": host,
                "outcome": "crashed",
                "signal": "SIGSEGV",
                "reason": "a stand-in that no run reproduces",
                "provenance": old,
            }
        ],
    }
    (project.path / "expectations.yaml").write_text(yaml.safe_dump({"schema": 1, "cells": rows}))
    cells = [*MINE_ONLY[:-1], "--compat-stages=eager,compile_eager"]
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", *cells, "test_matrix.py", "test_fuzz.py", "--compat-results=out/r.json"
    )
    result.assert_outcomes(passed=2, failed=1)  # eager matched it, and its fuzz test ran; compile_eager changed
    result.stdout.fnmatch_lines(
        [
            f"*{changed}: changed against the baseline*",
            "baseline: the rows of the nearest version below torch *",
            "changes against the baseline, as Markdown: out/r.changes.md",
        ]
    )
    r = json.loads((project.path / "out" / "r.json").read_text())
    by_id = {c["id"]: c for c in r["cells"]}
    assert by_id[CELL]["verdict"] is None and by_id[CELL]["against_baseline"]["change"] is None
    assert r["fuzz"] and r["fuzz"][0]["id"] == CELL  # fuzzed: the baseline says it passes
    md = (project.path / "out" / "r.changes.md").read_text()
    assert "1 cells without rows for this version matched the baseline; **1 changed**" in md
    assert "## Upgrade gate" in md and f"`{changed}`" in md and f"`{CELL}`" not in md
    accepted = project.runpytest_subprocess(
        "-p", "no:cacheprovider", *cells, "test_matrix.py", "--compat-accept", "--compat-results=out/a.json"
    )
    accepted.assert_outcomes(passed=2)
    written = cell_view(yaml.safe_load((project.path / "expectations.yaml").read_text()), "test")["cells"]
    widened = written[CELL.replace("float32", "*")] if CELL not in written else written[CELL]
    assert widened[0]["torch"].startswith(">=0.1,<") and len(widened[0]["provenance"]["measured"]) == 2


def test_without_any_baseline_a_cell_without_rows_still_fails_as_no_expectation(tmp_path):
    exp = exp_with(tmp_path, {ID: [{**PASSES_213, "provenance": {"documented": "a citation"}}]})
    assert baseline.for_run(exp, Run("2.15.0", "3.9.0", CPU), None) is None


# ---- accept widens ----


def test_accept_widens_the_neighbours_row_instead_of_copying_it(tmp_path):
    exp = exp_with(tmp_path, {ID: [FAILS_213]})
    run = Run("2.15.0", "3.9.0", CPU)
    measured = {"torch": "2.15.0", "triton": "3.9.0", "device": "cpu", "date": "2026-11-22"}
    changes = accept(
        exp, {ID: Outcome("failed", "RuntimeError", DATA_PTR)}, run, measured, neighbours=baseline.neighbours(exp, run)
    )
    assert len(changes) == 1 and "widened" in changes[0]
    (row,) = cell_view(yaml.safe_load(exp.path.read_text()), "test")["cells"][ID]
    assert (row["torch"], row["triton"]) == (">=2.13,<2.16", ">=3.7,<3.10")
    assert [m["torch"] for m in row["provenance"]["measured"]] == ["2.13.0+cpu", "2.15.0"]
    assert Expectations.load(exp.path).lookup(ID, Run("2.14.0", "3.8.0", CPU)) is not None


def test_a_new_row_keeps_the_explanation_a_row_of_another_host_gives_it(tmp_path):
    unknown = Outcome("failed", "RuntimeError", "a failure no catalogue entry knows")  # explained by the row only
    exp = exp_with(tmp_path, {ID: [{**FAILS_213, "match": "no catalogue entry knows", "host": "gpu"}]})
    measured = {"torch": "2.13.0", "triton": "3.7.1", "device": "cpu", "date": "2026-11-22"}
    accept(exp, {ID: unknown}, Run("2.13.0", "3.7.1", CPU), measured)
    rows = cell_view(yaml.safe_load(exp.path.read_text()), "test")["cells"][ID]
    new = next(r for r in rows if r["host"] == CPU)
    assert new["reason"] == "fake tensors have no data" and UNEXPLAINED not in new["reason"]


@pytest.mark.parametrize(
    "spec, version, wide",
    [
        ("==2.13.*", "2.15.0", ">=2.13,<2.16"),
        ("<2.14", "2.15.0+cu130", "<2.16"),
        (">=2.6", "2.15.0", ">=2.6"),
        ("==2.13.*", "2.11.0", ">=2.11,<2.14"),
        ("!=2.12", "2.15.0", None),
    ],
)
def test_widen(spec, version, wide):
    assert widen(spec, version) == wide


def test_accept_widens_down_to_an_older_version_measured_later(tmp_path):
    exp = exp_with(tmp_path, {ID: [FAILS_213]})
    run = Run("2.11.0", "3.6.0", CPU)
    assert baseline.nearest_below(exp, run) is None
    measured = {"torch": "2.11.0", "triton": "3.6.0", "device": "cpu", "date": "2026-11-22"}
    accept(
        exp,
        {ID: Outcome("failed", "RuntimeError", DATA_PTR)},
        run,
        measured,
        neighbours=baseline.neighbours(exp, run, above=True),
    )
    (row,) = cell_view(yaml.safe_load(exp.path.read_text()), "test")["cells"][ID]
    assert (row["torch"], row["triton"]) == (">=2.11,<2.14", ">=3.6,<3.8")


def test_accept_never_widens_a_row_over_a_version_recorded_in_between(tmp_path):
    # 2.12 and 2.13 recorded with triton 3.7; torch 2.13 with triton 3.6 agrees with the 2.12 row, but widening it
    # (torch >=2.12,<2.14, triton >=3.6,<3.8) would take 2.13 + 3.7 from its own row, listed after it.
    measured_212 = {"measured": {**MEASURED_213["measured"], "torch": "2.12.1"}}
    exp = exp_with(tmp_path, {ID: [{**FAILS_213, "torch": "==2.12.*", "provenance": measured_212}, {**PASSES_213}]})
    run = Run("2.13.0", "3.6.0", CPU)
    measured = {"torch": "2.13.0", "triton": "3.6.0", "device": "cpu", "date": "2026-11-22"}
    changes = accept(
        exp,
        {ID: Outcome("failed", "RuntimeError", DATA_PTR)},
        run,
        measured,
        neighbours=baseline.neighbours(exp, run, above=True),
    )
    assert changes and "widened" not in changes[0]
    again = Expectations.load(exp.path)
    assert again.lookup(ID, Run("2.13.0", "3.7.1", CPU)).row["outcome"] == "passed"
    assert again.lookup(ID, run).row["triton"] == "==3.6.*"


@pytest.mark.slow
def test_a_baseline_that_is_no_results_file_stops_the_run_before_any_cell(project):  # noqa: F811
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--compat-kernels=silu", "--compat-baseline=missing.json", "test_matrix.py"
    )
    assert result.ret == 4  # pytest's usage error: `python -m compat run` exits 2
    result.stderr.fnmatch_lines(["*--compat-baseline: missing.json: no such results file; no cell was run*"])
    assert not (project.path / "compat-results.json").exists()
