"""The gateway built after the app's first frame: what is typed meanwhile lands.

``desk`` hands the app a :class:`~desk.late_gateway.LateGateway`, built on a thread once the
first frame is painted. Here the build is held on an event the test releases, so the keys are
typed while it is certainly not built yet: the text stays in the prompt box, an Enter among
them is sent once the session is up (once, whole), and a quit typed meanwhile waits for the
build and shuts the gateway down.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from textual import events

from agent.provider.client import ProviderConfig
from agent.stops import Surface
from contract.results import ShutdownReport
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.controllers.quit import BUILD_POLL_S
from desk.late_gateway import Built, LateGateway
from desk.screens.desk_screen import EARLY_NOTICE, DeskScreen
from desk.typing_drain import DRAIN_S, DrainTyping
from desk.widgets import AssistantReply, PromptInput
from tests.desk.kit import DEFAULT_TIMEOUT_S, connection, wait_until
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio


class HeldBuild:
    """A gateway build that waits until :meth:`release` (and records what it built)."""

    def __init__(self, base_url: str) -> None:
        self._base_url = base_url
        self._released = threading.Event()
        self.began = threading.Event()
        self.gateways: list[Gateway] = []
        self.notice, self.saved = "", True

    def __call__(self) -> Built:
        self.began.set()
        assert self._released.wait(DEFAULT_TIMEOUT_S * 3), "the test never released the build"
        provider = ProviderConfig(base_url=self._base_url, model="demo")
        gateway = Gateway(GatewayConfig(provider=provider))
        self.gateways.append(gateway)
        return Built(gateway, self.notice, saved=self.saved)

    def release(self) -> None:
        self._released.set()


@pytest.fixture
def held(demo_server: DemoModelServer) -> Iterator[HeldBuild]:
    build = HeldBuild(demo_server.base_url)
    try:
        yield build
    finally:
        build.release()
        for gateway in build.gateways:
            assert gateway.shutdown(timeout_s=5.0).threads_left == []


def chat_prompts(server: DemoModelServer) -> list[str]:
    """The last user message of each chat request the model server got, in order."""
    return [str(r.messages[-1]["content"]) for r in server.records.list() if r.messages]


async def test_text_and_enter_typed_while_the_gateway_is_built_are_sent_once_it_is(
    held: HeldBuild, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=400.0)  # the turn runs whole: its pace is no matter
    late = LateGateway(held)
    app = DeskApp(late, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test() as pilot:
        await wait_until(pilot, held.began.is_set, what="the build to begin after the frame")
        await pilot.press(*"typed early", "enter", *"next")
        box = app.query_one(PromptInput)
        await wait_until(pilot, lambda: box.text == "next", what="the typing in the box")
        assert app.widgets.status.notice == EARLY_NOTICE  # it says the prompt waits
        assert app.controllers.sessions.view is None and chat_prompts(demo_server) == []
        held.release()
        await wait_until(
            pilot, lambda: chat_prompts(demo_server) == ["typed early"], what="the prompt sent"
        )
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn to end")
        assert box.text == "next"  # what was typed after the Enter stays for the next prompt
        assert chat_prompts(demo_server) == ["typed early"]  # sent once
        assert app.widgets.status.notice != EARLY_NOTICE


async def test_esc_after_an_enter_typed_while_the_gateway_is_built_stops_that_prompt(
    held: HeldBuild, demo_server: DemoModelServer
) -> None:
    late = LateGateway(held)
    app = DeskApp(late, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test() as pilot:
        await wait_until(pilot, held.began.is_set, what="the build to begin after the frame")
        await pilot.press(*"Tell me about stopping streams", "enter", "escape")
        held.release()

        def notes() -> list[str]:
            return [r.note for r in app.screen.query(AssistantReply) if r.outcome]

        await wait_until(pilot, notes, what="the prompt's outcome")
        (note,) = notes()
        assert note.startswith("■ stopped by you")
        (reply,) = app.screen.query(AssistantReply)
        turn = held.gateways[0].turn(app.session_id, reply.turn_id)
        assert turn.result is not None and turn.result.stop is not None
        assert turn.result.stop.surface is Surface.DESK_KEY
    assert all(r.outcome != "completed" for r in demo_server.records.list())


async def test_a_quit_typed_while_the_gateway_is_built_shuts_it_down_once_built(
    held: HeldBuild, demo_server: DemoModelServer
) -> None:
    late = LateGateway(held)
    app = DeskApp(late, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test() as pilot:
        await wait_until(pilot, held.began.is_set, what="the build to begin after the frame")
        await pilot.press("ctrl+q")
        assert app.is_running  # the quit waits for the build
        held.release()
        await wait_until(pilot, lambda: not app.is_running, what="the desk to quit")
    assert app.return_code == 0
    assert app.shutdown_report is not None
    assert [t.name for t in threading.enumerate() if t.name.startswith("desk-turn-")] == []


async def test_a_prompt_sent_then_a_quit_while_the_gateway_is_built_is_kept_in_the_session(
    held: HeldBuild, demo_server: DemoModelServer
) -> None:
    # Enter, then Ctrl+Q, while the desk starts: the quit waits for the build (however long)
    # and for the prompt to be sent, then stops it; the prompt is in the session to resume.
    late = LateGateway(held)
    app = DeskApp(late, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test() as pilot:
        await wait_until(pilot, held.began.is_set, what="the build to begin after the frame")
        looked = counted_looks(app, DRAIN_S / BUILD_POLL_S + 2)
        await pilot.press(*"typed before the quit", "enter", "ctrl+q")
        await wait_until(pilot, looked.is_set, what="the quit to wait longer than its drain")
        assert app.is_running and app.widgets.status.notice != ""  # it says what it waits for
        held.release()
        await wait_until(pilot, lambda: not app.is_running, what="the desk to quit")
        view = app.controllers.sessions.view
        session_id = view.session_id if view is not None else ""
    assert app.return_code == 0 and session_id
    history = held.gateways[0].history(session_id)
    assert [m.content for m in history if m.role == "user"] == ["typed before the quit"]


async def test_a_prompt_on_its_way_to_the_screen_when_ctrl_q_is_read_is_sent_first(
    held: HeldBuild, demo_server: DemoModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The app has seen the Enter (no key is unseen) but the screen has not taken its prompt
    # yet when the terminal's input thread reads Ctrl+Q: the shutdown waits for that prompt,
    # which is sent, stopped by the quit and kept in the session.
    held.release()
    app = DeskApp(LateGateway(held), connection(demo_server.base_url), handle_signals=False)
    on_its_way, go_on = asyncio.Event(), asyncio.Event()
    take = DeskScreen._take_prompt

    async def held_prompt(self: DeskScreen, message: PromptInput.Submitted) -> None:
        on_its_way.set()
        await go_on.wait()
        await take(self, message)

    monkeypatch.setattr(DeskScreen, "_take_prompt", held_prompt)
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.controllers.sessions.view is not None, what="session")
        session_id = app.session_id
        for key in [*"on its", "enter"]:  # as a terminal delivers them (Pilot waits for idle)
            app.post_message(events.Key(key, "\r" if key == "enter" else key))
        await wait_until(None, on_its_way.is_set, what="the prompt on its way")
        try:  # as the input thread does: every key it posted was seen
            quit_read = threading.Thread(
                target=app.quit_from_input_thread, args=(app._notes.keys_seen,)
            )
            quit_read.start()
            quit_read.join(DEFAULT_TIMEOUT_S)
        finally:
            go_on.set()  # the prompt goes on to the screen
        await wait_until(pilot, lambda: not app.is_running, what="the desk to quit")
    history = held.gateways[0].history(session_id)
    assert [m.content for m in history if m.role == "user"] == ["on its"]


def counted_looks(app: DeskApp, enough: float) -> threading.Event:
    """Set once the quit looked ``enough`` times whether the gateway's build ended."""
    looks: list[bool] = []
    looked = threading.Event()
    starting = app.controllers.quit._starting

    def counted() -> bool:
        looks.append(answer := starting())
        if len(looks) >= enough:
            looked.set()
        return answer

    app.controllers.quit._starting = counted
    return looked


