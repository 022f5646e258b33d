"""Running ``desk web`` and a headless Chromium for the browser tests and ``bench/web_esc.py``.

The browser is the distribution's ``chromium`` with ``chromedriver``, driven by ``selenium``.
Without them the tests skip with the reason, unless ``DESK_REQUIRE_BROWSER=1`` (``.ci/run``
sets it), when they fail instead: a CI machine without a browser never passes them unseen.

The page's screen is drawn on a canvas, so the tests read what the desk sent the browser: a
script put in the page before its own (:data:`RECORD_SCREEN`) keeps every byte the WebSocket
brought, decoded, in ``window.__deskText``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

REQUIRE_ENV = "DESK_REQUIRE_BROWSER"
"""Set to 1 to fail, not skip, when no browser is installed."""

ROOT = Path(__file__).resolve().parents[2]

RECORD_SCREEN = """
window.__deskText = "";
const DeskSocket = window.WebSocket;
const deskDecoder = new TextDecoder();
window.WebSocket = class extends DeskSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (event) => {
      if (event.data instanceof ArrayBuffer) {
        window.__deskText += deskDecoder.decode(new Uint8Array(event.data), {stream: true});
      }
    });
  }
};
"""
"""Keeps what the desk's WebSocket brings in ``window.__deskText`` (runs before the page)."""


def browser_missing() -> str | None:
    """Why no browser test can run here, or None when chromium and chromedriver are there."""
    missing = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (apt-get install chromium chromium-driver)"
    return None


def start_browser(width: int = 1200, height: int = 800) -> Any:
    """A headless Chromium (``selenium.webdriver.Chrome``) whose first tab records its pages'
    screens.

    Raises:
        selenium.common.exceptions.WebDriverException: the browser did not start.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_argument(f"--window-size={width},{height}")
    chromium = shutil.which("chromium")
    chromedriver = shutil.which("chromedriver")
    assert chromium is not None and chromedriver is not None
    options.binary_location = chromium
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    record_screen(driver)
    return driver


def record_screen(driver: Any) -> None:
    """Record the screen of the pages the current tab opens from now on (each tab needs it)."""
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_SCREEN})


@dataclass
class DeskWeb:
    """A running ``desk web``.

    Attributes:
        process: the server's process.
        url: ``http://127.0.0.1:PORT``.
        token: its token.
    """

    process: subprocess.Popen[str]
    url: str
    token: str
    output: list[str]

    @property
    def page(self) -> str:
        """The address that opens a desk (with the token)."""
        return f"{self.url}/?token={self.token}"

    def desks(self) -> list[psutil.Process]:
        """The processes it runs for browser connections (a shell and its desk each)."""
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then wait; returns the exit code (killed when it hangs)."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            for child in self.desks():
                child.kill()
            self.process.kill()
            self.process.wait(10)
            raise


LISTENING = re.compile(r"open (http://\S+)/\?token=")


def start_desk_web(desk_args: Sequence[str], token_file: Path, cwd: Path) -> DeskWeb:
    """``python -m desk web --port 0 --token-file TOKEN_FILE DESK_ARGS`` until it listens.

    Raises:
        AssertionError: it exited before it listened.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "desk", "web", "--port", "0", "--token-file", str(token_file)]
        + list(desk_args),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        found = LISTENING.search(line)
        if found:
            token = token_file.read_text(encoding="utf-8").strip()
            # The rest is read on, so the server never blocks on a full pipe.
            drain = threading.Thread(target=seen.extend, args=(process.stdout,), daemon=True)
            drain.start()
            return DeskWeb(process, found.group(1), token, seen)
    process.wait(10)
    raise AssertionError(f"desk web did not start: {''.join(seen)}")
