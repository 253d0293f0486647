"""The run's terminal summary: a headline that says what is expected, the matrix as a grid that fits the terminal,
and the lines a reader must act on (cells that differ, harness errors, environment failures, the fuzz tests)."""

from __future__ import annotations

import textwrap
from collections import Counter
from typing import Any

from ..evidence.expectations import NEEDS_REASON
from ..evidence.outcomes import Outcome
from .baseline_changes import summary_lines as baseline_lines
from .report import CellView, Matrix, fuzz_headline

# Two characters per cell. Lower case: as expected; '!': differs from its expectation; '?': no expectation at all.
EXPECTED_MARK = {"passed": "ok", "failed": "xf", "mismatch": "xm", "crashed": "xc", "timed_out": "xt"}
LETTER = {"passed": "P", "failed": "F", "mismatch": "M", "crashed": "C", "timed_out": "T"}
LEGEND = (
    "ok passes; xf fails as expected; xm wrong values as expected; xc/xt crashes/hangs as expected; "
    "!P !F !M !C !T differs from its expectation (now passes, fails, wrong values, crashes, hangs); "
    "?P ?F ... no expectation for this run; nm not measurable on this device (its row or the catalogue says why); "
    "-- not run here"
)
DTYPE = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
AS_EXPECTED = {
    "passed": "pass",
    "failed": "fail as expected",
    "mismatch": "give wrong values as expected",
    "crashed": "crash as expected",
    "timed_out": "hang as expected",
    "unmeasurable": "not measurable on this device",
}


def mark(c: CellView | None) -> str:
    if c is None:
        return ""
    if c.kind == "skipped":
        return "--"
    if c.unmeasurable and not c.unexpected:  # the device's failure, not the op's, with or without a row
        return "nm"
    if not c.expected:
        return "?" + LETTER[c.kind]
    return "!" + LETTER[c.kind] if c.unexpected else EXPECTED_MARK[c.kind]


def abbreviations(stages: list[str]) -> dict[str, str]:
    """A short column label per stage: the initials of its words (compile_aot_eager -> cae), unique."""
    out: dict[str, str] = {}
    for stage in stages:
        short = "".join(word[0] for word in stage.split("_"))
        n = 2
        while short in out.values():  # a user's stage that shares initials gets a digit
            short = f"{short.rstrip('0123456789')}{n}"
            n += 1
        out[stage] = short
    return out


def headline(doc: dict[str, Any]) -> list[str]:
    cells = doc["cells"]
    ran = [c for c in cells if c["outcome"]["kind"] != "skipped"]
    differ = sum(1 for c in ran if c["verdict"])
    expected = Counter(
        "unmeasurable" if CellView.of(c).unmeasurable else c["outcome"]["kind"] for c in ran if not c["verdict"]
    )
    parts = ", ".join(f"{n} {AS_EXPECTED[k]}" for k, n in expected.items())
    if (doc.get("options") or {}).get("accept"):  # an accept records what differed: nothing fails on it
        lines = [
            f"{len(ran)} cells ran here: {len(ran) - differ} as expected ({parts or 'none'}); {differ} differed "
            f"from the expectations before this accept, which recorded them (accepted: below)"
        ]
    else:
        lines = [
            f"{len(ran)} cells ran here: {len(ran) - differ} as expected ({parts or 'none'}); "
            f"{differ} differ from their expectations" + (" (the gate fails)" if differ else "")
        ]
    reasons = Counter(Outcome.from_dict(c["outcome"]).first_line for c in cells if c["outcome"]["kind"] == "skipped")
    lines += [f"{n} cells not run here: {reason}" for reason, n in reasons.items()]
    return lines


