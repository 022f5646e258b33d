"""A compression stopped in any phase leaves everything as it was; one that reaches commit
admission completes. Deterministic phase holds, plus a hypothesis draw over the summary."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.compression import CompressionProgress, Compressor
from agent.compression.backend import Commit, StoreBackend
from agent.compression.plan import SUMMARY_MARKER
from agent.provider.client import ChatClient, ProviderConfig
from agent.stops import Issuer, StopRequest, Surface
from agent.store import SqliteStore
from demo_model.server import DemoModelServer
from tests.compression.kit import WINDOW, long_transcript, saved_session, snapshot
from tests.support import cut_short


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "desk.db")
    yield s
    s.close()


class HoldAt:
    """A progress listener that holds the compression's thread at a phase (and token)."""

    def __init__(self, phase: str, tokens: int = 0) -> None:
        self.phase, self.tokens = phase, tokens
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, progress: CompressionProgress) -> None:
        if self.reached.is_set() or progress.phase != self.phase:
            return
        if progress.tokens_out >= self.tokens:
            self.reached.set()
            assert self.release.wait(10)


def compressor(
    provider: ProviderConfig, store: SqliteStore, session: str, **kw: object
) -> Compressor:
    return Compressor(
        ChatClient(provider),
        StoreBackend(store),
        session,
        store.transcript.load_history(session),
        window_tokens=WINDOW,
        **kw,  # type: ignore[arg-type]
    )


def run_in_thread(c: Compressor) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(c.run()), name="test-compress")
    thread.start()
    return thread, out


def test_a_compression_commits_head_summary_tail(
    provider: ProviderConfig, store: SqliteStore
) -> None:
    session = saved_session(store, long_transcript())
    before = store.transcript.load_history(session)
    outcome = compressor(provider, store, session).run()
    assert outcome.status == "committed", outcome.message
    after = store.transcript.load_history(session)
    assert outcome.history == after
    assert after[0] == before[0] and after[1:3] == before[1:3]  # the head
    assert after[3].content.startswith(SUMMARY_MARKER)
    assert after[-6:] == before[-6:]  # the tail
    assert outcome.after_tokens < outcome.before_tokens
    archived = [m for m in store.transcript.all_messages(session) if not m.active]
    assert len(archived) == len(before) - len(after) + 1  # kept, never deleted
    assert store.leases.get_lease(session) is None


@pytest.mark.parametrize("phase", ["lease", "prepare", "summarize", "commit"])
@pytest.mark.parametrize("issuer", ["user", "system"])
def test_a_stop_before_admission_rolls_everything_back(
    phase: str,
    issuer: str,
    provider: ProviderConfig,
    store: SqliteStore,
    demo_server: DemoModelServer,
) -> None:
    demo_server.configure(tokens_per_second=200.0)
    session = saved_session(store, long_transcript())
    before = snapshot(store, session)
    history = store.transcript.load_history(session)
    hold = HoldAt(phase, tokens=3 if phase == "summarize" else 0)
    c = compressor(provider, store, session, listener=hold)
    thread, out = run_in_thread(c)
    assert hold.reached.wait(10)
    stop = (
        StopRequest.by_user(Surface.DESK_BUTTON)
        if issuer == "user"
        else StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "quitting")
    )
    c.interrupt(stop)
    hold.release.set()
    thread.join(10)
    (outcome,) = out
    assert outcome.status == "cancelled"  # type: ignore[attr-defined]
    assert outcome.stop is stop  # type: ignore[attr-defined]
    assert snapshot(store, session) == before
    assert store.transcript.load_history(session) == history
    if phase in ("summarize", "commit"):
        record = demo_server.records.last()
        if phase == "summarize":
            cut_short(demo_server)
        else:
            assert record.outcome == "completed"
    # the next attempt works: nothing was left locked
    demo_server.configure(tokens_per_second=0)
    assert compressor(provider, store, session).run().status == "committed"


def test_a_soft_interrupt_is_refused_and_never_aborts(
    provider: ProviderConfig, store: SqliteStore
) -> None:
    session = saved_session(store, long_transcript())
    hold = HoldAt("summarize", tokens=2)
    c = compressor(provider, store, session, listener=hold)
    thread, out = run_in_thread(c)
    assert hold.reached.wait(10)
    soft = StopRequest(Issuer.USER, Surface.DESK_KEY, "typed while compressing", hard=False)
    with pytest.raises(ValueError, match="a soft interrupt is a steer"):
        c.interrupt(soft)
    assert c.fence.stop is None
    hold.release.set()
    thread.join(10)
    assert out[0].status == "committed"  # type: ignore[attr-defined]


class BlockingCommit(StoreBackend):
    """A store backend whose commit waits at a barrier: the fence has admitted it by then."""

    def __init__(self, store: SqliteStore) -> None:
        super().__init__(store)
        self.inside = threading.Event()
        self.go = threading.Event()

    def commit(self, session_id: str, attempt: int, holder: str, commit: Commit) -> bool:
        self.inside.set()
        assert self.go.wait(10)
        return super().commit(session_id, attempt, holder, commit)


def test_a_stop_after_admission_waits_for_the_commit(
    provider: ProviderConfig, store: SqliteStore
) -> None:
    session = saved_session(store, long_transcript())
    backend = BlockingCommit(store)
    c = Compressor(
        ChatClient(provider),
        backend,
        session,
        store.transcript.load_history(session),
        window_tokens=WINDOW,
    )
    thread, out = run_in_thread(c)
    assert backend.inside.wait(10)
    stop = StopRequest.by_user(Surface.DESK_KEY)
    c.interrupt(stop)  # too late to cancel: the commit is under way
    assert c.fence.state == "admitted"
    backend.go.set()
    thread.join(10)
    assert out[0].status == "committed"  # type: ignore[attr-defined]
    assert out[0].stop is stop  # type: ignore[attr-defined]
    assert store.transcript.load_history(session)[3].content.startswith(SUMMARY_MARKER)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(token=st.integers(min_value=1, max_value=200), late=st.booleans())
def test_a_stop_at_any_moment_gives_commit_or_full_rollback(
    token: int, late: bool, provider: ProviderConfig, tmp_path_factory: pytest.TempPathFactory
) -> None:
    store = SqliteStore(tmp_path_factory.mktemp("c") / "desk.db")
    try:
        session = saved_session(store, long_transcript())
        before = snapshot(store, session)
        hold = HoldAt("commit" if late else "summarize", tokens=0 if late else token)
        c = compressor(provider, store, session, listener=hold)
        thread, out = run_in_thread(c)
        assert hold.reached.wait(10)  # the summary is longer than 200 tokens
        c.interrupt(StopRequest.by_user(Surface.DESK_KEY))
        hold.release.set()
        thread.join(10)
        (outcome,) = out
        status = outcome.status  # type: ignore[attr-defined]
        if status == "cancelled":
            assert snapshot(store, session) == before
        else:
            assert status == "committed" and late  # the stop came after commit admission
            assert store.leases.get_lease(session) is None
    finally:
        store.close()
