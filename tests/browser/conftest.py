"""A real browser (Debian's chromium through its chromedriver) against the README's stack, one per module.

The browser tests skip, saying what is missing, when chromium, chromedriver or selenium are not installed
(`apt-get install chromium chromium-driver`; selenium is in the `test` extra).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.e2e.stack import LocalStack

# Without these, chromium on a closed network stalls on its own background fetches.
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1400,1000")


def chromium_paths() -> tuple[str, str]:
    """(browser, driver) or a skip naming what is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    missing = [name for name, found in (("chromium", browser), ("chromium-driver", driver)) if not found]
    if missing:
        pytest.skip(f"browser tests need Debian's {' and '.join(missing)} (apt-get install chromium chromium-driver)")
    return browser, driver


def start_browser(profile: Path):
    """Headless chromium with a fresh profile; the caller quits it."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="browser tests need selenium (the `test` extra)")
    from selenium.webdriver.chrome.service import Service

    browser, driver = chromium_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(driver), options=options)
    session.set_page_load_timeout(30)
    return session


@pytest.fixture(scope="module")
def browser():
    chromium_paths()
    profile = Path(tempfile.mkdtemp(prefix="roving-chromium-"))
    session = start_browser(profile)
    yield session
    session.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    running = LocalStack(tmp_path_factory.mktemp("roving-ui")).start()
    yield running
    running.stop()
