"""Time the same cells with children started the old way (a fresh interpreter per task, each detecting the CPU ISAs
itself) and the new way (forks of a warm server per worker, the ISAs detected once per run), side by side.

    python scripts/benchmark_matrix.py --out bench/ [-- pytest args, e.g. -n 16]

Both runs are full `python -m compat run`s of the same cells (`--compat-cells`, default: the fixed subset below), each
with a fresh run directory and cold caches. Reports wall time, time per stage, interpreters started, the AOTI compile
times and the ratio of the two; writes benchmark.json and benchmark.md under --out and prints the Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# A fixed subset of CUDA cells: raw, triton_op, opaque custom_op and autotuned styles, every stage, one dtype.
SUBSET = {"kernel": ["silu"], "style": ["raw_jit", "triton_op", "custom_op", "autotune_triton_op"],
          "dtype": ["float16"], "device": ["cuda"]}
WAYS = ("fresh", "forked")


def subset_cells(path: Path) -> int:
    from compat.matrix.cells import matrix

    cells = matrix(SUBSET)
    path.write_text("".join(f"{c.id}\n" for c in cells))
    return len(cells)


def run(way: str, out: Path, cells: Path, extra: list[str]) -> dict:
    results = out / f"{way}.json"
    cmd = [sys.executable, "-m", "compat", "run", "--results", str(results), f"--compat-cells={cells}",
           f"--compat-children={way}", "--compat-run-dir", str(out / f"run-{way}"), "-p", "no:randomly", *extra]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    wall = time.monotonic() - start
    (out / f"{way}.log").write_text(proc.stdout + proc.stderr)
    doc = json.loads(results.read_text())
    per_stage: dict[str, float] = defaultdict(float)
    for cell in doc["cells"]:
        per_stage[cell["axes"]["stage"]] += cell["duration_s"]
    s = doc["summary"]
    compiles = sorted(v for v in s["aoti_compile_seconds"].values() if v is not None)
    return {"way": way, "exit_code": proc.returncode, "wall_seconds": round(wall, 1), "cells": s["cells"],
            "unexpected": s["unexpected"], "interpreters": s["children"]["interpreters"],
            "xdist_workers": doc["options"].get("workers"), "aoti_compile_seconds": compiles,
            "stage_seconds": {k: round(v, 1) for k, v in per_stage.items()}}


def distribution(values: list[float]) -> str:
    if not values:
        return "none"
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return (f"{len(values)} compiles: min {values[0]:.1f}, median {statistics.median(values):.1f}, p90 {p90:.1f}, "
            f"max {values[-1]:.1f} s")


def markdown(runs: dict[str, dict], env: dict) -> str:
    gpu = ", ".join(g["name"] for g in env["gpus"]) or "no GPU"
    old, new = runs["fresh"], runs["forked"]
    lines = [f"## Children started the old way and the new way: torch {env['torch']}, triton {env['triton']}, {gpu}",
             "", f"The same {new['cells']} cells (`{json.dumps(SUBSET)}`), cold caches, {new['xdist_workers']} "
                 f"xdist workers, one after the other in one call.", "",
             "| children | wall s | interpreters started | AOTI compile times | unexpected | exit |",
             "|---|---|---|---|---|---|"]
    for r in (old, new):
        lines.append(f"| {r['way']} | {r['wall_seconds']} | {r['interpreters']} | "
                     f"{distribution(r['aoti_compile_seconds'])} | {r['unexpected']} | {r['exit_code']} |")
    lines += ["", f"Ratio (old / new wall time): {old['wall_seconds'] / new['wall_seconds']:.2f}x", "",
              "Time per stage, summed over its cells (s; a cell's time includes the shared child it waited for):", "",
              "| stage | fresh | forked |", "|---|---|---|"]
    for stage in old["stage_seconds"]:
        lines.append(f"| {stage} | {old['stage_seconds'][stage]} | {new['stage_seconds'].get(stage)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="bench", help="folder for the results, logs and report")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cells = out / "cells.txt"
    subset_cells(cells)
    runs = {way: run(way, out, cells, extra) for way in WAYS}
    env = json.loads((out / "forked.json").read_text())["environment"]
    report = {"environment": env, "subset": SUBSET, **runs,
              "ratio": round(runs["fresh"]["wall_seconds"] / runs["forked"]["wall_seconds"], 2)}
    (out / "benchmark.json").write_text(json.dumps(report, indent=1) + "\n")
    text = markdown(runs, env)
    (out / "benchmark.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
