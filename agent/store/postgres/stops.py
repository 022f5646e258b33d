"""Stops sent to a turn that runs on another host: a durable row, announced with ``NOTIFY``.

A host asked to stop a turn it does not run (``session.interrupt`` or ``compression.cancel``
for a session live elsewhere) writes one ``stop_requests`` row addressed to the turn's owner
and, in the same transaction, ``NOTIFY``s the store's channel (PostgreSQL delivers it at the
commit, so the row is always there when the notification arrives). The owner's
:meth:`PostgresStops.listen` thread, on a connection of its own, wakes, takes every row
addressed to it in one ``UPDATE ... RETURNING`` (so each stop is taken once, by one host) and
hands them to the gateway, which books them as if they had been asked there, with the issuer,
surface and reason the sending host gave. The thread takes waiting rows too whenever it
(re)connects, so a host that was cut off from the database acts on the stops sent meanwhile.

A stop whose owner is gone is never taken by it; crash recovery closes the turn and marks its
waiting stops taken (:meth:`~agent.store.sql.turns.SqlTurns.recover_open_turns`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

import psycopg

from agent.store.errors import StoreError
from agent.store.liveness import OwnerLiveness
from agent.store.postgres.database import Cursor, Database
from agent.store.shared import Deliver, RunningTurn, StopKind, StopLetter

_log = logging.getLogger(__name__)

RECHECK_S = 5.0
"""Seconds between two looks for waiting rows without a notification (a safety net)."""


class PostgresStops:
    """Stop rows of one store.

    Args:
        db: the store's pool.
        owner: this store's owner string (the address of its stops).
        channel: the ``NOTIFY`` channel (one per schema).
        recheck_s: seconds between two looks without a notification (tests make it long, so
            that only the notification and the drain on (re)connecting deliver a stop).
        liveness: whether another owner still runs (:meth:`live_owner`); None: every owner
            that holds a claim is taken as running.
    """

    def __init__(
        self,
        db: Database,
        owner: str,
        channel: str,
        recheck_s: float = RECHECK_S,
        liveness: OwnerLiveness | None = None,
    ) -> None:
        self._db = db
        self._liveness = liveness
        self._recheck_s = recheck_s
        self._owner = owner
        self.channel = channel
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._listening = threading.Event()
        self.taken = 0
        """Stops taken so far by this store's listener."""

    def running_turn(self, session_id: str, turn_id: str | None = None) -> RunningTurn | None:
        """The open turn of ``session_id`` (only ``turn_id``, when given), or None.

        Raises:
            StoreError: the database cannot be read.
        """

        def q(cur: Cursor) -> RunningTurn | None:
            cur.execute(
                "SELECT id, owner FROM turns WHERE session_id = %s AND ended_at IS NULL"
                " AND (%s::text IS NULL OR id = %s) ORDER BY started_at DESC, started_order DESC"
                " LIMIT 1",
                (session_id, turn_id, turn_id),
            )
            row = cur.fetchone()
            return None if row is None else RunningTurn(row[0], session_id, row[1])

        return self._db.read(q, wait_s=2.0)

    def live_owner(self, session_id: str) -> str | None:
        """The owner whose claim holds the session live, when that owner still runs; "" for a
        session no running owner holds; None for no such session.

        Raises:
            StoreError: the database cannot be read.
        """

        def q(cur: Cursor) -> tuple[bool, str | None]:
            cur.execute("SELECT claim_owner FROM sessions WHERE id = %s", (session_id,))
            row = cur.fetchone()
            return (False, None) if row is None else (True, row[0])

        known, owner = self._db.read(q, wait_s=2.0)
        if not known:
            return None
        if not owner or (self._liveness is not None and not self._liveness.is_alive(owner)):
            return ""
        return str(owner)

    def session_of(self, turn_id: str) -> str | None:
        """The session of a turn, or None for an unknown one."""

        def q(cur: Cursor) -> str | None:
            cur.execute("SELECT session_id FROM turns WHERE id = %s", (turn_id,))
            row = cur.fetchone()
            return None if row is None else str(row[0])

        return self._db.read(q, wait_s=2.0)

    def send(
        self,
        running: RunningTurn,
        kind: StopKind,
        *,
        issuer: str,
        surface: str,
        reason: str,
    ) -> int:
        """Write a stop row for ``running`` and notify its owner, in one statement.

        Returns:
            the row id.

        Raises:
            StoreError: it could not be written (nothing was sent).
        """

        def one(cur: Cursor) -> int:
            # One statement, so one round trip: the row and its notification commit together
            # (PostgreSQL delivers a NOTIFY at its transaction's commit).
            cur.execute(
                "WITH row AS (INSERT INTO stop_requests (session_id, turn_id, target, kind,"
                " issuer, surface, reason, sent_by)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id, target)"
                " SELECT id, pg_notify(%s, target) FROM row",
                (
                    running.session_id,
                    running.turn_id or None,  # "": whatever runs there (a /compress)
                    running.owner,
                    kind.value,
                    issuer,
                    surface,
                    reason,
                    self._owner,
                    self.channel,
                ),
            )
            row = cur.fetchone()
            assert row is not None
            return int(row[0])

        return self._db.statement(one)

    def take(self, cur: Cursor) -> list[StopLetter]:
        """Take every stop addressed to this store's owner that nobody took yet, oldest first.

        Args:
            cur: any cursor (autocommit: the ``UPDATE`` is its own transaction).
        """
        cur.execute(
            "UPDATE stop_requests SET taken_at = clock_timestamp(), taken_by = %s"
            " WHERE target = %s AND taken_at IS NULL RETURNING id, session_id, turn_id, kind,"
            " issuer, surface, reason, sent_by,"
            " EXTRACT(EPOCH FROM clock_timestamp() - requested_at)::float8",
            (self._owner, self._owner),
        )
        letters = [
            StopLetter(
                int(r[0]), r[1], r[2], StopKind(r[3]), r[4], r[5], r[6], r[7], max(0.0, r[8])
            )
            for r in cur.fetchall()
        ]
        self.taken += len(letters)
        return sorted(letters, key=lambda letter: letter.id)

    def listen(self, deliver: Deliver) -> None:
        """Start the listener thread (once): it hands every stop addressed to this store to
        ``deliver``, and waits out a database that is away."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._listen_loop, args=(deliver,), name="desk-stop-listener", daemon=True
        )
        self._thread.start()

    def wait_listening(self, timeout_s: float) -> bool:
        """Wait until the listener has its ``LISTEN`` in place and has taken the stops that
        were waiting (tests, benchmarks)."""
        return self._listening.wait(timeout_s)

    def _listen_loop(self, deliver: Deliver) -> None:
        pause = 0.05
        while not self._closing.is_set():
            conn: psycopg.Connection[Any] | None = None
            try:
                conn = self._db.connect()
                conn.execute(f'LISTEN "{self.channel}"')
                pause = 0.05
                self._drain(conn, deliver)  # what was sent while this host was away
                self._listening.set()
                while not self._closing.is_set():
                    # One notification (for any host), or recheck_s without one: look again.
                    for _note in conn.notifies(timeout=self._recheck_s, stop_after=1):
                        pass
                    if not self._closing.is_set():
                        self._drain(conn, deliver)
            except (psycopg.Error, StoreError):
                self._listening.clear()
                self._closing.wait(pause)
                pause = min(pause * 2, 1.0)
            finally:
                if conn is not None:
                    conn.close()

    def _drain(self, conn: psycopg.Connection[Any], deliver: Deliver) -> None:
        with conn.cursor() as cur:
            letters = self.take(cur)
        if letters:
            try:
                deliver(letters)
            except Exception:  # a bug of the gateway's must not end the listener
                _log.exception("delivering %d stop(s) failed", len(letters))

    def close(self) -> None:
        """Stop the listener thread (it is woken with a notification of its own)."""
        self._closing.set()
        thread = self._thread
        if thread is None:
            return
        with contextlib.suppress(StoreError):  # away: the thread notices at its next timeout
            self._db.write(
                lambda cur: cur.execute("SELECT pg_notify(%s, '')", (self.channel,)), wait=False
            )
        thread.join(timeout=min(self._recheck_s, RECHECK_S) + 1.0)
