"""The marks every page shows, each meaning defined once: its glyph, its text, its words and its tone.

The glyph is what a Markdown or HTML page shows; the text says the same in letters, for a reader without an emoji
font (an HTML mark carries it as its accessible name and title) and for the grids' compact labels; the words are the
legend's; the tone colours an HTML cell, so that pass and fail differ without any glyph rendered. The support matrix,
its per-kernel and per-op pages, the versions page, the upgrade diffs and FINDINGS.md all draw from MARKS.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Iterable

from ..evidence.verdicts import Verdict


@dataclass(frozen=True)
class Mark:
    glyph: str
    text: str
    words: str
    tone: str  # good, fine, fair, bad, worst or none: the HTML cell's colour (TONES)


# Best first: a cell or a count shows the last of these any of its kernels has.
MARKS: dict[str, Mark] = {
    "unmeasurable": Mark("⊘", "n/m", "not measurable on this device (it cannot run the stage at all)", "none"),
    "skipped": Mark("⏭", "skip", "not run on this host", "none"),
    "verified": Mark("✅", "pass", "works, fuzz-verified", "good"),
    "refuses": Mark(
        "✅†", "pass†", "works, fuzz-verified, refusing some non-contiguous layouts with a clear error", "good"
    ),
    "overflow": Mark(
        "✅~",
        "pass~",
        "works, fuzz-verified (NaN or inf only where eager overflows too, float64 finite there)",
        "good",
    ),
    "bounded": Mark(
        "✅ᵇ",
        "pass^b",
        "works, fuzz-verified on the examples within the op's compile bound (fuzz_compiles), the others not checked",
        "fine",
    ),
    "unfuzzed": Mark("☑️", "pass°", "works on the model's inputs, not fuzz-verified", "fine"),
    "partly": Mark("◐", "partly", "some cells work, others fail", "fair"),
    "contiguous": Mark("🟨", "contig", "works for contiguous inputs only (fuzz tests)", "fair"),
    "errors_some": Mark("⚠️❌", "error*", "works on the model, raises on some generated inputs (fuzz tests)", "bad"),
    "fails": Mark("❌", "fail", "fails with an error", "bad"),
    "crashed": Mark("💥", "crash", "crashes the process", "bad"),
    "timed_out": Mark("⏱", "hang", "hangs past its time budget", "bad"),
    "wrong_some": Mark(
        "⚠️≠", "wrong*", "works on the model, wrong values on some generated inputs (fuzz tests)", "worst"
    ),
    "wrong": Mark("≠", "wrong", "silently wrong: wrong values on the model's inputs, no error", "worst"),
}
UNEXPECTED = Mark("❗", "!", "differs from its expectation (the gate failed)", "none")
UNMEASURED = Mark("—", "—", "not measured", "none")
ORDER = list(MARKS)
# What one cell of a grid can show: a verdict (the classes over cells, partly and contiguous, are the chart's).
CELL_MARKS = tuple(k for k in ORDER if k not in ("partly", "contiguous"))
# A record's outcome kind as a mark: a cell's pass is on the model's inputs, so not fuzz-verified by itself.
OUTCOME_MARKS = {
    "passed": "unfuzzed",
    "failed": "fails",
    "mismatch": "wrong",
    "crashed": "crashed",
    "timed_out": "timed_out",
    "skipped": "skipped",
}
TONES = {
    "good": "#cdeed6",
    "fine": "#e6f4dc",
    "fair": "#fbeec8",
    "bad": "#f3d0c7",
    "worst": "#f08080",
    "none": "#eef1f6",
}
# One class a mark (m-verified, ...), coloured by its tone: a cell, a legend entry, a chart cell alike.
CSS = "".join(
    ",".join(f".m-{k}" for k, m in MARKS.items() if m.tone == tone) + f"{{background:{colour}}}"
    for tone, colour in TONES.items()
    if any(m.tone == tone for m in MARKS.values())
) + (".legend span{display:inline-block;padding:2px 8px;margin:2px 6px 2px 0;border-radius:3px;font-size:12.5px}")


def of_verdict(v: Verdict) -> str:
    """A cell's mark: its verdict, a pass told by how far it is known (fuzz-verified only where its own fuzz test
    ran and found nothing: a C++ cell's package is fuzzed from Python, never the cell)."""
    if v.kind != "passes":
        return v.kind
    if not v.fuzzed:
        return "unfuzzed"
    if v.bounded:  # fuzzed, but not on what lay past the op's compile bound
        return "bounded"
    return "overflow" if v.overflows else "refuses" if v.refuses else "verified"


def note_head(v: Verdict) -> str:
    """A note's first words, from the first cell it explains: '❗ ✅† works, ...; refuses strided, transposed'."""
    mark = of_verdict(v)
    refused = f"; refuses {', '.join(v.refuses)}" if v.refuses and mark == "refuses" else ""
    return f"{UNEXPECTED.glyph + ' ' if v.unexpected else ''}{glyph(mark)} {MARKS[mark].words}{refused}"


def glyph(key: str) -> str:
    return MARKS[key].glyph


def worst(keys: Iterable[str]) -> str:
    return max(keys, key=ORDER.index)


def markdown(shown: Iterable[str], unexpected: bool = False, unmeasured: bool = False) -> str:
    """The legend of the marks a page shows, in MARKS' order: '**Legend:** ✅ works, fuzz-verified; ❌ fails with an
    error.' (no mark's words hold '; ', so a reader, and a test, can split it)."""
    seen = set(shown)
    marks = [MARKS[k] for k in ORDER if k in seen] + [UNEXPECTED] * unexpected + [UNMEASURED] * unmeasured
    return "**Legend:** " + "; ".join(f"{m.glyph} {m.words}" for m in marks) + "."


def html_short(key: str) -> str:
    """A grid cell's mark: the glyph and its text, which reads where no emoji font renders the glyph."""
    return f"{MARKS[key].glyph} {html.escape(MARKS[key].text)}"


def html_mark(key: str) -> str:
    """One mark in HTML: the glyph, with its text as the accessible name and its words as the title."""
    m = MARKS[key]
    return (
        f'<span class="m" role="img" aria-label="{html.escape(m.text)}" title="{html.escape(m.words)}">{m.glyph}</span>'
    )


def html_legend(shown: Iterable[str], unexpected: bool = False, unmeasured: bool = False) -> str:
    """The legend as HTML: each mark on its tone, its glyph, its text in letters and its words."""
    seen = set(shown)
    marks = [(k, MARKS[k]) for k in ORDER if k in seen]
    marks += [("unexpected", UNEXPECTED)] * unexpected + [("unmeasured", UNMEASURED)] * unmeasured
    return "".join(
        f'<span class="{"unexpected" if m is UNEXPECTED else f"m-{key}"}">{m.glyph} <b>{html.escape(m.text)}</b> {html.escape(m.words)}</span> '
        for key, m in marks
    )
