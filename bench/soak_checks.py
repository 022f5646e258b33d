"""The soak's invariants, checked every minute and at the end; each failure is a *break*.

* :func:`outcome_breaks` (at the end): every turn got exactly one ``message.complete`` (or, for
  a ``/compress``, one ``compression.complete``), booked to the right party, and the database
  has the same outcome (``failed(Crash)`` for a turn whose host was killed, as the next host's
  crash recovery books it);
* :class:`Ledger` (every minute and at the end): no turn left open in a database unless it is
  in flight (its host alive and the soak waiting on it, or a child agent of such a turn) twice
  in a row; no committed message lost (every message id seen before is still there), none
  doubled (one person's message per turn, positions without gaps);
* :func:`integrity` : SQLite's ``PRAGMA integrity_check`` says ``ok``.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from soak_steps import Expect, Side

from agent.store import CRASH_EXIT_REASON, SessionStore
from contract.events import CompressionComplete


def compression_breaks(
    got: list[CompressionComplete], expect: Expect, outcomes: Counter[str], at_end: bool
) -> list[str]:
    """A ``/compress`` stopped by the person: one ``compression.complete``, and a cancel
    booked to the person."""
    if len(got) != 1:
        return [f"compress_stop {expect.turn_id}: {len(got)} compression.complete"]
    done = got[0]
    outcomes[f"compress_stop: {done.status}"] += 1
    if done.status == "failed":
        return [f"compress_stop {expect.turn_id}: failed: {done.message}"]
    issuers = {"user", "system"} if at_end else {"user"}
    if done.status == "cancelled" and (done.stop is None or done.stop.issuer not in issuers):
        issuer = None if done.stop is None else done.stop.issuer
        return [f"compress_stop {expect.turn_id}: cancelled by {issuer}, stopped by the user"]
    return []


def allowed_reasons(side: Side, expect: Expect) -> set[str]:
    """The outcomes the client may see for the turn."""
    allowed = {"completed"}
    if expect.turn_id in side.running_at_end:
        allowed.add("interrupted_by_system(gateway.shutdown)")
    if expect.stop == "user":
        allowed.add("interrupted_by_user")
    elif expect.stop == "system":
        allowed.add("interrupted_by_system(session.evicted)")
    elif expect.stop == "crash":
        allowed.add("failed(GatewayExited)")
    return allowed


def outcome_breaks(sides: list[Side]) -> tuple[list[str], Counter[str]]:
    """The breaks of the booking invariants, and the outcomes seen (``op: exit_reason``)."""
    breaks: list[str] = []
    outcomes: Counter[str] = Counter()
    for side in sides:
        store = side.reader()
        for expect in side.expects:
            if expect.op == "compress_stop":
                at_end = expect.turn_id in side.running_at_end
                got = side.host.compressions(expect.turn_id)
                breaks += compression_breaks(got, expect, outcomes, at_end)
                continue
            seen = side.host.completes(expect.turn_id)
            if len(seen) != 1:
                breaks.append(f"{expect.op} {expect.turn_id}: {len(seen)} message.complete")
                continue
            reason = seen[0].exit_reason
            outcomes[f"{expect.op}: {reason}"] += 1
            if reason not in allowed_reasons(side, expect):
                breaks.append(f"{expect.op} {expect.turn_id} on {side.name}: booked {reason}")
            want = CRASH_EXIT_REASON if reason == "failed(GatewayExited)" else reason
            row = store.turns.get_turn(expect.turn_id)
            if row is None or row.exit_reason != want:
                saved = None if row is None else row.exit_reason
                breaks.append(f"{expect.op} {expect.turn_id}: saved {saved}, seen {reason}")
    return breaks, outcomes


class Ledger:
    """What the periodic checks remember between two rounds: the message ids seen per
    session, and the turns found open last time (per database)."""

    def __init__(self) -> None:
        self.messages: dict[str, set[int]] = {}
        self.open_before: dict[str, set[str]] = {}
        self.rounds = 0

    def check(self, sides: list[Side], in_flight: set[str], final: bool = False) -> list[str]:
        """One round over every side's database; the breaks found.

        Args:
            sides: the hosts (sides on one database share its open-turn check).
            in_flight: the turns the soak still waits on.
            final: every host is shut down: no turn may be open at all.
        """
        self.rounds += 1
        breaks: list[str] = []
        by_db: dict[str, SessionStore] = {}
        for side in sides:
            store = by_db.setdefault(side.db, side.reader())
            for session in side.all_sessions:
                breaks += self._messages(store, session)
        for db, store in by_db.items():
            open_now = {}
            for row in store.turns.open_turns():
                if row.id in in_flight or row.parent_turn_id in in_flight:
                    continue
                open_now[row.id] = row
            before = self.open_before.get(db, set())
            for turn_id, row in open_now.items():
                if final or turn_id in before:
                    breaks.append(
                        f"turn {turn_id} ({row.owner}) left {row.status} in {Path(db).name}"
                    )
            self.open_before[db] = set(open_now)
        return breaks

    def _messages(self, store: SessionStore, session: str) -> list[str]:
        rows = store.transcript.all_messages(session)
        breaks: list[str] = []
        ids = {r.id for r in rows}
        lost = self.messages.get(session, set()) - ids
        if lost:
            breaks.append(f"session {session}: messages lost: {sorted(lost)[:5]}")
        self.messages[session] = ids
        positions = sorted(r.position for r in rows)
        if positions != list(range(len(positions))):
            breaks.append(f"session {session}: positions with gaps or doubled")
        users = Counter(r.turn_id for r in rows if r.role == "user" and r.turn_id is not None)
        breaks += [
            f"session {session}: turn {t}: {n} person's messages" for t, n in users.items() if n > 1
        ]
        return breaks


def integrity(db: Path) -> list[str]:
    """``PRAGMA integrity_check`` of the SQLite file: no break when it says ``ok``."""
    conn = sqlite3.connect(db, timeout=60.0)
    try:
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()
    return [] if rows == ["ok"] else [f"integrity_check: {rows[:5]}"]
