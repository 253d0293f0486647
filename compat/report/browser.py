"""Headless Chromium through Selenium, for the generated pages' browser test and screenshots (Debian's chromium and
chromium-driver; `pip install -e '.[docs]'` for selenium)."""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
MISSING = ("needs Debian's chromium and chromium-driver (apt install chromium chromium-driver) and selenium "
           "(pip install -e '.[docs]')")


def available() -> bool:
    if not (CHROMIUM.exists() and DRIVER.exists() and shutil.which("chromium")):
        return False
    try:
        import selenium  # noqa: F401 - an optional dependency (the docs extra)
    except ImportError:
        return False
    return True


def chromium(width: int = 1600, height: int = 1000):
    """A headless Chromium driver with a window of the given size."""
    from selenium import webdriver  # optional (the docs extra): available() says whether it is there

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", f"--window-size={width},{height}"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(DRIVER)))
