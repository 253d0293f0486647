"""Headless Chromium through Selenium, for the generated pages' browser test and screenshots (Debian's chromium and
chromium-driver; `pip install -e '.[docs]'` for selenium)."""

from __future__ import annotations

import shutil
from pathlib import Path

from . import upgrade

CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
MISSING = (
    "needs Debian's chromium and chromium-driver (apt install chromium chromium-driver) and selenium "
    "(pip install -e '.[docs]')"
)


def available() -> bool:
    if not (CHROMIUM.exists() and DRIVER.exists() and shutil.which("chromium")):
        return False
    try:
        import markdown_it  # noqa: F401 - a dependency of the package; selenium is the docs extra
        import selenium  # noqa: F401
    except ImportError:
        return False
    return True


GITHUB_WIDTH = 948  # px of content in a repository's README or a Markdown file's view on GitHub
# GitHub's own rules for what sets a table's width (its markdown-body stylesheet): a table is a block as wide as its
# content, at most the column's; cells padded 6 px 13 px; code spans at 85%.
GITHUB_CSS = (
    "body{margin:0}.markdown-body{width:%dpx;font-family:-apple-system,'Segoe UI','Noto Sans',Helvetica,"
    "Arial,sans-serif;font-size:16px;line-height:1.5;word-wrap:break-word}"
    ".markdown-body table{display:block;width:max-content;max-width:100%%;overflow:auto;"
    "border-spacing:0;border-collapse:collapse}.markdown-body td,.markdown-body th{padding:6px 13px;"
    "border:1px solid #d0d7de}.markdown-body code{padding:.2em .4em;font-size:85%%;"
    "white-space:break-spaces}" % GITHUB_WIDTH
)


def github_html(markdown: str) -> str:
    """A Markdown file rendered as GitHub renders it (CommonMark, tables, inline HTML), in GitHub's column width."""
    body = upgrade.rendered(markdown)
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><style>{GITHUB_CSS}</style></head>'
        f'<body><article class="markdown-body">{body}</article></body></html>'
    )


def chromium(width: int = 1600, height: int = 1000):
    """A headless Chromium driver with a window of the given size."""
    from selenium import webdriver  # optional (the docs extra): available() says whether it is there

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(DRIVER)))
