"""The support matrix as text: rows are kernel/style/dtype/device, columns are stages."""

from __future__ import annotations

from typing import Any

from .cells import registries

SHORT = {"passed": "pass", "failed": "fail", "mismatch": "mism", "crashed": "crash", "timed_out": "time",
         "skipped": "skip"}
LEGEND = ("pass = passed, fail = failed as expected, mism = numerics mismatch, crash = crashed, time = timed out, "
          "skip = skipped (environment); '!' marks an outcome that differs from its expectation (the gate fails)")


def symbol(cell: dict[str, Any]) -> str:
    kind = cell["outcome"]["kind"]
    return ("!" if cell.get("verdict") else "") + SHORT[kind]


def matrix_lines(doc: dict[str, Any]) -> list[str]:
    stages = [s for s in registries()["stage"] if any(c["axes"]["stage"] == s for c in doc["cells"])]
    rows: dict[str, dict[str, str]] = {}
    for c in doc["cells"]:
        a = c["axes"]
        rows.setdefault(f"{a['kernel']}/{a['style']}/{a['dtype']}/{a['device']}", {})[a["stage"]] = symbol(c)
    width = max([len(r) for r in rows] + [4])
    cols = [max(len(s), 6) for s in stages]
    lines = [" ".join([" " * width] + [s.ljust(w) for s, w in zip(stages, cols)]).rstrip()]
    for name, cells in rows.items():
        lines.append(" ".join([name.ljust(width)] + [cells.get(s, "").ljust(w) for s, w in zip(stages, cols)]).rstrip())
    return lines


def summary_lines(doc: dict[str, Any], results_path: str | None = None) -> list[str]:
    env, s = doc["environment"], doc["summary"]
    gpu = ", ".join(f"{g['name']} (sm {g['capability']})" for g in env["gpus"]) or "no GPU"
    counts = ", ".join(f"{n} {k}" for k, n in s["by_outcome"].items() if n)
    lines = [f"torch {env['torch']}, triton {env['triton']}, CUDA {env['cuda']}, {gpu}, driver {env['driver']}",
             *matrix_lines(doc), LEGEND,
             f"{s['cells']} cells: {counts}; {s['unexpected']} differ from expectations; "
             f"{s['exports']} exports and {s['aoti_compiles']} AOTI compiles in {s['wall_seconds']} s"]
    remedies = sorted({c["outcome"]["detail"]["remedy"] for c in doc["cells"] if c["outcome"]["detail"].get("remedy")})
    lines += [f"REMEDY: {r}" for r in remedies]
    if results_path:
        lines.append(f"results: {results_path}")
    return lines
