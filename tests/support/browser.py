"""Headless Chromium for browser tests: Debian's /usr/bin/chromium driven by Playwright
(a Playwright browser download fails offline; ``make browser`` installs Debian's).

The test fails (it does not skip) when Chromium is missing: the test targets install it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@contextmanager
def chromium() -> Iterator:
    """A headless Chromium (Playwright ``Browser``), closed on exit.

    Raises:
        AssertionError: when /usr/bin/chromium is missing (with the command that installs it).
    """
    assert CHROMIUM.is_file(), (
        f"{CHROMIUM} not found: install it with `make browser` (apt-get install chromium "
        "chromium-driver); the browser tests must not be skipped")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # launch() gives Chromium a fresh temporary profile (it refuses --user-data-dir).
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()
