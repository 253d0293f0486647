"""Small results documents for the report and diff tests."""

import copy

ENV = {"torch": "2.11.0+cu130", "triton": "3.6.0", "cuda": "13.0", "python": "3.12.3", "platform": "Linux",
       "date": "2026-11-22T12:00:00+00:00", "ld_preload": "", "driver": "580.159.04",
       "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}]}
PROV = {"measured": {"torch": "2.11.0+cu130", "triton": "3.6.0", "device": "NVIDIA H100 80GB HBM3",
                     "date": "2026-11-22"}}
DATA_PTR = "Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If you're using ..."


def cell(stage, kind, style="raw_jit", device="cuda", error=None, message=None, rel=0.0, verdict=None,
         reason=None, rewrite=None, remedy=None):
    cid = f"silu-{style}-{stage}-bfloat16-{device}"
    numerics = [{"input": "batch 1", "ok": True, "max_abs_err": rel, "max_rel_err": rel}] if kind == "passed" else None
    expected = {"outcome": kind, "provenance": PROV}
    if reason:
        expected.update(reason=reason, rewrite=rewrite)
    return {"id": cid, "axes": {"kernel": "silu", "style": style, "stage": stage, "dtype": "bfloat16",
                                "device": device},
            "outcome": {"kind": kind, "error_type": error, "message": message, "numerics": numerics,
                        "detail": {"remedy": remedy} if remedy else {}},
            "expected": expected, "verdict": verdict, "duration_s": 1.0, "worker": "gw0"}


def doc(cells, env=ENV):
    from collections import Counter

    kinds = Counter(c["outcome"]["kind"] for c in cells)
    return {"schema": 1, "environment": copy.deepcopy(env), "options": {},
            "summary": {"cells": len(cells), "by_outcome": {k: kinds.get(k, 0) for k in
                                                            ("passed", "failed", "mismatch", "crashed", "timed_out",
                                                             "skipped")},
                        "unexpected": sum(1 for c in cells if c["verdict"]), "wall_seconds": 10.0, "exports": 2,
                        "aoti_compiles": 1, "aoti_compile_seconds": {}},
            "cells": cells}


def writeup():
    """The write-up's result: raw_jit exports only strict; triton_op everywhere."""
    return doc([
        cell("eager", "passed"), cell("export_strict", "passed"),
        cell("export_nonstrict", "failed", error="RuntimeError", message=DATA_PTR, reason="fake data_ptr",
             rewrite="use triton_op + wrap_triton"),
        cell("eager", "passed", style="triton_op"), cell("export_nonstrict", "passed", style="triton_op"),
    ])
