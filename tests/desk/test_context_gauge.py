"""The context gauge counts one thing in every case: what the session's next request carries
before its prompt (system prompt, transcript, tool definitions as sent), by the count the
automatic compression compares with its threshold. On a fresh start, after ``/new``, after a
stopped turn and after a resume it agrees with the gateway, and with the server's own count.
While a turn runs its prompt counts too (never a figure below the request it sent), and a
session the gateway has not counted reads ``ctx –``, not 0 % of another session's window, nor
does one whose model the server does not list (after ``/server`` too). A long reply counts as
the server counted it (live and resumed), so the next prompt is compressed first and its
request leaves room for a reply."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from agent.compression.plan import SUMMARY_MARKER
from agent.context.budget import minimum_reply
from agent.context.shape import well_formed
from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from agent.store import SqliteStore
from contract.events import ContextWindowKnown
from contract.text import tokens_in_chars
from demo_model.records import RequestRecord
from demo_model.server import DemoModelServer
from desk.app import DeskApp
from desk.controllers.view import ShownSession
from desk.startup import Startup
from desk.widgets.status_bar import StatusBar
from tests.desk.kit import connection, submit, submit_and_get_reply, wait_until
from tests.support import EventLog, running_demo
from tui_gateway.gateway import Gateway, GatewayConfig

pytestmark = pytest.mark.anyio

N_CTX = 4096


@pytest.fixture
def small_server() -> Iterator[DemoModelServer]:
    with running_demo(20.0, n_ctx=N_CTX) as server:
        yield server


def next_request(gateway: Gateway, session_id: str) -> int:
    """The gateway's count of the session's next request before its prompt: the figure
    automatic compression compares with its threshold (the prompt is added to it)."""
    budget = gateway.context_budget(session_id)
    return budget.count(well_formed(gateway.history(session_id)), gateway._offered())


def shown(status: StatusBar) -> int:
    assert status.context_used is not None, "the gauge shows no count"
    return status.context_used


async def test_the_gauge_counts_the_same_thing_fresh_stopped_new_and_resumed(
    small_server: DemoModelServer, tmp_path: Path
) -> None:
    provider = ProviderConfig(base_url=small_server.base_url, model="demo")
    db = tmp_path / "desk.db"
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    app = DeskApp(gateway, connection(small_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 30)) as pilot:
        status = app.status_bar
        await wait_until(pilot, lambda: status.window_note != "", what="the gateway's count")
        session = app.session_id
        fresh = shown(status)
        assert fresh == next_request(gateway, session)

        # The first turn, stopped: nothing was removed, so the gauge cannot fall.
        reply = await submit_and_get_reply(app, pilot, "Tell me about stopping streams")
        await wait_until(pilot, lambda: len(reply.text) > 8, what="some reply")
        await pilot.press("escape")
        await wait_until(pilot, lambda: reply.outcome == "interrupted", what="the stop")
        grown = len(gateway.history(session))
        await wait_until(
            pilot, lambda: shown(status) == next_request(gateway, session), what="the count"
        )
        assert shown(status) > fresh and len(gateway.history(session)) == grown

        # A whole turn: the server's count of its request is what the fresh gauge said, plus
        # the stopped turn and this prompt (a few tokens each).
        done = await submit_and_get_reply(app, pilot, "reply with exactly: ok")
        await wait_until(pilot, lambda: done.outcome is not None, what="the reply")
        chats = [r for r in small_server.records.list() if "chat" in r.path]
        first = min(r.prompt_tokens for r in chats)
        assert 0 < first - fresh < 48  # not 2.5 times the server's count
        await wait_until(
            pilot, lambda: shown(status) == next_request(gateway, session), what="the count"
        )
        before_quit = shown(status)

        # /new: the same system prompt and tools as a fresh start, counted the same way.
        await submit(pilot, "/new")
        await wait_until(pilot, lambda: app.session_id != session, what="the new session")
        await wait_until(pilot, lambda: status.context_used is not None, what="its count")
        assert shown(status) == next_request(gateway, app.session_id)
        assert abs(shown(status) - fresh) <= 8
    assert gateway.shutdown(timeout_s=5.0).threads_left == []

    # Quit and resume: the same count as before the quit (compression decides the same).
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    resumed = DeskApp(
        gateway,
        connection(small_server.base_url),
        handle_signals=False,
        startup=Startup(resume=True, resume_id=session),
    )
    async with resumed.run_test(size=(120, 30)) as pilot:
        status = resumed.status_bar
        await wait_until(pilot, lambda: resumed.session_id == session, what="the resume")
        assert status.context_used in (None, next_request(gateway, session))  # never a guess
        await wait_until(pilot, lambda: status.window_note != "", what="the gateway's count")
        assert shown(status) == next_request(gateway, session)
        assert abs(shown(status) - before_quit) <= N_CTX // 100
    assert gateway.shutdown(timeout_s=5.0).threads_left == []


def gauge_total(status: StatusBar) -> int:
    """What the gauge's percentage is taken of: the gateway's count plus what it adds."""
    return (status.context_used or 0) + status.context_pending


def chat_request_tokens(server: DemoModelServer) -> int:
    """The server's own count of the last chat request it got."""
    chats = [r for r in server.records.list() if "chat" in r.path]
    assert chats and chats[-1].prompt_tokens > 0
    return chats[-1].prompt_tokens


