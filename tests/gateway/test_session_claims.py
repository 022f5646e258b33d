"""Two gateways on one SQLite file: a session is live in one of them at a time. The second
resume is refused with one line naming the session while the first desk runs, and allowed once
the first closed it, let it go (eviction), or is gone (killed)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.store import OwnerLiveness, SqliteStore
from contract.events import MessageDelta
from demo_model.server import DemoModelServer
from tests.store.conftest import ScriptedLiveness
from tests.support import EventLog, claimed, poll_until
from tui_gateway.gateway import Gateway, GatewayConfig, GatewayError

A, B = "desk-a:101:1", "desk-b:202:2"

Open = Callable[..., tuple[Gateway, EventLog]]


class Alive:
    """Which owners run, as the test says."""

    def __init__(self) -> None:
        self.gone: set[str] = set()

    def __call__(self, owner: str) -> bool:
        return owner not in self.gone


@pytest.fixture
def alive() -> Alive:
    return Alive()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "desk.db"


@pytest.fixture
def desks(provider: ProviderConfig, db: Path, alive: Alive) -> Iterator[Open]:
    """Opens a gateway on its own store of the one file, as ``owner`` (None: this process)."""
    made: list[Gateway] = []

    def make(owner: str | None, **options: object) -> tuple[Gateway, EventLog]:
        liveness: OwnerLiveness | None = ScriptedLiveness(owner, alive) if owner else None
        config = GatewayConfig(provider=provider, **options)  # type: ignore[arg-type]
        gateway = Gateway(config, store=SqliteStore(db, liveness=liveness))
        log = EventLog()
        gateway.subscribe(log)
        made.append(gateway)
        return gateway, log

    yield make
    for gateway in made:
        gateway.shutdown(timeout_s=5)


def test_the_second_desk_is_refused_while_the_first_streams_and_resumes_after_it_closed(
    desks: Open, demo_server: DemoModelServer
) -> None:
    (a, a_log), (b, _) = desks(A), desks(B)
    demo_server.configure(tokens_per_second=60.0)
    sid = a.session_create()
    turn_id = a.prompt_submit(sid, "tell me a long story").turn_id
    assert a_log.wait_for(
        lambda events: any(isinstance(e.payload, MessageDelta) for e in events), 10
    )
    with pytest.raises(GatewayError) as refused:
        b.session_resume(sid)
    assert refused.value.message == (
        f"session {sid} is open in another desk (pid 101); close it there first"
    )
    assert sid not in b.live_sessions()  # nothing of it is live in b: b cannot write it
    with pytest.raises(GatewayError):
        b.prompt_submit(sid, "my prompt")
    a_log.complete(turn_id, timeout=30)
    a.shutdown(timeout_s=5)  # quitting the first desk gives the session back

    resumed = b.session_resume(sid)
    assert [e.role for e in resumed.transcript] == ["user", "assistant"]
    assert resumed.transcript[0].content == "tell me a long story"


def test_a_desk_that_is_gone_loses_the_session_at_once(desks: Open, alive: Alive) -> None:
    (a, _), (b, _) = desks(A), desks(B)
    sid = a.session_create()
    with pytest.raises(GatewayError, match="open in another desk"):
        b.session_resume(sid)
    alive.gone.add(A)  # killed: its claim is still on the row
    assert b.session_resume(sid).session_id == sid


def test_an_evicted_session_is_free_for_another_desk(desks: Open) -> None:
    (a, _), (b, _) = desks(A, max_sessions=1), desks(B)
    first = a.session_create()
    second = a.session_create()  # evicts the first
    assert first not in a.live_sessions()
    assert poll_until(lambda: _resumes(b, first))
    with pytest.raises(GatewayError, match=f"session {second} is open in another desk"):
        b.session_resume(second)


def test_a_killed_desk_process_loses_its_session_at_once(desks: Open, db: Path) -> None:
    (a, _) = desks(A)
    sid = a.session_create()
    a.session_rename(sid, "kept")  # a session never used is not kept
    a.shutdown(timeout_s=5)
    (b, _) = desks(None)  # this process's real liveness
    with claimed(db, sid) as other:
        with pytest.raises(GatewayError) as refused:
            b.session_resume(sid)
        assert f"(pid {other.pid})" in refused.value.message
        os.kill(other.pid, signal.SIGKILL)
        other.wait(10)
        assert b.session_resume(sid).session_id == sid


def _resumes(gateway: Gateway, session_id: str) -> bool:
    try:
        gateway.session_resume(session_id)
    except GatewayError:
        return False
    return True
