"""The measured chart: the tutorial's question (which way of wrapping a Triton kernel survives which stage) answered
from a results file, for the four canonical styles, one glyph per (style, stage group), over every kernel the style
ran on the device the answers speak for.

A kernel's class at a group is the worst over the group's stages and dtypes; the glyph is the worst over the kernels,
so a glyph never claims more than every kernel showed, and the cell's note names the kernels of each class:

- works, fuzz-verified: every cell passed on the model and its fuzz test (the package's, for a C++ cell) passed;
- works, overflows as eager: fuzz-verified, but a generated input at the dtype's edge overflows where eager
  overflows too (float64 finite there): as accurate as eager, a class of its own, never "silently wrong";
- works, not fuzzed: passed on the model, with no passing fuzz record;
- contiguous inputs only: the fuzz tests found it wrong or raising on a non-contiguous input only;
- raising on some generated inputs (a contiguous one); fails, crashes or hangs on the model;
- wrong values on some generated inputs (a contiguous one), or silently wrong on the model. They rank worst: a
  failure says so, a wrong value does not, so no failure of another kernel hides it.

The classes are compat.report.legend's marks, as on every page.

The gradient rows chart what a user ships to train: a `triton_op` trains through `register_autograd` (the style
`register_autograd`, named in the row), not a bare `triton_op` no gradient formula reaches; a `custom_op` is charted
as it is, with no autograd registered (no style of the matrix registers one on it), so its gradient cells show how
it fails. AOTI is charted after strict and after non-strict export. An AOTI C++ cell runs its package, whose fuzz tests
load it from Python: what they find wrong holds from C++ too, but a pass is charted as not fuzzed (the C++ path was
not fuzzed itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..evidence.catalogue import INTERPRETER_LIMIT
from ..evidence.verdicts import Verdict
from ..matrix.cells import Cell, package_cell_of, why_not_applicable
from ..matrix.kernels import KERNELS
from ..matrix.styles import CANONICAL_STYLES
from . import legend

# The canonical styles (compat.matrix.styles declares which they are), as the chart's columns name them.
LABELS = {
    "raw_jit": "raw `@triton.jit`",
    "triton_op": "`triton_op` + `wrap_triton`",
    "custom_op": "`custom_op`",
    "autograd_function": "`autograd.Function`",
}
CANONICAL = tuple((style, LABELS[style]) for style in CANONICAL_STYLES)
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("eager", ("eager",)),
    ("compile", ("compile_inductor",)),
    ("compile, grads", ("compile_backward",)),
    ("dynamic", ("compile_dynamic",)),
    ("dynamic, grads", ("compile_dynamic_backward",)),
    ("CUDA graphs", ("compile_cudagraphs",)),
    ("export strict", ("export_strict",)),
    ("export non-strict", ("export_nonstrict",)),
    ("save/load", ("save_load_nonstrict",)),
    ("AOTI Python, strict", ("aoti_strict",)),
    ("AOTI Python, non-strict", ("aoti_nonstrict",)),
    ("AOTI C++, strict", ("aoti_cpp_strict",)),
    ("AOTI C++, non-strict", ("aoti_cpp_nonstrict",)),
)
# The gradient rows: the style whose cells fill each column there (None: no style of the matrix, not measured).
GRADIENT_GROUPS = ("compile, grads", "dynamic, grads")
TRAINS_VIA = {"triton_op": "register_autograd"}
CPP_PASS = "AOTI C++: a pass is not fuzz-verified (the package's fuzz tests load it from Python)."
UNTRAINED = {"custom_op": "a bare `custom_op`, no autograd registered (no style of the matrix registers one on it)"}


def cell_class(verdict: Verdict, fuzz: dict[str, Any] | None) -> str | None:
    """One cell's class, a key of compat.report.legend.MARKS (None: not run here). `fuzz`: the fuzz record of the
    cell, or of the package it runs. Wrong or raising on some generated inputs of a view only: contiguous only."""
    if verdict.kind == "skipped":
        return None
    if verdict.works:  # fuzz-verified only by its own fuzz test: a C++ cell's package was fuzzed from Python
        return "verified" if legend.of_verdict(verdict) == "refuses" else legend.of_verdict(verdict)
    if verdict.kind in ("wrong_some", "errors_some"):
        example = (fuzz or {}).get("outcome", {}).get("detail", {}).get("example") or {}
        if example.get("layout", "contiguous") != "contiguous":
            return "contiguous"
    return verdict.kind


def column(style: str, group: str) -> str | None:
    """The chart column a style's cells fill in a group (None: none)."""
    if group in GRADIENT_GROUPS:
        if style in TRAINS_VIA:
            return None  # a bare triton_op or custom_op: no gradient formula, not what a user ships to train
        return next((col for col, via in TRAINS_VIA.items() if via == style), style)
    return style


