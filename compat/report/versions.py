"""The support matrix across versions: for each style and stage, on each device, the torch versions where it works.

Drawn from committed results files only (one per torch version and host; the GPU's merged file included), and from
the expectation rows that cite upstream for versions nobody measured here. Each entry says how it is known:
measured on a GPU, measured on a CPU, or documented upstream. A cause that changes between neighbouring versions is
named with the versions on each side ("... up to 2.13, from 2.14: ..."). The tutorial chart's claims stand beside
the GPU measurement where the two disagree.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from ..errors import CompatError
from ..evidence.outcomes import Outcome, clip
from ..evidence.verdicts import of_doc
from ..matrix.cells import split_cell_id
from . import legend

# (style, stage, device) -> version -> what is known of it there.
Table = dict[tuple[str, str, str], dict[str, "Entry"]]

DEVICES = ("cuda", "cpu", "cpu_interpret")
GPU, CPU, DOCUMENTED = "GPU", "CPU", "documented"
# An entry's state is a mark of compat.report.legend, as in the chart and the grids.
STATES = ("verified", "unfuzzed", "partly", "errors_some", "fails", "wrong_some", "wrong")

# The tutorial's chart ("user-defined Triton kernels with torch.compile", ../shared/seeds/001), its rows quoted
# verbatim: per row, the stages that test it (on a GPU, where the tutorial runs; every compile stage here uses
# fullgraph=True) and per way its claim. A row no stage tests is quoted and never compared.
CHART_STYLES = {
    "raw_jit": "Triton kernel (no explicit torch.library wrapper)",
    "triton_op": "torch.library.triton_op",
    "custom_op": "torch.library.custom_op",
}
COMPILE = ("compile_eager", "compile_aot_eager", "compile_inductor", "compile_dynamic")
CHART = (
    ("Supports inference", ("eager",), {"raw_jit": "Yes", "triton_op": "Yes", "custom_op": "Yes"}),
    (
        "Supports training",
        ("compile_backward",),
        {"raw_jit": "In the majority of cases", "triton_op": "Yes", "custom_op": "Yes"},
    ),
    ("Supports torch.compile", (), {"raw_jit": "Yes", "triton_op": "Yes", "custom_op": "Yes"}),
    (
        "Supports torch.compile(fullgraph=True)",
        COMPILE,
        {"raw_jit": "In the majority of cases", "triton_op": "In the majority of cases", "custom_op": "In all cases"},
    ),
    (
        "Does torch.compile trace into the implementation?",
        (),
        {"raw_jit": "Yes", "triton_op": "Yes", "custom_op": "No"},
    ),
    (
        "Supports AOTInductor",
        ("aoti_strict", "aoti_nonstrict"),
        {"raw_jit": "Yes", "triton_op": "Yes", "custom_op": "No"},
    ),
    (
        "Supports PyTorch Subsystems like FlopCounterMode, CPU Fallback, Tensor Subclasses",
        ("flop_count",),
        {"raw_jit": "No", "triton_op": "Yes", "custom_op": "Yes"},
    ),
)
# The registration a row assumes: training through an autograd.Function (a raw kernel) or register_autograd (an op),
# FLOPs through register_flop_formula. None: no style here registers it that way, so the row is not compared.
CHART_VIA = {
    "Supports training": {"raw_jit": "autograd_function", "triton_op": "register_autograd", "custom_op": None},
    "Supports PyTorch Subsystems like FlopCounterMode, CPU Fallback, Tensor Subclasses": {
        "triton_op": "triton_op_flops",
        "custom_op": None,
    },
}
SAME_CLAIM = {"In all cases": "Yes"}  # the chart's words for what the measurement calls Yes
# A hedged claim ("in the majority of cases") is refuted only by less; "Yes" and "No" by anything else.
HOW_MANY = ("No", "In some cases", "In the majority of cases", "Yes")
# AOTInductor from C++ (no Python): where the chart's claim holds only there, it says so.
WITHOUT_PYTHON = {"Supports AOTInductor": ("aoti_cpp_strict", "aoti_cpp_nonstrict")}


def minor(version: str) -> str:
    v = Version(version)
    return f"{v.major}.{v.minor}"


@dataclass
class Entry:
    """One (style, stage, device) at one torch minor: how its cells ended, and how that is known."""

    passed: int = 0
    ran: int = 0
    verified: int = 0  # cells that pass, fuzz-verified (compat.report.legend.of_verdict)
    wrong_some: int = 0  # cells that pass on the model but whose fuzz tests found them wrong
    errors_some: int = 0  # ... or raising
    mismatched: int = 0  # cells that gave wrong values on the model itself, silently: worse than an error
    causes: set = field(default_factory=set)
    how: str = ""

    @property
    def wrong(self) -> int:
        """Cells that pass on the model but not on some generated inputs."""
        return self.wrong_some + self.errors_some

    @property
    def state(self) -> str:
        if self.mismatched:
            return "wrong"
        if self.passed == self.ran:
            if self.wrong:
                return "wrong_some" if self.wrong_some else "errors_some"
            return "verified" if self.verified == self.ran else "unfuzzed"
        return "partly" if self.passed else "fails"


def collect(docs: list[tuple[str, dict[str, Any]]], expectations=None) -> Table:
    """(style, stage, device) -> torch minor -> Entry, from results documents; rows citing upstream fill in
    versions no document measured."""
    table: Table = defaultdict(dict)
    seen: dict[tuple, str] = {}
    for path, doc in docs:
        env = doc["environment"]
        version, how = minor(env["torch"]), GPU if env["gpus"] else CPU
        if (version, how) in seen:  # two triton versions of one torch, say: each column is one run
            raise CompatError(
                f"{seen[version, how]} and {path} are both torch {version} on a {how} host; give one "
                f"run per version and host (compare Triton versions with `python -m compat diff`)"
            )
        seen[version, how] = path
        marks = {cid: legend.of_verdict(v) for cid, v in of_doc(doc).items()}
        for c in doc["cells"]:
            o = c["outcome"]
            if o["kind"] == "skipped":
                continue
            a = c["axes"]
            e = table[(a["style"], a["stage"], a["device"])].setdefault(version, Entry(how=how))
            if e.how != how:  # both hosts ran a device's cells: its own host's measurement wins (cuda: the GPU's)
                if how != (GPU if a["device"] == "cuda" else CPU):
                    continue
                table[(a["style"], a["stage"], a["device"])][version] = e = Entry(how=how)
            e.ran += 1
            e.passed += o["kind"] == "passed"
            e.verified += marks[c["id"]] in ("verified", "refuses", "overflow")
            e.wrong_some += marks[c["id"]] == "wrong_some"
            e.errors_some += marks[c["id"]] == "errors_some"
            e.mismatched += o["kind"] == "mismatch"
            cause = Outcome.from_dict(o).cause
            if o["kind"] == "mismatch":  # the numbers are each cell's; what went wrong is one of two things
                whys = " ".join(n.get("why", "") for n in o.get("numerics") or [])
                e.causes.add(
                    "no error, " + ("non-finite outputs" if "non-finite" in whys else "values beyond tolerance")
                )
            elif cause is not None:  # sizes differ per kernel ("the Linears alone: 2424832"); the cause does not.
                # Small numbers stay: they are the cause ("0 active drivers", which read "N active drivers").
                e.causes.add(re.sub(r"\b\d{3,}\b", "N", clip(cause.fragment, 90)))
    if expectations is not None:
        _documented(table, expectations)
    return table


def _documented(table, expectations) -> None:
    for (section, key), rows in expectations.rows.items():
        if section != "cells":
            continue
        cell = split_cell_id(key, "expectations")
        style, stage, device = cell.style, cell.stage, cell.device
        for e in rows:
            doc = e.row["provenance"].get("documented")
            if not doc or not str(e.row["torch"]).startswith(">="):
                continue
            version = minor(str(e.row["torch"])[2:].split(",")[0] + ".0")
            entry = table[(style, stage, device)].setdefault(version, Entry(how=DOCUMENTED))
            if entry.how == DOCUMENTED:
                entry.ran += 1
                entry.passed += e.row["outcome"] == "passed"
                if e.full.get("match"):
                    entry.causes.add(clip(e.full["match"].replace("\\", ""), 90))


def sentence(style: str, stage: str, device: str, by_version: dict[str, Entry]) -> str:
    """'works, fuzz-verified on 2.9–2.12; fails with an error from 2.13 (cause)', each cause change named."""
    versions = sorted(by_version, key=Version)
    spans: list[list] = []  # [state, first, last, causes]
    for v in versions:
        e = by_version[v]
        if spans and spans[-1][0] == e.state and spans[-1][3] == e.causes:
            spans[-1][2] = v
        else:
            spans.append([e.state, v, v, e.causes])
    parts = []
    for i, (state, first, last, causes) in enumerate(spans):
        when = (
            f"on {first}"
            if first == last
            else f"from {first}"
            if i == len(spans) - 1 and last == versions[-1] and i
            else f"on {first}–{last}"
        )
        how = sorted({by_version[v].how for v in versions if Version(first) <= Version(v) <= Version(last)})
        cause = f" ({clip('; '.join(sorted(causes)), 160)})" if causes and state not in ("verified", "unfuzzed") else ""
        parts.append(f"{legend.MARKS[state].words} {when}{cause} [{', '.join(how)}]")
    return f"`{style}` · `{stage}` on {device}: " + "; ".join(parts)


def _measured(table, style: str, stages: tuple[str, ...]) -> tuple[str, str] | None:
    """('Yes' / 'In the majority of cases' / 'In some cases' / 'No', its counts) over the GPU cells of the stages."""
    entries = [e for s in stages for e in table.get((style, s, "cuda"), {}).values() if e.how == GPU]
    if not entries:
        return None
    ran, wrong = sum(e.ran for e in entries), sum(e.wrong for e in entries)
    good = sum(e.passed for e in entries) - wrong
    measured = (
        "Yes"
        if good == ran
        else "No"
        if good == 0
        else "In the majority of cases"
        if good * 2 > ran
        else "In some cases"
    )
    return measured, f"{good} of {ran} cells work" + (
        f" ({wrong} more pass on the model but fail on some generated inputs)" if wrong else ""
    )


def chart_rows(table) -> list[tuple[str, str, str, str]]:
    """(the chart's row, verbatim; its way and the matrix style measured; the chart's claim; what the GPU measured)
    where the two disagree, or where the claim holds only without Python. A cell counts as working only when it
    passes and its fuzz tests found nothing wrong."""
    out = []
    for row, stages, claims in CHART:
        for way, claim in claims.items():
            style = CHART_VIA.get(row, {}).get(way, way)
            found = _measured(table, style, stages) if style and stages else None
            if found is None or not style:
                continue
            measured, counts = found
            said = SAME_CLAIM.get(claim, claim)
            if measured == said or said not in ("Yes", "No") and HOW_MANY.index(measured) > HOW_MANY.index(said):
                continue
            detail = f"{measured}: {counts}"
            cpp = _measured(table, style, WITHOUT_PYTHON[row]) if row in WITHOUT_PYTHON else None
            if cpp and cpp[0] == SAME_CLAIM.get(claim, claim):
                detail = f"from Python {detail}; from C++ {cpp[0]}: {cpp[1]} (the chart holds without Python)"
            out.append((row, f"{CHART_STYLES[way]} (`{style}`)", claim, detail))
    return out


def _run_here(entries: dict[str, Entry]) -> dict[str, Entry]:
    """The versions a results file measured (not those known from upstream's documentation)."""
    return {v: e for v, e in entries.items() if e.how != DOCUMENTED}


def _changes(entries: dict[str, Entry]) -> bool:
    """Whether the outcome or its cause differs between versions."""
    return len({(e.state, frozenset(e.causes)) for e in entries.values()}) > 1


def gpu_evidence(docs: list[tuple[str, dict[str, Any]]]) -> str:
    """Which versions a GPU measured, in words: a CUDA cell of any other version is known from nowhere here."""
    gpu = sorted(
        {(d["environment"]["torch"], g["name"]) for _, d in docs for g in d["environment"].get("gpus") or []},
        key=lambda tg: Version(tg[0].partition("+")[0]),
    )
    if not gpu:
        return "**GPU evidence:** none; every version here was measured on a CPU alone (no CUDA cell is known)."
    said = ", ".join(f"torch {t} on {name}" for t, name in gpu)
    return f"**GPU evidence:** {said} only; every other version was measured on a CPU alone (its CUDA cells unknown)."


def markdown(docs: list[tuple[str, dict[str, Any]]], expectations=None, upgrades: dict[str, str] | None = None) -> str:
    """The page in Markdown; `upgrades`: the committed upgrade diffs by the pair of files they compared ('OLD NEW')."""
    table = collect(docs, expectations)
    out = [
        "# Support across versions",
        "",
        "Generated by `python -m compat versions`; do not edit by hand. From the committed results: "
        + ", ".join(f"`{p}`" for p, _ in docs)
        + ".",
        "",
        gpu_evidence(docs),
        "",
        "For each style and stage, on each device, what its cells did on each torch version (all kernels and "
        f"dtypes together, every one of them where not partly). {legend.markdown(STATES)} "
        "The letter says how it is known: G measured on a GPU, C measured on a CPU, D documented upstream (not "
        "measured here). Cells of a device are only ever compared with the same device.",
        "",
    ]
    disagree = chart_rows(table)
    if disagree:
        out += [
            "## The tutorial's chart against the measurement",
            "",
            "Where the chart of the tutorial *user-defined Triton kernels with torch.compile* claims otherwise "
            "than the GPU measured (every kernel, dtype and stage of the capability).",
            "",
            "| capability | way | the chart says | measured |",
            "|---|---|---|---|",
        ]
        out += [f"| {c} | {w} | {claim} | {m} |" for c, w, claim, m in disagree] + [""]
    out += [
        "## Compare two versions",
        "",
        "Any two of these results files, every cell, regressions first, grouped by "
        "root-cause transition: `python -m compat diff OLD.json.gz NEW.json.gz`. The HTML page builds the command "
        "for the pair you pick and shows the rows that differ between them.",
        "",
    ]
    letter = {GPU: "G", CPU: "C", DOCUMENTED: "D"}
    for device in DEVICES:
        # What changed between versions first (a reader comes for that), then the rest; each part by name.
        keys = sorted((k for k in table if k[2] == device), key=lambda k: (not _changes(_run_here(table[k])), k))
        if not keys:
            continue
        # A version column only where something was measured on it for this device (a documented row alone left
        # the 2.14 CUDA column blank in 733 of 738 rows).
        versions = sorted({v for k in keys for v in _run_here(table[k])}, key=Version)
        out += [
            f"## {device}",
            "",
            "| style · stage | " + " | ".join(versions) + " |",
            "|---" * (len(versions) + 1) + "|",
        ]
        for key in keys:
            row = [f"{legend.glyph(e.state)}{letter[e.how]}" if (e := table[key].get(v)) else "" for v in versions]
            out.append(f"| `{key[0]}` · `{key[1]}` | " + " | ".join(row) + " |")
        documented = sorted({v for k in keys for v in table[k]} - set(versions), key=Version)
        if documented:
            out += [
                "",
                f"Known on {device} only from upstream's documentation, said in words below rather than as "
                f"a column: torch {', '.join(documented)}.",
            ]
        out += ["", f"### {device}, in words", ""]
        out += [f"- {sentence(*key, table[key])}" for key in keys if _changes(table[key])]
        out += [
            "",
            "(Only the styles and stages whose outcome or cause changes between versions are listed in words.)",
            "",
        ]
    paths = {p for p, _ in docs}
    diffs = [(pair.split(" "), page) for pair, page in sorted((upgrades or {}).items())]
    diffs = [(sides, page) for sides, page in diffs if set(sides) <= paths]
    if diffs:
        out += ["## Upgrade diffs between these files", ""]
        out += [f"- [`{old}` → `{new}`]({page})" for (old, new), page in diffs]
    return "\n".join(out).rstrip() + "\n"


CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330}
header{padding:16px 24px 4px} h1{font-size:22px;margin:0 0 6px} h2{font-size:18px;margin:20px 24px 8px}
.wrap{overflow:auto;max-height:80vh;margin:0 24px;border:1px solid #cbd2dc}
table{border-collapse:separate;border-spacing:0} th,td{border-right:1px solid #cbd2dc;border-bottom:1px solid #cbd2dc;
padding:4px 8px;white-space:nowrap} thead th{position:sticky;top:0;background:#eef1f6;z-index:2}
tbody th{position:sticky;left:0;background:#f7f8fb;text-align:left;font:12.5px ui-monospace,monospace;z-index:1}
td{text-align:center;min-width:54px} td sub{font-size:11px;color:#4a5568;margin-left:2px;vertical-align:baseline} p,ul{margin:6px 24px}
table.chart td{text-align:left;white-space:normal;max-width:420px} td.picked{outline:2px solid #1d4ed8;outline-offset:-2px}
"""


def _code(text: str) -> str:
    """Markdown's `code` as HTML."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def html_page(docs: list[tuple[str, dict[str, Any]]], expectations=None, upgrades: dict[str, str] | None = None) -> str:
    table = collect(docs, expectations)
    esc = html.escape
    out = [
        f"<!doctype html><meta charset=utf-8><title>Support across versions</title><style>{CSS}{legend.CSS}</style>",
        "<header><h1>Support across versions</h1><p class=meta>From the committed results: "
        + ", ".join(f"<code>{esc(p)}</code>" for p, _ in docs)
        + f'.</p><p class="legend">{legend.html_legend(STATES)}</p>'
        "<p class=meta>G measured on a GPU, C on a CPU, D documented upstream. Hover a cell for its counts and "
        "causes.</p></header>",
    ]
    disagree = chart_rows(table)
    if disagree:
        out += [
            "<h2>The tutorial's chart against the GPU measurement</h2><div class=wrap><table class=chart>"
            "<thead><tr><th>capability</th><th>way</th><th>the chart says</th><th>measured</th></tr></thead><tbody>"
        ]
        out += [
            f"<tr><th>{esc(c)}</th><td>{_code(esc(w))}</td><td>{esc(claim)}</td><td>{esc(m)}</td></tr>"
            for c, w, claim, m in disagree
        ]
        out += ["</tbody></table></div>"]
    options = "".join(
        f'<option value="{esc(p)}" data-v="{minor(d["environment"]["torch"])}">{esc(_label(d))}</option>'
        for p, d in docs
    )
    out += [
        "<h2 id=compare>Compare two versions</h2><p class=meta><label>from <select id=old>"
        f"{options}</select></label> <label>to <select id=new>{options}</select></label> "
        "<label><input type=checkbox id=only> only what differs</label></p>"
        "<p class=meta>Every cell, regressions first, grouped by root-cause transition: <code id=command></code>"
        " <span id=upgrade></span></p>",
        "<script type=application/json id=upgrades>" + json.dumps(upgrades or {}).replace("</", "<\\/") + "</script>",
    ]
    for device in DEVICES:
        # What changed between versions first (a reader comes for that), then the rest; each part by name.
        keys = sorted((k for k in table if k[2] == device), key=lambda k: (not _changes(_run_here(table[k])), k))
        if not keys:
            continue
        versions = sorted({v for k in keys for v in table[k]}, key=Version)  # the page compares any two
        out += [
            f"<h2 id={device}>{device}</h2><div class=wrap><table><thead><tr><th>style · stage</th>"
            + "".join(f"<th>{v}</th>" for v in versions)
            + "</tr></thead><tbody>"
        ]
        for key in keys:
            cells = _version_cells(table[key], versions)
            out.append(f"<tr><th>{esc(key[0])} · {esc(key[1])}</th>{''.join(cells)}</tr>")
        out += ["</tbody></table></div><ul>"]
        out += [
            f"<li>{_code(esc(sentence(*key, table[key])))}</li>"
            for key in keys
            if len({(e.state, frozenset(e.causes)) for e in table[key].values()}) > 1
        ]
        out += ["</ul>"]
    return "\n".join(out + [f"<script>{COMPARE}</script>"]) + "\n"


def _version_cells(row: dict, versions: list[str]) -> list[str]:
    """One style and stage's cells, a version each: its mark, how it was known (G, C, D) and, on hover, its counts
    and causes (named once: a later version with the same causes says so)."""
    esc = html.escape
    letter = {GPU: "G", CPU: "C", DOCUMENTED: "D"}
    cells: list[str] = []
    before: str | None = None  # the version whose causes a cell names instead of repeating
    kinds: dict[tuple[str, frozenset], int] = {}
    for v in versions:
        e = row.get(v)
        if e is None:
            cells.append("<td></td>")
            continue
        causes = (
            (
                f"; causes as on {before}"
                if before and row[before].causes == e.causes
                else "; " + "; ".join(sorted(e.causes))
            )
            if e.causes
            else ""
        )
        title = (
            f"{e.passed} of {e.ran} cells pass"
            + (f"; {e.wrong} fail on some generated inputs (fuzz)" if e.wrong else "")
            + (f"; {e.mismatched} give wrong values with no error" if e.mismatched else "")
            + causes
        )
        before = v
        same = kinds.setdefault((e.state, frozenset(e.causes)), len(kinds))  # what the comparison compares
        tip = esc(title, quote=False).replace('"', "&quot;")  # the attribute's own quote, not every '
        cells.append(
            f'<td class=m-{e.state}{f" data-k={same}" if same else ""} title="{tip}">'
            f"{legend.glyph(e.state)}<sub>{letter[e.how]}</sub></td>"
        )  # sub: short, the page is near 500 KB
    return cells


def _label(doc: dict[str, Any]) -> str:
    env = doc["environment"]
    return f"torch {env['torch']}, triton {env['triton']}, " + ("GPU" if env["gpus"] else "no GPU")


# Two versions side by side: a row shows where its state or causes differ between them (each table's own device).
COMPARE = r"""
const pick = id => document.getElementById(id), old = pick('old'), now = pick('new'), only = pick('only');
const UPGRADES = JSON.parse(pick('upgrades').textContent);
now.selectedIndex = now.options.length - 1;
function compare() {
  const a = old.selectedOptions[0].dataset.v, b = now.selectedOptions[0].dataset.v;
  pick('command').textContent = 'python -m compat diff ' + old.value + ' ' + now.value;
  const page = UPGRADES[old.value + ' ' + now.value];  // the committed diff of this pair, where there is one
  pick('upgrade').innerHTML = page ? '<a href="' + page + '">the upgrade diff of these two</a>' : '';
  for (const row of document.querySelectorAll('tbody tr')) {
    const heads = [...row.closest('table').querySelectorAll('thead th')].map(th => th.textContent);
    const [x, y] = [a, b].map(v => heads.indexOf(v)).map(i => i > 0 ? row.children[i] : null).map(
      td => td && td.className ? td : null);
    if (!x && !y) continue;
    const differ = !x || !y || x.className !== y.className || x.dataset.k !== y.dataset.k;
    row.hidden = only.checked && !differ;
    for (const td of row.querySelectorAll('td')) td.classList.toggle('picked', td === x || td === y);
  }
}
[old, now, only].forEach(e => e.addEventListener('change', compare));
compare();
"""