PASTE = " ".join(f"word{i % 97}" for i in range(1500))
"""A pasted page: 1,500 words."""


async def test_the_gauge_counts_the_running_prompt_and_the_queued_one_that_runs_next(
    small_server: DemoModelServer,
) -> None:
    small_server.configure(n_ctx=16384)
    provider = ProviderConfig(base_url=small_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider))
    app = DeskApp(gateway, connection(small_server.base_url), handle_signals=False)
    # long enough to be still running when the second is sent, on a loaded machine too
    words = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    first = f"{PASTE} [demo tps=6] reply with exactly: {words}"
    second = f"{PASTE} again [demo tps=6] reply with exactly: eight nine ten eleven twelve"
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            status = app.status_bar
            gauge = app.controllers.gauge
            windows: list[tuple[ContextWindowKnown, str | None, int, int]] = []
            reported = gauge.window_reported

            def watched(view: ShownSession, payload: ContextWindowKnown) -> None:
                reported(view, payload)
                seen = (payload, view.running_turn, status.context_pending)
                windows.append((*seen, view.queue.pending_chars()))

            gauge.window_reported = watched  # type: ignore[method-assign]
            await wait_until(pilot, lambda: status.window_note != "", what="the gateway's count")
            box = app.query_one("#prompt")
            box.text = first  # type: ignore[attr-defined]
            await wait_until(pilot, lambda: status.context_pending > 0, what="the paste counted")
            typed = gauge_total(status)

            reply = await submit_and_get_reply(app, pilot, first)
            await wait_until(pilot, lambda: reply.text, what="the first reply streaming")
            # never below what it read before Enter, nor below the request the turn sent
            assert gauge_total(status) >= typed
            assert gauge_total(status) >= 0.75 * chat_request_tokens(small_server)
            streamed = gauge_total(status)
            await wait_until(pilot, lambda: len(reply.text) > 12, what="more of the reply")
            assert gauge_total(status) >= streamed  # what streamed so far counts too

            await submit(pilot, second)  # queued behind the running turn
            await wait_until(pilot, lambda: status.queued == 1, what="the queued prompt")
            assert gauge_total(status) > streamed

            def second_streams() -> bool:
                ids = app.transcript.reply_turn_ids
                later = app.transcript.reply(ids[-1]) if len(ids) == 2 else None
                return later is not None and bool(later.text) and later.outcome is None

            await wait_until(pilot, second_streams, what="the queued prompt running")
            # the count the gateway took at the first turn's end includes that turn: from it
            # on, only the queued prompt was added, though the turn still showed as running
            ended = [seen for seen in windows if seen[0].after_turn == reply.turn_id]
            assert len(ended) == 1
            window, running, pending, queued_chars = ended[0]
            assert running == reply.turn_id
            assert pending == tokens_in_chars(queued_chars, window.chars_per_token)
            # the request it sent carries the first exchange and the second paste: so does
            # the gauge, not the first exchange alone
            assert gauge_total(status) >= 0.75 * chat_request_tokens(small_server)
            await pilot.press("escape")
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def test_the_gauge_reads_a_dash_for_a_model_the_server_lacks_until_model_names_one(
    small_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    store = SqliteStore(db)
    talk = [ChatMessage("user", "What is a gauge?"), ChatMessage("assistant", "A dial.")]
    tiny = store.sessions.create_session(title="on tiny", model="tiny", messages=talk).id
    provider = ProviderConfig(base_url=small_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider), store=store)
    app = DeskApp(gateway, connection(small_server.base_url), handle_signals=False)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            status = app.status_bar
            await wait_until(pilot, lambda: status.window_note != "", what="the gateway's count")
            assert "ctx –" not in status.server_side_text()  # the new session's own figure

            await pilot.press("ctrl+b")
            sidebar = app.widgets.sidebar
            ids = lambda: [i.info.session_id for i in sidebar.items]  # noqa: E731
            await wait_until(pilot, lambda: tiny in ids(), what="the saved session listed")
            sidebar.list_view.index = ids().index(tiny)
            await pilot.press("enter")
            await wait_until(pilot, lambda: app.session_id == tiny, what="the switch")
            await wait_until(pilot, lambda: status.server_problem, what="the model's problem")
            assert status.server_problem == "⚠ model not on the server · /model"
            await pilot.pause()
            assert "ctx –" in status.server_side_text()  # not counted: no 0 %, no other window
            assert status.context_window is None

            await submit(pilot, "/model demo")
            await wait_until(pilot, lambda: status.window_note != "", what="the new count")
            assert "ctx –" not in status.server_side_text()
            assert shown(status) == next_request(gateway, tiny)
            assert status.context_window == N_CTX
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def test_server_to_a_server_that_lacks_the_sessions_model_reads_a_dash(
    small_server: DemoModelServer,
) -> None:
    provider = ProviderConfig(base_url=small_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider))
    log = EventLog()
    gateway.subscribe(log)
    app = DeskApp(gateway, connection(small_server.base_url), handle_signals=False)
    try:
        with running_demo(0, model="other", n_ctx=2048) as elsewhere:
            async with app.run_test(size=(120, 30)) as pilot:
                status = app.status_bar
                reply = await submit_and_get_reply(app, pilot, "reply with exactly: counted")
                await wait_until(pilot, lambda: reply.outcome is not None, what="the reply")
                await wait_until(pilot, lambda: status.window_note != "", what="the count")
                assert "ctx –" not in status.server_side_text()

                # the other server lists "other" only: this session's "demo" is not counted
                # there, neither by this server's figure nor by a window learned for it
                await submit(pilot, f"/server {elsewhere.base_url}")
                await wait_until(pilot, lambda: status.server_problem, what="the model's problem")
                assert status.server_problem == "⚠ model not on the server · /model"
                assert "ctx –" in status.server_side_text()
                # what the gateway does after that answer (it asks the server again at once
                # and answers in turn: by then it has done it) changes nothing
                server = app.controllers.server
                asked = server.server.attempts
                await submit(pilot, "/server")
                await wait_until(pilot, lambda: server.server.attempts > asked, what="again")
                assert "ctx –" in status.server_side_text()
                assert status.context_window is None
                # nor did the gateway count it there (a frontend on the wire sees no figure)
                assert all(w.tokens == N_CTX for w in log.of_type(ContextWindowKnown))

                # back to the server that lists it: its own figure again
                await submit(pilot, f"/server {small_server.base_url}")
                await wait_until(pilot, lambda: not status.server_problem, what="listed again")
                await wait_until(pilot, lambda: status.window_note != "", what="the count")
                assert "ctx –" not in status.server_side_text()
                assert shown(status) == next_request(gateway, app.session_id)
                assert status.context_window == N_CTX
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