def via(style: str, group: str) -> str | None:
    """The style a column shows in a group, where it is not the column's own."""
    return TRAINS_VIA.get(style, style) if group in GRADIENT_GROUPS and style in TRAINS_VIA else None


@dataclass
class ChartCell:
    style: str
    group: str
    kernels: dict[str, str]  # kernel -> its class here

    @property
    def worst(self) -> str | None:
        return legend.worst(self.kernels.values()) if self.kernels else None

    def tally(self) -> str:
        """How many of its kernels fall in each class, best first (✅ 7 ❌ 1): one bad kernel reads as one."""
        counts = [(cls, sum(c == cls for c in self.kernels.values())) for cls in legend.ORDER]
        return " ".join(f"{legend.glyph(cls)} {n}" for cls, n in counts if n)

    def note(self) -> str:
        """Each class's kernels, best first: what the glyph stands on."""
        shown = via(self.style, self.group)
        if not self.kernels:
            return "not measured"
        bare = self.group in GRADIENT_GROUPS and self.style in UNTRAINED
        parts = []
        for cls in legend.ORDER:
            named = sorted(k for k, c in self.kernels.items() if c == cls)
            if named:
                parts.append(f"{legend.glyph(cls)} {', '.join(named)}")  # the legend beside the chart says it
        said = f"as `{shown}`, " if shown else f"{UNTRAINED[self.style]}; " if bare else ""
        return said + f"{len(self.kernels)} kernels; " + "; ".join(parts)


def _classes(
    doc: dict[str, Any], verdicts: dict[str, Verdict], device: str, styles: tuple[str, ...] | None
) -> dict[tuple[str, str], dict[str, str]]:
    """{(style, group): {kernel: its class there}} over the results' cells on `device` (of `styles`, or any)."""
    fuzz = {f["id"]: f for f in doc.get("fuzz") or []}
    found: dict[tuple[str, str], dict[str, str]] = {}
    group_of = {stage: group for group, stages in GROUPS for stage in stages}
    for c in doc["cells"]:
        a = c["axes"]
        if a["device"] != device or a["stage"] not in group_of:
            continue
        col = column(a["style"], group_of[a["stage"]])
        if col is None or (styles and col not in styles):
            continue
        package = package_cell_of(c["id"])
        cls = cell_class(verdicts[c["id"]], fuzz.get(package or c["id"]))
        if cls is None:
            continue

        kernels = found.setdefault((col, group_of[a["stage"]]), {})
        kernels[a["kernel"]] = max(kernels.get(a["kernel"], cls), cls, key=legend.ORDER.index)
    return found


def chart(doc: dict[str, Any], verdicts: dict[str, Verdict], device: str) -> list[ChartCell]:
    """Every (canonical style, group) cell of the chart, from the results' cells on `device`."""
    found = _classes(doc, verdicts, device, tuple(dict(CANONICAL)))
    return [ChartCell(style, group, found.get((style, group), {})) for style, _ in CANONICAL for group, _ in GROUPS]


def never_fuzzed(doc: dict[str, Any], device: str) -> str:
    """The sentence that says why a pass is not fuzz-verified where no fuzz test of its kernel and canonical style ran
    on `device` at all (none was selected in the runs behind the file: no record, not a failure); "" if none."""
    fuzzed = {(f["axes"]["kernel"], f["axes"]["style"]) for f in doc.get("fuzz") or [] if f["axes"]["device"] == device}
    passed: dict[str, set[str]] = {}
    for c in doc["cells"]:
        a = c["axes"]
        if a["device"] == device and a["style"] in dict(CANONICAL) and c["outcome"]["kind"] == "passed":
            if (a["kernel"], a["style"]) not in fuzzed:
                passed.setdefault(a["kernel"], set()).add(a["style"])
    if not passed:
        return ""
    named = "; ".join(
        f"`{k}` ({'every style' if len(v) == len(CANONICAL) else ', '.join(sorted(v))})"
        for k, v in sorted(passed.items())
    )
    return (
        f"Not fuzzed on {device} in these results, so ☑️ at best: {named}. No fuzz test of theirs ran here (the runs "
        f"behind this file did not select them): no record, not a failure."
    )


def of_op(doc: dict[str, Any], op: str) -> dict[str, Any]:
    """The results of one op (kernel) alone: its cells and its fuzz tests."""
    return {
        **doc,
        "cells": [c for c in doc["cells"] if c["axes"]["kernel"] == op],
        "fuzz": [f for f in doc.get("fuzz") or [] if f["axes"]["kernel"] == op],
    }


