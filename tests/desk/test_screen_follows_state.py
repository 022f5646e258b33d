"""The screen follows the state: a turn's end shows as "idle" and the idle keys before the
reply's canonical text is drawn (drawing a long reply takes a while on a busy machine)."""

from __future__ import annotations

import pytest

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.widgets.assistant_reply import AssistantReply
from tests.desk.desk_testkit import submit_and_get_reply, wait_until

pytestmark = pytest.mark.anyio

LONG_PROMPT = "Tell me about stopping streams"


@pytest.mark.parametrize("stop", [False, True])
async def test_idle_and_the_idle_keys_come_before_the_reply_is_drawn_again(
    desk_app: DeskApp,
    demo_server: DemoModelServer,
    monkeypatch: pytest.MonkeyPatch,
    stop: bool,
) -> None:
    seen: list[tuple[str, bool, bool]] = []
    finish = AssistantReply.finish

    async def watched_finish(self: AssistantReply, text: str, outcome: str, note: str = "") -> None:
        # what the person sees at the moment the canonical text starts to be drawn
        widgets = desk_app.widgets
        seen.append((widgets.status.state, widgets.prompt.busy, widgets.stop_button.disabled))
        await finish(self, text, outcome, note)

    monkeypatch.setattr(AssistantReply, "finish", watched_finish)
    demo_server.configure(tokens_per_second=100.0 if stop else 2000.0)
    async with desk_app.run_test(size=(120, 30)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        if stop:
            await wait_until(pilot, lambda: len(reply.text) > 20, what="streamed text")
            await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply's end")
        assert seen == [("idle", False, True)]
