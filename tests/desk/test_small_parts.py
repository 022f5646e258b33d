"""Small pure parts: prompt history, the double press, slash parsing, server facts, notes."""

from __future__ import annotations

import json

import pytest

from desk.double_press import DoublePress
from desk.prompt_history import PromptHistory
from desk.shutdown import leave_at_once, shutdown_note
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


def test_the_quit_leaves_even_when_giving_the_terminal_back_fails() -> None:
    # A resume from the editor's suspend had made a writer thread not started yet: stopping it
    # raised, the quit's thread died, and desk never exited
    left: list[str] = []

    class HalfResumedDriver:
        def leave_terminal(self) -> None:
            raise RuntimeError("cannot join thread before it is started")

    with pytest.raises(RuntimeError):
        leave_at_once(
            lambda hint, report: left.append(hint),
            ShutdownReport(turns_stopped=1, prompts_dropped=0),
            HalfResumedDriver(),
            lambda: "desk --resume abc",
        )
    assert left == ["desk --resume abc"]
