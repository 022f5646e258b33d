"""The screen follows the state: a turn's end shows as "idle" and the idle keys before the
reply's canonical text is drawn (drawing a long reply takes a while on a busy machine), and
a reply drawn as it streamed shows its last words in the frame that says "idle"."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import textual.screen
from rich.console import RenderableType
from textual.message_pump import MessagePump
from textual.screen import Screen
from textual.widgets import Static

from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.controllers.turns import TurnsController
from desk.frame_now import frame_now_of
from desk.widgets.assistant_reply import AssistantReply
from desk.widgets.painted_label import PaintedLabel
from desk.widgets.reply_body import ReplyBody
from desk.widgets.sealed_markdown import SealedMarkdown
from desk.widgets.transcript import Transcript
from tests.desk.kit import submit_and_get_reply, wait_until

if TYPE_CHECKING:
    from desk.controllers.view import ShownSession

pytestmark = pytest.mark.anyio

LONG_PROMPT = "Tell me about stopping streams"
IDLE = "○ idle"


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


@pytest.mark.parametrize("how", ["stop", "quit"])
async def test_what_a_stopped_turn_still_streams_is_not_drawn_and_its_end_shows_it_all(
    desk_app: DeskApp,
    demo_server: DemoModelServer,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    # Once a stop went out for a turn (or a quit began), its deltas still on their way to the
    # screen are taken without being drawn: drawing them kept "idle" and the quit seconds
    # behind on a busy machine. Its completion then draws the reply whole.
    drawn: list[str] = []
    append = ReplyBody.append

    def counted_append(self: ReplyBody, text: str) -> None:
        drawn.append(text)
        append(self, text)

    monkeypatch.setattr(ReplyBody, "append", counted_append)
    demo_server.configure(tokens_per_second=40.0)
    async with desk_app.run_test(size=(120, 30)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: len(reply.text) > 20, what="streamed text")
        turns = desk_app.controllers.turns
        # the stop (or quit) as its key would have begun it; the stream goes on meanwhile
        turns.stop_sent(reply.turn_id) if how == "stop" else turns.quitting()
        await pilot.pause()
        shown, drawn_before = len(reply.text), len(drawn)
        await wait_until(pilot, lambda: len(reply.text) > shown + 40, what="more stream")
        assert len(drawn) == drawn_before  # taken, not drawn
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply's end")
        body = reply.query_one(ReplyBody)
        assert body.text.strip() == reply.text.strip() != ""


def painted_frames(app: DeskApp, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The status bar's turn side as painted in every frame the app hands to its terminal from
    now on: filled in as frames go out."""
    frames: list[str] = []
    display = DeskApp._display

    def watched(self: DeskApp, screen: Screen[object], renderable: RenderableType | None) -> None:
        if renderable is not None and self is app and screen is app.screen:
            label = app.widgets.status.query_one(".turn", PaintedLabel)
            frames.append(label.painted or "")
        display(self, screen, renderable)

    monkeypatch.setattr(DeskApp, "_display", watched)
    return frames


