"""Outcome classification and the results file."""

import json
import os
import signal

import pytest
import torch

from compat.atomic import check_writable, write_atomic
from compat.errors import ResultsError
from compat.evidence import results
from compat.evidence.outcomes import KINDS, Outcome, from_comparisons, from_exception, from_exit, timed_out


def test_exception_types_are_qualified_unless_builtin():
    from torch._dynamo.exc import Unsupported

    assert from_exception(RuntimeError("x")).error_type == "RuntimeError"
    assert from_exception(Unsupported("x")).error_type == "torch._dynamo.exc.Unsupported"


def test_exit_classification():
    seg = from_exit(-signal.SIGSEGV, "tail", "aoti_load")
    assert (seg.kind, seg.error_type, seg.detail["phase"]) == ("crashed", "SIGSEGV", "aoti_load")
    assert "killed by SIGSEGV during aoti_load" in seg.message
    code = from_exit(7, "tail", "export")
    assert code.kind == "crashed" and code.detail["exit_code"] == 7
    assert timed_out(30, "compile", "").kind == "timed_out"


def test_comparisons_decide_pass_or_mismatch():
    assert from_comparisons([{"ok": True}]).kind == "passed"
    assert from_comparisons([{"ok": True}, {"ok": False, "why": "batch 1: off"}]).kind == "mismatch"


def test_only_known_kinds_and_round_trip():
    with pytest.raises(ValueError):
        Outcome("flaky")
    for kind in KINDS:
        o = Outcome(kind, "T", "first\nsecond", [{"ok": True}], {"phase": "p"})
        assert Outcome.from_dict(json.loads(json.dumps(o.to_dict()))) == o
        assert o.first_line == "first"


ENV = {
    "torch": "2.13.0",
    "triton": "3.7.1",
    "cuda": None,
    "gpus": [],
    "driver": None,
    "platform": "Linux",
    "date": "2026-11-22T12:00:00+00:00",
}


def cell(kind, verdict=None):
    axes = {"kernel": "silu", "style": "raw_jit", "stage": kind, "dtype": "bfloat16", "device": "cpu"}
    return {"id": "-".join(axes.values()), "axes": axes, "outcome": Outcome(kind).to_dict(), "verdict": verdict}


def test_results_document_counts_every_kind(tmp_path):
    doc = results.document(
        ENV, [cell("passed"), cell("failed", "changed")], {"exports": 2, "aoti_compiles": 1}, 12.3, {}
    )
    assert doc["summary"]["by_outcome"]["passed"] == 1 and doc["summary"]["unexpected"] == 1
    path = tmp_path / "r.json"
    results.write(path, doc)
    assert results.load(path) == doc


def test_results_load_names_the_file_and_the_problem(tmp_path):
    with pytest.raises(ResultsError, match="no such results file"):
        results.load(tmp_path / "missing.json")
    (tmp_path / "cut.json").write_text('{"schema": 1, "cells": [')
    with pytest.raises(ResultsError, match=r"cut.json: not valid JSON \(truncated\?\)"):
        results.load(tmp_path / "cut.json")
    (tmp_path / "old.json").write_text('{"schema": 0}')
    with pytest.raises(ResultsError, match="old.json: results schema 0; this version reads schema 1"):
        results.load(tmp_path / "old.json")


def test_atomic_write_leaves_old_file_or_new_never_half(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    write_atomic(path, "old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_atomic(path, "new")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["r.json"]


def test_atomic_write_honours_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "r.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644


def test_unwritable_results_paths_are_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError):
        check_writable(tmp_path / "file" / "r.json")  # a parent that is a file
    with pytest.raises(IsADirectoryError):
        check_writable(tmp_path)
    check_writable(tmp_path / "new" / "r.json")  # creates the folder


def test_an_exception_groups_first_member_is_its_root_cause():
    """Hypothesis's FlakyFailure (an exception group) holds what the first call raised: that is what a harness
    error names, not only that the example did not fail again."""
    from hypothesis.errors import FlakyFailure

    from compat.evidence.outcomes import from_exception

    try:
        raise FlakyFailure("Hypothesis prop produces unreliable results", [RuntimeError("wrong on the first call")])
    except FlakyFailure as exc:
        outcome = from_exception(exc)
    assert outcome.cause.error_type == "RuntimeError" and "wrong on the first call" in outcome.summary()


def test_a_long_compile_error_keeps_the_compilers_error_lines_past_the_cut():
    """g++'s warnings can fill the message's limit before its first error (Liger's fused linear cross entropy under
    compile_cpp_wrapper, H200): the error lines past the cut are kept, the limit holds."""
    from compat.evidence.outcomes import MESSAGE_LIMIT

    warnings = "main.cpp:487:154: warning: suggest parentheses around arithmetic in operand of '|'\n" * 80
    message = f"C++ compile error\n\nOutput:\n{warnings}main.cpp:912:3: error: 'foo' was not declared in this scope\n"
    outcome = from_exception(RuntimeError(message))
    assert len(outcome.message) <= MESSAGE_LIMIT and outcome.message.startswith("C++ compile error")
    assert outcome.message.endswith("main.cpp:912:3: error: 'foo' was not declared in this scope")
    assert from_exception(RuntimeError("x" * 5000)).message == "x" * MESSAGE_LIMIT  # no error lines: the head


def chunked(x):
    # A branch on the symbolic size, as a chunked loss or a compiler's pass takes one: a guard made here.
    return x * 2 if x.shape[0] < 256 else x + 1


def test_a_dynamic_compile_that_recompiles_names_where_its_failed_guard_was_made():
    from torch._dynamo.testing import CompileCounter

    from compat.child.checks import _compiled, stayed_dynamic

    compiled, counter = _compiled(chunked, backend=CompileCounter(), dynamic=True)
    compiled(torch.randn(37))
    frames_after_first = counter.frame_count
    compiled(torch.randn(1024))
    judged = stayed_dynamic([counter], frames_after_first, Outcome("passed"), "n=1024")
    assert (judged.kind, judged.error_type) == ("failed", "Recompiled")
    assert judged.message.startswith("n=1024 recompiled: 2 frames after 1; the last recompile's failed guard came ")
    assert "test_outcomes.py:" in judged.message and " in chunked" in judged.message and len(judged.message) < 400
