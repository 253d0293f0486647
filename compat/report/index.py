"""The ways between a docs folder's page families: the support matrix of one results file (`report`), the answers
across versions (`versions`), the upgrade diffs (`diff --output` into upgrade/). A link is written only where its page
is in the folder, so a page written elsewhere links nothing that is not beside it; `index.html` lists them all."""

from __future__ import annotations

import html
import re
from pathlib import Path

# (file, what it answers), in the order a reader needs them: which style now, then across versions, then upgrades.
PAGES = (
    ("support_matrix.html", "Which style survives which stage (one results file, every cell)"),
    ("SUPPORT_MATRIX.md", "The same, as Markdown (GitHub)"),
    ("versions.html", "Across torch and Triton versions: compare any two"),
    ("VERSIONS.md", "Across versions, as Markdown"),
    ("latency.html", "First-call and steady latency"),
)
UPGRADES = "upgrade"  # the folder of upgrade diffs
INDEX = "index.html"
CHART_END = "<details><summary>The kernels behind each cell</summary>"  # compat.report.page's chart, after its table


def _diffs(folder: Path) -> list[Path]:
    """The upgrade diffs in `folder` (upgrade/<name>.md, sorted; not the full listings beside the long ones)."""
    found = sorted((folder / UPGRADES).glob("*.md")) if (folder / UPGRADES).is_dir() else []
    return [p for p in found if not p.name.endswith(".full.md")]


def _link(folder: Path, diff: Path, as_html: bool) -> str:
    """A diff's link: from an HTML page its HTML beside it (`diff --output` writes both), where it is there."""
    shown = diff.with_suffix(".html") if as_html and diff.with_suffix(".html").is_file() else diff
    return shown.relative_to(folder).as_posix()


def present(folder: Path, as_html: bool = False) -> list[tuple[str, str]]:
    """The pages of PAGES in `folder`, and each upgrade diff there, as (link, words); `as_html`: linked from an
    HTML page."""
    found = [(name, words) for name, words in PAGES if (folder / name).is_file()]
    return found + [(_link(folder, p, as_html), f"Upgrade diff: {p.stem}") for p in _diffs(folder)]


def upgrades(folder: Path, as_html: bool = False) -> dict[str, str]:
    """Each upgrade diff in `folder`, by the two results files it compared ('OLD NEW', as its page names them)."""
    found = {}
    for diff in _diffs(folder):
        sides = re.findall(r"^- (?:before|after): `([^`]+)`", diff.read_text(), re.MULTILINE)
        if len(sides) == 2:
            found[" ".join(sides)] = _link(folder, diff, as_html)
    return found


def elsewhere(folder: Path, here: str) -> list[tuple[str, str]]:
    """What a page in `folder` links to: the version answers and the upgrade diffs there (not itself)."""
    shown = present(folder, as_html=here.endswith(".html"))
    return [(link, words) for link, words in shown if link != here and not link.lower().startswith("support_")]


def markdown_line(links: list[tuple[str, str]]) -> str:
    return "**Elsewhere in these docs:** " + " · ".join(f"[{words}]({link})" for link, words in links) if links else ""


def html_line(links: list[tuple[str, str]]) -> str:
    items = " · ".join(f'<a href="{html.escape(link)}">{html.escape(words)}</a>' for link, words in links)
    return f'<p class="meta">Elsewhere in these docs: {items}</p>' if links else ""


def with_html_line(page: str, links: list[tuple[str, str]]) -> str:
    """The support page with its links elsewhere: under the measured chart (the chart keeps its one screen at
    1000 px), else under the title. The upgrade diffs are one link, to the index that lists them."""
    kept = [(link, words) for link, words in links if not link.startswith(f"{UPGRADES}/")]
    if len(kept) < len(links):
        kept.append((INDEX, "the upgrade diffs"))
    line = html_line(kept)
    if CHART_END in page:
        return page.replace(CHART_END, line + CHART_END, 1)
    head, rest = page.split("</h1>", 1)
    return f"{head}</h1>{line}{rest}"


ANSWERS = "## Which style should I use?"  # the support matrix's heading over its one-line answers


def answers_in(folder: Path) -> list[str]:
    """The one-line answers of the support matrix in `folder` (its Markdown), or none where it has none."""
    page = folder / "SUPPORT_MATRIX.md"
    if not page.is_file() or ANSWERS not in (text := page.read_text()):
        return []
    lines = text.split(ANSWERS, 1)[1].lstrip("\n").split("\n\n", 1)[0].splitlines()
    return [line[2:] for line in lines if line.startswith("- ")]  # the answers, not their evidence below them


def inline(text: str) -> str:
    """A line of Markdown's inline marks (bold, code) as HTML."""
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(str(text), quote=True))
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def index_html(folder: Path) -> str:
    """The docs' front page: the answers first (with the way to their evidence), then every page."""
    items = "".join(
        f'<li><a href="{html.escape(link)}">{html.escape(words)}</a></li>'
        for link, words in present(folder, as_html=True)
    )
    found = answers_in(folder)
    answered = (
        "<h2>Which style should I use?</h2><ul>"
        + "".join(f"<li>{inline(line)}</li>" for line in found)
        + '</ul><p>Why, goal by goal, and the measured chart: <a href="support_matrix.html#which">the support '
        "matrix</a>.</p>"
        if found
        else ""
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>triton-export-compat docs</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1"></head><body>'
        "<h1>triton-export-compat: the measured answers</h1>"
        f"{answered}<h2>Every page</h2>"
        "<p>Which way of wrapping a Triton kernel survives which PyTorch stage, measured; then how the answers move "
        f"across versions and what an upgrade changes.</p><ul>{items}</ul></body></html>\n"
    )


# A launch written in prose (`kernel[grid](...)`) that Markdown would render as a link named "grid".
LAUNCH = re.compile(r"[\w.]+(?:\([^()\s`]*\))?\[grid\]\([^()\s`]*\)")


def launches_in_code(markdown: str) -> str:
    """Markdown with every launch outside a code span put in one (GitHub renders `kernel[grid](...)` as a link)."""
    lines = []
    for line in markdown.split("\n"):
        parts = line.split("`")
        parts[::2] = [LAUNCH.sub(lambda m: f"`{m.group(0)}`", p) for p in parts[::2]]
        lines.append("`".join(parts))
    return "\n".join(lines)
