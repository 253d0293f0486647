"""The upgrade diff as Markdown (`python -m compat diff`): what compat.evidence.diff found changed between two results
files, regressions first, the cells that made one change folded into one row with its reason and rewrite, within a
pull-request comment's limit, with latency that moved reported apart."""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..evidence.diff import COUNTED, GROUPS, Change, compare, host_of, regressed
from ..evidence.outcomes import KINDS
from ..matrix.cells import split_cell_id
from . import legend, timings

REASON_CHARS = 300  # of a reason or a rewrite, in the comment (the full text is the expectation row's)
CELLS_CHARS = 4000  # of the cell ids one folded row lists


def rendered(markdown: str) -> str:
    """Markdown as HTML, as GitHub renders it (CommonMark, tables, inline HTML), with markdown-it-py."""
    from markdown_it import MarkdownIt  # here: a GPU runner runs the checkout with what it has, and writes no page

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


def html_page(markdown: str, title: str) -> str:
    """The diff's Markdown as a page of its own, with a title and the way back to the docs' index beside it."""
    body = rendered(markdown)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f'<p><a href="../index.html">Every page, and the answers</a></p>{body}</body></html>\n'
    )


CSS = (
    "body{font:14px/1.5 system-ui,sans-serif;margin:16px 24px;max-width:1200px;color:#1d2330}"
    "h1{font-size:22px} h2{font-size:18px} code{font-size:12px;background:rgba(0,0,0,.05);padding:0 3px}"
    "table{border-collapse:collapse} th,td{border:1px solid #cbd2dc;padding:3px 6px;text-align:left}"
    "blockquote{margin:6px 0;padding:2px 12px;border-left:4px solid #cbd2dc;color:#4a5568}"
)


def _marked(kind: str | None, state: str) -> str:
    """An outcome with its mark (a cell's pass is on the model's inputs: the diff compares cells, not fuzz tests)."""
    return f"{legend.glyph(legend.OUTCOME_MARKS[kind])} {state}" if kind else state


def _env(doc: dict[str, Any], name: str) -> str:
    e = doc["environment"]
    return f"`{name}`: torch {e['torch']}, triton {e['triton']}, {host_of(doc)}"


@dataclass
class _Budget:
    """What is left of a comment's characters, and the rows it had to leave out."""

    chars: int
    left_out: int = 0
    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> bool:
        size = len(line.encode()) + 1  # bytes, not characters: a limit counted either way holds
        if size > self.chars:
            return False
        self.lines.append(line)
        self.chars -= size
        return True


def transitions(rows: list[Change]) -> list[tuple[Change, list[str]]]:
    """The rows that made the same change (before, after, reason and rewrite) folded into one, the most cells first:
    an upgrade moves hundreds of cells through a handful of causes."""
    folded: dict[tuple[str, str, str, str], tuple[Change, list[str]]] = {}
    for c in rows:
        folded.setdefault((c.before, c.after, c.reason, c.rewrite), (c, []))[1].append(c.cell)
    return sorted(folded.values(), key=lambda entry: -len(entry[1]))


LISTED = 5  # a change of this many cells or fewer lists their ids; more fold behind a summary


def _cells(cells: list[str], room: int) -> str:
    """The folded cells' ids, as many as fit in `room` bytes, in code spans."""
    shown, size = [], 0
    for cell in cells:
        size += len(cell) + 4
        if size > room:
            break
        shown.append(f"`{cell}`")
    more = f", … {len(cells) - len(shown)} more" if len(shown) < len(cells) else ""
    return ", ".join(shown) + more


def _why(change: Change) -> str:
    text = change.reason[:REASON_CHARS] + ("…" if len(change.reason) > REASON_CHARS else "")
    if change.rewrite:
        text += f" **Instead:** {change.rewrite[:REASON_CHARS]}"
    return text.replace("|", "/").replace("\n", " ")


INTERPRETER = "cpu_interpret"  # Triton's interpreter on CPU tensors: a test-only mode, no user runs kernels there


def _scope(rows: list[Change], build: str | None) -> str:
    """What a group's changes touch, where it is narrower than the versions: the interpreter only, or a change of
    the torch build only."""
    said = []
    if all(split_cell_id(c.cell, "a diff").device == INTERPRETER for c in rows):
        said.append("only on Triton's interpreter (`cpu_interpret`, test-only)")
    if build:
        said.append(f"only the torch build changed ({build})")
    return f" — {'; '.join(said)}" if said else ""


