"""The support matrix as the documentation shows it: a view of a results file per kernel, style and device, its
Markdown (the HTML page is compat.report.page), and the run's header lines the terminal summary shares.

`Matrix` is the run as measured: one row per style, device and dtype, one column per stage (the terminal grid).
`Folded` is what a reader sees: one row per style and device, the stages in their groups (compat.matrix.stages.DOC_GROUPS),
the dtypes folded into one entry where their verdicts agree (compat.evidence.verdicts: the fuzz evidence included).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..evidence.gate import unmeasurable
from ..evidence.outcomes import Outcome
from ..evidence.verdicts import KINDS, Verdict, of_doc
from ..matrix.cells import dtypes_braced, registries, split_cell_id
from ..matrix.stages import DOC_GROUPS, STAGES
from ..matrix.styles import FAMILIES, STYLES
from . import chart as measured_chart
from . import legend, timings
from .recommend import answers as recommend_answers
from .recommend import markdown as recommend_markdown
from .recommend import table as recommend_table
from .versions import chart_rows, collect

KIND_LABEL = {
    "passed": "passes",
    "failed": "fails",
    "mismatch": "mismatch",
    "crashed": "crashed",
    "timed_out": "timed out",
    "skipped": "skipped",
}
DTYPE = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
# How a sentence says each verdict.
WORDS = {
    "passes": "works",
    "wrong_some": "gives wrong values on some generated inputs",
    "errors_some": "raises on some generated inputs",
    "wrong": "gives wrong values",
    "fails": "fails",
    "crashed": "crashes",
    "timed_out": "hangs",
    "unmeasurable": "is not measurable on this device",
}


@dataclass
class CellView:
    """What the terminal summary needs of a cell."""

    id: str
    kind: str
    unexpected: bool
    expected: bool  # an expectation row applied to this run, or a baseline (compat.evidence.baseline)
    remedy: str | None
    environment: str | None  # set when the AOTI canary fails too: the environment, not the style, is at fault
    unmeasurable: str | None = None  # why this device cannot run the stage at all: no verdict on the op here

    @classmethod
    def of(cls, cell: dict[str, Any]) -> "CellView":
        o = cell["outcome"]
        # A cell without rows that its run compared against a baseline counts as expected, or not, by that.
        expected = bool(cell.get("expected") or cell.get("against_baseline"))
        expected_row = cell.get("expected") or {}
        return cls(
            cell["id"],
            o["kind"],
            bool(cell.get("verdict")),
            expected,
            o["detail"].get("remedy"),
            o["detail"].get("environment_failure"),
            None
            if o["kind"] in ("passed", "skipped")
            else unmeasurable(Outcome.from_dict(o), expected_row, cell["id"]),
        )


@dataclass
class Row:
    kernel: str
    style: str
    device: str
    dtype: str
    cells: dict[str, CellView] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.style} · {self.device} · {self.dtype}"


class Matrix:
    def __init__(self, doc: dict[str, Any]):
        self.doc = doc
        order = registries()
        present = {s for c in doc["cells"] for s in [c["axes"]["stage"]]}
        self.stages = [s for s in order["stage"] if s in present] + sorted(present - set(order["stage"]))
        rows: dict[tuple, Row] = {}
        for cell in doc["cells"]:
            a = cell["axes"]
            key = (a["kernel"], a["style"], a["device"], a["dtype"])
            rows.setdefault(key, Row(*key)).cells[a["stage"]] = CellView.of(cell)
        rank = {axis: {n: i for i, n in enumerate(names)} for axis, names in order.items()}
        self.rows = sorted(
            rows.values(),
            key=lambda r: (
                rank["kernel"].get(r.kernel, 99),
                r.kernel,
                rank["style"].get(r.style, 99),
                r.style,
                rank["device"].get(r.device, 99),
                r.dtype,
            ),
        )
        self.kernels = list(dict.fromkeys(r.kernel for r in self.rows))

    def header(self) -> str:
        env = self.doc["environment"]
        gpus = Counter(f"{g['name']} (sm {g['capability']})" for g in env["gpus"])
        gpu = ", ".join(f"{n}x {name}" if n > 1 else name for name, n in gpus.items()) or "no GPU"
        text = (
            f"torch {env['torch']}, triton {env['triton']}, CUDA {env['cuda']}, {gpu}, driver {env['driver']}, "
            f"Python {env['python']}, run {env['date']}"
        )
        merged = self.merged_runs()
        if merged:
            text += (
                f" — merged from {len(merged)} runs, verdicts recomputed against "
                f"{self.doc['options']['regraded_against']}"
            )
        return text

    def merged_runs(self) -> list[str]:
        """The runs that contributed what is shown, one line each (a page lists them folded: 9-13 lines of them sat
        above the answer)."""
        merged = [m for m in self.doc["options"].get("merged_from") or [] if m["cells"] or m.get("fuzz")]
        return [
            f"{m['machine']} at {m['date'][:16]} ({m['cells']} cells"
            + (f", {m['fuzz']} fuzz tests" if m.get("fuzz") else "")
            + ")"
            for m in merged
        ]

    def totals(self) -> str:
        s = self.doc["summary"]
        counts = ", ".join(f"{n} {k}" for k, n in s["by_outcome"].items() if n)
        text = (
            f"{s['cells']} cells: {counts}; {s['unexpected']} differ from expectations; {s['exports']} exports "
            f"and {s['aoti_compiles']} AOTI compiles"
            + (f" ({s['aoti_reused']} more linked from an identical program's)" if s.get("aoti_reused") else "")
            + f" in {s['wall_seconds']} s"
        )
        if s.get("environment_failures"):
            text += f"; {s['environment_failures']} environment failures"
        if len(s.get("cells_per_gpu") or {}) > 1:
            text += "; CUDA cells per GPU: " + ", ".join(f"GPU {g}: {n}" for g, n in s["cells_per_gpu"].items())
        return text


def fuzz_headline(doc: dict[str, Any]) -> str:
    s = doc["summary"]["fuzz"]
    counts = ", ".join(f"{n} {KIND_LABEL[k]}" for k, n in s["by_outcome"].items() if n)
    differ = (
        f"{s['unexpected']} differed from the expectations before this accept"
        if doc["options"].get("accept")
        else f"{s['unexpected']} unexpected"
    )
    return (
        f"fuzz ({doc['options'].get('fuzz_profile') or 'merged'} profile): {s['cells']} cells, {s['examples']} "
        f"generated examples; {counts}; {differ}"
        + (
            f"; {s['past_compile_bound']} examples not checked, past their op's fuzz_compiles"
            if s.get("past_compile_bound")
            else ""
        )
    )


def stage_group(stage: str) -> str:
    return STAGES[stage].group if stage in STAGES else "other"


def style_family(style: str) -> str:
    return STYLES[style].family if style in STYLES else "other"  # a style an older results file still names


def _family_order(style: str) -> tuple[int, int]:
    families, styles = list(FAMILIES), list(STYLES)
    family = style_family(style)
    return (
        families.index(family) if family in families else len(families),
        styles.index(style) if style in styles else len(styles),
    )


@dataclass
class StyleLine:
    """One style over every kernel it ran on one device: where it works, where only for some kernels (named), where
    it fails, and the rewrite its failures name most."""

    style: str
    family: str
    works: list[str]
    partly: list[tuple[str, list[str]]]  # (stage, the kernels where it does not work)
    fails: list[str]
    instead: str | None
    unmeasurable: list[str] = field(default_factory=list)  # stages this device cannot run at all: no verdict here

    def text(self) -> str:
        parts = []
        if self.works:
            parts.append(f"works in {', '.join(self.works)}")
        if self.partly:
            parts.append(
                "works except for some kernels in "
                + "; ".join(f"{stage} (not {', '.join(kernels)})" for stage, kernels in self.partly)
            )
        if self.fails:
            parts.append(f"does not work in {', '.join(self.fails)}")
        if self.unmeasurable:
            parts.append(f"not measurable on this device in {', '.join(self.unmeasurable)}")
        text = "; ".join(parts) + "."
        return text + (f" Instead: {self.instead}." if self.instead and (self.fails or self.partly) else "")


@dataclass
class Entry:
    """What one grid cell shows: a verdict shared by the dtypes named (None: every dtype of the row)."""

    dtypes: tuple[str, ...] | None
    verdicts: list[Verdict]

    @property
    def kind(self) -> str:
        return self.verdicts[0].kind

    @property
    def mark(self) -> str:
        return legend.of_verdict(self.verdicts[0])

    @property
    def unexpected(self) -> bool:
        return any(v.unexpected for v in self.verdicts)


@dataclass
class Folded:
    kernel: str
    style: str
    device: str
    cells: dict[str, list[tuple[str, Verdict]]] = field(default_factory=dict)  # stage -> (dtype, verdict)

    @property
    def label(self) -> str:
        return f"{self.style} · {self.device}"

    def entries(self, stage: str) -> list[Entry]:
        """One entry when the dtypes agree on the verdict, else one per verdict, naming its dtypes."""
        by: dict[tuple, list[tuple[str, Verdict]]] = {}
        for dtype, v in self.cells.get(stage, []):
            by.setdefault((legend.of_verdict(v), v.unexpected), []).append((dtype, v))
        if len(by) == 1:
            return [Entry(None, [v for _, v in next(iter(by.values()))])]
        return [Entry(tuple(d for d, _ in group), [v for _, v in group]) for group in by.values()]

    def sentence(self, group: str, stages: list[str]) -> str | None:
        """Where the style works in one group of stages, in words, naming a dtype only where the dtypes differ."""
        ran = [
            s
            for s in stages
            if stage_group(s) == group and s in self.cells and any(v.kind != "skipped" for _, v in self.cells[s])
        ]
        if not ran:
            return None
        said: dict[str, list[str]] = {}
        rewrites: list[str] = []
        for stage in ran:
            entries = [e for e in self.entries(stage) if e.kind != "skipped"]
            for e in entries:
                where = (
                    stage
                    if e.dtypes is None or len(entries) == 1 and len(e.dtypes) == len(self.cells[stage])
                    else f"{stage} ({', '.join(e.dtypes)})"
                )
                said.setdefault(e.kind, []).append(where)
                rewrites += [v.rewrite for v in e.verdicts if v.rewrite and not v.works]
        if list(said) == ["passes"]:
            return f"works in every {group} stage run ({', '.join(ran)})."
        parts = [
            f"{WORDS[kind]} in {', '.join(where)}"
            for kind, where in sorted(said.items(), key=lambda kv: KINDS.index(kv[0]))
        ]
        text = "; ".join(parts) + "."
        rewrites = list(dict.fromkeys(rewrites))
        if rewrites:
            text += " Instead: " + "; or ".join(rewrites[:3]) + "."
        return text


class Docs:
    """Everything the pages show of one results file: folded rows, notes, the recommendation's data."""

    def __init__(self, doc: dict[str, Any]):
        self.doc, self.matrix = doc, Matrix(doc)
        self.verdicts = of_doc(doc)
        self.stages = sorted(
            self.matrix.stages,
            key=lambda s: list(DOC_GROUPS).index(stage_group(s)) if stage_group(s) in DOC_GROUPS else len(DOC_GROUPS),
        )
        self.groups = list(dict.fromkeys(stage_group(s) for s in self.stages))
        rows: dict[tuple, Folded] = {}
        for r in self.matrix.rows:
            folded = rows.setdefault((r.kernel, r.style, r.device), Folded(r.kernel, r.style, r.device))
            for stage, c in r.cells.items():
                folded.cells.setdefault(stage, []).append((r.dtype, self.verdicts[c.id]))
        self.rows = sorted(rows.values(), key=lambda r: _family_order(r.style))  # stable: kernels keep their order
        self.kernels = self.matrix.kernels
        self.latency = {c["id"]: lat for c in doc["cells"] for lat in [timings.of(c)] if lat}
        self.recommend = recommend_table(doc, self.verdicts)
        # Ops as their repository ships them, and no style of the suite's: each op is judged alone.
        self.shipped_only = {c["axes"]["style"] for c in doc["cells"]} == {"as_shipped"}
        self.kernel_recommend = {
            k: recommend_table({**doc, "cells": [c for c in doc["cells"] if c["axes"]["kernel"] == k]}, self.verdicts)
            for k in self.kernels
        }
        # One note per distinct body of evidence, numbered in table order: an entry's note lists each dtype's
        # evidence, once per distinct body.
        self.notes: dict[tuple, int] = {}
        self._blocks: dict[tuple, dict] | None = None
        for row in self.rows:
            for stage in self.stages:
                for e in row.entries(stage):
                    if (
                        e.kind != "passes"
                        or e.unexpected
                        or any(v.refuses or v.unfuzzed or v.overflows or v.bounded for v in e.verdicts)
                    ):
                        self.notes.setdefault(self.note_key(e), len(self.notes) + 1)

    @staticmethod
    def note_key(e: Entry) -> tuple:
        return tuple(dict.fromkeys(v.note for v in e.verdicts))

    def note_blocks(self, key: tuple) -> list[tuple[list[Verdict], tuple]]:
        """A note's evidence blocks, each with the cells it speaks for (whose own facts go with them)."""
        if self._blocks is None:
            self._blocks = {}
            for row in self.rows:
                for stage in self.stages:
                    for e in row.entries(stage):
                        blocks = self._blocks.setdefault(self.note_key(e), {})
                        for v in e.verdicts:
                            blocks.setdefault(v.note, []).append(v)
        return [(cells, note) for note, cells in self._blocks[key].items()]

    def style_lines(self) -> list[StyleLine]:
        """Per style, on the device the recommendation answers for: its stages summed over kernels and dtypes."""
        device = self.recommend["device"]
        lines = []
        for style in sorted({r.style for r in self.rows if r.device == device}, key=_family_order):
            rows = [r for r in self.rows if r.style == style and r.device == device]
            works, partly, fails, unmeasurable = [], [], [], []
            rewrites: Counter[str] = Counter()
            for stage in self.stages:
                seen = [(r.kernel, v) for r in rows for _, v in r.cells.get(stage, []) if v.kind != "skipped"]
                ran = [(k, v) for k, v in seen if v.kind != "unmeasurable"]
                if not ran:
                    unmeasurable += [stage] if seen else []
                    continue
                bad = sorted({k for k, v in ran if not v.works})
                rewrites.update(v.rewrite for _, v in ran if not v.works and v.rewrite)
                if not bad:
                    works.append(stage)
                elif len(bad) < len({k for k, _ in ran}):
                    partly.append((stage, bad))
                else:
                    fails.append(stage)
            lines.append(
                StyleLine(
                    style,
                    style_family(style),
                    works,
                    partly,
                    fails,
                    rewrites.most_common(1)[0][0] if rewrites else None,
                    unmeasurable,
                )
            )
        return lines

    def fuzz_line(self) -> str | None:
        return fuzz_headline(self.doc) if self.doc.get("fuzz") else None

    def chart(self) -> list[tuple[str, str, str, str]]:
        """The tutorial chart's claims where this run's GPU measurement disagrees (compat.report.versions)."""
        return chart_rows(collect([("this run", self.doc)])) if self.doc["environment"]["gpus"] else []


