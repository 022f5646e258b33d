"""Event numbers come from the database in blocks that never overlap, whichever host reserves,
and the kept events come back in order, after the asked number, once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import pytest

from agent.store import StoredEvent
from agent.store.postgres.events import PostgresEvents
from contract.envelope import GatewayEvent
from contract.events import MessageDelta
from tests.store.postgres.conftest import OpenHost
from tests.support import poll_until
from tui_gateway.events.shared_events import SharedEvents


def test_blocks_of_numbers_never_overlap_across_hosts(open_host: OpenHost) -> None:
    a, b = open_host("host-a:1:1"), open_host("host-b:2:2")
    a.sessions.create_session("s1")
    blocks: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def reserve(store: object) -> None:
        barrier.wait(10)
        # wait=True: eight writers open connections at once; on a loaded machine that takes
        # longer than the journal's give-up-at-once (which is not what this test is about).
        base = store.events.reserve("s1", 100, wait=True)  # type: ignore[attr-defined]
        with lock:
            blocks.append(base)

    threads = [threading.Thread(target=reserve, args=((a, b)[n % 2],)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert sorted(blocks) == list(range(0, 800, 100))
    assert a.events.reserve("missing", 10) is None


def test_kept_events_come_back_after_the_asked_number_in_order(open_host: OpenHost) -> None:
    a = open_host("host-a:1:1")
    a.sessions.create_session("s1")
    a.events.keep = 5
    assert a.events.since("s1", 0).known is False
    events = [StoredEvent("s1", n, "message.delta", f'{{"seq": {n}}}') for n in (3, 1, 2)]
    assert a.events.append(events + [StoredEvent("nope", 1, "x", "{}")]) == 3
    assert a.events.append(events) == 0  # kept already: skipped, never doubled
    replay = a.events.since("s1", 1)
    assert [e.seq for e in replay.events] == [2, 3]
    assert (replay.truncated, replay.last_seq, replay.known) == (False, 3, True)
    # A block's unused numbers are a gap, not a truncation; forgetting old events is one.
    a.events.append([StoredEvent("s1", n, "t", "{}") for n in range(1000, 1006)])
    assert [e.seq for e in a.events.since("s1", 3).events] == list(range(1001, 1006))
    assert a.events.since("s1", 3).truncated is True  # 1, 2, 3 and 1000 are forgotten
    assert a.events.since("s1", 1000).truncated is False


class AppendFailsOnce(PostgresEvents):
    """The real event log, whose next append raises what no store raises (a bug)."""

    failures = 1

    def append(self, events: Sequence[StoredEvent], *, wait: bool = True) -> int:
        if self.failures:
            self.failures -= 1
            raise ZeroDivisionError("a bug in the journal")
        return super().append(events, wait=wait)


def test_the_journal_thread_says_what_it_did_not_expect_and_goes_on(
    open_host: OpenHost, caplog: pytest.LogCaptureFixture
) -> None:
    a = open_host("host-a:1:1")
    a.sessions.create_session("s1")
    a.events.__class__ = AppendFailsOnce
    journal = SharedEvents(a.events, flush_s=0.01)
    try:
        with caplog.at_level(logging.ERROR, logger="tui_gateway.events.shared_events"):
            journal.keep(GatewayEvent("message.delta", "s1", 1, MessageDelta("t", "lost")))
            assert poll_until(lambda: "a bug in the journal" in caplog.text)
        (record,) = caplog.records
        assert "ZeroDivisionError" in record.getMessage()
        journal.keep(GatewayEvent("message.delta", "s1", 2, MessageDelta("t", "kept")))
        assert poll_until(lambda: [e.seq for e in a.events.since("s1", 0).events] == [2])
    finally:
        journal.close()
