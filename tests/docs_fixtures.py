"""Small results documents for the report and diff tests."""

import copy

ENV = {
    "torch": "2.11.0+cu130",
    "triton": "3.6.0",
    "cuda": "13.0",
    "python": "3.12.3",
    "platform": "Linux",
    "date": "2026-11-22T12:00:00+00:00",
    "ld_preload": "",
    "driver": "580.159.04",
    "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}],
}
PROV = {
    "measured": {"torch": "2.11.0+cu130", "triton": "3.6.0", "device": "NVIDIA H100 80GB HBM3", "date": "2026-11-22"}
}
DATA_PTR = "Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If you're using ..."


def cell(
    stage,
    kind,
    style="raw_jit",
    device="cuda",
    error=None,
    message=None,
    rel=0.0,
    verdict=None,
    reason=None,
    rewrite=None,
    remedy=None,
    dtype="bfloat16",
    kernel="silu",
):
    cid = f"{kernel}-{style}-{stage}-{dtype}-{device}"
    numerics = [{"input": "batch 1", "ok": True, "max_abs_err": rel, "max_rel_err": rel}] if kind == "passed" else None
    expected = {"outcome": kind, "provenance": PROV}
    if reason:
        expected.update(reason=reason, rewrite=rewrite)
    return {
        "id": cid,
        "axes": {"kernel": kernel, "style": style, "stage": stage, "dtype": dtype, "device": device},
        "outcome": {
            "kind": kind,
            "error_type": error,
            "message": message,
            "numerics": numerics,
            "detail": {"remedy": remedy} if remedy else {},
        },
        "expected": expected,
        "verdict": verdict,
        "duration_s": 1.0,
        "worker": "gw0",
    }


def fuzz(of, kind, refused=None, layout="strided", reason=None, rewrite=None):
    """A fuzz test's record of a matrix cell: passed (refusing `refused` layouts), mismatch or failed on one example."""
    tally = {
        "examples": 0 if kind != "passed" else 100,
        "informative": 50,
        "max_abs_err": 0.0,
        "max_rel_err": 0.0,
        "refused": {lay: 3 for lay in refused or ()},
        "refusals": {lay: "AssertionError: Input tensor must be contiguous" for lay in refused or ()},
    }
    detail = {"tally": tally}
    if kind != "passed":
        example = {"shape": [1000003], "layout": layout, "seed": 0}
        detail.update(example=example, reproducer=f"python -m compat fuzz {of['id']} --example '{example}'")
    expected = {"outcome": kind, "provenance": PROV}
    if reason:
        expected.update(reason=reason, rewrite=rewrite)
    return {
        "id": of["id"],
        "axes": dict(of["axes"]),
        "outcome": {
            "kind": kind,
            "error_type": "AssertionError" if kind == "failed" else None,
            "message": "Expected a.storage_offset() == b.storage_offset()" if kind == "failed" else None,
            "numerics": [{"ok": False, "why": f"module output 0, {layout}: NaN where eager has none"}]
            if kind == "mismatch"
            else None,
            "detail": detail,
        },
        "expected": expected,
        "verdict": None,
    }


def doc(cells, env=ENV, fuzz_records=None):
    from collections import Counter

    def by_outcome(records):
        kinds = Counter(c["outcome"]["kind"] for c in records)
        return {k: kinds.get(k, 0) for k in ("passed", "failed", "mismatch", "crashed", "timed_out", "skipped")}

    summary = {
        "cells": len(cells),
        "by_outcome": by_outcome(cells),
        "unexpected": sum(1 for c in cells if c["verdict"]),
        "wall_seconds": 10.0,
        "exports": 2,
        "aoti_compiles": 1,
        "aoti_compile_seconds": {},
    }
    extra = {}
    if fuzz_records is not None:
        summary["fuzz"] = {
            "cells": len(fuzz_records),
            "examples": 100 * len(fuzz_records),
            "by_outcome": by_outcome(fuzz_records),
            "unexpected": 0,
        }
        extra["fuzz"] = fuzz_records
    return {"schema": 1, "environment": copy.deepcopy(env), "options": {}, "summary": summary, "cells": cells, **extra}


def writeup():
    """The write-up's result: raw_jit exports only strict; triton_op everywhere."""
    return doc(
        [
            cell("eager", "passed"),
            cell("export_strict", "passed"),
            cell(
                "export_nonstrict",
                "failed",
                error="RuntimeError",
                message=DATA_PTR,
                reason="fake data_ptr",
                rewrite="use triton_op + wrap_triton",
            ),
            cell("eager", "passed", style="triton_op"),
            cell("export_nonstrict", "passed", style="triton_op"),
        ]
    )


def committed_pages(pattern: str):
    """Every committed generated Markdown page matching `pattern` (under the repository's root, the examples' too)
    and the results file it names, as (path, text, results)."""
    import re
    from pathlib import Path

    from compat.evidence import results

    root = Path(__file__).resolve().parent.parent
    for md in sorted(root.glob(pattern)):
        if ".venv" in md.parts:
            continue
        text = md.read_text()
        source = re.search(r"Generated by `python -m compat report (\S+)`", text)
        if source:  # named relative to the repository the page belongs to: its docs/ folder's parent
            repository = next(p for p in md.parents if p.name == "docs").parent
            yield md, text, results.load((repository / source.group(1)).resolve())


def versions_page_files() -> list[str]:
    """The results files the committed docs/VERSIONS.md was generated from, as it names them."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "VERSIONS.md").read_text()
    generated = next(p for p in page.split("\n\n") if p.startswith("Generated by"))
    return re.findall(r"`(results/[^`]+\.json\.gz)`", generated)