async def test_a_reply_drawn_as_it_streamed_shows_its_last_words_in_the_frame_saying_idle(
    desk_app: DeskApp, demo_server: DemoModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the reply's last pieces are left to draw when its completion comes: they go out
    # with "idle", not in a frame after it (which kept the last words a frame behind).
    frames = painted_frames(desk_app, monkeypatch)
    idle_at: list[int] = []  # frames out when "idle" was set, and when the reply finished
    finished_at: list[int] = []
    set_running, finish = TurnsController.set_running, AssistantReply.finish

    def watched_set_running(
        self: TurnsController,
        view: ShownSession,
        turn: str | None,
        started_at: float | None = None,
    ) -> None:
        if turn is None:
            idle_at.append(len(frames))
        set_running(self, view, turn, started_at)

    async def watched_finish(self: AssistantReply, text: str, outcome: str, note: str = "") -> None:
        finished_at.append(len(frames))
        await finish(self, text, outcome, note)

    monkeypatch.setattr(TurnsController, "set_running", watched_set_running)
    monkeypatch.setattr(AssistantReply, "finish", watched_finish)
    demo_server.configure(tokens_per_second=2000.0)
    async with desk_app.run_test(size=(120, 30)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply's end")
        await wait_until(pilot, lambda: idle_shown(frames, finished_at[0]), what="idle shown")
        assert reply.query_one(ReplyBody).text == reply.text
    assert reply.outcome == "completed" and reply.text.strip() != ""
    assert idle_at == finished_at  # no frame went out between "idle" and the last words
    # The next frame made shows both; a frame the screen had already begun (its timer fired
    # before the status bar's repaint reached it, as on a loaded machine) may go out first.
    assert "idle" in "".join(frames[finished_at[0] : finished_at[0] + 2]), frames[-3:]


def idle_shown(frames: list[str], first: int) -> bool:
    """True once a frame from ``first`` on said "idle", or two frames went out."""
    return any("idle" in frame for frame in frames[first:]) or len(frames) > first + 1


async def test_after_a_stop_the_screen_falls_still_until_the_settle_timer(
    desk_app: DeskApp, demo_server: DemoModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once "idle" and the stopped reply are drawn, nothing is drawn or rendered: no timer
    # ticks (the elapsed time's is paused), no backlog drains, and settling the reply's
    # pieces waits for its timer (after the moments that belong to the next prompt and the
    # model server).
    monkeypatch.setattr(Transcript, "SETTLE_AFTER_S", 3600.0)
    frames = painted_frames(desk_app, monkeypatch)
    demo_server.configure(tokens_per_second=400.0)
    async with desk_app.run_test(size=(80, 16)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: len(reply.text) > 1200, what="text past the screen")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply's end")
        await wait_until(pilot, lambda: "idle" in frames[-1], what="idle on screen")
        desk_app.widgets.prompt.cursor_blink = False  # the one timer that runs when idle too
        for _ in range(3):
            await pilot.pause()
        sealed = reply.query_one(SealedMarkdown)
        renders, drawn = sealed.renders, len(frames)
        for _ in range(5):
            await pilot.pause(0.05)
        assert (sealed.renders, len(frames)) == (renders, drawn)
        # What is left, if anything (a piece painted while streaming is rendered already),
        # waits for the settle timer.
        assert sealed.settled or desk_app.transcript.settling


def ticking_timers(app: DeskApp) -> list[str]:
    """The repeating timers of the app, its screens and its widgets that are running (not
    paused, not stopped): each wakes desk again and again, drawn or not."""
    nodes: list[MessagePump] = [app, *app.screen_stack]
    for screen in app.screen_stack:
        nodes.extend(screen.walk_children(with_self=False))
    found = []
    for node in nodes:
        for timer in list(node._timers):
            if timer._repeat != 0 and timer._task is not None and timer._active.is_set():
                found.append(f"{type(node).__name__}:{timer.name}")
    return sorted(found)


async def test_after_a_stop_no_timer_ticks_but_the_prompts_cursor(
    desk_app: DeskApp, demo_server: DemoModelServer
) -> None:
    # A hidden widget's animation (the closed compression panel's progress bar, 15 times a
    # second, and its once-a-second ETA) woke desk while it had nothing to do.
    demo_server.configure(tokens_per_second=100.0)
    async with desk_app.run_test(size=(120, 30)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: len(reply.text) > 20, what="streamed text")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply's end")
        await pilot.pause()
        ticking = ticking_timers(desk_app)
        assert [name for name in ticking if not name.startswith("PromptInput:")] == []


async def test_during_a_quit_a_turns_end_is_noted_not_drawn(
    desk_app: DeskApp, demo_server: DemoModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The app ends next: drawing "idle", the idle keys and the reply's canonical text only
    # took the CPU (and the GIL) from the quit's own thread, which saves and closes the store.
    drawn: list[str] = []
    finish = AssistantReply.finish

    async def watched_finish(self: AssistantReply, text: str, outcome: str, note: str = "") -> None:
        drawn.append(outcome)
        await finish(self, text, outcome, note)

    monkeypatch.setattr(AssistantReply, "finish", watched_finish)
    demo_server.configure(tokens_per_second=100.0)
    async with desk_app.run_test(size=(120, 30)) as pilot:
        reply = await submit_and_get_reply(desk_app, pilot, LONG_PROMPT)
        await wait_until(pilot, lambda: len(reply.text) > 20, what="streamed text")
        desk_app.controllers.turns.quitting()  # as the quit's start tells it
        await pilot.press("escape")  # the turn ends while the quit runs
        await wait_until(pilot, lambda: reply.outcome is not None, what="the reply's end")
        assert reply.outcome == "interrupted" and "stopped" in reply.note
        assert drawn == []
        assert desk_app.widgets.status.state != "idle"


async def test_a_turns_end_is_painted_without_waiting_for_the_frame_timer(
    desk_app: DeskApp, demo_server: DemoModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Textual paints at the ticks of a 60 fps timer; "idle" and the last words waited for the
    # next tick (8 ms on average, a scheduler wake-up more on a busy machine). With that timer
    # stopped (a tick an hour), the turn's end must still reach the terminal.
    monkeypatch.setattr(textual.screen, "UPDATE_PERIOD", 3600.0)
    frames = painted_frames(desk_app, monkeypatch)
    demo_server.configure(tokens_per_second=2000.0)
    async with desk_app.run_test(size=(120, 30)):
        box = desk_app.widgets.prompt
        box.text = LONG_PROMPT
        before = len(frames)
        box.action_submit()  # not pilot.press: it waits for frames the stopped timer never makes
        await wait_until(None, lambda: desk_app.transcript.reply_turn_ids, what="the reply")
        reply = desk_app.transcript.reply(desk_app.transcript.reply_turn_ids[-1])
        assert reply is not None
        await wait_until(None, lambda: reply.outcome is not None, what="the reply's end")
        await wait_until(None, lambda: "idle" in "".join(frames[before:]), what="idle painted")
        assert reply.outcome == "completed"


@pytest.mark.parametrize("stop", [False, True])
async def test_the_frame_that_says_idle_shows_the_idle_keys(
    desk_app: DeskApp, demo_server: DemoModelServer, monkeypatch: pytest.MonkeyPatch, stop: bool
) -> None:
    # The frame the turn's end asks for (desk.frame_now) shows "idle" with the idle keys, not
    # above the busy ones (Queue, Steer). Whether a tick of Textual's own timer can fall
    # between two widgets' repaints is the timer's affair: bench/idle_after_stop.py measures
    # the footer in the terminal (same frame as "idle" since the paint goes one hop later).
    frames: list[str] = []  # what each frame sent to the terminal
    display = DeskApp._display

    def watched(self: DeskApp, screen: Screen[object], renderable: RenderableType | None) -> None:
        render = getattr(renderable, "render_segments", None)
        if callable(render) and self is desk_app and screen is self.screen:
            frames.append(str(render(self.console)))
        display(self, screen, renderable)

    monkeypatch.setattr(DeskApp, "_display", watched)
    # Textual's frame timer stopped (a tick an hour): a tick landing between two widgets'
    # repaints would paint one without the other; here only the turn's end asks for a frame.
    monkeypatch.setattr(textual.screen, "UPDATE_PERIOD", 3600.0)
    demo_server.configure(tokens_per_second=50.0 if stop else 400.0)
    async with desk_app.run_test(size=(120, 30)):
        before = len(frames)
        box = desk_app.widgets.prompt
        box.text = LONG_PROMPT
        box.action_submit()  # not pilot.press: it waits for frames the stopped timer never makes
        await wait_until(None, lambda: desk_app.transcript.reply_turn_ids, what="the reply")
        reply = desk_app.transcript.reply(desk_app.transcript.reply_turn_ids[-1])
        assert reply is not None
        await wait_until(None, lambda: len(reply.text) > 20, what="streamed text")
        if stop:
            desk_app.action_stop()  # what Esc does
        await wait_until(None, lambda: reply.outcome is not None, what="the reply's end")
        await wait_until(None, lambda: IDLE in "".join(frames[before:]), what="idle painted")
    first_idle = next((frame for frame in frames[before:] if IDLE in frame), None)
    assert first_idle is not None and "Send" in first_idle and "Queue" not in first_idle


def test_a_frame_asked_for_a_widget_off_screen_is_no_error() -> None:
    # a turn's end handled while the desk quits: its status bar was unmounted already, and
    # asking its screen raised NoScreen in the app's message loop
    frame_now_of(Static("gone"))
