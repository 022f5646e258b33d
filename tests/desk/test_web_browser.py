"""``desk web`` in a real browser: headless Chromium types, stops, and closes the tab.

One browser for the module (:mod:`tests.desk.web_kit`); ``desk web`` on a free port against a
demo model server in this process, whose request records say when it saw a connection close.
Without chromium and chromedriver the test skips, unless ``DESK_REQUIRE_BROWSER=1`` (CI).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from tests.desk.web_kit import (
    REQUIRE_ENV,
    DeskWeb,
    browser_missing,
    record_screen,
    start_browser,
    start_desk_web,
)
from tests.support import cut_short, poll_until, running_demo

pytestmark = pytest.mark.skipif(
    browser_missing() is not None and os.environ.get(REQUIRE_ENV) != "1",
    reason=f"{browser_missing()} ({REQUIRE_ENV} unset)",
)

DEADLINE_S = 90.0
"""Generous: a browser and a desk starting on a busy 2-core machine."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module (fails when required and missing)."""
    missing = browser_missing()
    if missing is not None:
        pytest.fail(f"{missing} ({REQUIRE_ENV}=1)")
    driver = start_browser()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def slow_server() -> Iterator[DemoModelServer]:
    """A demo model server whose replies stream for seconds (there is time to stop them)."""
    with running_demo(40.0) as server:
        yield server


@pytest.fixture
def desk_web(slow_server: DemoModelServer, tmp_path: Path) -> Iterator[DeskWeb]:
    """``desk web`` on a free port, with desk's flags for the server and a database."""
    args = ["--base-url", slow_server.base_url, "--model", slow_server.config.model]
    args += ["--db", str(tmp_path / "desk.db")]
    web = start_desk_web(args, tmp_path / "token", tmp_path)
    try:
        yield web
    finally:
        web.stop()


def screen(driver: Any) -> str:
    """Everything the desk sent this page, decoded."""
    return str(driver.execute_script("return window.__deskText || ''"))


def press(driver: Any, *keys: str) -> None:
    """Type into the focused page, as a person at the keyboard."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def open_desk(driver: Any, web: DeskWeb) -> None:
    """Open the desk in a new tab, wait for its screen, and click the terminal to focus it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.switch_to.new_window("tab")
    record_screen(driver)
    driver.get(web.page)
    body = driver.find_element(By.TAG_NAME, "body")
    WebDriverWait(driver, DEADLINE_S).until(lambda _d: "-first-byte" in body.get_attribute("class"))
    WebDriverWait(driver, DEADLINE_S).until(lambda d: "^q" in screen(d))
    driver.find_element(By.ID, "terminal").click()


def turn_row(db: Path, prompt: str) -> tuple[str, str | None] | None:
    """The turn of ``prompt``: (session id, exit reason), or None before it is saved."""
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT session_id, exit_reason FROM turns WHERE prompt = ?", (prompt,)
        ).fetchone()
    return (str(row[0]), row[1]) if row else None


def partial_reply(db: Path, session_id: str) -> str:
    """The last assistant message the session saved."""
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT content FROM messages WHERE session_id = ? AND role = 'assistant' "
            "ORDER BY position DESC LIMIT 1",
            (session_id,),
        ).fetchone()
    return str(row[0]) if row else ""


def test_browser_types_streams_stops_and_a_closed_tab_is_the_systems_stop(
    browser: Any, desk_web: DeskWeb, slow_server: DemoModelServer, tmp_path: Path
) -> None:
    from selenium.webdriver.common.keys import Keys

    db = tmp_path / "desk.db"
    home = browser.current_window_handle
    open_desk(browser, desk_web)
    assert len(desk_web.desks()) >= 1  # one desk for this connection

    # A prompt typed in the page reaches the model; its reply streams into the page.
    press(browser, "first from the browser", Keys.ENTER)
    records = slow_server.records
    assert records.wait_for(lambda rs: bool(rs) and rs[-1].tokens_generated >= 8, DEADLINE_S)
    before_esc = len(screen(browser))
    press(browser, Keys.ESCAPE)
    cut_short(slow_server)  # Esc in the browser closed the model server's connection

    assert poll_until(lambda: (turn_row(db, "first from the browser") or ("", None))[1], 30)
    row = turn_row(db, "first from the browser")
    assert row is not None and row[1] == "interrupted_by_user"
    words = [w for w in partial_reply(db, row[0]).split() if w.isalpha() and len(w) >= 4]
    assert words, "the stopped reply kept nothing"
    assert poll_until(lambda: words[0] in screen(browser), 30), (words[0], before_esc)

    shot = tmp_path / "desk-web.png"
    browser.save_screenshot(str(shot))
    print(f"screenshot: {shot}")

    # Another turn, then the tab closes while it streams.
    press(browser, "second from the browser", Keys.ENTER)
    assert records.wait_for(lambda rs: len(rs) >= 2 and rs[-1].tokens_generated >= 4, DEADLINE_S)
    browser.close()
    browser.switch_to.window(home)
    cut_short(slow_server, timeout=30)

    assert poll_until(lambda: not desk_web.desks(), DEADLINE_S), desk_web.desks()
    second = turn_row(db, "second from the browser")
    assert second is not None and second[1] == "interrupted_by_system(web.disconnect)"

    # The session is resumable: nobody holds it, and both prompts are in it.
    store = SqliteStore(db)
    try:
        store.claim_session(second[0])
        said = [m.content for m in store.transcript.active_messages(second[0]) if m.role == "user"]
    finally:
        store.close()
    assert said == ["first from the browser", "second from the browser"]
    assert desk_web.stop() == 0
