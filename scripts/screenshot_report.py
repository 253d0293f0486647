"""Screenshots of the generated pages in headless Chromium, as committed under docs/:

    python scripts/screenshot_report.py docs

- support_matrix.png: silu's grid, a cell the fuzz tests proved wrong opened on its evidence;
- support_matrix_recommend.png: the recommendation answering "non-strict export, AOTI and gradients";
- support_matrix_latency.png: the latency section (write-up 002's first-call comparison, steady-state tables);
- versions.png: the view across versions.

Needs Debian's chromium and chromium-driver and `pip install selenium` (the `docs` extra).
"""

import sys
import time
from pathlib import Path

from selenium.webdriver.common.by import By

from compat.report.browser import chromium


def main(docs: str) -> None:
    out = Path(docs)
    driver = chromium(1600, 1000)
    try:
        driver.get((out / "support_matrix.html").resolve().as_uri())
        for key in ("export_nonstrict", "aoti", "gradients"):
            driver.find_element(By.CSS_SELECTOR, f'#choose input[value="{key}"]').click()
        driver.find_element(By.ID, "which").location_once_scrolled_into_view  # noqa: B018 - the property scrolls
        driver.save_screenshot(str(out / "support_matrix_recommend.png"))
        driver.get((out / "support_matrix" / "silu.html").resolve().as_uri())  # a kernel's grid
        button = driver.find_element(By.CSS_SELECTOR, "button.v.m-wrong_some")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
        button.click()
        time.sleep(0.3)
        print(f"opened {button.get_attribute('title')}: {driver.find_element(By.ID, 'panel').text[:160]!r}")
        driver.save_screenshot(str(out / "support_matrix.png"))
        driver.get((out / "latency.html").resolve().as_uri())
        driver.save_screenshot(str(out / "support_matrix_latency.png"))
        driver.get((out / "versions.html").resolve().as_uri())
        driver.save_screenshot(str(out / "versions.png"))
    finally:
        driver.quit()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs")
