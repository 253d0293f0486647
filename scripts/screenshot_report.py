"""Open a generated page in headless Chromium and take a screenshot; on the support matrix, expand one failing cell
first.

    python scripts/screenshot_report.py docs/support_matrix.html docs/support_matrix.png
    python scripts/screenshot_report.py docs/versions.html docs/versions.png

Needs Debian's chromium and chromium-driver and `pip install selenium` (the `docs` extra).
"""

import sys
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By


def main(page: str, png: str) -> None:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1500,1300"):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path="/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.get(Path(page).resolve().as_uri())
        failing = driver.find_elements(By.CSS_SELECTOR, "td.cell.failed summary")  # the support matrix's cells
        if failing:
            failing[0].click()  # the first expected failure: raw_jit under non-strict export in the GPU run
            opened = driver.find_elements(By.CSS_SELECTOR, "details[open]")
            print(f"cells: {len(driver.find_elements(By.CSS_SELECTOR, 'td.cell'))}, expanded: {len(opened)}, "
                  f"text: {opened[0].text[:200]!r}")
        else:  # the versions page: as it opens
            print(f"tables: {len(driver.find_elements(By.CSS_SELECTOR, 'table'))}")
        driver.save_screenshot(png)
    finally:
        driver.quit()


if __name__ == "__main__":
    main(*sys.argv[1:3])