async def test_the_keys_typed_before_a_quit_are_waited_for_once(
    held: HeldBuild, demo_server: DemoModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The drain of the keys typed before a quit ends at the screen: bubbled on to the app, it
    # went round the app, the prompt box and the screen until the desk exited, and took the
    # UI thread's CPU from the quit.
    seen: list[int] = []
    forward = DeskApp.on_drain_typing

    def counted(self: DeskApp, message: DrainTyping) -> None:
        seen.append(message.hops)
        forward(self, message)

    monkeypatch.setattr(DeskApp, "on_drain_typing", counted)
    held.release()
    app = DeskApp(LateGateway(held), connection(demo_server.base_url), handle_signals=False)
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.controllers.sessions.view is not None, what="session")
        gateway = held.gateways[0]
        shutdown = gateway.shutdown
        release = threading.Event()

        def held_shutdown(timeout_s: float | None = None) -> ShutdownReport:
            release.wait(DEFAULT_TIMEOUT_S)  # the quit stays under way while the drain could loop
            return shutdown(timeout_s)

        monkeypatch.setattr(gateway, "shutdown", held_shutdown)
        await pilot.press(*"abc", "ctrl+q")
        await wait_until(pilot, lambda: app.controllers.quit.report is None and seen, what="drain")
        for _ in range(20):
            await pilot.pause()
        assert seen == [2]
        release.set()
        await wait_until(pilot, lambda: not app.is_running, what="the desk to quit")