def gauge_percent(status: StatusBar) -> int:
    """The ``ctx N%`` the status bar reads."""
    found = re.search(r"ctx (\d+)%", status.server_side_text())
    assert found is not None, status.server_side_text()
    return int(found.group(1))


def chat_requests(server: DemoModelServer) -> list[RequestRecord]:
    return [r for r in server.records.list() if r.path.endswith("/chat/completions")]


STORY_WINDOW = 2048
"""The story tests' window: small, so one long reply fills it."""


@pytest.fixture
def story_server() -> Iterator[DemoModelServer]:
    """Replies as long as the request lets them run, in a small window: the story's words are
    shorter than the tool definitions' JSON a token, so at the first request's ratio a reply
    would count for about two thirds of what the server counted."""
    with running_demo(0, n_ctx=STORY_WINDOW, reply_shape="paragraph", max_tokens=4000) as server:
        yield server


async def tell_a_story(app: DeskApp, pilot: Pilot[object], server: DemoModelServer) -> float:
    """A short exchange, then a story the request's ``max_tokens`` cuts; returns how full the
    window is by the server's own usage (per cent): its prompt and the reply it cut."""
    first = await submit_and_get_reply(app, pilot, "reply with exactly: ok")
    await wait_until(pilot, lambda: first.outcome is not None, what="the first reply")
    story = await submit_and_get_reply(
        app, pilot, "Write a very long story about a dragon and a castle."
    )
    await wait_until(pilot, lambda: story.outcome is not None, what="the story")
    long = chat_requests(server)[-1]
    assert story.outcome == "completed" and long.finish_reason == "length"
    fill = 100 * (long.prompt_tokens + long.tokens_generated) / STORY_WINDOW
    assert fill > 90
    return fill