# ---- Markdown ---------------------------------------------------------------------------------------------------

LATENCY_INTRO = (
    "Beside the verdicts, never a gate: what a passing cell cost on CUDA (float32). First call: from the "
    "start of the load or compile to the first output, in a process that had imported torch already; "
    "two runs of the same cells agreed within 1.75x. Steady state: the median / the best of {reps} calls "
    "after {warmup}, timed with CUDA events, in µs. It is measured while the run's other cells compile "
    "and run on the same GPU, and two runs of the same cells differed by up to 98x (median) and 32x "
    "(best): read a steady-state difference only where it is large and holds across kernels."
)
FIRST_CALL_HEAD = ("torch.compile (Inductor), ms", "AOTI package from Python, ms", "AOTI package from C++, ms")


def latency_tables(docs: "Docs") -> tuple[list[tuple[str, str, list[str]]], list[tuple[str, timings.Table]]]:
    """The first-call comparison and the steady-state table of each kernel, in the documentation's order."""
    styles = list(dict.fromkeys(r.style for r in docs.rows))
    tables = [(k, t) for k in docs.kernels for t in [timings.steady_table(docs.doc, k, styles)] if t]
    return timings.first_call_rows(docs.doc, docs.kernels, styles), tables


def latency_intro(docs: "Docs") -> str | None:
    first = next((lat for c in docs.doc["cells"] for lat in [timings.of(c)] if lat), None)
    return LATENCY_INTRO.format(reps=first["reps"], warmup=first["warmup"]) if first else None


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_entry(docs: Docs, e: Entry) -> str:
    key = docs.note_key(e)
    note = f" [{docs.notes[key]}](#note-{docs.notes[key]})" if key in docs.notes else ""
    icon = (legend.UNEXPECTED.glyph if e.unexpected else "") + legend.glyph(e.mark)
    dtypes = f"{'/'.join(DTYPE.get(d, d) for d in e.dtypes)} " if e.dtypes else ""
    return f"{dtypes}{icon}{note}"


