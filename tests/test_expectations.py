"""Expectations as data: validation, version ranges, the gate's verdicts, and accept mode."""

import difflib
import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from compat.errors import ExpectationsError
from compat.evidence import results
from compat.evidence.baseline import neighbours
from compat.evidence.expectations import (
    UNEXPLAINED,
    Expectations,
    Run,
    accept,
    cell_view,
    dump,
    measured_on,
    resolve,
)
from compat.evidence.gate import agrees, judge
from compat.evidence.outcomes import Outcome

CELL = "silu-raw_jit-export_nonstrict-bfloat16-cuda"
MEASURED = {"measured": {"torch": "2.11.0+cu130", "triton": "3.6.0", "device": "NVIDIA H100", "date": "2026-11-22"}}
FAILS = {
    "torch": ">=2.6,<2.14",
    "outcome": "failed",
    "error": "RuntimeError",
    "match": r"Cannot access data pointer of Tensor \(e\.g\. FakeTensor",
    "reason": "fake data_ptr",
    "provenance": MEASURED,
}
NEW_TEXT = {
    "torch": ">=2.14",
    "outcome": "failed",
    "error": "RuntimeError",
    "match": "Raw Triton kernel calls are not supported",
    "reason": "own message",
    "provenance": {"documented": "pytorch/pytorch#185827"},
}
GPU = Run("2.11.0+cu130", "3.6.0", "gpu")
ROOT = Path(__file__).resolve().parent.parent
DATA_POINTER = Outcome(
    "failed",
    "RuntimeError",
    "Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). "
    "If you're using torch.compile/export/fx, ...",
)


def write(tmp_path, cells) -> Path:
    path = tmp_path / "expectations.yaml"
    path.write_text(dump({"cells": cells}))
    return path


def write_as_is(tmp_path, cells, schema=2) -> Path:
    """Rows written as given (dump would name catalogue entries), one per cell, in schema 2 or schema 1."""
    path = tmp_path / "expectations.yaml"
    rows = [{**row, "ids": [cell_id]} for cell_id, cell_rows in cells.items() for row in cell_rows]
    path.write_text(yaml.safe_dump({"schema": schema, "cells": rows if schema == 2 else cells}))
    return path


def load(tmp_path, cells) -> Expectations:
    return Expectations.load(write(tmp_path, cells))


def test_first_row_matching_the_versions_wins(tmp_path):
    exp = Expectations.load(write_as_is(tmp_path, {CELL: [NEW_TEXT, FAILS]}))
    assert exp.lookup(CELL, GPU).index == 1
    assert exp.lookup(CELL, Run("2.14.1", "3.8.0", "gpu")).index == 0
    assert exp.lookup(CELL, Run("2.5.1", "3.1.0", "gpu")) is None


@given(
    minor=st.integers(6, 13),
    patch=st.integers(0, 9),
    local=st.sampled_from(["", "+cu130", "+cpu", ".dev20261101", "a1"]),
)
def test_local_labels_and_prereleases_stay_in_their_range(minor, patch, local):
    row = Expectations(Path("x"), {"schema": 1, "cells": {CELL: [FAILS]}}).rows[("cells", CELL)][0]
    assert row.applies(Run(f"2.{minor}.{patch}{local}", "3.6.0", "gpu"))


def test_host_selector(tmp_path):
    exp = load(tmp_path, {CELL: [{**FAILS, "host": "cpu-only"}]})
    assert exp.lookup(CELL, GPU) is None
    assert exp.lookup(CELL, Run("2.11.0", "3.6.0", "cpu-only")) is not None


def test_agreement_needs_type_and_message(tmp_path):
    row = load(tmp_path, {CELL: [FAILS]}).lookup(CELL, GPU)
    assert agrees(row, DATA_POINTER)
    assert not agrees(row, Outcome("failed", "ValueError", DATA_POINTER.message))
    assert not agrees(row, Outcome("failed", "RuntimeError", "Raw Triton kernel calls are not supported"))
    assert not agrees(row, Outcome("passed"))


