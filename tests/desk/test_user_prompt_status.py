"""A prompt's status line: none for a prompt that was simply sent (most of them, and a resumed
long session renders many at once), and the line a steer or a dropped prompt shows, made when
the prompt gets that status."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from desk.widgets.user_prompt import UserPrompt

pytestmark = pytest.mark.anyio


class OnePrompt(App[None]):
    def compose(self) -> ComposeResult:
        yield UserPrompt("t1", "hello")


def status_lines(prompt: UserPrompt) -> list[str]:
    return [str(label.render()) for label in prompt.query(".prompt-status").results(Static)]


async def test_a_sent_prompt_has_no_status_line_and_a_dropped_one_says_why() -> None:
    app = OnePrompt()
    async with app.run_test() as pilot:
        prompt = app.query_one(UserPrompt)
        assert status_lines(prompt) == []
        prompt.detail = "the desk quit"
        prompt.status = "dropped"
        await pilot.pause()
        assert status_lines(prompt) == ["not sent: the desk quit"]
        assert prompt.has_class("-dropped")
        assert app.query_one(".prompt-status").region.height == 1  # shown, under the text
        prompt.status = "sent"
        await pilot.pause()
        assert status_lines(prompt) == [""] and not prompt.has_class("-dropped")
