"""Esc in a browser: the key sent into headless Chromium -> the model server saw the close.

``desk web`` runs on a free port against the demo model in a process of its own
(:class:`stream_servers.DemoServer`, one SSE event per token at ``--rate`` tokens/s, a long
Markdown document by default, ``--shape``); a headless Chromium (the distribution's
``chromium`` + ``chromedriver``, through ``selenium``) opens the desk, clicks the terminal, and
for each press types a prompt and Enter, waits until the request reached the server and then a
random 0.15-1.0 s (into the stream), and sends Esc as a real key event (DevTools'
``Input.dispatchKeyEvent``, what a keyboard makes: xterm.js turns it into the ESC byte, the
page's WebSocket carries it to ``desk web``, which writes it to that desk's stdin). The server's
own record says when it saw the connection close; both sides stamp ``time.monotonic()``,
system-wide on Linux. The figure starts just before the DevTools call, so it includes that
call's hop to the browser: ``driver_call_ms`` is the same call doing nothing (a no-op), for
scale. ``--hog N`` runs N busy processes pinned to the cores meanwhile (:mod:`load`).

Per run: ``esc_to_server_close_ms`` (n, p50/p95/p99/max, mean), ``missed`` (the reply ran to its
end after the Esc), ``never_sent`` (no request came), ``driver_call_ms``. A new tab (a new desk;
the old one's tab closed) every ``--per-desk`` presses keeps the session's history small.

Run: ``python bench/web_esc.py [--presses 30] [--hog N] [--rate 200] [--shape document]
[--per-desk 10]
[--seed 1]``; prints JSON. Needs ``chromium`` and ``chromium-driver``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from load import start_hogs, stop_hogs  # noqa: E402
from stats import percentiles  # noqa: E402
from stream_servers import DemoServer  # noqa: E402

from tests.desk.web_kit import (  # noqa: E402
    DeskWeb,
    browser_missing,
    record_screen,
    start_browser,
    start_desk_web,
)

PROMPT = "tell me how a stop works"
DEADLINE_S = 120.0
"""How long a desk may take to show its first screen, in seconds (a busy machine)."""

ESCAPE = {"key": "Escape", "code": "Escape", "windowsVirtualKeyCode": 27}


def screen(driver: Any) -> str:
    """Everything the desk sent the page, decoded."""
    return str(driver.execute_script("return window.__deskText || ''"))


def open_desk(driver: Any, web: DeskWeb) -> None:
    """A new tab with a desk in it (the previous tab closed), its terminal focused."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.window_handles
    driver.switch_to.new_window("tab")
    for handle in old:
        new = driver.current_window_handle
        driver.switch_to.window(handle)
        driver.close()
        driver.switch_to.window(new)
    record_screen(driver)
    driver.get(web.page)
    WebDriverWait(driver, DEADLINE_S).until(lambda d: "^q" in screen(d))
    driver.find_element(By.ID, "terminal").click()


def escape(driver: Any) -> float:
    """Press Esc in the page; returns ``time.monotonic()`` just before."""
    at = time.monotonic()
    driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": "rawKeyDown", **ESCAPE})
    driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": "keyUp", **ESCAPE})
    return at


def driver_call_ms(driver: Any) -> float:
    """One DevTools call that does nothing, in ms (the hop an Esc's figure includes)."""
    at = time.monotonic()
    driver.execute_cdp_cmd("Runtime.evaluate", {"expression": "0"})
    return (time.monotonic() - at) * 1000


def request_seen(server: DemoServer, before: int, timeout_s: float) -> float | None:
    """``time.monotonic()`` once a chat request made after ``before`` reached the server (None:
    not within ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server._records(before):
            return time.monotonic()
        time.sleep(0.01)
    return None


def one_press(driver: Any, server: DemoServer, rng: random.Random) -> dict[str, Any] | None:
    """Prompt, Enter, a random wait, Esc; the figures of that press (None: nothing ended)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    before = server.mark()
    ActionChains(driver).send_keys(PROMPT, Keys.ENTER).perform()
    entered = time.monotonic()
    started = request_seen(server, before, 30.0)  # the reply streams from then on
    time.sleep(max(0.0, (started or entered) + rng.uniform(0.15, 1.0) - time.monotonic()))
    mark = len(screen(driver))
    esc = escape(driver)
    outcome = server.outcome(before, esc, 20.0)
    if outcome is None:
        return None
    result: dict[str, Any] = {"after_enter_ms": round((esc - entered) * 1000, 1)}
    if outcome.kind == "never_sent" or outcome.at is None:
        result["never_sent"] = True
    else:
        result["close_ms"] = round((outcome.at - esc) * 1000, 2)
        result["missed"] = outcome.kind == "done"
    deadline = time.monotonic() + 30.0  # the desk is idle again before the next prompt
    while "idle" not in screen(driver)[mark:] and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Run the presses and print the JSON figures; 2 when no browser is installed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=30)
    parser.add_argument("--hog", type=int, default=0, help="busy processes, pinned to cores")
    parser.add_argument("--rate", type=float, default=200.0, help="tokens/s of the demo model")
    parser.add_argument("--shape", default="document", help="the demo model's reply shape")
    parser.add_argument("--per-desk", type=int, default=10, help="presses before a new desk")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    missing = browser_missing()
    if missing is not None:
        print(f"web_esc: {missing}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    server = DemoServer()
    server.configure(args.rate, args.shape)
    hogs = start_hogs(args.hog)
    presses: list[dict[str, Any]] = []
    calls: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="desk-web-esc-") as folder:
            tmp = Path(folder)
            desk_args = ["--base-url", server.base_url, "--model", "demo"]
            web = start_desk_web([*desk_args, "--db", str(tmp / "desk.db")], tmp / "token", tmp)
            driver = start_browser()
            try:
                for i in range(args.presses):
                    if i % args.per_desk == 0:
                        open_desk(driver, web)
                    calls.append(driver_call_ms(driver))
                    press = one_press(driver, server, rng)
                    if press is not None:
                        presses.append(press)
            finally:
                driver.quit()
                web.stop()
    finally:
        stop_hogs(hogs)
        server.stop()
    closes = [p["close_ms"] for p in presses if "close_ms" in p and not p["missed"]]
    figures = {
        "bench": "web_esc",
        "rate_tokens_per_s": args.rate,
        "shape": args.shape,
        "hog": args.hog,
        "presses": args.presses,
        "esc_to_server_close_ms": percentiles(closes),
        "missed": sum(1 for p in presses if p.get("missed")),
        "never_sent": sum(1 for p in presses if p.get("never_sent")),
        "stuck": args.presses - len(presses),
        "driver_call_ms": percentiles(calls),
    }
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
