"""One results file per run, named by what it holds, and `latest.json`: never moved off a fuller run by one that was
interrupted or narrowed (compat.run.runfiles)."""

import datetime
import json
from pathlib import Path

from compat.run import runfiles

STARTED = datetime.datetime(2026, 11, 27, 4, 8, 13, tzinfo=datetime.timezone.utc)
A, B = "silu-triton_op-eager-float32-cpu_interpret", "silu-triton_op-compile_inductor-float32-cpu_interpret"


def doc(*ids: str, interrupted: str | None = None, fuzz: tuple[str, ...] = ()) -> dict:
    def record(i):
        return {"id": i, "outcome": {"kind": "passed"}}

    return {
        "schema": 1,
        "options": {"interrupted": interrupted},
        "cells": [record(i) for i in ids],
        "fuzz": [record(i) for i in fuzz],
    }


def write(path, d):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(d))
    return path


def test_each_run_gets_a_file_of_its_own_named_by_versions_time_and_selection(tmp_path):
    first = runfiles.new_path(tmp_path, "torch-2.13.0-cpu_triton-3.7.1_cpu", STARTED, {"stages": ["eager", "x y"]})
    assert first.name == "torch-2.13.0-cpu_triton-3.7.1_cpu_20261127T040813Z_stages-eager+x-y.json"
    write(first, {})
    second = runfiles.new_path(tmp_path, "torch-2.13.0-cpu_triton-3.7.1_cpu", STARTED, {"stages": ["eager", "x y"]})
    assert second != first and second.name.endswith("-2.json")


def test_latest_follows_a_whole_run_and_never_leaves_a_fuller_one(tmp_path, monkeypatch):
    monkeypatch.setattr(runfiles.results, "load", lambda p: json.loads(Path(p).read_text()))  # a minimal file
    folder = tmp_path / "compat-results"
    whole = write(folder / "whole.json", doc(A, B, fuzz=(A,)))
    assert runfiles.update_latest(whole, doc(A, B, fuzz=(A,))) == "latest.json -> whole.json"
    narrow = write(folder / "narrow.json", doc(A))
    line = runfiles.update_latest(narrow, doc(A))
    assert line.startswith("latest.json left at whole.json: it measured 2 record(s) this run did not")
    cut = write(folder / "cut.json", doc(A, B, fuzz=(A,), interrupted="interrupted by SIGINT"))
    assert "interrupted" in runfiles.update_latest(cut, doc(A, B, fuzz=(A,), interrupted="interrupted by SIGINT"))
    assert runfiles.latest(folder).resolve() == whole.resolve()
    # A cell no longer in the matrix (an op removed from the declarations) does not hold the link back.
    write(whole, doc(A, B, "gone_op-as_shipped-eager-float32-cpu_interpret", fuzz=(A,)))
    again = write(folder / "again.json", doc(A, B, fuzz=(A,)))
    assert runfiles.update_latest(again, doc(A, B, fuzz=(A,))) == "latest.json -> again.json"
    assert runfiles.latest(folder).resolve() == again.resolve()
