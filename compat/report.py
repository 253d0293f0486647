"""The support matrix rendered from a results file: terminal text, Markdown and one self-contained HTML page.

All three come from one view (`Matrix`): per kernel, rows are style/device/dtype and columns are stages; each cell
carries its outcome, whether it was expected, and its evidence (first line, reason, rewrite, provenance).
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .cells import registries
from .outcomes import Outcome

KIND_LABEL = {"passed": "passes", "failed": "fails", "mismatch": "mismatch", "crashed": "crashed",
              "timed_out": "timed out", "skipped": "skipped"}
ICON = {"passed": "✅", "failed": "❌", "mismatch": "≠", "crashed": "💥", "timed_out": "⏱", "skipped": "⏭"}
UNEXPECTED = "❗"


def first_line(cell: dict[str, Any]) -> str | None:
    return Outcome.from_dict(cell["outcome"]).first_line


def provenance_text(prov: dict[str, Any] | None) -> str:
    if not prov:
        return "no expectation recorded"
    if "documented" in prov:
        return f"documented: {prov['documented']}"
    from .expectations import measurements

    return "measured: " + "; ".join(f"torch {m['torch']}, triton {m['triton']}, {m['device']}, {m['date']}"
                                    for m in measurements(prov))


@dataclass
class CellView:
    id: str
    kind: str
    unexpected: bool
    expected: bool  # an expectation row applied to this run, or a baseline (compat.baseline)
    first_line: str | None
    error_type: str | None
    reason: str | None
    rewrite: str | None
    provenance: str
    worst_rel_err: float | None
    remedy: str | None
    environment: str | None  # set when the AOTI canary fails too: the environment, not the style, is at fault

    @classmethod
    def of(cls, cell: dict[str, Any]) -> "CellView":
        o, row = cell["outcome"], cell.get("expected") or {}
        errs = [n["max_rel_err"] for n in o.get("numerics") or [] if "max_rel_err" in n]
        # A cell without rows that its run compared against a baseline counts as expected, or not, by that.
        expected = bool(cell.get("expected") or cell.get("against_baseline"))
        return cls(cell["id"], o["kind"], bool(cell.get("verdict")), expected, first_line(cell),
                   o.get("error_type"),
                   row.get("reason"), row.get("rewrite"), provenance_text(row.get("provenance")),
                   max(errs) if errs else None, o["detail"].get("remedy"), o["detail"].get("environment_failure"))

    @property
    def note_key(self) -> tuple:
        return (self.kind, self.error_type, self.first_line, self.reason, self.rewrite, self.provenance,
                self.environment)


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

    def sentence(self, stages: list[str]) -> str:
        """Where this style works, in words."""
        ran = [s for s in stages if s in self.cells and self.cells[s].kind != "skipped"]
        if not ran:
            return f"`{self.style}` on {self.device}: not run here ({self._skip_reason()})."
        works = [s for s in ran if self.cells[s].kind == "passed"]
        broken = [s for s in ran if self.cells[s].kind != "passed"]
        if not broken:
            return f"`{self.style}` on {self.device}: works in every stage run ({', '.join(ran)})."
        text = f"`{self.style}` on {self.device}: " + (f"works in {', '.join(works)}; " if works else "works in no stage; ")
        text += f"fails in {', '.join(broken)}."
        strict, nonstrict = self.cells.get("export_strict"), self.cells.get("export_nonstrict")
        if strict and nonstrict and strict.kind == "passed" and nonstrict.kind != "passed":
            text += " Exports only with strict=True."
        rewrites = list(dict.fromkeys(self.cells[s].rewrite for s in broken if self.cells[s].rewrite))
        if rewrites:
            text += " Instead: " + "; or ".join(rewrites) + "."
        return text

    def _skip_reason(self) -> str:
        return next((c.first_line for c in self.cells.values() if c.kind == "skipped" and c.first_line), "skipped")


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
        self.rows = sorted(rows.values(), key=lambda r: (rank["kernel"].get(r.kernel, 99), r.kernel,
                                                         rank["style"].get(r.style, 99), r.style,
                                                         rank["device"].get(r.device, 99), r.dtype))
        self.kernels = list(dict.fromkeys(r.kernel for r in self.rows))
        # One note per distinct piece of evidence, numbered in table order.
        self.notes: dict[tuple, int] = {}
        for row in self.rows:
            for stage in self.stages:
                cell = row.cells.get(stage)
                if cell and cell.kind not in ("passed", "skipped") or (cell and cell.unexpected):
                    self.notes.setdefault(cell.note_key, len(self.notes) + 1)

    def header(self) -> str:
        env = self.doc["environment"]
        gpus = Counter(f"{g['name']} (sm {g['capability']})" for g in env["gpus"])
        gpu = ", ".join(f"{n}x {name}" if n > 1 else name for name, n in gpus.items()) or "no GPU"
        text = (f"torch {env['torch']}, triton {env['triton']}, CUDA {env['cuda']}, {gpu}, driver {env['driver']}, "
                f"Python {env['python']}, run {env['date']}")
        merged = [m for m in self.doc["options"].get("merged_from") or [] if m["cells"] or m.get("fuzz")]
        if merged:  # the runs that contributed what is shown
            runs = "; ".join(f"{m['machine']} at {m['date'][:16]} ({m['cells']} cells"
                             + (f", {m['fuzz']} fuzz tests" if m.get("fuzz") else "") + ")" for m in merged)
            text += (f" — merged from {len(merged)} runs ({runs}), verdicts recomputed against "
                     f"{self.doc['options']['regraded_against']}")
        return text

    def totals(self) -> str:
        s = self.doc["summary"]
        counts = ", ".join(f"{n} {k}" for k, n in s["by_outcome"].items() if n)
        text = (f"{s['cells']} cells: {counts}; {s['unexpected']} differ from expectations; {s['exports']} exports "
                f"and {s['aoti_compiles']} AOTI compiles in {s['wall_seconds']} s")
        if s.get("environment_failures"):
            text += f"; {s['environment_failures']} environment failures"
        if len(s.get("cells_per_gpu") or {}) > 1:
            text += "; CUDA cells per GPU: " + ", ".join(f"GPU {g}: {n}" for g, n in s["cells_per_gpu"].items())
        return text


def fuzz_headline(doc: dict[str, Any]) -> str:
    s = doc["summary"]["fuzz"]
    counts = ", ".join(f"{n} {KIND_LABEL[k]}" for k, n in s["by_outcome"].items() if n)
    return (f"fuzz ({doc['options'].get('fuzz_profile') or 'merged'} profile): {s['cells']} cells, {s['examples']} "
            f"generated examples; {counts}; {s['unexpected']} unexpected")


# ---- Markdown ---------------------------------------------------------------------------------------------------

def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(doc: dict[str, Any], source: str) -> str:
    m = Matrix(doc)
    out = ["# Support matrix", "",
           f"Generated by `python -m compat report {source}`; do not edit by hand.", "",
           f"**Ran on:** {m.header()}.  ", f"**Totals:** {m.totals()}.", "",
           "**Legend:** " + ", ".join(f"{ICON[k]} {KIND_LABEL[k]}" for k in ICON)
           + f"; {UNEXPECTED} differs from its expectation (the gate failed). A failure listed in the expectations "
             "is expected: its note says why, what to do instead, and where that was measured or documented.", ""]
    for kernel in m.kernels:
        rows = [r for r in m.rows if r.kernel == kernel]
        out += [f"## `{kernel}`", "", "| style · device · dtype | " + " | ".join(f"`{s}`" for s in m.stages) + " |",
                "|---" * (len(m.stages) + 1) + "|"]
        for r in rows:
            cells = []
            for s in m.stages:
                c = r.cells.get(s)
                if c is None:
                    cells.append("")
                    continue
                note = f" [{m.notes[c.note_key]}](#note-{m.notes[c.note_key]})" if c.note_key in m.notes else ""
                cells.append(f"{UNEXPECTED if c.unexpected else ''}{ICON[c.kind]}{note}")
            out.append(f"| `{r.style}` · {r.device} · {r.dtype} | " + " | ".join(cells) + " |")
        out += ["", "### In words", ""] + [f"- {r.sentence(m.stages)}" for r in rows] + [""]
    out += ["## Notes", ""]
    for key, n in m.notes.items():
        kind, error, first, reason, rewrite, prov, environment = key
        cells = [c.id for r in m.rows for c in r.cells.values() if c.note_key == key]
        out.append(f'<a id="note-{n}"></a>**[{n}]** {ICON[kind]} {KIND_LABEL[kind]}'
                   + (f": `{_md_escape(error)}`" if error else "") + (f" {_md_escape(first)}" if first else ""))
        out += [f"  - why: {_md_escape(reason or 'no expectation recorded')}"]
        if environment:
            out.append(f"  - environment failure: {_md_escape(environment)}")
        if rewrite:
            out.append(f"  - instead: {_md_escape(rewrite)}")
        out += [f"  - provenance: {_md_escape(prov)}", f"  - cells: {', '.join(f'`{c}`' for c in cells)}", ""]
    return "\n".join(out + _fuzz_markdown(doc)).rstrip() + "\n"


def _fuzz_markdown(doc: dict[str, Any]) -> list[str]:
    if not doc.get("fuzz"):
        return []
    out = ["## Generated inputs (fuzz tests)", "", f"{fuzz_headline(doc)}  ", "",
           "Each passing cell's artifact, built from the op alone, run on Hypothesis-generated inputs against eager "
           "PyTorch: examples run, the largest errors seen, and what it did with non-contiguous inputs (refused, "
           "per layout; a layout not listed gave eager's values).", "",
           "| cell | outcome | examples | max abs err | max rel err | refused non-contiguous |", "|---|---|---|---|---|---|"]
    for f in doc["fuzz"]:
        outcome = Outcome.from_dict(f["outcome"])
        t = outcome.detail.get("tally", {})
        refused = ", ".join(f"{lay} ({n})" for lay, n in t.get("refused", {}).items()) or "none"
        what = ICON[outcome.kind] + ("" if outcome.kind == "passed" else f" {_md_escape(outcome.summary()[:120])}")
        out.append(f"| `{f['id']}` | {UNEXPECTED if f['verdict'] else ''}{what} | {t.get('examples', '')} | "
                   f"{t.get('max_abs_err', 0):.3g} | {t.get('max_rel_err', 0):.3g} | {refused} |")
    return out + [""]


# ---- HTML -------------------------------------------------------------------------------------------------------

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2330;max-width:1500px}
h1{font-size:22px;margin:0 0 6px} h2{font-size:18px;margin:28px 0 8px} .meta{color:#4a5568;margin:2px 0}
table{border-collapse:collapse;margin:8px 0 4px} th,td{border:1px solid #cbd2dc;padding:6px 8px;vertical-align:top}
th{background:#eef1f6;font-weight:600;text-align:left} td.row{white-space:nowrap;font-family:ui-monospace,monospace}
td.cell{min-width:92px} summary{cursor:pointer;font-weight:600;list-style:none} summary::-webkit-details-marker{display:none}
details[open]{min-width:340px} details div{font-weight:400;margin-top:6px;font-size:12.5px}
details div p{margin:3px 0} code{font-family:ui-monospace,monospace;font-size:12px;background:rgba(0,0,0,.05);padding:0 3px}
.passed{background:#d9f2df} .failed{background:#f3e3c7} .mismatch{background:#f9c8c8} .crashed{background:#e8b3d9}
.timed_out{background:#d6cdf5} .skipped{background:#eceff3;color:#5a6473} .unexpected{outline:3px solid #d6001c;outline-offset:-3px}
.legend span{display:inline-block;padding:2px 8px;margin:2px 4px 2px 0;border:1px solid #cbd2dc;border-radius:3px}
ul.words li{margin:3px 0}
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _html_cell(c: CellView | None) -> str:
    if c is None:
        return "<td></td>"
    label = ("! " if c.unexpected else "") + KIND_LABEL[c.kind]
    facts = [f"<p><b>cell</b> <code>{_esc(c.id)}</code></p>"]
    if c.error_type or c.first_line:
        facts.append(f"<p><b>observed</b> <code>{_esc(c.error_type or '')}</code> {_esc(c.first_line or '')}</p>")
    if c.worst_rel_err is not None:
        facts.append(f"<p><b>max rel err</b> {c.worst_rel_err:.3g} (against eager)</p>")
    if c.reason:
        facts.append(f"<p><b>why</b> {_esc(c.reason)}</p>")
    if c.rewrite:
        facts.append(f"<p><b>instead</b> {_esc(c.rewrite)}</p>")
    facts.append(f"<p><b>provenance</b> {_esc(c.provenance)}</p>")
    if c.environment:
        facts.append(f"<p><b>environment failure</b> {_esc(c.environment)}</p>")
    if c.remedy:
        facts.append(f"<p><b>remedy</b> {_esc(c.remedy)}</p>")
    if c.unexpected:
        facts.append("<p><b>gate</b> this outcome differs from its expectation</p>")
    cls = f"cell {c.kind}" + (" unexpected" if c.unexpected else "")
    return (f'<td class="{cls}" title="{_esc(c.first_line or label)}"><details><summary>{_esc(label)}'
            f"</summary><div>{''.join(facts)}</div></details></td>")


def html_page(doc: dict[str, Any], source: str) -> str:
    m = Matrix(doc)
    # Colour and words only: an emoji font is not everywhere (headless Chromium on Debian has none).
    legend = "".join(f'<span class="{k}">{KIND_LABEL[k]}</span>' for k in ICON)
    legend += '<span class="passed unexpected">differs from its expectation (the gate failed)</span>'
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>Triton kernel wrapping styles: support matrix</title>", f"<style>{CSS}</style></head><body>",
             "<h1>Triton kernel wrapping styles × PyTorch stages</h1>",
             f'<p class="meta"><b>Ran on</b> {_esc(m.header())}</p>', f'<p class="meta"><b>Totals</b> {_esc(m.totals())}</p>',
             f'<p class="meta">Generated by <code>python -m compat report {_esc(source)}</code>. '
             "Click a cell for the observed error, why, what to do instead, and provenance.</p>",
             f'<p class="legend">{legend}</p>']
    for kernel in m.kernels:
        rows = [r for r in m.rows if r.kernel == kernel]
        parts += [f"<h2>Kernel <code>{_esc(kernel)}</code></h2>", "<table><thead><tr><th>style · device · dtype</th>"
                  + "".join(f"<th>{_esc(s)}</th>" for s in m.stages) + "</tr></thead><tbody>"]
        for r in rows:
            parts.append(f'<tr><td class="row">{_esc(r.label)}</td>'
                         + "".join(_html_cell(r.cells.get(s)) for s in m.stages) + "</tr>")
        parts += ["</tbody></table>", '<ul class="words">']
        parts += [f"<li>{_esc(r.sentence(m.stages)).replace('`', '')}</li>" for r in rows]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
