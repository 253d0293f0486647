"""Time the same cells, fuzz tests included, with two checkouts of this repository side by side in one call:

    python scripts/benchmark_matrix.py --before TREE --out bench/ [-- pytest args, e.g. -n 16]

TREE is a checkout of the code to compare against (`git worktree add TREE main`, or `git archive` of it); the other
run is this checkout. Both are full `python -m compat run`s of the same cells (`--compat-cells`, default: the fixed
subset below), one after the other, each with a fresh run directory and cold caches, each against its own
expectations. Reports wall time, cells, fuzz tests, CPU seconds per stage family, AOTI compiles (and the libraries
linked from an identical program's), and every cell or fuzz test whose outcome differs between the two; writes
benchmark.json and benchmark.md under --out and prints the Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# A fixed subset of CUDA cells: a traced launch, triton_op, an opaque custom_op and an autotuned style, every stage,
# float32 (the dtype every stage runs in).
SUBSET = {
    "kernel": ["silu"],
    "style": ["raw_jit", "triton_op", "custom_op", "autotune_triton_op"],
    "dtype": ["float32"],
    "device": ["cuda"],
}


def subset_cells(path: Path, subset: dict) -> int:
    from compat.matrix.cells import matrix

    cells = matrix(subset)
    path.write_text("".join(f"{c.id}\n" for c in cells))
    return len(cells)


def run(name: str, tree: Path, out: Path, cells: Path, extra: list[str]) -> dict:
    results = out / f"{name}.json"
    cmd = [
        sys.executable,
        "-m",
        "compat",
        "run",
        "--results",
        str(results),
        f"--compat-cells={cells}",
        "--compat-run-dir",
        tempfile.mkdtemp(prefix=f"bench-{name}-"),
        "-p",
        "no:randomly",
        *extra,
    ]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    wall = time.monotonic() - start
    (out / f"{name}.log").write_text(proc.stdout + proc.stderr)
    doc = json.loads(results.read_text())
    s = doc["summary"]
    return {
        "name": name,
        "tree": str(tree),
        "exit_code": proc.returncode,
        "wall_seconds": round(wall, 1),
        "cells": s["cells"],
        "fuzz_tests": s["fuzz"]["cells"],
        "unexpected": s["unexpected"] + s["fuzz"]["unexpected"],
        "harness_errors": s.get("harness_errors", 0),
        "aoti_compiles": s["aoti_compiles"],
        "aoti_reused": s.get("aoti_reused", 0),
        "aoti_compiled_in_all": _compiled_in_all(doc),
        "interpreters": s["children"]["interpreters"],
        "cpu_seconds": {family: f["cpu_seconds"] for family, f in sorted(s["stage_families"].items())},
        "outcomes": {
            f"{section}:{r['id']}": r["outcome"]["kind"] for section in ("cells", "fuzz") for r in doc[section]
        },
    }


def _compiled_in_all(doc: dict) -> int:
    """AOTI libraries compiled by the builds and the fuzz tests: the store's count, where the code has one; else the
    builds' compiles and one per fuzz test of an AOTI family that got as far as making its artifact."""
    from compat.matrix.cells import split_cell_id
    from compat.matrix.stages import STAGES

    s = doc["summary"]
    if "aoti_store_compiles" in s:
        return s["aoti_store_compiles"]
    return s["aoti_compiles"] + sum(
        STAGES[split_cell_id(r["id"], "results").stage].family in ("aoti", "aoti_max_autotune", "aoti_legacy")
        and "artifact_seconds" in r["outcome"]["detail"]
        for r in doc["fuzz"]
    )


def markdown(before: dict, after: dict, env: dict, subset: dict) -> str:
    gpu = ", ".join(g["name"] for g in env["gpus"]) or "no GPU"
    changed = sorted(
        k
        for k in before["outcomes"].keys() | after["outcomes"].keys()
        if before["outcomes"].get(k) != after["outcomes"].get(k)
    )
    lines = [
        f"## The same cells before and after: torch {env['torch']}, triton {env['triton']}, {gpu}",
        "",
        f"`{json.dumps(subset)}`: {after['cells']} cells and their fuzz tests, cold caches, one run after the "
        f"other in one call.",
        "",
        "| code | wall s | cells | fuzz tests | AOTI compiles (builds) | linked from an identical program | "
        "AOTI compiles (builds and fuzz) | interpreters | unexpected | harness errors | exit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in (before, after):
        lines.append(
            f"| {r['name']} | {r['wall_seconds']} | {r['cells']} | {r['fuzz_tests']} | {r['aoti_compiles']} "
            f"| {r['aoti_reused']} | {r['aoti_compiled_in_all']} | {r['interpreters']} | {r['unexpected']} | {r['harness_errors']} "
            f"| {r['exit_code']} |"
        )
    lines += [
        "",
        f"Wall time, before / after: {before['wall_seconds'] / after['wall_seconds']:.2f}x",
        "",
        "CPU seconds per stage family (the children's, compilers included):",
        "",
        "| family | before | after |",
        "|---|---|---|",
    ]
    for family in sorted(before["cpu_seconds"].keys() | after["cpu_seconds"].keys()):
        lines.append(f"| {family} | {before['cpu_seconds'].get(family)} | {after['cpu_seconds'].get(family)} |")
    lines += ["", f"Outcomes that differ: {len(changed)}" + ("" if not changed else ":"), ""]
    lines += [f"- `{k}`: {before['outcomes'].get(k)} -> {after['outcomes'].get(k)}" for k in changed]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, type=Path, help="a checkout of the code to compare against")
    parser.add_argument("--out", default="bench", help="folder for the results, logs and report")
    parser.add_argument("--subset", type=json.loads, default=SUBSET, help="the cells, as JSON axis lists")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    if not (args.before / "compat" / "__main__.py").exists():
        parser.error(f"--before {args.before}: not a checkout of this repository (no compat/__main__.py)")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cells = out / "cells.txt"
    subset_cells(cells, args.subset)
    before = run("before", args.before.resolve(), out, cells, extra)
    after = run("after", ROOT, out, cells, extra)
    env = json.loads((out / "after.json").read_text())["environment"]
    text = markdown(before, after, env, args.subset)
    (out / "benchmark.json").write_text(
        json.dumps({"environment": env, "subset": args.subset, "before": before, "after": after}, indent=1) + "\n"
    )
    (out / "benchmark.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
