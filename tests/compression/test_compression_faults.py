"""Compressions that go wrong leave nothing held: no lease, no running session, no stop lost.

- Without a store, a cancelled compression lets go of its in-memory lease: the next
  ``/compress`` commits at once.
- A bug inside a compression (an error that is not the store's) ends it as failed, releases
  its lease and leaves the session free for the next prompt.
- A stop that arrives while a compression is being prepared (before its compressor exists)
  still cancels it: no summary request reaches the model server.

The store here is a real SQLite store seen through a small wrapper that injects the fault
(an error, or a pause the test controls) at one call.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from agent.compression.plan import SUMMARY_MARKER
from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import Cooldown, SessionStore, SqliteStore
from contract.events import CompressionComplete, CompressionProgressed
from demo_model.server import DemoModelServer
from tests.compression.kit import WINDOW, long_transcript
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig


class Faulty:
    """A store whose compression group runs ``fault(name)`` before the named call."""

    def __init__(self, store: SessionStore, name: str, fault: Any) -> None:
        self._store = store
        self._name = name
        self._fault = fault

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @property
    def compressions(self) -> Any:
        store, name, fault = self._store, self._name, self._fault

        class Group:
            def __getattr__(self, attr: str) -> Any:
                real = getattr(store.compressions, attr)
                if attr != name:
                    return real

                def call(*args: Any, **kwargs: Any) -> Any:
                    fault()
                    return real(*args, **kwargs)

                return call

        return Group()


def completions(log: EventLog, count: int = 1) -> list[CompressionComplete]:
    assert log.wait_for(lambda _e: len(log.of_type(CompressionComplete)) >= count, 30)
    return log.of_type(CompressionComplete)


def test_a_cancelled_compression_in_memory_lets_go_of_its_lease(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    config = GatewayConfig(provider=provider, context_window=WINDOW, compress_threshold=100.0)
    gateway = Gateway(config)  # no store: leases and cooldowns in memory
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        for n in range(8):  # a transcript long enough to compress
            words = " ".join(f"fact-{n}-{i}" for i in range(200))
            log.complete(gateway.prompt_submit(session, f"reply with exactly: {words}").turn_id)
        # The transcript outgrew the window on the way: an automatic compression may have run.
        before = len(log.of_type(CompressionComplete))
        shown = len(log.of_type(CompressionProgressed))
        demo_server.configure(tokens_per_second=40.0)
        gateway.session_compress(session)
        assert log.wait_for(
            lambda _e: any(p.tokens_out > 0 for p in log.of_type(CompressionProgressed)[shown:]),
            30,
        )
        assert gateway.compression_cancel(session, StopRequest.by_user(Surface.DESK_BUTTON))
        cancelled = completions(log, before + 1)[before]
        assert cancelled.status == "cancelled"
        demo_server.configure(tokens_per_second=0)
        gateway.session_compress(session)
        again = completions(log, before + 2)[-1]
        assert again.status == "committed", again.message
        assert any(SUMMARY_MARKER in m.content for m in gateway.history(session))
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []


def saved_long_session(db: Path) -> str:
    with SqliteStore(db) as store:
        return store.sessions.create_session(title="long", messages=long_transcript()).id


def test_a_bug_inside_a_compression_releases_its_lease_and_the_session(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    session = saved_long_session(db)

    bugs = [RuntimeError("a bug in the commit")]

    def bug() -> None:  # once: the next prompt's own compression commits
        if bugs:
            raise bugs.pop()

    store = SqliteStore(db)
    config = GatewayConfig(provider=provider, cwd=tmp_path, context_window=WINDOW)
    gateway = Gateway(config, store=Faulty(store, "commit_compression", bug))  # type: ignore[arg-type]
    log = EventLog()
    gateway.subscribe(log)
    try:
        gateway.session_resume(session)
        gateway.session_compress(session)
        (failed,) = completions(log)
        assert failed.status == "failed" and "RuntimeError: a bug in the commit" in failed.message
        assert store.leases.get_lease(session) is None
        assert gateway.running_turns == 0
        turn = gateway.prompt_submit(session, "reply with exactly: still usable").turn_id
        assert log.complete(turn).text == "still usable"
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []


def test_a_stop_before_the_compressor_exists_still_cancels_the_compression(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    session = saved_long_session(db)
    preparing, go = threading.Event(), threading.Event()

    def pause() -> None:  # the automatic trigger reads the cooldown while it prepares
        preparing.set()
        assert go.wait(30), "the test never let the compression go on"

    store = SqliteStore(db)
    # A window the transcript fits in, so the trigger weighs the threshold and the cooldown.
    config = GatewayConfig(
        provider=provider, cwd=tmp_path, context_window=4 * WINDOW, compress_threshold=0.01
    )
    gateway = Gateway(config, store=Faulty(store, "get_cooldown", pause))  # type: ignore[arg-type]
    log = EventLog()
    gateway.subscribe(log)
    try:
        gateway.session_resume(session)
        turn = gateway.prompt_submit(session, "a prompt that compresses first").turn_id
        assert preparing.wait(30)
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
        go.set()
        done = log.complete(turn, timeout=30)
        assert done.exit_reason == "interrupted_by_user"
        (cancelled,) = completions(log)
        assert cancelled.status == "cancelled"
        assert demo_server.records.list() == []  # no summary request, and no prompt either
        assert store.compressions.get_cooldown(session) in (None, Cooldown(None, 0))
    finally:
        go.set()
        assert gateway.shutdown(timeout_s=10).threads_left == []