async def test_a_build_begun_elsewhere_first_still_starts_the_session(
    held: HeldBuild, demo_server: DemoModelServer
) -> None:
    late = LateGateway(held)
    late.start(lambda _error: None)  # as a stop key read on the terminal's input thread does
    held.release()
    assert late.wait() is held.gateways[0]
    app = DeskApp(late, connection(demo_server.base_url), handle_signals=False)
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.controllers.sessions.view is not None, what="session")
        await pilot.press(*"after", "enter")
        await wait_until(pilot, lambda: chat_prompts(demo_server) == ["after"], what="the prompt")


async def test_a_build_whose_sessions_are_not_saved_says_so_and_offers_no_resume(
    held: HeldBuild, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=400.0)  # the turn runs whole: its pace is no matter
    held.notice, held.saved = "sessions are not saved: the disk is full", False
    held.release()
    app = DeskApp(LateGateway(held), connection(demo_server.base_url), handle_signals=False)
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.controllers.sessions.view is not None, what="session")
        await pilot.press(*"hello", "enter")
        await wait_until(pilot, lambda: chat_prompts(demo_server) == ["hello"], what="the prompt")
        await wait_until(pilot, lambda: app.running_turn is None, what="the turn to end")
        notes = [str(n.render()) for n in app.transcript.query(".note")]
        assert any("sessions are not saved: the disk is full" in n for n in notes), notes
        assert app.controllers.sessions.resume_hint() == ""  # nothing to resume it from


def test_a_gateway_never_built_shuts_down_at_once_and_is_never_built() -> None:
    built: list[int] = []

    def build() -> Built:
        built.append(1)
        raise AssertionError("built after the desk quit")

    late = LateGateway(build)
    report = late.shutdown()
    assert (report.turns_stopped, report.prompts_dropped) == (0, 0)
    late.start(lambda _error: None)
    with pytest.raises(RuntimeError, match="quit before its gateway was built"):
        late.wait()
    assert built == []


async def test_once_the_desk_is_up_an_idle_footer_dims_the_stop_key(
    held: HeldBuild, demo_server: DemoModelServer
) -> None:
    from desk.widgets.key_footer import KeyFooter

    app = DeskApp(LateGateway(held), connection(demo_server.base_url), handle_signals=False)
    async with app.run_test() as pilot:
        await wait_until(pilot, held.began.is_set, what="the build to begin after the frame")
        held.release()
        await wait_until(pilot, lambda: app.controllers.sessions.view, what="the session up")
        footer = app.query_one(KeyFooter)

        def stop_lit() -> bool:
            return any(k.action == "stop" and k.enabled for k in footer.keys)

        await wait_until(pilot, lambda: not stop_lit(), what="Stop dimmed on the footer")
        assert footer.keys[0].action != "stop"