def grid(m: Matrix, width: int) -> list[str]:
    """Per (kernel, device), one row per style and dtype, one column per stage; rows where nothing ran are left out
    (the headline counts them). Columns that do not fit the width continue in a second block."""
    short = abbreviations(m.stages)
    rows = [r for r in m.rows if any(c.kind != "skipped" for c in r.cells.values())]
    if not rows:
        return []
    label_w = (
        max(
            [len(f"  {r.style} {DTYPE.get(r.dtype, r.dtype)}") for r in rows]
            + [len(f"{r.kernel} on {r.device}") for r in rows]
        )
        + 1
    )
    col_w = {s: max(2, len(short[s])) + 1 for s in m.stages}
    blocks: list[list[str]] = []
    block: list[str] = []
    used = label_w
    for s in m.stages:
        if block and used + col_w[s] > width:
            blocks.append(block)
            block, used = [], label_w
        block.append(s)
        used += col_w[s]
    blocks.append(block)
    lines = []
    for block in blocks:
        for kernel, device in dict.fromkeys((r.kernel, r.device) for r in rows):
            head = f"{kernel} on {device}".ljust(label_w) + "".join(short[s].ljust(col_w[s]) for s in block)
            lines.append(head.rstrip())
            for r in rows:
                if (r.kernel, r.device) == (kernel, device):
                    label = f"  {r.style} {DTYPE.get(r.dtype, r.dtype)}".ljust(label_w)
                    lines.append((label + "".join(mark(r.cells.get(s)).ljust(col_w[s]) for s in block)).rstrip())
    legend = "columns: " + ", ".join(f"{short[s]} {s}" for s in m.stages)
    return lines + textwrap.wrap(legend, width) + textwrap.wrap(LEGEND, width)


def fuzz_lines(doc: dict[str, Any]) -> list[str]:
    """The fuzz tests in a few lines: totals, then every cell that did not pass or differs from its expectation."""
    s = doc["summary"].get("fuzz") or {}  # results written before the fuzz tests existed have none
    if not doc.get("fuzz"):
        env = doc["environment"]
        host = "gpu" if env["gpus"] else "cpu-only"
        if (doc.get("options") or {}).get("accept"):
            return ["fuzz: nothing fuzzed: no cell of a fuzzed stage passed in this run"] if s.get("collected") else []
        return (
            [
                f"fuzz: nothing fuzzed: no cell is expected to pass on this run (torch {env['torch']}, triton "
                f"{env['triton']}, host {host}), and the fuzz tests fuzz only those; record this run's expectations "
                f"first (--compat-accept)"
            ]
            if s.get("collected")
            else []
        )
    lines = [fuzz_headline(doc)]
    skipped = Counter(
        Outcome.from_dict(f["outcome"]).first_line for f in doc["fuzz"] if f["outcome"]["kind"] == "skipped"
    )
    lines += [f"  {n} fuzz tests not run here: {reason}" for reason, n in skipped.items()]
    for f in doc["fuzz"]:
        outcome = Outcome.from_dict(f["outcome"])
        if f["verdict"] or outcome.kind not in ("passed", "skipped"):
            lines.append(f"  {'!' if f['verdict'] else ''}{f['id']}: {outcome.summary()[:160]}")
    return lines


def summary_lines(doc: dict[str, Any], results_path: str | None = None, width: int = 100) -> list[str]:
    lines = textwrap.wrap(Matrix(doc).header(), width) if doc["cells"] else []
    if doc["cells"]:
        m = Matrix(doc)
        lines += [wrapped for line in headline(doc) for wrapped in textwrap.wrap(line, width)] + grid(m, width)
        views = [c for r in m.rows for c in r.cells.values()]
        lines += [f"ENVIRONMENT FAILURE: {e}" for e in sorted({c.environment for c in views if c.environment})]
        lines += [f"REMEDY: {r}" for r in sorted({c.remedy for c in views if c.remedy})]
    for error in doc.get("harness_errors", []):
        what = "DECLARATION ERROR" if error.get("declaration") else "HARNESS ERROR"
        lines.append(f"{what} {error['id']} ({error['section']}): {error['error'][:300]}")
    if any(e.get("declaration") for e in doc.get("harness_errors", [])):
        lines.append("a declaration error is the declaration's to fix (exit 2): accepting records nothing for it")

    lines += [
        wrapped
        for line in fuzz_lines(doc) + baseline_lines(doc)
        for wrapped in textwrap.wrap(line, width, subsequent_indent="    ")
    ]
    if results_path:
        lines.append(f"results: {results_path}")
    return lines


def needs_reason_lines(needs: list[str], path) -> list[str]:
    """The fuzz findings an accept recorded without a reason, and what to do with each (exit 1)."""
    if not needs:
        return []
    head = f"NEEDS A REASON: {len(needs)} fuzz finding(s) recorded in {path} that no catalogue entry explains"
    return [
        head,
        *(f"  {line}" for line in needs),
        *textwrap.wrap(NEEDS_REASON, 100, initial_indent="  ", subsequent_indent="  "),
    ]
