"""Time the matrix with one xdist worker and with `-n auto`; report wall time, speed-up, compiles and time per stage.

    python scripts/benchmark_matrix.py --out bench/ [-- pytest args, e.g. --compat-devices=cuda]

Each run is a full `python -m compat run` (fresh run directory and caches, so nothing is reused between the two).
Writes bench/benchmark.json and bench/benchmark.md and prints the Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(workers: str, out: Path, extra: list[str]) -> dict:
    results = out / f"bench-n{workers}.json"
    cmd = [sys.executable, "-m", "compat", "run", "-n", workers, "--results", str(results), *extra]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    wall = time.monotonic() - start
    (out / f"bench-n{workers}.log").write_text(proc.stdout + proc.stderr)
    doc = json.loads(results.read_text())
    per_stage: dict[str, float] = defaultdict(float)
    for cell in doc["cells"]:
        per_stage[cell["axes"]["stage"]] += cell["duration_s"]
    s = doc["summary"]
    return {"workers": workers, "exit_code": proc.returncode, "wall_seconds": round(wall, 1), "cells": s["cells"],
            "by_outcome": s["by_outcome"], "unexpected": s["unexpected"], "exports": s["exports"],
            "aoti_compiles": s["aoti_compiles"], "cells_per_gpu": s.get("cells_per_gpu"),
            "xdist_workers": doc["options"].get("workers"),
            "stage_seconds": {k: round(v, 1) for k, v in per_stage.items()}}


def markdown(one: dict, auto: dict, env: dict) -> str:
    gpu = ", ".join(g["name"] for g in env["gpus"]) or "no GPU"
    lines = [f"## Matrix benchmark: torch {env['torch']}, triton {env['triton']}, {gpu}", "",
             "| workers | wall s | cells | unexpected | exports | AOTI compiles | exit |", "|---|---|---|---|---|---|---|"]
    for r in (one, auto):
        lines.append(f"| {r['xdist_workers']} | {r['wall_seconds']} | {r['cells']} | {r['unexpected']} | "
                     f"{r['exports']} | {r['aoti_compiles']} | {r['exit_code']} |")
    lines += ["", f"Speed-up with -n auto: {one['wall_seconds'] / auto['wall_seconds']:.2f}x", "",
              "Time per stage, summed over its cells (s): how long cells waited, export and AOTI cells including the "
              "shared build they waited for.", "", "| stage | -n 1 | -n auto |", "|---|---|---|"]
    for stage in one["stage_seconds"]:
        lines.append(f"| {stage} | {one['stage_seconds'][stage]} | {auto['stage_seconds'].get(stage)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="bench", help="folder for the results, logs and report")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    one, auto = run("1", out, extra), run("auto", out, extra)
    env = json.loads((out / "bench-nauto.json").read_text())["environment"]
    report = {"environment": env, "one_worker": one, "auto": auto,
              "speedup": round(one["wall_seconds"] / auto["wall_seconds"], 2)}
    (out / "benchmark.json").write_text(json.dumps(report, indent=1) + "\n")
    text = markdown(one, auto, env)
    (out / "benchmark.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