def _section(
    out: _Budget, changes: dict[str, list[Change]], level: str, full_link: str | None, build: str | None = None
) -> None:
    for key, title, bad in GROUPS:
        rows = changes[key]
        if not rows or key in COUNTED:
            continue
        folded = transitions(rows)
        out.add("")
        out.add(
            f"{level} {'🔴 ' if bad else ''}{title} ({len(rows)} cells, {len(folded)} "
            f"{'change' if len(folded) == 1 else 'changes'}){_scope(rows, build)}"
        )
        out.add("")
        # A list, not a table: a cell id, an error's dotted name or a path cannot wrap, and a table of them widened
        # past GitHub's 948 px column; each change's cells fold below it.
        reserve = 200  # room for this group's "more" line and the next group's heading
        for i, (c, cells) in enumerate(folded):
            row = f"- **{len(cells)} {'cell' if len(cells) == 1 else 'cells'}**: {_marked(c.kinds[0], c.before)} → {_marked(c.kinds[1], c.after)}. {_why(c)}"
            ids = (
                f"  {_cells(cells, CELLS_CHARS)}"
                if len(cells) <= LISTED
                else f"  <details><summary>{len(cells)} cells</summary>{_cells(cells, CELLS_CHARS)}</details>"
            )
            if out.chars - len(row.encode()) - len(ids.encode()) < reserve or not out.add(row):
                more = sum(len(cells) for _, cells in folded[i:])
                out.left_out += more
                out.add(f"- … {more} more cells" + (f" in [the full diff]({full_link})" if full_link else ""))
                break
            out.add(ids)


def _flavour(doc: dict[str, Any]) -> str:
    """The torch wheel's build flavour: cu130, cpu, or '' for a build without one."""
    return doc["environment"]["torch"].partition("+")[2]


def markdown(
    old_doc: dict[str, Any],
    new_doc: dict[str, Any],
    old_name: str,
    new_name: str,
    limit: int | None = None,
    full_link: str | None = None,
) -> tuple[str, int]:
    """The diff as Markdown, and how many rows it left out to stay within `limit` characters (None: no limit)."""
    groups = compare(old_doc, new_doc)
    cross_host = host_of(old_doc) != host_of(new_doc)
    versions = [(d["environment"]["torch"].partition("+")[0], d["environment"]["triton"]) for d in (old_doc, new_doc)]
    build = (
        f"`+{_flavour(old_doc) or 'none'}` → `+{_flavour(new_doc) or 'none'}`"
        if versions[0] == versions[1] and _flavour(old_doc) != _flavour(new_doc)
        else None
    )
    same_versions = all(old_doc["environment"][k] == new_doc["environment"][k] for k in ("torch", "triton"))
    verdict = (
        "**Regressions found.**"
        if regressed(groups, host_effects=False)
        else "No regressions from the version; the host's are listed under host effects."
        if regressed(groups)
        else "No regressions."
    )
    counts = ", ".join(
        f"{len(groups[k])} {title.split(':')[0].lower()}" for k, title, _ in GROUPS if groups[k] and k not in COUNTED
    )
    compared, unrun = coverage(old_doc, new_doc)
    head = [f"## Support matrix diff: {_compared(compared)}", ""]
    head += _caveats(old_doc, new_doc, cross_host)
    head += [
        f"- before: {_env(old_doc, old_name)}",
        f"- after: {_env(new_doc, new_name)}",
        "",
        f"{verdict} {counts or 'Nothing changed.'}" if compared else "No verdict: no cell ran on both sides.",
        *_no_verdict(unrun),
        *unknown(old_doc, new_doc),
        *_legend(groups),
    ]
    counted = {
        "not_run": "cells ran on one side only (skipped on the other, for example CUDA cells on a machine "
        "without a GPU)",
        "added": "cells only in the after run",
        "removed": "cells only in the before run",
    }
    head += [
        line for k, text in counted.items() if groups[k] for line in ("", f"{len(groups[k])} {text}: not compared.")
    ]
    out = _Budget(limit or 10**12)
    for line in head:
        out.add(line)
    if cross_host and same_versions:  # nothing but the host differs: every change is the host's
        out.add("")
        out.add("### Host effects (same torch and triton on both)")
        _section(out, groups, "####", full_link, build)
    elif cross_host:
        for title, host in (("Version effects", False), ("Host effects", True)):
            part = {k: [c for c in v if c.host == host] for k, v in groups.items()}
            if any(part[k] for k, _, _ in GROUPS if k not in COUNTED):
                out.add("")
                out.add(f"### {title}")
                _section(out, part, "####", full_link, build)
    else:
        _section(out, groups, "###", full_link, build)
    _latency_section(out, old_doc, new_doc)
    return "\n".join(out.lines).rstrip() + "\n", out.left_out