def test_verdicts_name_expected_observed_and_how_to_record(tmp_path):
    exp = load(tmp_path, {CELL: [FAILS]})
    row = exp.lookup(CELL, GPU)
    assert judge(CELL, row, DATA_POINTER, GPU, exp.path).complaint is None
    strict = judge(CELL, row, Outcome("passed"), GPU, exp.path).complaint
    assert "expected failure now passes (strict)" in strict and "--compat-accept" in strict
    assert f"cells.{CELL}[0]" in strict
    changed = judge(CELL, row, Outcome("crashed", "SIGSEGV", "killed"), GPU, exp.path).complaint
    assert "outcome changed" in changed and "crashed SIGSEGV" in changed
    missing = judge(CELL, None, Outcome("passed"), GPU, exp.path).complaint
    assert "no expectation for torch 2.11.0+cu130, triton 3.6.0, host gpu" in missing


@pytest.mark.parametrize(
    "cells, fragment",
    [
        ({"silu-nosuch-eager-bfloat16-cuda": [FAILS]}, "unknown style name(s) 'nosuch'; valid style names: raw_jit"),
        ({"silu-raw_jit-eager-cuda": [FAILS]}, "is not a cell id of the form kernel-style-stage-dtype-device"),
        ({CELL: [{**FAILS, "torch": "2.11"}]}, f"cells.{CELL}[0]: torch: '2.11' is not a version specifier"),
        ({CELL: [{**FAILS, "match": "(unclosed"}]}, "is not a valid regex"),
        ({CELL: [{k: v for k, v in FAILS.items() if k != "reason"}]}, "outcome failed needs 'reason'"),
        ({CELL: [{**FAILS, "outcome": "skipped"}]}, "outcome 'skipped' is not one of"),
        ({CELL: [{**FAILS, "provenance": "trust me"}]}, "provenance must be"),
        ({CELL: [{**FAILS, "colour": "red"}]}, "unknown key(s) ['colour']"),
        ({CELL: [{**FAILS, "host": "tpu"}]}, "host 'tpu' is not one of"),
    ],
)
def test_malformed_rows_are_named(tmp_path, cells, fragment):
    path = write_as_is(tmp_path, cells)
    with pytest.raises(ExpectationsError) as info:
        Expectations.load(path)
    assert str(path) in str(info.value) and fragment in str(info.value)


