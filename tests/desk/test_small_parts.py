"""Small pure parts: prompt history, the double press, slash parsing, server facts, notes."""

from __future__ import annotations

import json
import threading

from demo_model.server import DemoModelServer
from desk.double_press import DoublePress
from desk.prompt_history import PromptHistory
from desk.server_facts import DEFAULT_N_CTX, fetch_in_background, fetch_server_facts, server_root
from desk.shutdown import shutdown_note
from desk.slash import completions, parse_slash
from desk.widgets.status_bar import context_percent
from tui_gateway.gateway import ShutdownReport


def test_history_recalls_older_then_newer_then_the_draft() -> None:
    history = PromptHistory()
    for text in ["one", "two", "two", "   ", "three"]:
        history.add(text)
    assert history.entries == ["one", "two", "three"]
    assert history.older("draft") == "three"
    assert history.older("three") == "two"
    assert history.older("two") == "one"
    assert history.older("one") is None  # the oldest stays
    assert history.newer() == "two"
    assert history.newer() == "three"
    assert history.newer() == "draft"
    assert not history.browsing
    assert history.newer() is None


def test_history_is_bounded() -> None:
    history = PromptHistory(max_entries=2)
    for text in ["a", "b", "c"]:
        history.add(text)
    assert history.entries == ["b", "c"]


def test_double_press_within_and_after_the_window() -> None:
    press = DoublePress(window_s=2.0)
    assert press.press(10.0) is False
    assert press.press(11.9) is True
    assert press.press(20.0) is False
    assert press.press(22.5) is False  # too late: this one starts a new window
    assert press.press(24.0) is True


def test_parse_slash() -> None:
    assert parse_slash("/theme light") == ("theme", "light")
    assert parse_slash("  /Export  ~/notes.md ") == ("export", "~/notes.md")
    assert parse_slash("/theme") == ("theme", "")
    assert parse_slash("//not a command") is None
    assert parse_slash("what is /theme?") is None
    assert parse_slash("/") is None
    assert [c.name for c in completions("/th")] == ["theme"]
    assert completions("/theme x") == []


def test_server_root_strips_v1() -> None:
    assert server_root("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
    assert server_root("http://h/v1/") == "http://h"
    assert server_root("http://h/api") == "http://h/api"


def test_facts_from_the_demo_model(demo_server: DemoModelServer) -> None:
    facts = fetch_server_facts(demo_server.base_url)
    assert facts.n_ctx == demo_server.config.n_ctx and facts.n_ctx_known
    assert facts.models == (demo_server.config.model,)


def test_facts_default_when_the_server_does_not_say() -> None:
    facts = fetch_server_facts("http://127.0.0.1:9/v1", timeout_s=0.5)
    assert facts.n_ctx == DEFAULT_N_CTX == 8192 and not facts.n_ctx_known
    assert facts.models == ()


def test_facts_are_fetched_on_a_thread_of_their_own(demo_server: DemoModelServer) -> None:
    got: list[object] = []
    done = threading.Event()

    def deliver(facts: object) -> None:
        got.append((threading.current_thread().name, facts))
        done.set()

    fetch_in_background(demo_server.base_url, deliver).join(5.0)
    assert done.is_set()
    assert got[0][0] == "desk-server-facts"  # type: ignore[index]


def test_context_percent() -> None:
    assert context_percent(None, None) is None
    assert context_percent(None, 8192) == 0
    assert context_percent(4096, 8192) == 50


def test_shutdown_note_only_when_the_bound_expired() -> None:
    assert shutdown_note(None, 10.0) == ""
    assert shutdown_note(ShutdownReport(1, 0, []), 10.0) == ""
    note = shutdown_note(ShutdownReport(1, 0, ["desk-turn-ab12"]), 10.0)
    assert note == (
        "gave up waiting after 10 s: 1 worker still running (desk-turn-ab12); exiting anyway"
    )
    assert json.dumps(note)  # one plain line
