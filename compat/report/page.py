"""The support matrix as self-contained HTML pages (compat.report.report.Docs is what they show): an index with the
answers, the chart, the styles and latency, and one page per kernel with its grid (report.KERNEL_PAGES).

Static, no server: the recommendation's data and each kernel's notes travel in their page as JSON. On the index a
short script answers the reader's choice of capabilities with compat.report.recommend's rules; on a kernel's page
another shows a cell's evidence in a side panel. The grid keeps its labels and headers on screen (sticky), folds
dtypes that agree, and lets the reader collapse a group of stages into one summary column.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from typing import Any

from ..matrix.cells import dtypes_braced, split_cell_id
from ..matrix.styles import FAMILIES, STYLES
from . import chart as measured_chart
from . import legend
from .index import inline as _inline
from .recommend import INTRO, answers, describe_missing, goals
from .report import (
    DTYPE,
    FIRST_CALL_HEAD,
    KERNEL_PAGES,
    Docs,
    Entry,
    latency_intro,
    latency_tables,
    stage_group,
    style_family,
)
from .timings import first_point

CSS = (
    """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330}
header,section{padding:0 24px} h1{font-size:22px;margin:16px 0 6px} h2{font-size:18px;margin:26px 0 8px}
h3{font-size:15px;margin:14px 0 6px} .meta{color:#4a5568;margin:2px 0;max-width:1400px}
code{font-family:ui-monospace,monospace;font-size:12px;background:rgba(0,0,0,.05);padding:0 3px}
tr.family th{text-align:left;background:#eef2f7;font-weight:600;font-size:12px;padding:4px 6px}
tr.family th span{position:sticky;left:6px;display:inline-block}
nav a{margin-right:12px}
.answers details{display:inline;margin-left:4px} .answers summary{display:inline;cursor:pointer;color:#2b5797}
.answers details[open]{display:block;margin:2px 0 6px}
.wrap{overflow:auto;max-height:78vh;border:1px solid #cbd2dc;max-width:100%}
table.grid{border-collapse:separate;border-spacing:0}
table.grid th,table.grid td{border-right:1px solid #cbd2dc;border-bottom:1px solid #cbd2dc;padding:3px 5px;
vertical-align:top}
table.grid thead th{position:sticky;background:#eef1f6;font-weight:600;z-index:2;font-size:12px;text-align:left}
table.grid tr.groups th{top:0;height:26px;box-sizing:border-box;text-align:center}
table.grid tr.stages th{top:26px;min-width:52px;max-width:84px}
table.grid th.corner{left:0;z-index:4}
table.grid tbody th{position:sticky;left:0;background:#f7f8fb;z-index:1;text-align:left;white-space:nowrap;
font:12.5px ui-monospace,monospace;font-weight:400}
.v{display:block;width:100%;box-sizing:border-box;border:0;border-radius:2px;padding:2px 4px;margin:1px 0;
font:600 12px system-ui,sans-serif;text-align:left;white-space:nowrap;color:#1d2330}
button.v{cursor:pointer} button.v:hover{filter:brightness(.93)}
.v .dt{font-weight:400;color:#4a5568;margin-right:3px}
.v .lat{display:block;font-weight:400;font-size:10px;color:#2d3748}
table.lat td.num{text-align:right;font-variant-numeric:tabular-nums}
.unexpected{outline:3px solid #d6001c;outline-offset:-3px}
td.sum{font-size:11.5px;white-space:nowrap}
.controls label{margin-right:14px;white-space:nowrap}
fieldset{border:1px solid #cbd2dc;border-radius:4px;max-width:1100px;display:grid;
grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:2px 12px} fieldset legend{font-weight:600}
#answer{max-width:1100px} #answer li{margin:3px 0} .none{color:#a0001a;font-weight:600}
table.plain{border-collapse:collapse;max-width:min(1400px,100%)} table.plain th,table.plain td{border:1px solid #cbd2dc;overflow-wrap:anywhere;
padding:4px 8px;vertical-align:top;text-align:left} table.plain th{background:#eef1f6}
table.measured th,table.measured td{overflow-wrap:normal;word-break:keep-all;hyphens:none;padding:3px 5px;font-size:13px}
details.words{margin:6px 0 0} details.words li{margin:2px 0;max-width:1300px}
aside#panel{position:fixed;right:16px;bottom:16px;width:min(560px,90vw);max-height:70vh;overflow:auto;
background:#fff;border:1px solid #8a94a6;border-radius:6px;box-shadow:0 6px 24px rgba(0,0,0,.25);padding:10px 14px;
z-index:10;font-size:13px}
aside#panel dl{margin:6px 0} aside#panel dt{font-weight:600;margin-top:5px} aside#panel dd{margin:0 0 0 12px;
overflow-wrap:anywhere} aside#panel .cells{font:12px ui-monospace,monospace;overflow-wrap:anywhere}
#close{float:right;border:0;background:none;font-size:20px;cursor:pointer}
"""
    + legend.CSS
)

# What both pages' scripts start with: the page's data, and a way to make an element.
COMMON = r"""
const DATA = JSON.parse(document.getElementById('data').textContent);
function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; }
"""

# compat.report.recommend's rules, for the reader's own choice (the browser test checks both give one answer).
CHOOSER = (
    COMMON
    + r"""
const R = DATA.recommend, CAPS = Object.fromEntries(R.capabilities.map(c => [c.key, c]));
for (const e of R.styles) for (const r of Object.values(e.stages))  // each text is sent once: page._own_kernels
  r.instead = Object.fromEntries(Object.entries(r.instead).map(([k, i]) => [k, R.texts[i]]));
const MEETS = 0, CONTIGUOUS_ONLY = 1, UNFUZZED = 2, MISSES = 3;
function needs(sel) {
  const fixed = {}, families = [];
  for (const k of sel) { for (const s of CAPS[k].stages) fixed[s] = k; for (const f of CAPS[k].families) families.push([f, k]); }
  const modes = R.modes.filter(m => sel.includes('export_' + m));
  if (sel.some(k => CAPS[k].layouts) && !Object.keys(fixed).length && !families.length)
    fixed['eager'] = sel.find(k => CAPS[k].layouts);
  if (!families.length) return [[null, fixed]];
  const per = m => { const o = {}; for (const [f, k] of families) o[f + '_' + m] = k; return o; };
  if (modes.length) return [[null, Object.assign({}, fixed, ...modes.map(per))]];
  return R.modes.map(m => [m, Object.assign({}, fixed, {['export_' + m]: families[0][1]}, per(m))]);
}
function state(rec, layouts) {
  if (!rec || !rec.ran) return MISSES;
  if (layouts) return rec.works === rec.ran && rec.fuzzed && rec.layouts_ok === rec.fuzzed && !rec.unfuzzed ? MEETS : MISSES;
  if (rec.works === rec.ran) return rec.unfuzzed ? UNFUZZED : MEETS;
  return rec.contiguous === rec.ran ? CONTIGUOUS_ONLY : MISSES;
}
function evaluate(sel) {
  const layouts = sel.some(k => CAPS[k].layouts), ranked = [];
  R.styles.forEach((entry, order) => {
    let best = null;
    for (const [mode, needed] of needs(sel)) {
      const missing = [];
      let level = MEETS, viewsWrong = false;
      for (const [stage, cap] of Object.entries(needed)) {
        const rec = entry.stages[stage], st = state(rec, layouts);
        level = Math.max(level, st);
        viewsWrong = viewsWrong || st === CONTIGUOUS_ONLY;
        if (st === MISSES) {
          const views = layouts && state(rec, false) !== MISSES;
          missing.push({stage, capability: views ? 'strided' : cap, ran: rec ? rec.ran : 0, works: rec ? rec.works : 0,
                        instead: rec && !views ? rec.instead : {}, failing: rec && !views ? rec.failing : [], views});
        }
      }
      if (missing.length) level = MISSES;
      else if (viewsWrong) level = CONTIGUOUS_ONLY;
      const key = [level, missing.length];
      if (!best || key[0] < best.key[0] || (key[0] === best.key[0] && key[1] < best.key[1])) best = {key, mode, missing};
    }
    const breadth = Object.values(entry.stages).filter(r => [MEETS, UNFUZZED].includes(state(r, false))).length;
    // Evidence first, then the simpler style: a canonical one before its variants, then the broader.
    ranked.push({sort: [best.key[0], best.key[1], entry.variant ? 1 : 0, -breadth, order], style: entry.style,
                 level: best.key[0], mode: best.mode, missing: best.missing, kernels: entry.kernels, variant: entry.variant});
  });
  ranked.sort((a, b) => { for (let i = 0; i < 5; i++) if (a.sort[i] !== b.sort[i]) return a.sort[i] - b.sort[i]; return 0; });
  return ranked;
}
function insteadFor(kernels, instead) {  // recommend.instead_for
  const groups = new Map();
  for (const k of [...kernels].sort()) { const r = instead[k] || ''; if (!groups.has(r)) groups.set(r, []); groups.get(r).push(k); }
  return [...groups].map(([r, ks]) => ks.join(', ') + (r ? ` (instead: ${r})` : '')).join('; ');
}
function missingText(a) {
  return a.missing.map(m => m.stage + ' ' + (m.views ? 'refuses non-contiguous inputs, or was not fuzzed' :
    !m.ran ? 'not measured' : `works in ${m.works} of ${m.ran} cells, not for ${insteadFor(m.failing, m.instead)}`)).join('; ');
}
function answer() {
  const sel = [...document.querySelectorAll('#choose input:checked')].map(i => i.value), out = document.getElementById('answer');
  out.replaceChildren();
  if (!sel.length) { out.append(el('p', 'Tick what you need.')); return; }
  const all = evaluate(sel), groups = [[MEETS, 'Does all of it, fuzz-verified, best first'],
    [CONTIGUOUS_ONLY, 'Does it for contiguous inputs only (the fuzz tests found wrong values on views)'],
    [UNFUZZED, "Does it on the model's inputs; some of its cells not fuzzed yet"]];
  for (const [level, title] of groups) {
    const these = all.filter(a => a.level === level);
    out.append(el('h3', `${title}: ${these.length}`));
    if (!these.length) { out.append(el('p', 'none', 'none')); continue; }
    const ul = el('ul'); ul.className = 'level' + level;
    for (const a of these) { const li = el('li'); li.dataset.style = a.style;
      li.append(el('code', a.variant || a.style)); if (a.variant) { li.append(' (variant '); li.append(el('code', a.style)); li.append(')'); }
      li.append(` ${a.mode ? 'through ' + a.mode + ' export; ' : ''}measured on ${a.kernels.join(', ')}`); ul.append(li); }
    out.append(ul);
  }
  const close = all.filter(a => a.level === MISSES).slice(0, 5);
  out.append(el('h3', 'Closest otherwise: what each misses, and what to do instead'));
  const ul = el('ul'); ul.className = 'level' + MISSES;
  for (const a of close) { const li = el('li'); li.dataset.style = a.style; li.append(el('code', a.style)); li.append(': ' + missingText(a)); ul.append(li); }
  out.append(ul);
}
document.querySelectorAll('#choose input').forEach(i => i.addEventListener('change', answer));
answer();
"""
)

# A kernel's page: a click on a cell shows its note; a stage group folds into one column.
PANEL = (
    COMMON
    + r"""
const S = DATA.strings;  // each text once: the notes name them by number
function show(button) {
  const note = DATA.notes[button.dataset.n], body = document.getElementById('panel-body');
  body.replaceChildren(el('h3', `[${button.dataset.n}] ${S[note.title]}`));
  const pairs = (dl, list) => { for (const [what, text] of list) { dl.append(el('dt', S[what])); dl.append(el('dd', S[text])); } };
  // The clicked cells first: the title's first line names them, the dtypes in braces where there are several.
  const first = button.title.split('\n')[0].replace(/^\d+ cells: /, ''), m = first.match(/^(.*)\{(.*)\}(.*)$/);
  const clicked = new Set(m ? m[2].split(',').map(d => m[1] + d + m[3]) : first.split(', '));
  for (const block of note.blocks) {
    const dl = el('dl');
    pairs(dl, block.evidence);
    body.append(dl);
    const cells = block.cells.map(([axes, facts]) => [axes.map(a => S[a]).join('-'), facts]).sort((a, b) => clicked.has(b[0]) - clicked.has(a[0]));
    for (const [id, facts] of cells) {
      const d = el('details', undefined, 'cell'); d.open = clicked.has(id);
      d.append(el('summary', id, 'cells')); const dl = el('dl'); pairs(dl, facts); d.append(dl);
      body.append(d);
    }
  }
  document.getElementById('panel').hidden = false;
}
document.addEventListener('click', ev => { const b = ev.target.closest('[data-n]'); if (b) show(b); });
document.getElementById('close').addEventListener('click', () => { document.getElementById('panel').hidden = true; });
document.querySelectorAll('.controls input').forEach(i => i.addEventListener('change', () =>
  document.body.classList.toggle('hide-' + i.value, !i.checked)));
"""
)


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _slug(group: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", group.lower()).strip("-")


def _stage_label(stage: str) -> str:
    return _esc(stage).replace("_", "_<wbr>")


def _entry(docs: Docs, e: Entry) -> str:
    cls = f"v m-{e.mark}" + (" unexpected" if e.unexpected else "")
    dtypes = f'<span class="dt">{_esc("/".join(DTYPE.get(d, d) for d in e.dtypes))}</span>' if e.dtypes else ""
    label = (legend.UNEXPECTED.glyph if e.unexpected else "") + legend.html_short(e.mark)
    title = _esc(_cells_title([v.id for v in e.verdicts]))
    timed = [(v.id, docs.latency[v.id]) for v in e.verdicts if v.id in docs.latency]
    lat = ""
    if timed:  # the steady state of one dtype (float32 where it is there), the rest in the title
        _, shown = next(((i, t) for i, t in timed if "-float32-" in i), timed[0])
        point, us = first_point(shown)
        lat = f'<small class="lat">{us:.0f} µs</small>'
        title += _esc(
            "".join(
                f"\n{i}: first call {t['first_call_ms']:,.0f} ms; steady "
                + ", ".join(f"{p} {u:.0f} µs" for p, u in t["steady_us"].items())
                for i, t in timed
            )
        )
    key = docs.note_key(e)
    if key in docs.notes:
        return f'<button class="{cls}" data-n="{docs.notes[key]}" title="{title}">{dtypes}{label}{lat}</button>'
    return f'<span class="{cls}" title="{title}">{dtypes}{label}{lat}</span>'


def _cells_title(ids: list[str]) -> str:
    """One id, or 'N cells: silu-triton_op-eager-{bfloat16,float16}-cuda' where they differ in the dtype only."""
    if len(ids) == 1:
        return ids[0]
    braced = dtypes_braced(ids)
    return f"{len(ids)} cells: " + ", ".join(braced if len(braced) == 1 else ids)


def _latency(docs: Docs) -> list[str]:
    intro = latency_intro(docs)
    if intro is None:
        return []
    first, tables = latency_tables(docs)
    out = [
        '<section id="latency"><h2>Latency on CUDA</h2>',
        f'<p class="meta">{_esc(intro)} In the matrix, a '
        "passing cell of a timed stage shows its steady state at the smallest check point; hover for the rest.</p>",
    ]
    if first:
        out += [
            "<h3>First call: the AOTI package against torch.compile (write-up 002's comparison)</h3>",
            '<table class="plain lat"><thead><tr><th>kernel</th><th>style</th>'
            + "".join(f"<th>{_esc(h)}</th>" for h in FIRST_CALL_HEAD)
            + "</tr></thead><tbody>",
        ]
        out += [
            f"<tr><td><code>{_esc(k)}</code></td><td><code>{_esc(st)}</code></td>"
            + "".join(f'<td class="num">{_esc(v)}</td>' for v in values)
            + "</tr>"
            for k, st, values in first
        ]
        out.append("</tbody></table>")
    for kernel, t in tables:
        out += [
            f"<h3>Steady state of <code>{_esc(kernel)}</code>, µs at {_esc(t.point)} (median / best)</h3>",
            '<table class="plain lat"><thead><tr><th>style</th>'
            + "".join(f"<th>{_stage_label(c)}</th>" for c in t.columns)
            + "</tr></thead><tbody>",
        ]
        out += [
            f"<tr><td><code>{_esc(style)}</code></td>"
            + "".join(f'<td class="num">{_esc(v)}</td>' for v in values)
            + "</tr>"
            for style, values in t.rows
        ]
        out.append("</tbody></table>")
    return out + ["</section>"]


LATENCY_HTML = "latency.html"  # beside the index: its tables took 57% of the index's height


def _latency_link(docs: Docs) -> list[str]:
    if latency_intro(docs) is None:
        return []
    return [
        '<section id="latency"><h2>Latency on CUDA</h2><p class="meta">What a passing cell cost, never a gate: '
        f'<a href="{LATENCY_HTML}">its tables</a>.</p></section>'
    ]


def latency_page(doc: dict, source: str) -> str | None:
    """The latency tables on a page of their own, or None where no cell was timed."""
    docs = Docs(doc)
    body = _latency(docs)
    if not body:
        return None
    out = [
        *_head("Support matrix: latency on CUDA"),
        "<header><h1>Latency on CUDA</h1>",
        *_ran_on(docs, source),
        '<nav><a href="support_matrix.html">The support matrix</a></nav></header>',
        *body,
        "</body></html>",
    ]
    return "\n".join(out) + "\n"


def _summary(docs: Docs, row, group: str) -> str:
    """A collapsed group's cell: how many of its entries have each verdict, coloured by the worst."""
    counts = Counter(e.mark for s in docs.stages if stage_group(s) == group for e in row.entries(s) for _ in e.verdicts)
    if not counts:
        return f'<td class="sum gc-{_slug(group)}"></td>'
    text = " · ".join(f"{legend.html_short(k)} {counts[k]}" for k in legend.ORDER if k in counts)
    return f'<td class="sum m-{legend.worst(counts)} gc-{_slug(group)}">{text}</td>'


def _grid(docs: Docs, kernel: str) -> list[str]:
    rows = [r for r in docs.rows if r.kernel == kernel]
    spans = Counter(stage_group(s) for s in docs.stages)
    head1 = ['<th class="corner" rowspan="2">style · device</th>']
    for g in docs.groups:
        head1.append(
            f'<th class="g-{_slug(g)}" colspan="{spans[g]}">{_esc(g)}</th>'
            f'<th class="gc-{_slug(g)}" rowspan="2">{_esc(g)}</th>'
        )
    head2 = [f'<th class="g-{_slug(stage_group(s))}">{_stage_label(s)}</th>' for s in docs.stages]
    out = [
        f'<div class="wrap"><table class="grid" data-kernel="{_esc(kernel)}"><thead>'
        f'<tr class="groups">{"".join(head1)}</tr><tr class="stages">{"".join(head2)}</tr></thead><tbody>'
    ]
    width = 1 + len(docs.stages) + len(docs.groups)
    family = None
    for r in rows:
        if style_family(r.style) != family:
            family = style_family(r.style)
            # The label in a sticky span: the row's one wide cell cannot stay in view when the grid scrolls sideways.
            out.append(f'<tr class="family"><th class="row" colspan="{width}"><span>{_esc(family)}</span></th></tr>')
        cells = []
        for g in docs.groups:
            for s in (s for s in docs.stages if stage_group(s) == g):
                entries = r.entries(s)
                cells.append(f'<td class="g-{_slug(g)}">' + "".join(_entry(docs, e) for e in entries) + "</td>")
            cells.append(_summary(docs, r, g))
        out.append(f'<tr><th class="row">{_esc(r.label)}</th>{"".join(cells)}</tr>')
    out.append("</tbody></table></div>")
    words = []
    for r in rows:
        sentences = [(g, r.sentence(g, docs.stages)) for g in docs.groups]
        said = [f"<b>{_esc(g)}</b>: {_esc(t)}" for g, t in sentences if t]
        words.append(
            f"<li><code>{_esc(r.style)}</code> on {_esc(r.device)}: " + (" ".join(said) or "not run here.") + "</li>"
        )
    out.append(f'<details class="words"><summary>In words</summary><ul>{"".join(words)}</ul></details>')
    return out


def _code(text: str) -> str:
    """Escaped, with Markdown's `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _esc(text))


def _style_lines(docs: Docs) -> list[str]:
    out, family = [f"<h3>Styles by family, on {_esc(docs.recommend['device'])}</h3>"], None
    for line in docs.style_lines():
        if line.family != family:
            out += (["</ul>"] if family else []) + [
                f'<h4>{_esc(line.family)}</h4><p class="meta">'
                f'{_esc(FAMILIES.get(line.family, ""))}</p><ul class="styles">'
            ]
            family = line.family
        doc = STYLES[line.style].doc if line.style in STYLES else ""
        out.append(f"<li><code>{_esc(line.style)}</code>: {_code(doc)} {_esc(line.text())}</li>")
    return out + (["</ul>"] if family else [])


def _goals_table(docs: Docs) -> list[str]:
    def names(answers):
        return ", ".join(
            f"<code>{_esc(a.style)}</code>" + (f" ({_esc(a.mode)} export)" if a.mode else "") for a in answers
        )

    out = [
        '<table class="plain goals"><thead><tr><th>goal</th><th>does all of it (fuzz-verified)</th><th>for '
        "contiguous inputs only</th><th>on the model's inputs, not fuzzed yet</th><th>closest of the others: what "
        "it misses</th></tr></thead><tbody>"
    ]
    for question, full, contiguous, unfuzzed, close in goals(docs.recommend):
        near = "<br>".join(f"<code>{_esc(a.style)}</code>: {_esc(describe_missing(a).replace('`', ''))}" for a in close)
        out.append(
            f"<tr><td>{_esc(question)}</td><td>{names(full) or '<b>none</b>'}</td>"
            f"<td>{names(contiguous) or '—'}</td><td>{names(unfuzzed) or '—'}</td><td>{near or '—'}</td></tr>"
        )
    return out + ["</tbody></table>"]


def _notes(docs: Docs, kernel: str) -> dict[str, Any]:
    """The notes the kernel's cells cite, by number, each listing only the kernel's cells; every text once, in
    `strings`, and named by its place there (a kernel's notes repeat a few hundred texts thousands of times)."""
    strings: dict[str, int] = {}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    out = {}
    for key, n in docs.notes.items():
        blocks = [([v for v in cells if v.id.startswith(f"{kernel}-")], note) for cells, note in docs.note_blocks(key)]
        blocks = [(cells, note) for cells, note in blocks if cells]
        if not blocks:
            continue
        out[str(n)] = {
            "title": s(legend.note_head(blocks[0][0][0])),
            # an id as its five axes, each a string: 1,800 ids of one kernel share a few dozen names
            "blocks": [
                {
                    "cells": [
                        [
                            [s(a) for a in split_cell_id(v.id, "a note").axes().values()],
                            [[s(w), s(t)] for w, t in v.facts],
                        ]
                        for v in cells
                    ],
                    "evidence": [[s(w), s(t)] for w, t in evidence],
                }
                for cells, (*_, evidence) in blocks
            ],
        }
    return {"notes": out, "strings": list(strings)}


def _answer(said) -> str:
    """One answer: its line, and its evidence a click away."""
    return f"<li>{_inline(said.head)}<details><summary>why</summary>{_inline(said.evidence)}</details></li>"


def _own_kernels(recommend: dict) -> dict:
    """The chooser's data: each style's own kernels, each "instead" text once (R.texts), cited by its index (the
    same advice repeated per kernel, stage and style took most of the page)."""
    texts: dict[str, int] = {}

    def cited(stages: dict) -> dict:
        return {
            stage: {**rec, "instead": {k: texts.setdefault(t, len(texts)) for k, t in rec["instead"].items()}}
            for stage, rec in stages.items()
        }

    styles = [{**entry, "stages": cited(entry["stages"])} for entry in recommend["styles"]]
    own = {k: v for k, v in recommend.items() if k not in ("common", "styles")}
    return {**own, "styles": styles, "texts": list(texts)}


def _data(value: dict) -> str:
    data = json.dumps(value, separators=(",", ":"))
    return data.replace("<", "\\u003c")  # no markup inside the script element: nothing can end it early


def _head(title: str, css: str = "") -> list[str]:
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(title)}</title>",
        f"<style>{CSS}{css}</style></head><body>",
    ]


def _ran_on(docs: Docs, source: str) -> list[str]:
    fuzz = docs.fuzz_line()
    runs = docs.matrix.merged_runs()
    return [
        f'<p class="meta"><b>Ran on</b> {_esc(docs.matrix.header())}</p>',
        *(
            [
                f'<details class="meta"><summary>The {len(runs)} runs merged</summary><ul>'
                + "".join(f"<li>{_esc(r)}</li>" for r in runs)
                + "</ul></details>"
            ]
            if runs
            else []
        ),
        f'<p class="meta"><b>Totals</b> {_esc(docs.matrix.totals())}</p>',
        *([f'<p class="meta"><b>Generated inputs</b> {_esc(fuzz)}</p>'] if fuzz else []),
        f'<p class="meta">Generated by <code>python -m compat report {_esc(source)}</code>.</p>',
    ]


def _kernel_href(kernel: str) -> str:
    return f"{KERNEL_PAGES}/{kernel}.html"


def _measured_chart(docs: Docs) -> list[str]:
    """The measured chart (compat.report.chart) as the index's first table; each cell's note on hover and below."""
    device = docs.recommend["device"]
    if not device:
        return []
    cells = {(c.style, c.group): c for c in measured_chart.chart(docs.doc, docs.verdicts, device)}
    if not any(c.kernels for c in cells.values()):  # a repository of its own ops: no canonical style ran
        return []
    shown = legend.html_legend((c.worst for c in cells.values() if c.worst), unmeasured=True)
    out = [
        f'<section id="chart"><h2>Which style survives which stage, measured on {_esc(device)}</h2>',
        f'<p class="meta">Each cell counts the kernels measured in each class, best first, coloured by the worst; '
        f"hover or open the notes for each kernel's class. Gradient rows: <code>triton_op</code> with "
        f"<code>register_autograd</code>. Non-strict export for save/load. {_esc(measured_chart.CPP_PASS)}</p>",
        f'<p class="legend">{shown}</p>',
        '<table class="plain measured"><thead><tr><th>style</th>'
        + "".join(f"<th>{_esc(group).replace(', ', '<br>')}</th>" for group, _ in measured_chart.GROUPS)
        + "</tr></thead><tbody>",
    ]
    notes = []
    for style, label in measured_chart.CANONICAL:
        row = [f"<th>{_code(label)}</th>"]
        for group, _ in measured_chart.GROUPS:
            cell = cells[(style, group)]
            if cell.worst is None:
                row.append(f"<td>{legend.UNMEASURED.glyph}</td>")
                continue
            notes.append(f"<li>{_code(label)}, {_esc(group)}: {_esc(cell.note())}</li>")
            row.append(f'<td class="m-{cell.worst}" title="{_esc(cell.note())}">{_esc(cell.tally())}</td>')
        out.append("<tr>" + "".join(row) + "</tr>")
    never = measured_chart.never_fuzzed(docs.doc, device)
    return out + [
        "</tbody></table>",
        *([f'<p class="meta">{_inline(never)}</p>'] if never else []),
        "<details><summary>The kernels behind each cell</summary><ul>",
        *notes,
        "</ul></details></section>",
    ]


def _op_summary(docs: Docs, doc: dict, beside: bool = False) -> list[str]:
    """A repository's ops, each alone, stage by stage (compat.report.chart.op_rows), with the chart's glyphs; each
    op links its page (`beside`: from a page in the same folder as the op pages)."""
    device = docs.recommend["device"]
    said, rows = measured_chart.op_rows(doc, docs.verdicts, device) if device else ("", [])
    if not rows:
        return []
    shown = legend.html_legend((c for _, classes in rows for c in classes if c), unmeasured=True)
    out = [
        f'<p class="meta">{_esc(said)}</p><p class="legend">{shown}</p>',
        '<table class="plain measured"><thead><tr><th>op</th>'
        + "".join(f"<th>{_esc(g)}</th>" for g, _ in measured_chart.GROUPS)
        + "</tr></thead><tbody>",
    ]
    out += [
        f'<tr><th><a href="{f"{op}.html" if beside else _kernel_href(op)}"><code>{_esc(op)}</code></a></th>'
        + "".join(
            f'<td class="m-{c}">{legend.html_mark(c)}</td>' if c else f"<td>{legend.UNMEASURED.glyph}</td>"
            for c in classes
        )
        + "</tr>"
        for op, classes in rows
    ]
    return out + ["</tbody></table>"]


def html_page(doc: dict, source: str) -> str:
    """The index: the measured chart, which style to use (the answers, the reader's own choice, the goals), the
    tutorial chart's claims measured otherwise, the styles by family, a line per kernel linking its page
    (kernel_html_pages), latency."""
    docs = Docs(doc)
    caps = "".join(
        f'<label><input type="checkbox" value="{_esc(c["key"])}"> {_esc(c["label"])}</label>'
        for c in docs.recommend["capabilities"]
    )
    chart_section = _measured_chart(docs)
    if docs.shipped_only:  # a repository's own ops: each alone, stage by stage; no choice of style to make
        return _shipped_index(docs, doc, source)
    out = [
        *_head("Triton kernel wrapping styles: support matrix"),
        "<header><h1>Triton kernel wrapping styles × PyTorch stages</h1>",
        *_ran_on(docs, source),
        "<nav>"
        + '<a href="#which">Which style should I use?</a>'
        + ('<a href="#chart">The measured chart</a>' if chart_section else "")
        + '<a href="#choose">Choose what you need</a><a href="#kernels">The matrix, per kernel</a>'
        + (f'<a href="{LATENCY_HTML}">Latency</a>' if docs.latency else "")
        + "</nav></header>",
        # The answers first (on the first screen), each one line with its evidence a click away; then the chart.
        '<section id="which"><h2>Which style should I use?</h2><ul class="answers">'
        + "".join(_answer(said) for said in answers(docs.recommend))
        + "</ul></section>",
        *chart_section,
        '<section id="goals"><h2>Choose what you need</h2>'
        f'<p class="meta">Tick what you need; on '
        f"{_esc(docs.recommend['device'])}: {_esc(INTRO)}</p>",
        f'<fieldset id="choose"><legend>I need</legend>{caps}</fieldset><div id="answer"></div>',
        "<h3>Common goals</h3>",
        *_goals_table(docs),
        *_style_lines(docs),
    ]
    chart = docs.chart()
    if chart:
        out += [
            "<h3>What the tutorial's chart claims, where this run measured otherwise</h3>",
            '<table class="plain chart"><thead><tr><th>capability</th><th>way</th><th>the chart says</th>'
            "<th>measured</th></tr></thead><tbody>",
        ]
        out += [
            f"<tr><td>{_esc(c)}</td><td>{_esc(w).replace('`', '')}</td><td>{_esc(claim)}</td><td>{_esc(m)}</td></tr>"
            for c, w, claim, m in chart
        ]
        out.append("</tbody></table>")
    # The answers first, then the matrix, then latency (noisy in a whole run, never a gate: compat.report.timings).
    out += [
        "</section>",
        '<section id="kernels"><h2>The matrix, per kernel</h2><p class="meta">Each kernel\'s page '
        "answers which style to use judged on its cells alone (a style that fails for one kernel's feature, host "
        "TMA say, still shows for the others), then gives its grid (every style, stage and dtype; click a cell for "
        "what was observed, why, what to do instead, and provenance):</p><ul>",
    ]
    for kernel in docs.kernels:
        cells = [
            v for r in docs.rows if r.kernel == kernel for s in docs.stages for e in r.entries(s) for v in e.verdicts
        ]
        out.append(
            f'<li><a href="{_kernel_href(kernel)}"><code>{_esc(kernel)}</code></a>: '
            f"{sum(v.works for v in cells)} of {len(cells)} cells pass everything asked of them</li>"
        )
    out += [
        "</ul></section>",
        *_latency_link(docs),
        # the script answers a reader's own choice over each style's own kernels: the common kernels' table is the
        # written answers' (and would push the page past GitHub's 500 KB)
        f'<script type="application/json" id="data">{_data({"recommend": _own_kernels(docs.recommend)})}</script>',
        f"<script>{CHOOSER}</script>",
        "</body></html>",
    ]
    return "\n".join(out) + "\n"


def _shipped_index(docs: Docs, doc: dict, source: str) -> str:
    out = [
        *_head("Support matrix: ops as shipped"),
        "<header><h1>Ops as shipped × PyTorch stages</h1>",
        *_ran_on(docs, source),
        '<nav><a href="#ops">Each op, stage by stage</a>'
        + (f'<a href="{LATENCY_HTML}">Latency</a>' if docs.latency else "")
        + "</nav></header>",
        '<section id="ops"><h2>Each op, stage by stage</h2>',
        *_op_summary(docs, doc),
        '<p class="meta">Each op\'s page gives its grid (every stage and dtype; click a cell for what was observed, '
        "why, what to do instead, and provenance).</p></section>",
        *_latency_link(docs),
        "</body></html>",
    ]
    return "\n".join(out) + "\n"


def kernel_html_pages(doc: dict, source: str) -> dict[str, str]:
    """One page per kernel, by path under the docs folder: its grid, its sentences, and the notes its cells cite."""
    docs = Docs(doc)
    shown = legend.html_legend(legend.CELL_MARKS, unexpected=True)
    groups = "".join(
        f'<label><input type="checkbox" value="{_slug(g)}" checked> {_esc(g)}</label>' for g in docs.groups
    )
    hide = "".join(
        f".gc-{_slug(g)}{{display:none}} body.hide-{_slug(g)} .g-{_slug(g)}{{display:none}} "
        f"body.hide-{_slug(g)} .gc-{_slug(g)}{{display:table-cell}}"
        for g in docs.groups
    )
    pages = {}
    for kernel in docs.kernels:
        out = [
            *_head(f"Support matrix: {kernel}", hide),
            f"<header><h1>Support matrix: <code>{_esc(kernel)}</code></h1>",
            *_ran_on(docs, source),
            '<nav><a href="../support_matrix.html">'
            + ("All ops" if docs.shipped_only else "All kernels, and which style to use")
            + "</a></nav></header>",
            *(
                [
                    '<section id="which"><h2>Stage by stage</h2>',
                    *_op_summary(docs, measured_chart.of_op(doc, kernel), beside=True),
                    "</section>",
                ]
                if docs.shipped_only
                else [
                    f'<section id="which"><h2>Which style for <code>{_esc(kernel)}</code></h2><p class="meta">Judged '
                    "on this kernel's cells alone (the index judges a style on every kernel it applies to):</p>"
                    '<ul class="answers">'
                    + "".join(_answer(said) for said in answers(docs.kernel_recommend[kernel]))
                    + "</ul></section>"
                ]
            ),
            f'<section><p class="legend">{shown}</p><p class="meta">Click a coloured cell for what was observed, '
            "why, what to do instead, and provenance; a generated input that gave wrong values comes with its "
            "falsifying example and the command that reruns it.</p>"
            f'<p class="controls">Stage groups shown (untick to fold a group into one column): {groups}</p>',
            *_grid(docs, kernel),
            "</section>",
            '<aside id="panel" hidden><button id="close" title="close">×</button><div id="panel-body"></div></aside>',
            f'<script type="application/json" id="data">{_data(_notes(docs, kernel))}</script>',
            f"<script>{PANEL}</script>",
            "</body></html>",
        ]
        pages[_kernel_href(kernel)] = "\n".join(out) + "\n"
    return pages