def test_malformed_files_are_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: 1\ncells: {a: [}\n")
    with pytest.raises(ExpectationsError, match="bad.yaml: not valid YAML"):
        Expectations.load(bad)
    with pytest.raises(ExpectationsError, match="schema 3 is not supported"):
        Expectations.load(write_as_is(tmp_path, {}, schema=3))
    bad.write_text("schema: 2\ncells:\n- {torch: '>=2.6', outcome: passed, ids: []}\n")
    with pytest.raises(ExpectationsError, match=r"cells\[0\]: a row must be a mapping whose 'ids' lists the cells"):
        Expectations.load(bad)
    with pytest.raises(ExpectationsError, match="cannot read the expectations file"):
        Expectations.load(tmp_path / "missing.yaml")


def test_accept_records_new_cells_and_keeps_agreeing_rows(tmp_path):
    exp = load(tmp_path, {CELL: [FAILS]})
    other = "silu-triton_op-export_nonstrict-bfloat16-cuda"
    changes = accept(exp, {CELL: DATA_POINTER, other: Outcome("passed")}, GPU, MEASURED["measured"])
    assert changes == [f"{other}: no expectation -> passed  [torch ==2.11.*, triton ==3.6.*, host gpu]"]
    again = Expectations.load(exp.path)
    assert again.lookup(CELL, GPU).row == FAILS
    assert again.lookup(other, GPU).row["outcome"] == "passed"


def test_accept_puts_a_narrower_row_before_the_broad_one(tmp_path):
    exp = load(tmp_path, {CELL: [FAILS]})
    accept(exp, {CELL: Outcome("passed")}, GPU, MEASURED["measured"])
    rows = Expectations.load(exp.path).rows[("cells", CELL)]
    assert [r.row["outcome"] for r in rows] == ["passed", "failed"]
    assert rows[0].row["torch"] == "==2.11.*"
    assert Expectations.load(exp.path).lookup(CELL, Run("2.9.0", "3.4.0", "gpu")).row == FAILS  # others untouched


def test_accept_replaces_a_row_of_the_same_range_and_proposes_a_match(tmp_path):
    exp = load(
        tmp_path,
        {
            CELL: [
                {"torch": "==2.11.*", "triton": "==3.6.*", "host": "gpu", "outcome": "passed", "provenance": MEASURED}
            ]
        },
    )
    observed = Outcome(
        "failed", "torch._inductor.exc.InductorError", "RuntimeError: 0 active drivers ([]). There should only be one."
    )
    accept(exp, {CELL: observed}, GPU, MEASURED["measured"])
    (row,) = Expectations.load(exp.path).rows[("cells", CELL)]
    assert agrees(row, observed)
    assert row.row["match"] == r"0 active drivers \(\[\]\)\." and row.row["reason"] == UNEXPLAINED


def test_accept_leaves_skips_alone_and_writes_nothing_when_nothing_changed(tmp_path):
    exp = load(tmp_path, {CELL: [FAILS]})
    before = exp.path.read_text()
    assert (
        accept(
            exp,
            {CELL: DATA_POINTER, "silu-raw_jit-eager-bfloat16-cuda": Outcome("skipped", None, "no GPU")},
            GPU,
            MEASURED["measured"],
        )
        == []
    )
    assert exp.path.read_text() == before


def test_the_committed_expectations_file_is_valid():
    exp = Expectations.load(Path(__file__).parent.parent / "expectations.yaml")
    assert exp.rows and all(UNEXPLAINED not in (e.row.get("reason") or "") for rows in exp.rows.values() for e in rows)


ANY = "silu-raw_jit-export_nonstrict-*-cuda"
DTYPES = ("float32", "float16", "bfloat16")


def _cell(dtype: str) -> str:
    return ANY.replace("*", dtype)


def test_any_dtype_rows_come_after_a_cells_own_rows(tmp_path):
    passes = {"torch": "==2.11.*", "outcome": "passed", "provenance": MEASURED}
    exp = load(tmp_path, {ANY: [FAILS], _cell("float16"): [passes]})
    assert exp.lookup(_cell("float32"), GPU).cell_id == ANY
    assert exp.lookup(_cell("float16"), GPU).row == passes
    assert exp.lookup(_cell("float16"), Run("2.9.0", "3.4.0", "gpu")).row == FAILS  # falls through to the any-dtype
    with pytest.raises(ExpectationsError, match=r"unknown kernel name\(s\) 'gelu'"):
        load(tmp_path, {"gelu-raw_jit-eager-*-cuda": [FAILS]})


def test_accept_folds_rows_every_dtype_shares(tmp_path):
    exp = load(tmp_path, {})
    accept(exp, {_cell(d): DATA_POINTER for d in DTYPES}, GPU, MEASURED["measured"])
    again = Expectations.load(exp.path)
    assert list(again.rows) == [("cells", ANY)]
    # One dtype changes: it gets its own row, ahead of the shared ones; the others keep theirs.
    accept(again, {_cell("float16"): Outcome("passed")}, GPU, MEASURED["measured"])
    final = Expectations.load(exp.path)
    assert sorted(final.rows) == [("cells", ANY), ("cells", _cell("float16"))]
    assert final.lookup(_cell("float16"), GPU).row["outcome"] == "passed"
    assert final.lookup(_cell("bfloat16"), GPU).row["outcome"] == "failed"


def test_accept_explains_failures_the_catalogue_knows(tmp_path):
    exp = load(tmp_path, {})
    accept(exp, {CELL: DATA_POINTER}, GPU, MEASURED["measured"])
    written = Expectations.load(exp.path).lookup(CELL, GPU)
    row = written.full
    assert written.row["known"] == "raw_launch_data_ptr" and "reason" not in written.row  # a key, not a copy
    assert row["match"] == r"Cannot access data pointer of Tensor \(e\.g\. FakeTensor, FunctionalTensor\)"
    assert "FakeTensors" in row["reason"] and "pytorch/pytorch#146066" in row["reason"]
    assert "triton_op" in row["rewrite"]
    # The same text under the interpreter has another cause, and a narrower entry says so.
    interp = CELL.replace("bfloat16-cuda", "float32-cpu_interpret")
    accept(exp, {interp: DATA_POINTER}, Run("2.13.0", "3.7.1", "cpu-only"), MEASURED["measured"])
    assert (
        "TRITON_INTERPRET"
        in Expectations.load(exp.path).lookup(interp, Run("2.13.0", "3.7.1", "cpu-only")).full["reason"]
    )


def test_cells_outside_the_matrix_are_refused(tmp_path):
    with pytest.raises(ExpectationsError, match="is not in the matrix"):
        load(tmp_path, {"silu-raw_jit-eager-float32-cpu": [FAILS]})  # raw_jit has no CPU kernel


# ---- the fuzz section ----

FUZZ_CELL = "silu-raw_jit-export_strict-float32-cuda"
MISMATCH = Outcome(
    "mismatch",
    numerics=[{"ok": False, "why": "module, shape (5, 3), strided: 7 element(s) beyond"}],
    detail={"reproducer": "python -m compat fuzz silu-raw_jit-export_strict-float32-cuda --example '{}'"},
)
FUZZ_ROW = {
    "torch": "==2.11.*",
    "outcome": "mismatch",
    "reason": "strict export drops the launcher's assert",
    "provenance": MEASURED,
}


def test_a_fuzz_cell_without_rows_must_pass_and_a_failure_says_how_to_reproduce_it(tmp_path):
    exp = load(tmp_path, {})
    assert exp.lookup(FUZZ_CELL, GPU, "fuzz") is None
    assert judge(FUZZ_CELL, None, Outcome("passed"), GPU, exp.path, "fuzz").complaint is None
    complaint = judge(FUZZ_CELL, None, MISMATCH, GPU, exp.path, "fuzz").complaint
    assert "does not compute eager's function" in complaint and "reproduce: python -m compat fuzz" in complaint
    assert f"fuzz.{FUZZ_CELL}" in complaint


def test_a_reproducer_written_by_an_earlier_version_is_read_and_dropped(tmp_path):
    """Rows once carried the command that reproduces their finding; it follows from the id and the example."""
    command = "python -m compat fuzz silu-raw_jit-export_strict-float32-cuda --example '{}'"
    for schema in (1, 2):
        path = tmp_path / f"schema{schema}.yaml"
        rows = {"silu-raw_jit-export_strict-*-cuda": [{**FUZZ_ROW, "reproducer": command}]}
        text = dump({"schema": 1, "cells": {}, "fuzz": rows})
        path.write_text(text if schema == 2 else yaml.safe_dump({"schema": 1, "cells": {}, "fuzz": rows}))
        exp = Expectations.load(path)
        assert exp.lookup(FUZZ_CELL, GPU, "fuzz").row == FUZZ_ROW
        assert "reproducer" not in dump(exp.data)


def test_a_recorded_fuzz_finding_is_expected_and_fails_the_gate_once_fixed(tmp_path):
    path = tmp_path / "expectations.yaml"
    path.write_text(dump({"schema": 1, "cells": {}, "fuzz": {"silu-raw_jit-export_strict-*-cuda": [FUZZ_ROW]}}))
    exp = Expectations.load(path)
    row = exp.lookup(FUZZ_CELL, GPU, "fuzz")
    assert row.where == "fuzz.silu-raw_jit-export_strict-*-cuda[0]" and exp.lookup(FUZZ_CELL, GPU) is None
    assert judge(FUZZ_CELL, row, MISMATCH, GPU, exp.path, "fuzz").complaint is None
    assert (
        "expected failure now passes (strict)"
        in judge(FUZZ_CELL, row, Outcome("passed"), GPU, exp.path, "fuzz").complaint
    )


def test_a_malformed_fuzz_section_names_the_problem(tmp_path):
    path = tmp_path / "expectations.yaml"
    path.write_text(dump({"schema": 1, "cells": {}, "fuzz": {FUZZ_CELL: [{**FUZZ_ROW, "reason": ""}]}}))
    with pytest.raises(ExpectationsError, match=rf"fuzz.{FUZZ_CELL}\[0\]: outcome mismatch needs 'reason'"):
        Expectations.load(path)
    path.write_text(yaml.safe_dump({"schema": 2, "cells": [], "fuzzing": []}))
    with pytest.raises(ExpectationsError, match="optionally 'fuzz'"):
        Expectations.load(path)


def test_a_key_given_twice_is_an_error_naming_both_lines(tmp_path):
    path = tmp_path / "expectations.yaml"
    row = "  - torch: '>=2.0'\n    outcome: passed\n    provenance: {documented: x}\n"
    path.write_text(f"schema: 1\ncells:\n  {CELL}:\n{row}  {CELL}:\n{row}")
    with pytest.raises(ExpectationsError, match=rf"expectations.yaml: duplicate key '{CELL}' on lines 3 and 7"):
        Expectations.load(path)


def test_accept_into_an_any_dtype_key_leaves_no_row_the_new_one_hides(tmp_path):
    # Every dtype's row folds ahead of the any-dtype key's rows; one for the same versions and host would be dead.
    key = CELL.replace("bfloat16", "*")
    exp = load(tmp_path, {key: [{**FAILS, "torch": "==2.11.*", "triton": "==3.6.*", "host": "gpu"}]})
    observed = {CELL.replace("bfloat16", dt): Outcome("passed") for dt in ("float32", "float16", "bfloat16")}
    accept(exp, observed, GPU, MEASURED["measured"])
    rows = Expectations.load(exp.path).data["cells"][key]
    assert [r["outcome"] for r in rows] == ["passed"]


def test_accept_records_fuzz_findings_with_their_example_and_the_catalogues_reason(tmp_path):
    example = {"shape": [1024, 1000], "layout": "transposed", "seed": 0, "scale": 1.0, "sign": "mixed", "specials": []}
    example["sizes"] = [["rows", 1024], ["cols", 1000]]  # silu_mul's declared dims
    aoti = "silu_mul-triton_op-aoti_strict-float16-cuda"
    found = Outcome(
        "mismatch",
        numerics=[{"ok": False, "why": "package output 0, transposed: 1023973 element(s) beyond 0.005 x |eager|"}],
        detail={"example": example, "reproducer": f"python -m compat fuzz {aoti} --example '...'"},
    )
    none_out = Outcome(
        "mismatch",
        numerics=[{"ok": False, "why": "package output 0, transposed: got NoneType"}],
        detail={"example": example, "reproducer": "python -m compat fuzz ..."},
    )
    unknown = Outcome(
        "mismatch", numerics=[{"ok": False, "why": "wrong"}], detail={"example": example, "reproducer": "python -m ..."}
    )
    observed = {
        aoti: found,
        "silu_mul-custom_op-aoti_strict-float16-cuda": none_out,
        "silu_mul-triton_op-compile_inductor-float16-cuda": unknown,
        "silu_mul-triton_op-eager-float16-cuda": Outcome("passed"),
    }
    path = tmp_path / "expectations.yaml"
    path.write_text(dump({"schema": 1, "cells": {}}))
    exp = Expectations.load(path)
    changes = accept(exp, observed, GPU, MEASURED["measured"], section="fuzz")
    assert len(changes) == 3 and all(c.startswith("fuzz ") for c in changes)  # a pass without rows needs none
    rows = {cell_id: [resolve(row) for row in rows] for cell_id, rows in Expectations.load(path).data["fuzz"].items()}
    (row,) = rows[aoti]
    assert row["known"] == "fuzz_aoti_strided_wrong" and json.loads(row["example"]) == example
    assert "reproducer" not in row and "The AOTI package compiles that launch in" in row["reason"]
    assert "returns None for a non-contiguous input" in rows["silu_mul-custom_op-aoti_strict-float16-cuda"][0]["reason"]
    # The catalogue's fuzz entries say nothing of a compile stage, nor of the matrix's own cells.
    assert rows["silu_mul-triton_op-compile_inductor-float16-cuda"][0]["reason"] == UNEXPLAINED
    assert Expectations.load(path).data["cells"] == {}


# ---- schema 2: rows listing their cells, catalogue entries by key ----

POOL = [{"torch": f">={6 + i % 3}.0", "outcome": "passed", "provenance": {"documented": f"row {i}"}} for i in range(5)]
CELLS = [CELL, CELL.replace("bfloat16", "float16"), CELL.replace("raw_jit", "triton_op"), FUZZ_CELL]


@given(
    st.dictionaries(
        st.sampled_from(CELLS),
        st.lists(st.sampled_from(range(len(POOL))), min_size=1, max_size=4, unique=True),
        min_size=1,
    )
)
def test_a_file_written_and_read_gives_every_cell_its_rows_in_order(picks):
    """Cells share a row where they can; where their orders disagree (a cycle) a row is written per cell."""
    cells = {cell_id: [POOL[i] for i in rows] for cell_id, rows in picks.items()}
    text = dump({"cells": cells})
    groups = yaml.safe_load(text)["cells"]
    assert Expectations(Path("x"), cell_view(yaml.safe_load(text), "x")).data["cells"] == cells
    assert len(groups) <= sum(map(len, cells.values()))


def test_a_row_names_its_catalogue_entry_and_is_read_with_its_words(tmp_path):
    written_out = resolve(
        {
            "torch": ">=2.6",
            "outcome": "failed",
            "error": "RuntimeError",
            "known": "raw_launch_data_ptr",
            "provenance": MEASURED,
        }
    )
    assert "FakeTensors" in written_out["reason"] and written_out["match"].startswith("Cannot access data pointer")
    row = {k: v for k, v in written_out.items() if k != "known"}
    text = dump({"cells": {CELL: [row]}})  # a row that copies an entry's words is written with its key
    assert "known: raw_launch_data_ptr" in text and "FakeTensors" not in text
    (path := tmp_path / "e.yaml").write_text(text)
    assert agrees(Expectations.load(path).lookup(CELL, GPU), DATA_POINTER)


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"known": "no_such_entry"}, "no catalogue entry has the key 'no_such_entry'"),
        ({"known": "raw_launch_data_ptr", "reason": "mine"}, "a row with 'known' takes its reason and rewrite from"),
        ({"known": "fuzz_aoti_strided_wrong"}, "explains outcome mismatch, the row expects failed"),
    ],
)
def test_a_wrong_catalogue_key_is_named(tmp_path, change, fragment):
    row = {"torch": ">=2.6", "outcome": "failed", "error": "RuntimeError", **change, "provenance": MEASURED}
    with pytest.raises(ExpectationsError, match=re.escape(fragment)):
        Expectations.load(write_as_is(tmp_path, {CELL: [row]}))