async def continue_after_compression(
    app: DeskApp, pilot: Pilot[object], server: DemoModelServer
) -> None:
    """Above 75 %: the next prompt is compressed first, and its request leaves room for a
    reply (by the server's own count), never a token or two."""
    more = await submit_and_get_reply(app, pilot, "Now continue.")
    await wait_until(pilot, lambda: more.outcome is not None, what="the next reply")
    sent = [
        r
        for r in chat_requests(server)
        if str(r.messages[-1].get("content")).endswith("Now continue.")
    ]
    assert len(sent) == 1  # the summary stands before it (joined to it)
    request = sent[0]
    assert any(str(m.get("content")).startswith(SUMMARY_MARKER) for m in request.messages)
    cap = request.request.get("max_tokens")
    assert isinstance(cap, int) and cap >= minimum_reply(STORY_WINDOW)
    assert request.prompt_tokens + cap <= STORY_WINDOW
    assert request.tokens_generated >= minimum_reply(STORY_WINDOW)


async def test_a_long_reply_cut_at_its_limit_counts_whole_and_the_next_prompt_compresses_first(
    story_server: DemoModelServer,
) -> None:
    provider = ProviderConfig(base_url=story_server.base_url, model="demo")
    gateway = Gateway(GatewayConfig(provider=provider))
    app = DeskApp(gateway, connection(story_server.base_url), handle_signals=False)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            status = app.status_bar
            fill = await tell_a_story(app, pilot, story_server)
            await wait_until(
                pilot,
                lambda: shown(status) == next_request(gateway, app.session_id),
                what="the count after the story",
            )
            assert gauge_percent(status) >= fill - 1  # the reply's tokens as the server said
            await continue_after_compression(app, pilot, story_server)
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []


async def test_a_long_reply_counts_whole_after_a_resume_too(
    story_server: DemoModelServer, tmp_path: Path
) -> None:
    provider = ProviderConfig(base_url=story_server.base_url, model="demo")
    db = tmp_path / "desk.db"
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    app = DeskApp(gateway, connection(story_server.base_url), handle_signals=False)
    async with app.run_test(size=(120, 30)) as pilot:
        fill = await tell_a_story(app, pilot, story_server)
        session = app.session_id
    assert gateway.shutdown(timeout_s=5.0).threads_left == []

    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    resumed = DeskApp(
        gateway,
        connection(story_server.base_url),
        handle_signals=False,
        startup=Startup(resume=True, resume_id=session),
    )
    try:
        async with resumed.run_test(size=(120, 30)) as pilot:
            status = resumed.status_bar
            await wait_until(pilot, lambda: resumed.session_id == session, what="the resume")
            await wait_until(pilot, lambda: status.window_note != "", what="the gateway's count")
            assert gauge_percent(status) >= fill - 1
            await continue_after_compression(resumed, pilot, story_server)
    finally:
        assert gateway.shutdown(timeout_s=5.0).threads_left == []
