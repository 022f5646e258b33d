"""Hosts on one database: liveness from the heartbeat lease and the advisory lock, a host killed
with SIGKILL recovered within its bound, and a late write of its fencing number refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from agent.provider.types import ChatMessage
from agent.store import CRASH_EXIT_REASON, StoreFenced, TurnOutcome
from agent.store.postgres import HostLiveness, PostgresStore
from tests.pg_cluster import Cluster
from tests.store.postgres.conftest import OpenHost
from tests.support import poll_until
from tests.wire.kit import ROOT, child_env

DONE = TurnOutcome(status="completed", exit_reason="completed")


def wait_until(check: object, timeout_s: float = 20.0) -> bool:
    """Poll ``check()`` (a store read) until it is true or the deadline passes."""
    assert callable(check)
    return poll_until(check, timeout_s, every_s=0.05)


def test_a_running_host_is_alive_and_a_closed_one_is_gone(open_host: OpenHost) -> None:
    a = open_host("host-a:1:1")
    b = open_host("host-b:2:2")
    live = HostLiveness(b._db)
    assert live.is_alive("host-a:1:1") and live.is_alive("host-b:2:2")
    assert not live.is_alive("never-seen:3:3")
    a.close()
    assert not live.is_alive("host-a:1:1")


def test_a_session_belongs_to_one_live_host(open_host: OpenHost) -> None:
    a = open_host("host-a:1:1")
    b = open_host("host-b:2:2")
    a.sessions.create_session("s1")
    a.turns.start_turn("t1", "s1", "running on a")
    with pytest.raises(StoreFenced, match="live on host-a"):
        b.transcript.append_message("s1", ChatMessage("user", "from b"))
    with pytest.raises(StoreFenced):
        b.claim_session("s1")
    assert b.turns.recover_open_turns() == []  # a runs: its turn is its own
    a.close()  # a clean close gives the session back
    assert b.claim_session("s1") > 0


def test_a_killed_host_is_recovered_within_its_bound_and_its_late_write_refused(
    pg_cluster: Cluster, schema: str, open_host: OpenHost
) -> None:
    owner = "host-a:4242:1"
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.store.postgres.host_child", pg_cluster.url, schema, owner],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=child_env(),
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().decode()
        assert line.startswith("ready "), line
        old_fence = int(line.split()[1])
        b = open_host("host-b:2:2", heartbeat_s=0.2, grace_s=0.5, sweep_s=0.2)
        assert b.turns.get_turn("t1").is_open  # type: ignore[union-attr]
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        assert wait_until(lambda: not b.turns.get_turn("t1").is_open)  # type: ignore[union-attr]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    turn = b.turns.get_turn("t1")
    assert (
        turn is not None and turn.exit_reason == CRASH_EXIT_REASON and "4242" in (turn.error or "")
    )
    assert [(m.role, m.content, m.partial) for m in b.transcript.all_messages("s1")] == [
        ("user", "explain the moon", False),
        ("assistant", "The moon is", True),
    ]
    new_fence = b.claims.fence_of("s1")
    assert new_fence is not None and new_fence > old_fence
    # The killed host's late write, as it would come if it had only been cut off: refused.
    late = open_host(owner, recover=False)
    late.claims.adopt("s1", old_fence)
    with pytest.raises(StoreFenced, match="taken over"):
        late.turns.record_turn_end("t1", [], DONE)
    assert late.turns.save_draft("t1", "The moon is made of cheese") is False
    after = b.turns.get_turn("t1")
    assert after is not None and after.exit_reason == CRASH_EXIT_REASON
    assert len(b.transcript.all_messages("s1")) == 2


def test_a_host_that_lost_its_connection_takes_its_lock_again(open_host: OpenHost) -> None:
    a = open_host("host-a:1:1", heartbeat_s=0.1, grace_s=5.0)
    b = open_host("host-b:2:2")
    live = HostLiveness(b._db, grace_s=0.0)
    with b._db.first.cursor() as cur:  # the server ends a's lock connection
        cur.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
            " AND classid = hashtext(current_schema())::oid AND objid = %s AND objsubid = 2",
            (a.host.lock_key,),  # a's lock only: the cluster serves other tests beside this one
        )
    beats = a.host.beats
    assert wait_until(lambda: a.host.beats > beats + 2)
    assert live.is_alive("host-a:1:1")  # lock held again, lease renewed


def test_a_store_opened_as_another_host_never_writes_as_this_one(
    pg_cluster: Cluster, schema: str
) -> None:
    with PostgresStore(pg_cluster.url, schema=schema) as mine:
        assert mine.owner.split(":")[1] == str(os.getpid())


def test_a_late_write_is_refused_after_the_new_holder_released_the_session(
    open_host: OpenHost,
) -> None:
    """Fencing holds whether or not the host that took the session over still holds it: a host
    presumed dead comes back with its old fencing number after the new holder let go."""
    a = open_host("host-a:1:1")
    a.sessions.create_session("s1")
    old_fence = a.claims.fence_of("s1")
    assert old_fence is not None
    a.close()  # a is gone (as a host cut off and declared dead would be)
    b = open_host("host-b:2:2")
    assert b.claim_session("s1") > old_fence
    b.release_session("s1")  # b is done with it: nobody holds the claim now
    late = open_host("host-c:3:3", recover=False)  # a's memory, back on a new connection
    late.claims.adopt("s1", old_fence)
    with pytest.raises(StoreFenced, match="taken over"):
        late.transcript.append_message("s1", ChatMessage("user", "stale"))
    assert b.transcript.all_messages("s1") == []
    # Opening the session anew (a resume reads it again from the database) is not stale.
    assert late.claim_session("s1") > old_fence
    late.transcript.append_message("s1", ChatMessage("user", "fresh"))
    assert [m.content for m in b.transcript.all_messages("s1")] == ["fresh"]


def test_the_heartbeat_outlives_a_sweep_that_fails_unexpectedly(open_host: OpenHost) -> None:
    a = open_host("host-a:1:1", heartbeat_s=0.1, grace_s=0.1, sweep_s=0.1)
    failed: list[int] = []

    def sweep() -> None:
        failed.append(a.host.beats)
        raise RuntimeError("a sweep that breaks")

    a.host._sweep = sweep
    assert wait_until(lambda: len(failed) >= 2)  # it failed, said so, and beat on
    beats = a.host.beats
    assert wait_until(lambda: a.host.beats > beats + 2)
    assert HostLiveness(open_host("host-b:2:2")._db).is_alive("host-a:1:1")
