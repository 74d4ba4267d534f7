"""A real headless Chromium (Debian's chromium and chromedriver, driven by Selenium) for the web
app's browser tests: started, waited on, its screenshots checked for blankness. Without
chromium the tests skip with the reason, except under CI (CI=true), where it is a failure."""

from __future__ import annotations

import os
import shutil
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from web_server import DEADLINE

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# A site whose name resolves to 127.0.0.1 in the browser (as DNS rebinding makes it).
REBOUND = "rebound.example"


def _browser_missing() -> str | None:
    for program in (CHROMIUM, CHROMEDRIVER):
        if not os.access(program, os.X_OK):
            return f"{program} not found: apt-get install chromium chromium-driver"
    return None


def headless_chromium() -> Iterator[Any]:
    """Debian's chromium, headless, through chromedriver, until the generator is closed."""
    missing = _browser_missing()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs the browser: {missing}")
        pytest.skip(missing)
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900"):
        options.add_argument(argument)
    # A site whose name resolves to 127.0.0.1, as DNS rebinding makes it.
    options.add_argument(f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(DEADLINE)
    yield driver
    driver.quit()


def distinct_bytes(png: bytes) -> int:
    """How many different byte values the decoded image data holds (a blank page: 2 or 3)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, data = 8, b""
    while offset < len(png):
        length, kind = struct.unpack(">I4s", png[offset : offset + 8])
        if kind == b"IDAT":
            data += png[offset + 8 : offset + 8 + length]
        offset += 12 + length
    return len(set(zlib.decompress(data)))


def wait_until(check: Callable[[], bool]) -> None:
    """Until ``check`` holds; an element that went with a reload meanwhile is a no."""
    end = time.monotonic() + DEADLINE
    while True:
        try:
            if check():
                return
        except StaleElementReferenceException:
            pass
        assert time.monotonic() < end, "gave up waiting"
        time.sleep(0.1)
