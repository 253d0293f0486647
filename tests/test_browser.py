"""The generated pages in a real browser (Debian's chromium and chromium-driver, through Selenium): they run where
the browser is installed and say so where it is not."""

import shutil
from pathlib import Path

import pytest

from compat import results, versions

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")

pytestmark = pytest.mark.skipif(not (CHROMIUM.exists() and DRIVER.exists() and shutil.which("chromium")),
                                reason="needs Debian's chromium and chromium-driver (apt install chromium "
                                       "chromium-driver) and selenium (pip install -e '.[docs]')")


@pytest.fixture
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium: pip install -e '.[docs]'")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1600,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(DRIVER)))
    yield driver
    driver.quit()


def test_the_versions_page_of_the_committed_results_reads_in_a_browser(browser, tmp_path):
    from selenium.webdriver.common.by import By

    import re

    paths = re.findall(r"`(results/[^`]+\.json\.gz)`", (ROOT / "docs" / "VERSIONS.md").read_text().split("\n\n")[1])
    docs = [(p, results.load(ROOT / p)) for p in paths]
    page = tmp_path / "versions.html"
    page.write_text(versions.html_page(docs))
    browser.get(page.as_uri())
    tables = browser.find_elements(By.CSS_SELECTOR, "h2 + div.wrap table")
    assert len(tables) >= 3  # the chart, cuda, cpu, cpu_interpret
    chart = browser.find_element(By.CSS_SELECTOR, "table.chart")
    assert "Supports AOTInductor" in chart.text
    # The row labels stay on screen when the table scrolls sideways, and no label is cut.
    wrap = browser.find_element(By.CSS_SELECTOR, "#cpu_interpret + div.wrap")
    label = wrap.find_element(By.CSS_SELECTOR, "tbody th")
    browser.execute_script("arguments[0].scrollLeft = 10000", wrap)
    assert label.location["x"] - wrap.location["x"] < 5
    assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth + 1", label)
    cell = wrap.find_element(By.CSS_SELECTOR, "td[title]")
    assert "cells pass" in cell.get_attribute("title")
    columns = [th.text for th in wrap.find_elements(By.CSS_SELECTOR, "thead th")][1:]
    assert columns == sorted(columns, key=lambda v: tuple(map(int, v.split(".")))) and "2.9" in columns
    browser.save_screenshot(str(tmp_path / "versions.png"))