def _latency_markdown(docs: "Docs") -> list[str]:
    intro = latency_intro(docs)
    if intro is None:
        return []
    first, tables = latency_tables(docs)
    out = ["## Latency on CUDA", "", intro, ""]
    if first:
        out += [
            "### First call: the AOTI package against torch.compile (write-up 002's comparison)",
            "",
            "| kernel | style | " + " | ".join(FIRST_CALL_HEAD) + " |",
            "|---|---|---:|---:|---:|",
        ]
        out += [f"| `{k}` | `{s}` | " + " | ".join(v) + " |" for k, s, v in first] + [""]
    for kernel, t in tables:
        out += [
            f"### Steady state of `{kernel}`, µs at {t.point} (median / best)",
            "",
            "| style | " + " | ".join(f"`{c}`" for c in t.columns) + " |",
            "|---" + "|---:" * len(t.columns) + "|",
        ]
        out += [f"| `{style}` | " + " | ".join(values) + " |" for style, values in t.rows] + [""]
    return out


KERNEL_PAGES = "support_matrix"  # the folder beside SUPPORT_MATRIX.md that holds one Markdown page per kernel
LATENCY_PAGE = "LATENCY.md"  # beside SUPPORT_MATRIX.md


def _header(docs: "Docs", source: str, title: str) -> list[str]:
    runs = docs.matrix.merged_runs()
    out = [
        f"# {title}",
        "",
        f"Generated by `python -m compat report {source}`; do not edit by hand.",
        "",
        f"**Ran on:** {docs.matrix.header()}.  ",
        f"**Totals:** {docs.matrix.totals()}.  ",
    ]
    if runs:
        out += [
            "",
            f"<details><summary>The {len(runs)} runs merged</summary>",
            "",
            *(f"- {r}" for r in runs),
            "",
            "</details>",
            "",
        ]
    if docs.fuzz_line():
        out.append(f"**Generated inputs:** {docs.fuzz_line()}.")
    return out + [
        "",
        f"{legend.markdown(legend.CELL_MARKS, unexpected=True)} A cell shows one verdict for every "
        "dtype where they agree, and one per dtype where they differ. The numbered notes say what was "
        "observed, why, what to do instead, and where it was measured or documented.",
        "",
    ]


