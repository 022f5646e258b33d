"""Event numbers from a shared store, and the events kept there for a resume on another host.

On a store several gateway hosts share (:class:`~agent.store.SharedStore`), a client that
reconnects to another host asks it ``session.events.since``; that host never saw the events, so
they must be in the database, numbered the same way. :class:`SharedEvents` gives the gateway's
:class:`~tui_gateway.events.event_hub.EventHub` both:

- numbers: a session's events are numbered locally from a block of :data:`BLOCK` numbers the
  database reserved (:meth:`SharedEvents.next_block`); the next host to hold the session
  reserves after it, so numbers never repeat across hosts. A database that is away when a block
  runs out lets the hub go on numbering past it (the session cannot move to another host
  meanwhile: its writes there would need this host's claim);
- the journal: every event is kept in memory at once (:meth:`SharedEvents.keep`, cheap, under
  the hub's lock) and written in batches about every :data:`FLUSH_S` seconds by a thread of
  its own; a batch the database refused waits for the next round (at most :data:`MAX_PENDING`
  events wait; older deltas go first, as ``message.complete`` carries the canonical text).
  Deltas are kept one by one, never joined here: a subscriber joins them at its own
  boundaries, and a client that saw number ``n`` must get exactly what came after ``n``
  (the agent already joins fast deltas, so a stream is about a hundred events a second).
"""

from __future__ import annotations

import json
import logging
import threading

from agent.store import EventLog, StoredEvent, StoredReplay, StoreError
from contract.events import GatewayEvent

_log = logging.getLogger(__name__)

BLOCK = 1000
"""Event numbers a host reserves for a session at a time."""

FLUSH_S = 0.05
"""Seconds between two batches written to the store."""

MAX_PENDING = 20_000
"""Events kept in memory while the store cannot take them."""


class SharedEvents:
    """Numbers and journal of a gateway on a shared store. Thread-safe.

    Args:
        log: the store's event log.
        flush_s: seconds between two batches.
    """

    def __init__(self, log: EventLog, *, flush_s: float = FLUSH_S) -> None:
        self._log = log
        self._flush_s = flush_s
        self._lock = threading.Lock()
        self._pending: list[GatewayEvent] = []
        self._closed = threading.Event()
        self._write_lock = threading.Lock()
        self.written = 0
        """Events written to the store so far."""
        self._thread = threading.Thread(target=self._loop, name="desk-event-journal", daemon=True)
        self._thread.start()

    def next_block(self, session_id: str) -> int | None:
        """Reserve the session's next :data:`BLOCK` numbers (never waits for a database that
        is away).

        Returns:
            the number before the block, or None when the store cannot give one (the session
            is not saved, or the database is away).
        """
        try:
            return self._log.reserve(session_id, BLOCK, wait=False)
        except StoreError:
            return None

    def keep(self, event: GatewayEvent) -> None:
        """Keep ``event`` for the next batch (a session's events only). Never blocks long."""
        if not event.session_id or self._closed.is_set():
            return
        with self._lock:
            self._pending.append(event)
            if len(self._pending) > MAX_PENDING:
                self._shed()

    def _shed(self) -> None:
        # Called with the lock held: drop the oldest deltas, then the oldest events.
        keep = [e for e in self._pending if e.control]
        deltas = [e for e in self._pending if not e.control]
        room = max(0, MAX_PENDING // 2 - len(keep))
        kept = keep + deltas[len(deltas) - room :] if room else keep[-MAX_PENDING // 2 :]
        self._pending = sorted(kept, key=lambda e: (e.session_id, e.seq))

    def since(self, session_id: str, seq: int) -> StoredReplay:
        """The kept events of ``session_id`` after ``seq``, from the store.

        Raises:
            StoreError: the store cannot be read.
        """
        return self._log.since(session_id, seq)

    def flush(self) -> int:
        """Write what is pending now, in one batch.

        Returns:
            how many events were written (0 when the store refused: they wait).
        """
        with self._write_lock:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return 0
            stored = [
                StoredEvent(e.session_id, e.seq, e.type, json.dumps(e.to_wire()["params"]))
                for e in batch
            ]
            try:
                written = self._log.append(stored, wait=False)
            except StoreError:
                with self._lock:  # back in front of what came meanwhile, for the next round
                    self._pending = batch + self._pending
                return 0
            except Exception as exc:  # a bug: tried again it would fail again; said, left out
                text = " ".join(str(exc).split())
                _log.error(
                    "desk: %d events were not kept for replay: %s: %s",
                    len(batch),
                    type(exc).__name__,
                    text,
                )
                return 0
            self.written += written
            return written

    def _loop(self) -> None:
        while not self._closed.wait(self._flush_s):
            try:
                self.flush()
            except Exception as exc:  # never the end of the journal: said, and on
                _log.error("desk: the event journal went on after %s", type(exc).__name__)

    def close(self) -> None:
        """Write what is pending and stop the thread (call before the store closes)."""
        self._closed.set()
        self._thread.join(timeout=5.0)
        self.flush()