def test_schema_1_is_still_read(tmp_path):
    exp = Expectations.load(write_as_is(tmp_path, {CELL: [FAILS]}, schema=1))
    assert agrees(exp.lookup(CELL, GPU), DATA_POINTER)


def test_an_upgrade_that_changes_no_outcome_is_a_diff_of_a_few_screens(tmp_path):
    """Accepting a torch that changed nothing (2.15's CPU results, as if measured on 2.16) widens the rows cells
    share: one range per row, not one row per cell."""
    suite = ROOT / "expectations.yaml"
    (copy := tmp_path / "expectations.yaml").write_text(suite.read_text())
    doc = results.load(ROOT / "results" / "torch-2.15.0-cu132_triton-3.9.0_cpu.json.gz")
    env = {**doc["environment"], "torch": "2.16.0+cu132", "triton": "3.10.0"}
    exp, run = Expectations.load(copy), Run.from_env(env)
    observed = {c["id"]: Outcome.from_dict(c["outcome"]) for c in doc["cells"]}
    changes = accept(exp, observed, run, measured_on(env), neighbours=neighbours(exp, run, above=True))
    diff = list(difflib.unified_diff(suite.read_text().splitlines(), copy.read_text().splitlines(), n=0))
    assert len(changes) > 1000 and all("widened" in c for c in changes)
    assert len(diff) < 1000, f"{len(diff)} lines of diff for {len(changes)} widened cells"


