"""Compression through the gateway: /compress, its Cancel, prompts queued meanwhile, the
automatic trigger, the cooldown ladder, quitting, and the lease across processes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.compression.plan import SUMMARY_MARKER
from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from agent.store.liveness import lease_holder
from contract.events import CompressionComplete, CompressionProgressed, PromptQueued
from demo_model.server import DemoModelServer
from tests.compression.kit import WINDOW, long_transcript, snapshot
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig


class Desk:
    """A gateway over a store, with one session holding a long transcript."""

    def __init__(
        self, provider: ProviderConfig, db: Path, exchanges: int = 8, **config: object
    ) -> None:
        self.store = SqliteStore(db)
        settings: dict[str, object] = {"context_window": WINDOW, "compress_threshold": 100.0}
        settings.update(config)
        self.gateway = Gateway(
            GatewayConfig(provider=provider, cwd=db.parent, **settings),  # type: ignore[arg-type]
            store=self.store,
        )
        self.log = EventLog()
        self.gateway.subscribe(self.log)
        row = self.store.sessions.create_session(
            title="long", model="demo", messages=long_transcript(exchanges)
        )
        self.session = self.gateway.session_resume(row.id).session_id

    def compress(self) -> str:
        return self.gateway.session_compress(self.session).turn_id

    def outcome(self, turn_id: str, timeout: float = 10) -> CompressionComplete:
        def done(_ev: object) -> bool:
            return any(c.turn_id == turn_id for c in self.log.of_type(CompressionComplete))

        assert self.log.wait_for(done, timeout)
        return next(c for c in self.log.of_type(CompressionComplete) if c.turn_id == turn_id)

    def phases(self, turn_id: str) -> list[str]:
        return [p.phase for p in self.log.of_type(CompressionProgressed) if p.turn_id == turn_id]


@pytest.fixture
def desk(provider: ProviderConfig, tmp_path: Path) -> Iterator[Desk]:
    d = Desk(provider, tmp_path / "desk.db")
    yield d
    assert d.gateway.shutdown(timeout_s=10).threads_left == []


def test_compress_commits_and_the_next_turn_sends_the_summary(
    desk: Desk, demo_server: DemoModelServer
) -> None:
    before = len(desk.gateway.history(desk.session))
    done = desk.outcome(desk.compress())
    assert done.status == "committed", done.message
    assert done.after_tokens < done.before_tokens
    phases = desk.phases(done.turn_id)
    assert phases[0] == "lease" and phases[-1] == "done"
    assert phases.index("prepare") < phases.index("commit")
    history = desk.gateway.history(desk.session)
    assert len(history) < before
    assert desk.store.transcript.load_history(desk.session) == history
    turn = desk.gateway.prompt_submit(desk.session, "reply with exactly: carried on").turn_id
    assert desk.log.complete(turn).text == "carried on"
    sent = demo_server.records.last().messages
    assert any(SUMMARY_MARKER in (m.get("content") or "") for m in sent)


def test_a_resumed_session_marks_its_summary_for_frontends(
    desk: Desk, provider: ProviderConfig
) -> None:
    assert desk.outcome(desk.compress()).status == "committed"
    again = Gateway(GatewayConfig(provider=provider), store=desk.store)
    try:
        entries = again.session_resume(desk.session).transcript
    finally:
        again.shutdown(timeout_s=5)
    flagged = [e for e in entries if e.summary]
    assert len(flagged) == 1 and flagged[0].role == "user"
    assert flagged[0].content.startswith(SUMMARY_MARKER)  # the marker is its first line
    assert not any(SUMMARY_MARKER in e.content for e in entries if not e.summary)


@pytest.mark.parametrize("surface", [Surface.DESK_BUTTON, Surface.DESK_KEY])
def test_cancel_mid_summary_restores_everything_and_the_next_turn_works(
    surface: Surface, desk: Desk, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=60.0)
    before = snapshot(desk.store, desk.session)
    history = desk.gateway.history(desk.session)
    turn = desk.compress()
    assert desk.log.wait_for(
        lambda _e: any(p.tokens_out >= 3 for p in desk.log.of_type(CompressionProgressed))
    )
    stop = StopRequest.by_user(surface)
    assert desk.gateway.compression_cancel(desk.session, stop)
    done = desk.outcome(turn)
    assert done.status == "cancelled" and done.message == "compression cancelled"
    assert done.stop is not None and done.stop.issuer == "user"
    # Its own figures: the summary's connection closed, the attempt rolled back.
    assert done.stop.closed_ms is not None and done.stop.rolled_back_ms is not None
    assert done.stop.tool is None
    assert demo_server.records.wait_for(lambda r: r[-1].peer_closed_at is not None, 5)
    record = demo_server.records.last()
    assert record.tokens_generated < 256  # a summary has 256 tokens or more: the close cut it
    assert snapshot(desk.store, desk.session) == before
    assert desk.gateway.history(desk.session) == history
    demo_server.configure(tokens_per_second=0)
    after = desk.gateway.prompt_submit(desk.session, "reply with exactly: fine").turn_id
    assert desk.log.complete(after).text == "fine"


def test_a_cancel_right_after_compress_cancels_it_before_it_begins(
    desk: Desk, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=60.0, prompt_delay_s=1.0)
    before = snapshot(desk.store, desk.session)
    turn = desk.compress()  # its worker has not made its compressor yet, or just has
    stop = StopRequest.by_user(Surface.DESK_BUTTON)
    assert desk.gateway.compression_cancel(desk.session, stop)  # never "nothing runs"
    done = desk.outcome(turn)
    assert done.status == "cancelled" and done.stop is not None and done.stop.issuer == "user"
    assert snapshot(desk.store, desk.session) == before


def test_a_prompt_typed_during_compression_is_queued_not_an_abort(
    desk: Desk, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=150.0)
    turn = desk.compress()
    assert desk.log.wait_for(lambda _e: "summarize" in desk.phases(turn))
    queued = desk.gateway.prompt_submit(desk.session, "reply with exactly: after it")
    assert queued.queued
    assert desk.log.wait_for(
        lambda _e: any(p.turn_id == queued.turn_id for p in desk.log.of_type(PromptQueued))
    )
    assert desk.outcome(turn).status == "committed"
    assert desk.log.complete(queued.turn_id).text == "after it"


def test_quitting_during_compression_is_a_system_stop(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    demo_server.configure(tokens_per_second=60.0)
    d = Desk(provider, tmp_path / "desk.db")
    before = snapshot(d.store, d.session)
    turn = d.compress()
    assert d.log.wait_for(lambda _e: "summarize" in d.phases(turn))
    assert d.gateway.shutdown(timeout_s=10).threads_left == []
    done = d.outcome(turn, timeout=0)
    assert done.status == "cancelled"
    assert done.stop is not None
    assert done.stop.issuer == "system" and done.stop.surface == "gateway.shutdown"
    check = SqliteStore(tmp_path / "desk.db")
    try:
        assert snapshot(check, d.session) == before
    finally:
        check.close()


def test_the_automatic_trigger_compresses_before_the_turn(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    d = Desk(provider, tmp_path / "desk.db", compress_threshold=0.75)
    try:
        turn = d.gateway.prompt_submit(d.session, "reply with exactly: compact now").turn_id
        assert d.log.complete(turn).text == "compact now"
        assert d.outcome(turn, timeout=0).status == "committed"
        summary_call, answer_call = demo_server.records.list()[-2:]
        assert any(SUMMARY_MARKER in (m.get("content") or "") for m in answer_call.messages)
        assert not any(SUMMARY_MARKER in (m.get("content") or "") for m in summary_call.messages)
    finally:
        assert d.gateway.shutdown(timeout_s=10).threads_left == []


def test_failures_arm_the_cooldown_ladder_and_a_success_resets_it(
    desk: Desk, demo_server: DemoModelServer
) -> None:
    demo_server.configure(fault="http:500")
    for step, wait in enumerate((60.0, 300.0, 900.0, 900.0), start=1):
        done = desk.outcome(desk.compress())  # manual: ignores the cooldown
        assert done.status == "failed" and "500" in done.message
        cooldown = desk.store.compressions.get_cooldown(desk.session)
        assert cooldown is not None and cooldown.step == step
        assert cooldown.until is not None and abs(cooldown.until - time.time() - wait) < 5
    assert desk.store.leases.get_lease(desk.session) is None
    demo_server.configure(fault=None)
    assert desk.outcome(desk.compress()).status == "committed"
    cooldown = desk.store.compressions.get_cooldown(desk.session)
    assert cooldown is not None and cooldown.step == 0 and cooldown.until is None


def test_an_automatic_compression_waits_out_the_cooldown(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    # the transcript fills about half of this window: past the threshold, but it fits
    d = Desk(provider, tmp_path / "desk.db", compress_threshold=0.3, context_window=16000)
    try:
        d.store.compressions.set_cooldown(d.session, time.time() + 60, 1)
        turn = d.gateway.prompt_submit(d.session, "reply with exactly: no compression").turn_id
        assert d.log.complete(turn).text == "no compression"
        assert len(demo_server.records.list()) == 1
        assert d.log.of_type(CompressionComplete) == []
    finally:
        assert d.gateway.shutdown(timeout_s=10).threads_left == []


def test_a_lease_held_by_another_process_refuses_and_is_left_alone(
    desk: Desk, tmp_path: Path
) -> None:
    other = SqliteStore(tmp_path / "desk.db")  # stands for a second desk process
    try:
        holder = lease_holder(other.owner, "42")  # an owner that runs: not to be taken over
        assert other.leases.acquire_lease(desk.session, holder, 120.0)
        done = desk.outcome(desk.compress())
        assert done.status == "busy" and "another compression" in done.message
        lease = other.leases.get_lease(desk.session)
        assert lease is not None and lease.holder == holder
    finally:
        other.close()


def test_archived_messages_can_be_viewed_after_a_compression(desk: Desk) -> None:
    from contract.events import ConsoleComplete, ConsoleOutput

    assert desk.outcome(desk.compress()).status == "committed"
    command = desk.gateway.console_run(desk.session, "/archived")

    def done(_ev: object) -> bool:
        return any(c.command_id == command for c in desk.log.of_type(ConsoleComplete))

    assert desk.log.wait_for(done)
    text = "".join(o.text for o in desk.log.of_type(ConsoleOutput) if o.command_id == command)
    assert "messages replaced by summaries" in text
    assert "[user] question 1:" in text and "[assistant] answer 1:" in text


def test_a_request_that_cannot_fit_compresses_first_cooldown_or_not(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    d = Desk(provider, tmp_path / "desk.db", compress_threshold=0.75)  # a 4,000-token window
    try:
        d.store.compressions.set_cooldown(d.session, time.time() + 60, 1)
        turn = d.gateway.prompt_submit(d.session, "reply with exactly: made room").turn_id
        assert d.log.complete(turn).text == "made room"
        assert d.outcome(turn, timeout=0).status == "committed"
    finally:
        assert d.gateway.shutdown(timeout_s=10).threads_left == []
