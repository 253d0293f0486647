"""Where a whole-matrix run's time goes, before and after a change: one Markdown table from results files.

    python scripts/gate_table.py --before RESULTS.json [--name NAME=RESULTS.json ...] --out TABLE.md

Each run named with --name gets a column: its CUDA cells, wall time, the seconds its cells took (a shared child's on the
first cell that needed it: summed, the workers' busy time) and their CPU seconds, per stage family; the C++ wrapper's
CPU seconds per compile; the AOTI compile times. `--before` is the run the others are compared with: its seconds for
the same cells (it may predate CPU accounting: then its CPU column is empty).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compat.atomic import write_atomic  # noqa: E402 - the checkout's package, found through the path above
from compat.evidence import results  # noqa: E402


def _median_max(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {max(values):.1f} ({len(values)})" if values else "—"


def _column(doc: dict, before: dict) -> dict[str, str]:
    cells, summary = [c for c in doc["cells"] if c["axes"]["device"] == "cuda"], doc["summary"]
    merged = doc["options"].get("merged_from")
    seconds = sum(c.get("duration_s") or 0.0 for c in cells)
    cpu = sum(c.get("cpu_s") or 0.0 for c in cells)
    same = sum(before[c["id"]].get("duration_s") or 0.0 for c in cells if c["id"] in before)
    wrapper = [
        cpu_s
        for c in cells
        if c["axes"]["stage"] == "compile_cpp_wrapper"
        for cpu_s in [(c["outcome"]["detail"].get("cpu_seconds") or {}).get("compile_cpp_wrapper")]
        if cpu_s
    ]
    aoti = [s for name, s in summary.get("aoti_compile_seconds", {}).items() if s and ":" not in name]
    rows = {
        "cells": str(len(cells)),
        "unexpected": str(summary["unexpected"]),
        "wall s": f"{summary['wall_seconds']:.0f}"
        + (
            f" (the sum of {len(merged)} calls, CPU cells too)"
            if merged
            else " (cut)"
            if doc["options"].get("interrupted")
            else ""
        ),
        "compile caches": str(doc["options"].get("compile_cache") or "one per worker"),
        "cells' seconds (workers busy)": f"{seconds:.0f}",
        "the same cells' seconds in --before": f"{same:.0f} ({seconds / same:.2f}x)" if same else "—",
        "CPU s": f"{cpu:.0f}" if cpu else "not recorded",
        "workers busy / CPU cores busy (mean)": f"{seconds / summary['wall_seconds']:.1f} / "
        f"{cpu / summary['wall_seconds']:.1f}"
        if cpu and not merged
        else "—",
        "compile_cpp_wrapper CPU s per group (median / max (n))": _median_max(wrapper),
        "AOTI compile s (median / max (n))": _median_max(aoti),
    }
    for family, row in results.stage_families(cells).items():
        rows[f"{family}: cells, s, CPU s"] = f"{row['cells']}, {row['seconds']:.0f}, " + (
            f"{row['cpu_seconds']:.0f}" if row["cpu_seconds"] else "—"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, metavar="RESULTS.json")
    parser.add_argument("--name", action="append", default=[], metavar="NAME=RESULTS.json")
    parser.add_argument("--out", required=True, metavar="TABLE.md")
    args = parser.parse_args()
    before_doc = results.load(args.before)
    before = {c["id"]: c for c in before_doc["cells"]}
    columns = {"--before": _column(before_doc, before)}
    for named in args.name:
        name, _, path = named.partition("=")
        columns[name] = _column(results.load(path), before)
    keys = list(dict.fromkeys(k for col in columns.values() for k in col))
    lines = [f"| | {' | '.join(columns)} |", f"|---|{'---|' * len(columns)}"]
    lines += [f"| {k} | {' | '.join(col.get(k, '') for col in columns.values())} |" for k in keys]
    sources = [
        f"- `--before`: `{args.before}`",
        *(f"- {n.partition('=')[0]}: `{n.partition('=')[2]}`" for n in args.name),
    ]
    legend = (
        "Compile caches: `one per worker` (before issue 26), `run` (Inductor's and Triton's one per run: it "
        "changed outcomes, so no longer offered), `kernels` (Triton's one per run, Inductor's each child's own: "
        "the default), `child` (both each child's own). A cut run's cells are the longest groups first "
        "(`--compat-durations`): compare it by the same cells' seconds, not by its cell count."
    )
    write_atomic(args.out, "\n".join(lines + ["", legend, "", *sources]) + "\n")
    print(args.out)


if __name__ == "__main__":
    main()
