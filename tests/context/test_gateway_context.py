"""The gateway keeps each session inside its window: a 400 is understood and retried once,
a prompt that cannot fit is reported and kept out of later requests, a weak compression is not
repeated on every turn, and a resumed session does not compress because it was resumed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.compression import CompressionProgress, Compressor
from agent.compression.backend import StoreBackend
from agent.provider.client import ChatClient, ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import CompressionComplete, ConsoleComplete, ContextWindowKnown
from demo_model import DemoModelServer
from tests.compression.kit import long_transcript, saved_session
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

from .kit import ROOMY_2K, prose, strict_2k


class Desk:
    def __init__(self, provider: ProviderConfig, db: Path, **config: object) -> None:
        self.store = SqliteStore(db)
        self.gateway = Gateway(
            GatewayConfig(provider=provider, approvals=False, cwd=db.parent, **config),  # type: ignore[arg-type]
            store=self.store,
        )
        self.log = EventLog()
        self.gateway.subscribe(self.log)

    def ask(self, session: str, text: str) -> tuple[str, str | None]:
        done = self.log.complete(self.gateway.prompt_submit(session, text).turn_id, 60)
        return done.status, done.error

    def close(self) -> None:
        assert self.gateway.shutdown(timeout_s=10).threads_left == []


@pytest.fixture
def desk(provider: ProviderConfig, tmp_path: Path) -> Iterator[Desk]:
    d = Desk(provider, tmp_path / "desk.db")
    yield d
    d.close()


def test_a_400_from_a_window_smaller_than_configured_is_learned_and_retried_once(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    strict_2k(demo_server, n_ctx=ROOMY_2K)
    d = Desk(provider, tmp_path / "desk.db", context_window=16384)  # the person was wrong
    try:
        session = d.gateway.session_create()
        for n in range(2):
            assert d.ask(session, f"reply with exactly: ok {n} " + prose(2_000)) == (
                "completed",
                None,
            )
        statuses = [r.status for r in demo_server.records.list()]
        assert statuses.count(400) == 1  # learned once: never again
        assert d.log.of_type(CompressionComplete)[-1].status == "committed"
        window = d.log.of_type(ContextWindowKnown)[-1]
        assert (window.tokens, window.source) == (ROOMY_2K, "server")
    finally:
        d.close()


def test_a_second_400_is_reported_with_figures_and_the_session_stays_usable(
    desk: Desk, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    session = desk.gateway.session_create()
    assert desk.ask(session, "reply with exactly: first")[0] == "completed"
    demo_server.configure(fault="context")  # the server refuses everything as too large
    status, error = desk.ask(session, "reply with exactly: refused")
    assert status == "failed" and error is not None
    assert error.startswith("not sent: the model server counted ")
    assert "-token window" in error and "/new" in error and "context_window" in error
    demo_server.configure(fault=None)
    assert desk.ask(session, "reply with exactly: still here") == ("completed", None)
    sent = demo_server.records.list()[-1].messages
    assert not any("refused" in (m.get("content") or "") for m in sent)  # kept out
    history = desk.gateway.history(session)
    assert [m.unsent for m in history if m.role == "user"] == [False, True, False]


def test_a_prompt_no_compression_can_fit_is_not_sent(
    desk: Desk, demo_server: DemoModelServer
) -> None:
    strict_2k(demo_server)
    session = desk.gateway.session_create()
    status, error = desk.ask(session, prose(20_000))
    assert status == "failed" and error is not None and error.startswith("not sent: ")
    assert "context window is 2,048" in error
    assert demo_server.records.list() == []  # not one request
    assert desk.ask(session, "reply with exactly: fine") == ("completed", None)
    (record,) = demo_server.records.list()
    assert len(record.messages[-1]["content"]) < 100


def test_a_weak_compression_is_reported_once_not_run_on_every_turn(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    strict_2k(demo_server, n_ctx=ROOMY_2K)
    d = Desk(provider, tmp_path / "desk.db", compress_threshold=0.5)
    try:
        session = d.gateway.session_create()
        for n in range(2):  # the tool definitions and one such prompt fill 60 % of the window
            assert d.ask(session, prose(1_500) + f"\nreply with exactly: ok {n}")[0] == "completed"
        (weak,) = d.log.of_type(CompressionComplete)
        assert weak.status == "committed" and "the session is still at" in weak.message
        for n in range(3):
            assert d.ask(session, f"reply with exactly: short {n}")[0] == "completed"
        assert len(d.log.of_type(CompressionComplete)) == 1  # not again on every turn
    finally:
        d.close()


def test_a_resumed_session_does_not_compress_because_it_was_resumed(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(tokenizer="subword", n_ctx=8192)
    db = tmp_path / "desk.db"
    d = Desk(provider, db)
    session = d.gateway.session_create()
    used = 0
    while used < 0.62 * 8192:  # under the threshold, a turn short of it (one adds ~7 %)
        assert d.ask(session, prose(2_000) + "\nreply with exactly: noted")[0] == "completed"
        used = d.log.of_type(ContextWindowKnown)[-1].used_tokens
    assert d.log.of_type(CompressionComplete) == []
    d.close()
    again = Desk(provider, db)
    try:
        again.gateway.session_resume(session)
        assert again.ask(session, "reply with exactly: resumed")[0] == "completed"
        assert again.log.of_type(CompressionComplete) == []
        window = again.log.of_type(ContextWindowKnown)[-1]
        assert window.measured and window.chars_per_token > 3.1  # the saved count, not 3.0
    finally:
        again.close()


def test_the_stored_phase_follows_the_real_one(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(tokens_per_second=100.0)
    store = SqliteStore(tmp_path / "desk.db")
    try:
        session = saved_session(store, long_transcript())
        reached, release = threading.Event(), threading.Event()

        def hold(progress: CompressionProgress) -> None:
            if progress.phase == "summarize" and progress.tokens_out >= 2 and not reached.is_set():
                reached.set()
                assert release.wait(10)

        c = Compressor(
            ChatClient(provider),
            StoreBackend(store),
            session,
            store.transcript.load_history(session),
            window_tokens=4000,
            listener=hold,
        )
        out: list[object] = []
        worker = threading.Thread(target=lambda: out.append(c.run()))
        worker.start()
        assert reached.wait(10)
        attempt = store.compressions.latest_compression(session)
        assert attempt is not None and attempt.phase == "summarize"
        c.interrupt(StopRequest.by_user(Surface.DESK_BUTTON))
        release.set()
        worker.join(10)
        ended = store.compressions.latest_compression(session)
        assert ended is not None and ended.outcome == "cancelled" and ended.phase == "summarize"
    finally:
        store.close()


def test_digest_fits_the_window(desk: Desk, demo_server: DemoModelServer, tmp_path: Path) -> None:
    strict_2k(demo_server)
    (tmp_path / "big.md").write_text(prose(60_000))
    session = desk.gateway.session_create()
    command = desk.gateway.console_run(session, "digest big.md")

    def done(_e: object) -> bool:
        return any(c.command_id == command for c in desk.log.of_type(ConsoleComplete))

    assert desk.log.wait_for(done, 30)
    outcome = next(c for c in desk.log.of_type(ConsoleComplete) if c.command_id == command)
    assert outcome.status == "ok", outcome.message
    (record,) = demo_server.records.list()
    assert record.status == 200 and record.prompt_tokens < 2048


def test_a_prompt_larger_than_the_whole_window_is_refused_with_the_history_kept(
    desk: Desk, demo_server: DemoModelServer
) -> None:
    # a 60 KB paste in an 8,192-token window: no summary of the history can make room for it
    demo_server.configure(n_ctx=8192, tokenizer="subword", strict_template=True)
    session = desk.gateway.session_create()
    for n in range(5):
        assert desk.ask(session, f"reply with exactly: ok {n} " + prose(300))[0] == "completed"
    before = desk.gateway.history(session)
    saved = desk.store.transcript.load_history(session)
    asked = len(demo_server.records.list())
    status, error = desk.ask(session, prose(60_000))
    assert status == "failed" and error is not None
    assert error.startswith("not sent: the prompt alone needs ")
    assert "context window is 8,192" in error and "history is left as it was" in error
    assert desk.log.of_type(CompressionComplete) == []  # no summary made, none stored
    assert desk.store.compressions.latest_compression(session) is None
    assert len(demo_server.records.list()) == asked  # not one model request
    after = desk.gateway.history(session)
    assert after[: len(before)] == before  # the history as it was, the refused prompt after it
    assert [m.unsent for m in after[len(before) :]] == [True]
    assert desk.store.transcript.load_history(session)[: len(saved)] == saved
    assert desk.ask(session, "reply with exactly: still here") == ("completed", None)
    sent = demo_server.records.list()[-1].messages
    assert len(sent) == len(before) + 1  # the whole history, without the refused paste


def test_a_refused_prompt_is_not_offered_again_on_resume(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    # Refused as too large, its text came back to the person then: a resume must not offer it
    # again as a prompt "not sent when desk last closed", as it does a queued one.
    demo_server.configure(n_ctx=8192, tokenizer="subword", strict_template=True)
    d = Desk(provider, tmp_path / "desk.db")
    try:
        session = d.gateway.session_create()
        assert d.ask(session, "reply with exactly: first")[0] == "completed"
        status, error = d.ask(session, prose(60_000))
        assert status == "failed" and error is not None and error.startswith("not sent: ")
    finally:
        d.close()
    again = Desk(provider, tmp_path / "desk.db")
    try:
        transcript = again.gateway.session_resume(session).transcript
        prompts = [e for e in transcript if e.role == "user"]
        assert [(e.content[:5], e.unsent) for e in prompts] == [("reply", False), (prose(5), False)]
        refused = next(e for e in transcript if e.note)
        assert refused.note.startswith("not sent: ")  # it still says why it was not sent
    finally:
        again.close()