UNEXPLAINED_ROW = {
    "torch": "==2.11.*",
    "triton": "==3.6.*",
    "host": "gpu",
    "outcome": "failed",
    "error": "RuntimeError",
    "match": "Cannot access data pointer",
    "reason": UNEXPLAINED,
    "provenance": MEASURED,
}


def test_a_row_recorded_unexplained_names_the_entry_that_explains_it_later(tmp_path):
    exp = Expectations.load(write_as_is(tmp_path, {CELL: [UNEXPLAINED_ROW]}))
    (change,) = accept(exp, {CELL: DATA_POINTER}, GPU, MEASURED["measured"])
    assert change == f"{CELL}: explained as raw_launch_data_ptr"
    assert Expectations.load(exp.path).lookup(CELL, GPU).row["known"] == "raw_launch_data_ptr"


def test_the_gate_fails_on_an_unexplained_row_until_it_is_explained(tmp_path):
    """The README's promise: a failure accept recorded without a reason fails the gate, naming what to do; with a
    reason the same outcome passes."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "the gate fails on it until it is explained" in readme
    row = UNEXPLAINED_ROW
    exp = Expectations.load(write_as_is(tmp_path, {CELL: [row]}))
    complaint = judge(CELL, exp.lookup(CELL, GPU), DATA_POINTER, GPU, exp.path).complaint
    assert "the row is unexplained" in complaint and "write its `reason:`" in complaint
    exp = Expectations.load(write_as_is(tmp_path, {CELL: [{**row, "reason": "raw launches read data pointers"}]}))
    assert judge(CELL, exp.lookup(CELL, GPU), DATA_POINTER, GPU, exp.path).complaint is None


def test_a_cell_this_device_cannot_measure_needs_no_row_and_never_fails_the_gate(tmp_path):
    """The README's CPU advice, followed literally: accepted with eager stages only, a plain run also meets the stages
    the interpreter cannot run; with no row they are not measurable here (the catalogue says why), never failures.
    A failure no entry marks so still fails without a row."""
    cpu, cell = Run("2.13.0+cpu", "3.7.1", "cpu-only"), "silu-warmup_launch-compile_inductor-float32-cpu_interpret"
    exp = Expectations.load(write_as_is(tmp_path, {}))
    interpreter = Outcome("failed", "TypeError", "'NoneType' object is not subscriptable")
    assert judge(cell, None, interpreter, cpu, exp.path).complaint is None
    other = Outcome("failed", "TypeError", "unsupported operand type(s)")
    assert "no expectation" in judge(cell, None, other, cpu, exp.path).complaint
