"""Headless Chromium through Selenium and the system chromedriver, for the playground's
browser tests and the documentation's screenshots; a reason to skip where either is missing."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Optional, Tuple

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
DRIVER = ("/usr/bin/chromedriver",)


def find_browser() -> Tuple[Optional[str], Optional[str], str]:
    """``(browser, driver, why-not)``: the executables, or None and the reason."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return None, None, "selenium is not installed (pip install selenium)"
    browser = next((p for p in CHROMIUM if os.path.exists(p)), None) or shutil.which("chromium")
    driver = next((p for p in DRIVER if os.path.exists(p)), None) or shutil.which("chromedriver")
    if not browser:
        return None, None, "no Chromium browser (apt-get install chromium chromium-driver)"
    if not driver:
        return None, None, "no chromedriver (apt-get install chromium-driver)"
    return browser, driver, ""


def start(width: int = 1400, height: int = 1000) -> Tuple[Any, str]:
    """A headless Chrome session with a fresh profile (the caller quits it and removes the
    profile folder returned)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver, why = find_browser()
    if not browser:
        raise RuntimeError(why)
    profile = tempfile.mkdtemp(prefix="lp-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
        f"--user-data-dir={profile}",
    ):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts), profile
