"""The committed pages link only what exists: every relative link of the generated HTML and Markdown resolves, and a
launch written in prose (`kernel[grid](...)`) sits in a code span, where GitHub does not render it as a link."""

import re
from pathlib import Path

import pytest

from compat.report.index import launches_in_code

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ROOT / "README.md",
    *ROOT.glob("docs/**/*.md"),
    *ROOT.glob("examples/*/README.md"),
    *ROOT.glob("examples/*/docs/**/*.md"),
]
HTML = [*ROOT.glob("docs/**/*.html"), *ROOT.glob("examples/*/docs/**/*.html")]
HREF = re.compile(r"""(?:href|src)=["']([^"'#?]+)""")
MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")  # a link's destination: no space, then its parenthesis


def _prose(path: Path):
    """Each line's text outside code spans and fenced blocks."""
    fenced = False
    for line in path.read_text().split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield "".join(line.split("`")[::2])


def _relative(link: str) -> bool:
    return not re.match(r"[a-z][a-z0-9+.-]*:", link) and not link.startswith("//")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_markdown_page_links_only_what_exists_and_no_launch_renders_as_a_link(path):
    for text in _prose(path):
        assert "[grid](" not in text, f"{path}: a launch outside a code span: {text[:200]}"
        for link in MD_LINK.findall(text):
            if _relative(link):
                assert (path.parent / link).exists(), f"{path}: {link} does not exist"


@pytest.mark.parametrize("path", HTML, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_of_a_generated_html_page_resolves(path):
    for link in HREF.findall(path.read_text()):
        if _relative(link):
            assert (path.parent / link).exists(), f"{path}: {link} does not exist"


def test_a_launch_in_prose_goes_into_a_code_span_and_one_in_a_span_stays():
    assert launches_in_code("launch kernel[grid](...) or `wrap_triton(k)[grid](...)`") == (
        "launch `kernel[grid](...)` or `wrap_triton(k)[grid](...)`"
    )
    assert launches_in_code("wrap_triton(kernel)[grid](...) inside") == "`wrap_triton(kernel)[grid](...)` inside"


def test_the_support_pages_link_the_version_answers_and_the_upgrade_diffs():
    md = (ROOT / "docs" / "SUPPORT_MATRIX.md").read_text()
    html = (ROOT / "docs" / "support_matrix.html").read_text()
    index = (ROOT / "docs" / "index.html").read_text()
    for page in (md, html, index):
        assert "VERSIONS.md" in page and "versions.html" in page
    assert "upgrade/" in md and "upgrade/" in index and 'href="index.html">the upgrade diffs' in html
    assert "support_matrix.html" in index


def test_the_docs_front_page_answers_first_and_leads_to_the_evidence():
    index = (ROOT / "docs" / "index.html").read_text()
    md = (ROOT / "docs" / "SUPPORT_MATRIX.md").read_text()
    first = next(line[2:] for line in md.split("## Which style should I use?", 1)[1].splitlines() if line[:2] == "- ")
    question = first.split("**")[1]
    assert index.index(f"<b>{question}</b>") < index.index("<h2>Every page</h2>")  # the answers before the pages
    assert 'href="support_matrix.html#which"' in index


def test_the_version_pages_lead_to_the_answers_and_to_each_upgrade_diff_of_their_files():
    from compat.report import index

    md = (ROOT / "docs" / "VERSIONS.md").read_text()
    html = (ROOT / "docs" / "versions.html").read_text()
    assert "(SUPPORT_MATRIX.md)" in md and 'href="support_matrix.html"' in html
    compared = re.search(r"From the committed results: (.*)\.\n", md).group(1)
    linked = 0
    as_html = index.upgrades(ROOT / "docs", as_html=True)
    for pair, page in index.upgrades(ROOT / "docs").items():
        old, new = pair.split(" ")
        if f"`{old}`" in compared and f"`{new}`" in compared:
            assert f"[`{old}` → `{new}`]({page})" in md and f'"{pair}": "{as_html[pair]}"' in html
            linked += 1
    assert linked >= 5


def test_every_upgrade_diff_has_its_html_page_and_the_html_pages_link_it():
    """`diff --output X.md` writes X.html beside it, the Markdown rendered; the index and the versions picker (HTML)
    link the HTML, the Markdown pages the Markdown."""
    from compat.report import upgrade

    diffs = sorted((ROOT / "docs" / "upgrade").glob("*.md"))
    assert diffs
    index = (ROOT / "docs" / "index.html").read_text()
    versions_html = (ROOT / "docs" / "versions.html").read_text()
    for md in diffs:
        page = md.with_suffix(".html")
        assert page.read_text() == upgrade.html_page(md.read_text(), f"Upgrade diff: {md.stem}"), (
            f"{page} is out of sync: bash scripts/regenerate_docs.sh"
        )
        assert f'href="upgrade/{page.name}"' in index and f'href="upgrade/{md.name}"' not in index
    assert "upgrade/" in versions_html and ".md" not in versions_html.split("id=upgrades>", 1)[1].split("</script>")[0]


def test_the_readme_stays_short_and_links_the_rest():
    """At most 400 lines: the quick start, gating your own ops, the outcomes, the options; the rest in docs/ pages."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 400
    assert all(f"](docs/{page})" in readme for page in ("GATE.md", "GPU_RUNNER.md", "LAYOUT.md", "REFERENCE.md"))