def markdown(doc: dict[str, Any], source: str) -> str:
    """The index for GitHub: the answers, the measured chart, the tutorial chart's claims measured otherwise, the
    styles by family, one line per kernel linking its page (kernel_pages), latency."""
    docs = Docs(doc)
    out = _header(docs, source, "Support matrix")
    if not docs.shipped_only:  # which style to use: a question only where styles were compared
        out += recommend_markdown(docs.recommend)
    device = docs.recommend["device"]
    cells = measured_chart.chart(doc, docs.verdicts, device) if device else []
    if any(c.kernels for c in cells):
        out += measured_chart.markdown(cells, device, measured_chart.never_fuzzed(doc, device))
    elif device:  # a repository of its own ops runs no canonical style: each op alone, stage by stage
        summary = measured_chart.op_summary(doc, docs.verdicts, device)
        out += ["## Each op, stage by stage", "", *summary] if summary else []
    chart = docs.chart()
    if chart:
        out += [
            "### What the tutorial's chart claims, where this run measured otherwise",
            "",
            "| capability | way | the chart says | measured |",
            "|---|---|---|---|",
        ]
        out += [f"| {c} | {w} | {claim} | {m} |" for c, w, claim, m in chart] + [""]
    out += [
        f"## Styles by family, on {docs.recommend['device']}",
        "",
        "Each style over every kernel it applies to; a stage where it works for some kernels only names the others.",
        "",
    ]
    family = None
    for line in docs.style_lines():
        if line.family != family:
            family = line.family
            out += ["", f"### {family}", "", f"_{FAMILIES.get(family, 'styles of older results')}._", ""]
        doc_text = STYLES[line.style].doc if line.style in STYLES else ""
        out.append(f"- `{line.style}`: {_md(doc_text)} {_md(line.text())}")
    out += [
        "",
        "## Per kernel",
        "",
        "Each kernel's page answers which style to use judged on its cells alone (a "
        "style that fails for one kernel's feature, host TMA say, still shows for the others), then its grid "
        "(every style, stage and dtype), its sentences and its notes:",
        "",
    ]
    for kernel in docs.kernels:
        judged = [
            v for r in docs.rows if r.kernel == kernel for s in docs.stages for e in r.entries(s) for v in e.verdicts
        ]
        works = sum(v.works for v in judged)
        out.append(
            f"- [`{kernel}`]({KERNEL_PAGES}/{kernel}.md): {works} of {len(judged)} cells pass everything asked of them"
        )
    out.append("")
    if latency_intro(docs) is not None:  # its tables, a column per stage, are wider than GitHub's column
        out += [
            "## Latency on CUDA",
            "",
            f"What a passing cell cost, never a gate: [{LATENCY_PAGE}]({LATENCY_PAGE}).",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


def latency_markdown(doc: dict[str, Any], source: str) -> str | None:
    """The latency page beside the index, or None where no cell was timed."""
    docs = Docs(doc)
    body = _latency_markdown(docs)
    if not body:
        return None
    return (
        "\n".join(
            [
                "# Latency on CUDA",
                "",
                f"Generated by `python -m compat report {source}`; do not edit by "
                f"hand. Back to [the support matrix](SUPPORT_MATRIX.md).",
                "",
                *body[2:],
            ]
        ).rstrip()
        + "\n"
    )


def _md_group(docs: Docs, row, group: str, anchor: str) -> str:
    """A row's stage group in one cell: how many stages (dtypes folded) show each verdict, linking the stages."""
    entries = [e for s in docs.stages if stage_group(s) == group for e in row.entries(s)]
    counts = Counter(e.mark for e in entries)
    if not counts:
        return ""
    unexpected = legend.UNEXPECTED.glyph if any(e.unexpected for e in entries) else ""
    text = " ".join(f"{legend.glyph(mark)}{counts[mark]}" for mark in legend.ORDER if mark in counts)
    return f"[{unexpected}{text}](#{anchor})"


def kernel_pages(doc: dict[str, Any], source: str) -> dict[str, str]:
    """One Markdown page per kernel, by path under the docs folder: a grid that fits GitHub's width (a row per style
    and device, a column per stage group, counting the verdicts), each row's stages one click away, its sentences,
    and the notes its cells cite (only its own cells listed)."""
    docs = Docs(doc)
    pages = {}
    for kernel in docs.kernels:
        rows = [r for r in docs.rows if r.kernel == kernel]
        out = _header(docs, source, f"Support matrix: `{kernel}`")
        if docs.shipped_only:  # an op as its repository ships it: its stages, not a choice of style
            device = docs.recommend["device"]
            out += [
                "[All ops](../SUPPORT_MATRIX.md)",
                "",
                f"## `{kernel}`, stage by stage",
                "",
                *measured_chart.op_summary(measured_chart.of_op(doc, kernel), docs.verdicts, device),
            ]
        else:
            out += [
                "[All kernels, and which style to use](../SUPPORT_MATRIX.md)",
                "",
                f"## Which style for `{kernel}`",
                "",
                "Judged on this kernel's cells alone (the index judges a style on every kernel it applies to):",
                "",
                *(line for said in recommend_answers(docs.kernel_recommend[kernel]) for line in said.markdown()),
                "",
            ]
        out += [
            "## The grid",
            "",
            "Each entry counts the stages of its group by verdict (a stage's dtypes folded where they agree); click "
            "it for the row's stages one by one, and their notes.",
            "",
            "| style · device | " + " | ".join(docs.groups) + " |",
            "|---" * (len(docs.groups) + 1) + "|",
        ]
        family, cited, details = None, [], []
        for r in rows:
            if style_family(r.style) != family:
                family = style_family(r.style)
                out.append(f"| **{family}** |" + " |" * len(docs.groups))
            anchor = f"row-{r.style}-{r.device}".replace("_", "-")
            out.append(
                f"| `{r.style}` · {r.device} | " + " | ".join(_md_group(docs, r, g, anchor) for g in docs.groups) + " |"
            )
            details += [f'<a id="{anchor}"></a>', "", f"#### `{r.style}` · {r.device}", ""]
            for s in docs.stages:
                entries = r.entries(s)
                cited += [docs.note_key(e) for e in entries]
                if entries:
                    details.append(f"- {stage_group(s)}: `{s}`: " + ", ".join(_md_entry(docs, e) for e in entries))
            details.append("")
        out += ["", "## Each row's stages", "", *details]
        out += ["", "In words:", ""]
        for r in rows:
            said = [(g, r.sentence(g, docs.stages)) for g in docs.groups]
            said = [(g, t) for g, t in said if t]
            out.append(
                f"- `{r.style}` on {r.device}: "
                + (" ".join(f"**{g}**: {t}" for g, t in said) if said else "not run here.")
            )
        out += ["", "## Notes", "", *_kernel_notes(docs, kernel, cited)]
        pages[f"{KERNEL_PAGES}/{kernel}.md"] = "\n".join(out).rstrip() + "\n"
    return pages


def _kernel_notes(docs: Docs, kernel: str, cited: list) -> list[str]:
    """The notes a kernel's page cites, each listing only that kernel's cells (a falsifying example and its
    reproducer per cell where the fuzz tests found it wrong)."""
    out: list[str] = []
    for key, n in docs.notes.items():
        if key not in cited:
            continue
        blocks = [
            (cells, note)
            for cells, note in docs.note_blocks(key)
            if any(split_cell_id(v.id, "a note").kernel == kernel for v in cells)
        ]
        out.append(f'<a id="note-{n}"></a>**[{n}]** {legend.note_head(blocks[0][0][0])}')
        for cells, (*_, evidence) in blocks:
            cells = [v for v in cells if split_cell_id(v.id, "a note").kernel == kernel]
            out.append(
                f"  - cell{'s' if len(cells) > 1 else ''}: "
                + ", ".join(f"`{i}`" for i in dtypes_braced(v.id for v in cells))
            )
            out += [f"    - {what}: {_md(text)}" for what, text in evidence]
            # each cell's falsifying example and its reproducer
            if blocks[0][0][0].kind in ("wrong_some", "errors_some"):
                out += [
                    f"    - `{v.id}`: "
                    + "; ".join(f"{what}: {_md(text)}" for what, text in v.facts if what != "on the model")
                    for v in cells
                ]
        out.append("")
    return out


# A repository's README holds its ops' summary between these lines (`python -m compat report --readme README.md`).
SUMMARY_START = "<!-- compat report --readme: generated from {source}; do not edit by hand -->"
SUMMARY_END = "<!-- end of the generated summary -->"


def readme_with_summary(readme: str, doc: dict[str, Any], source: str) -> str:
    """`readme` with the block between its summary lines replaced by its ops' summary from `doc` (ValueError where it
    has no such block)."""
    start = re.search(re.escape(SUMMARY_START).replace(re.escape("{source}"), r"[^\n]*?"), readme)
    end = readme.find(SUMMARY_END, start.end() if start else 0)
    if start is None or end < 0:
        raise ValueError(
            f"no block to fill: put the lines {SUMMARY_START.format(source=source)!r} and "
            f"{SUMMARY_END!r} where the summary goes"
        )
    docs = Docs(doc)
    device = docs.recommend["device"]
    summary = measured_chart.op_summary(doc, docs.verdicts, device) if device else []
    block = "\n".join([SUMMARY_START.format(source=source), "", *summary, SUMMARY_END])
    return readme[: start.start()] + block + readme[end + len(SUMMARY_END) :]
