"""One legend on every generated page: each mark's glyph means one thing, with the same text and words, wherever a
page shows it (compat.report.legend), and no page keeps a mark of its own."""

import html
import re
from pathlib import Path

import pytest

from compat.report import legend

ROOT = Path(__file__).resolve().parent.parent
MARKS = {m.glyph: m for m in [*legend.MARKS.values(), legend.UNEXPECTED, legend.UNMEASURED]}
HTML_MARK = re.compile(r'<span class="m" role="img" aria-label="([^"]*)" title="([^"]*)">([^<]*)</span>')
RETIRED = ("✓", "✗")  # the versions page's own marks, before the legend
# A mark's text is shown beside its glyph (a grid's cell, the legend), never for a glyph of its own.
TEXTS = tuple(m.text for m in legend.MARKS.values() if not m.text.isalpha())


HAND_WRITTEN = {"docs/EVIDENCE.md", "docs/FINDINGS.md", "docs/REFERENCE.md"}  # their legends quote the pages'


def _generated(pattern: str) -> list[Path]:
    """The committed pages `python -m compat` writes, the hand-written ones left out."""
    pages = [p for p in ROOT.glob(pattern) if ".venv" not in p.parts and "compat-report" not in p.parts]
    return sorted(p for p in pages if str(p.relative_to(ROOT)) not in HAND_WRITTEN)


HTML_PAGES = _generated("docs/**/*.html") + _generated("examples/*/docs/**/*.html")
MD_PAGES = _generated("docs/**/*.md") + _generated("examples/*/docs/**/*.md") + _generated("examples/*/README.md")


def test_the_pages_are_found():
    assert len(HTML_PAGES) >= 12 and len(MD_PAGES) >= 20


@pytest.mark.parametrize("page", HTML_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_html_mark_is_the_legends_with_its_text_and_words(page):
    text = page.read_text()
    for label, title, glyph in HTML_MARK.findall(text):
        mark = MARKS.get(html.unescape(glyph))
        assert mark is not None, f"{page}: {glyph!r} is no mark of compat.report.legend"
        assert (html.unescape(label), html.unescape(title)) == (mark.text, mark.words), (page, glyph)
    shown = re.sub(r"<script.*?</script>|<style.*?</style>", " ", text, flags=re.S)
    visible = html.unescape(re.sub(r"<[^>]*>", "", shown))
    for m in legend.MARKS.values():
        visible = visible.replace(f"{m.glyph} {m.text}", " ")
    assert not [r for r in RETIRED + TEXTS if r in visible], page


@pytest.mark.parametrize("page", MD_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_markdown_legend_says_each_mark_in_the_legends_words(page):
    text = page.read_text()
    said = 0
    for line in text.splitlines():
        if "**Legend:** " not in line:
            continue
        for part in re.split(r"; |\*\*Legend:\*\* ", line.split("**Legend:** ", 1)[1].split(". ")[0].rstrip(".")):
            glyph, _, words = part.partition(" ")
            if glyph in MARKS and words[:1].isalpha():  # a legend's entry, not a count ("✅ 5")
                said += 1
                assert words == MARKS[glyph].words, (page, part)
    assert not [r for r in RETIRED + TEXTS if r in text], page
    assert said or not any(m.glyph in text for m in legend.MARKS.values() if m.glyph != "—"), page


def test_pass_and_fail_differ_in_colour_as_well_as_in_glyph():
    """Without an emoji font ✅ and ❌ render as one empty box: the cell's tone still tells them apart."""
    tones = {key: legend.TONES[mark.tone] for key, mark in legend.MARKS.items()}
    assert len({tones["verified"], tones["unfuzzed"], tones["fails"], tones["wrong"]}) == 4
    assert tones["wrong_some"] == tones["wrong"] and tones["errors_some"] == tones["fails"]
    assert len({m.glyph for m in legend.MARKS.values()}) == len(legend.MARKS)  # one glyph, one meaning
    assert len({m.text for m in legend.MARKS.values()}) == len(legend.MARKS)