def op_rows(doc: dict[str, Any], verdicts: dict[str, Verdict], device: str) -> tuple[str, list[tuple[str, list]]]:
    """A repository's ops as shipped (style `as_shipped`) against the chart's groups, each op judged alone: what was
    measured (a sentence) and, per op, its class in each group (None: not measured)."""
    found = _classes(doc, verdicts, device, ("as_shipped",))
    ops = sorted({kernel for kernels in found.values() for kernel in kernels})
    ran = [
        c
        for c in doc["cells"]
        if c["axes"]["device"] == device and c["axes"]["style"] == "as_shipped" and c["outcome"]["kind"] != "skipped"
    ]
    fuzzed = [f for f in doc.get("fuzz") or [] if f["axes"]["device"] == device and f["outcome"]["kind"] != "skipped"]
    said = (
        f"Each op alone, on {device}: the worst of its cells in each group (every dtype; non-strict export for "
        f"save/load and AOTI); {len(ran)} cells and {len(fuzzed)} fuzz tests measured. {CPP_PASS}"
    )
    rows = [(op, [found.get(("as_shipped", g), {}).get(op) for g, _ in GROUPS]) for op in ops]
    if any(c == "unmeasurable" for _, classes in rows for c in classes):
        said += f" {legend.glyph('unmeasurable')}: {INTERPRETER_LIMIT}."
    # Groups no stage of which is in this device's matrix, by why (for the ops declared in this process, in the
    # dtypes they ran).
    absent: dict[str, list[str]] = {}
    ran_in = {(c["axes"]["kernel"], c["axes"]["dtype"]) for c in ran if c["axes"]["kernel"] in KERNELS}
    for group, stages in GROUPS:
        why = {why_not_applicable(Cell(op, "as_shipped", s, dtype, device)) for op, dtype in ran_in for s in stages}
        if ran_in and None not in why:
            absent.setdefault("; ".join(sorted(filter(None, why))), []).append(group)
    said += "".join(f" {', '.join(groups)}: not in {device}'s matrix ({why})." for why, groups in absent.items())
    return said, rows


def op_summary(doc: dict[str, Any], verdicts: dict[str, Verdict], device: str) -> list[str]:
    """op_rows as Markdown: two tables of half the groups each (eleven groups and an op's name do not fit GitHub's
    column), or nothing where no op ran on `device`."""
    said, rows = op_rows(doc, verdicts, device)
    if not rows:
        return []
    out = [f"{said} {legend.markdown((c for _, classes in rows for c in classes), unmeasured=True)}", ""]
    middle = (len(GROUPS) + 1) // 2
    for half in (slice(0, middle), slice(middle, None)):
        out += ["| op | " + " | ".join(g for g, _ in GROUPS[half]) + " |", "|---|" + "---|" * len(GROUPS[half])]
        out += [
            f"| `{op}` | " + " | ".join(legend.glyph(c) if c else legend.UNMEASURED.glyph for c in classes[half]) + " |"
            for op, classes in rows
        ]
        out.append("")
    return out


def markdown(cells: list[ChartCell], device: str, never_fuzzed_line: str = "") -> list[str]:
    """The chart as the first table of a page (a stage group a row, a style a column: it fits GitHub's column), its
    notes lettered below it."""
    by_key = {(c.style, c.group): c for c in cells}
    out = [
        f"## Which style survives which stage, measured on {device}",
        "",
        "The tutorial's chart, from this results file: each cell counts the kernels measured in each class, best "
        "first (its letter: the note naming each kernel's class). Gradient rows: "
        "`triton_op` as `triton_op` + `register_autograd` (what a user ships to train); `custom_op` as it is, "
        "with no autograd registered. Non-strict export for save/load (torch.export's default since "
        f"2.8); AOTI after each; every dtype the stage runs. {CPP_PASS}",
        "",
        legend.markdown((c.worst for c in cells if c.worst), unmeasured=True),
        "",
        "| stage | " + " | ".join(label for _, label in CANONICAL) + " |",
        "|---|" + "---|" * len(CANONICAL),
    ]
    notes, letters = [], iter(_letters())
    for group, _ in GROUPS:
        row = []
        for style, label in CANONICAL:
            cell = by_key[(style, group)]
            if cell.worst is None:
                row.append(legend.UNMEASURED.glyph)
                continue
            letter = next(letters)
            notes.append(f"{letter}. {group}, {label}: {cell.note()}.")
            row.append(f"{cell.tally()}<sup>{letter}</sup>")
        out.append(f"| {group} | " + " | ".join(row) + " |")
    return out + ["", *(f"<sub>{n}</sub><br>" for n in notes), "", *filter(None, [never_fuzzed_line]), ""]


def _letters():
    for first in ("", *"abcdefghijklmnopqrstuvwxyz"):
        for second in "abcdefghijklmnopqrstuvwxyz":
            yield first + second