def _caveats(old_doc: dict[str, Any], new_doc: dict[str, Any], cross_host: bool) -> list[str]:
    """What else changed beside the torch version: the host, Triton, the torch build."""
    head: list[str] = []
    if cross_host:
        head += [
            f"> **Two hosts:** {host_of(old_doc)} before, {host_of(new_doc)} after. A change may come from the "
            f"host rather than the version: changes whose cause names the missing GPU or backend are listed "
            f"apart, under host effects.",
            "",
        ]
    triton = [d["environment"]["triton"] for d in (old_doc, new_doc)]
    if triton[0] != triton[1]:
        head += [
            f"> **Another Triton:** {triton[0]} before, {triton[1]} after. A change may come from Triton as well as "
            f"torch.",
            "",
        ]
    if _flavour(old_doc) != _flavour(new_doc):
        head += [
            f"> **Another torch build:** `+{_flavour(old_doc) or 'none'}` before, `+{_flavour(new_doc) or 'none'}` "
            f"after. A change may come from the build (which CUDA, or none) as well as the version.",
            "",
        ]
    return head


def coverage(old_doc: dict[str, Any], new_doc: dict[str, Any]) -> tuple[dict[str, int], list[str]]:
    """The cells both sides ran, counted per device, and the devices neither side compared (a run without a GPU
    says nothing of CUDA, so the diff gives no verdict there)."""
    ran = [{c["id"] for c in d["cells"] if c["outcome"]["kind"] != "skipped"} for d in (old_doc, new_doc)]
    per_device = Counter(split_cell_id(cell, "a diff").device for cell in ran[0] & ran[1])
    every = {c["axes"]["device"] for d in (old_doc, new_doc) for c in d["cells"]}
    return dict(sorted(per_device.items())), sorted(every - set(per_device))


def _legend(groups: dict[str, list[Change]]) -> list[str]:
    """The marks the rows below show (each cell's outcome on the model's inputs: the diff compares cells)."""
    kinds = {k for rows in groups.values() for c in rows for k in c.kinds if k}
    marks = [legend.OUTCOME_MARKS[k] for k in KINDS if k in kinds]
    return ["", legend.markdown(marks)] if marks else []


def _compared(compared: dict[str, int]) -> str:
    if not compared:
        return "nothing compared"
    return f"{sum(compared.values()):,} cells compared ({', '.join(f'{d} {n:,}' for d, n in compared.items())})"


def _no_verdict(unrun: list[str]) -> list[str]:
    if not unrun:
        return []
    return ["", f"No verdict for {', '.join(f'`{d}`' for d in unrun)}: no cell of it ran on both sides."]


def unknown(old_doc: dict[str, Any], new_doc: dict[str, Any]) -> list[str]:
    """How many cells each side knows nothing of (skipped there: a run without a GPU knows nothing of its CUDA
    cells), so a verdict is read as covering only the cells both sides ran."""
    skipped = [sum(c["outcome"]["kind"] == "skipped" for c in d["cells"]) for d in (old_doc, new_doc)]
    if not any(skipped):
        return []
    return [
        "",
        f"Unknown: {skipped[0]} cells before and {skipped[1]} after were not run there (skipped: a run without a "
        f"GPU knows nothing of its CUDA cells); the verdict covers only the cells both sides ran.",
    ]


def _latency_section(out: _Budget, old_doc: dict[str, Any], new_doc: dict[str, Any]) -> None:
    """Latency that moved beyond the noise band: reported apart, never a regression (compat.report.timings)."""
    moved = timings.changes(old_doc, new_doc)
    if not any(timings.of(c) for c in old_doc["cells"]) or not any(timings.of(c) for c in new_doc["cells"]):
        return
    out.add("")
    out.add("### Latency (not a failure)")
    out.add("")
    out.add(
        f"Passing cells both runs timed on CUDA; {timings.band()}. "
        + (f"{len(moved)} moved:" if moved else "None moved beyond it.")
    )
    for i, c in enumerate(moved):
        if not out.add(f"- `{c.id}` {c.what}: {c.old:,.1f} → {c.new:,.1f} {c.unit} ({c.ratio:.2f}x)"):
            out.left_out += len(moved) - i
            break
