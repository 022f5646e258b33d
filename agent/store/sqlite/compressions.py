"""Compressions of the SQLite store: the ``compression_attempts`` table and each session's
automatic-compression cooldown (columns of ``sessions``).

A commit is one transaction over several tables: it checks the attempt is the newest and its
holder's lease unexpired, archives the replaced messages, inserts the summary in their place
(:func:`~agent.store.sqlite.shared.insert_messages`), ends the attempt, clears the cooldown and
optionally releases the lease; or it changes nothing."""

from __future__ import annotations

from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreNotFound
from agent.store.liveness import holder_owner
from agent.store.rows import CompressionAttemptRow, Cooldown, MessageRow, NewMessage
from agent.store.sqlite.shared import (
    StoreContext,
    as_new,
    columns,
    insert_messages,
    require_session,
)

_ATTEMPT_COLUMNS = columns(CompressionAttemptRow)


class SqliteCompressions:
    """Compression attempts and cooldowns in SQLite (implements
    :class:`~agent.store.protocol.Compressions`).

    Args:
        context: what the table groups of the store share (connections, clock, owner).
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._path = context.path
        self._clock = context.clock
        self._owner = context.owner
        self._liveness = context.liveness

    def set_cooldown(self, session_id: str, until: float | None, step: int) -> None:
        """Set the session's automatic-compression cooldown (``until=None, step=0`` clears it).

        Args:
            session_id: the session.
            until: unix seconds before which automatic compression waits, or None.
            step: failed attempts in a row.

        Raises:
            StoreNotFound: no such session.
        """
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET compression_cooldown_until = ?, compression_cooldown_step = ?"
                " WHERE id = ?",
                (until, step, session_id),
            )
            if cur.rowcount != 1:
                raise StoreNotFound(f"no session {session_id!r}", self._path)

    def get_cooldown(self, session_id: str) -> Cooldown | None:
        """The session's cooldown, or None when there is no such session."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT compression_cooldown_until, compression_cooldown_step FROM sessions"
                " WHERE id = ?",
                (session_id,),
            ).fetchone()
        return None if row is None else Cooldown(until=row[0], step=row[1])

    def begin_compression(
        self, session_id: str, holder: str, *, phase: str = "acquire lease"
    ) -> CompressionAttemptRow:
        """Start a compression attempt with the session's next generation (1, 2, 3...).

        Raises:
            StoreNotFound: no such session.
        """
        now = self._clock()
        with self._db.write() as conn:
            require_session(conn, session_id, self._path)
            (generation,) = conn.execute(
                "SELECT COALESCE(MAX(generation), 0) + 1 FROM compression_attempts"
                " WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            cur = conn.execute(
                "INSERT INTO compression_attempts (session_id, generation, holder, started_at,"
                " phase) VALUES (?, ?, ?, ?, ?)",
                (session_id, generation, holder, now, phase),
            )
            row = conn.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE id = ?",
                (cur.lastrowid,),
            ).fetchone()
        return CompressionAttemptRow(*row)

    def set_compression_phase(self, attempt_id: int, phase: str) -> bool:
        """Record the phase an open attempt reached; False when it ended already."""
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE compression_attempts SET phase = ? WHERE id = ? AND ended_at IS NULL",
                (phase, attempt_id),
            )
            return cur.rowcount == 1

    def get_compression(self, attempt_id: int) -> CompressionAttemptRow | None:
        """The attempt, or None."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE id = ?", (attempt_id,)
            ).fetchone()
        return None if row is None else CompressionAttemptRow(*row)

    def latest_compression(self, session_id: str) -> CompressionAttemptRow | None:
        """The session's attempt with the highest generation, or None."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE session_id = ?"
                " ORDER BY generation DESC LIMIT 1",
                (session_id,),
            ).fetchone()
        return None if row is None else CompressionAttemptRow(*row)

    def commit_compression(
        self,
        attempt_id: int,
        *,
        holder: str,
        archive_ids: Sequence[int],
        summary: ChatMessage | NewMessage,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        release: bool = False,
    ) -> MessageRow | None:
        """Replace a run of active messages by a summary, in one transaction, or change nothing.

        The archived rows stay (``active = 0``, ``archived_by = attempt_id``); the summary is
        appended at the next position with the ``order_key`` of the first archived message, so
        the active transcript reads head, summary, tail. The attempt ends as ``committed``
        (phase ``done``) and the cooldown is cleared.

        Args:
            attempt_id: the attempt.
            holder: the lease holder running it.
            archive_ids: message ids forming a run of consecutive active messages.
            summary: the summary message.
            tokens_in: tokens of the archived messages.
            tokens_out: tokens of the summary.
            release: also delete ``holder``'s lease row, in the same transaction.

        Returns:
            the summary row; None when the commit is refused and nothing changed: the attempt
            ended already, a newer attempt exists, or ``holder`` does not hold an unexpired
            lease of the session.

        Raises:
            ValueError: ``archive_ids`` is empty or not a run of consecutive active messages of
                the attempt's session (a caller bug; nothing changed).
            StoreNotFound: no such attempt.
        """
        if not archive_ids:
            raise ValueError("a compression must archive at least one message")
        now = self._clock()
        with self._db.write() as conn:
            found = conn.execute(
                "SELECT session_id, generation, ended_at FROM compression_attempts WHERE id = ?",
                (attempt_id,),
            ).fetchone()
            if found is None:
                raise StoreNotFound(f"no compression attempt {attempt_id}", self._path)
            session_id, generation, ended_at = found
            if ended_at is not None:
                return None
            (latest,) = conn.execute(
                "SELECT MAX(generation) FROM compression_attempts WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if generation != latest:
                return None
            lease = conn.execute(
                "SELECT 1 FROM compression_leases WHERE session_id = ? AND holder = ?"
                " AND expires_at > ?",
                (session_id, holder, now),
            ).fetchone()
            if lease is None:
                return None
            keys = conn.execute(
                "SELECT order_key FROM messages WHERE session_id = ? AND active = 1"
                " ORDER BY order_key",
                (session_id,),
            ).fetchall()
            order = [k for (k,) in keys]
            marks = ",".join("?" * len(archive_ids))
            chosen = conn.execute(
                f"SELECT order_key FROM messages WHERE session_id = ? AND active = 1"
                f" AND id IN ({marks}) ORDER BY order_key",
                (session_id, *archive_ids),
            ).fetchall()
            chosen_keys = [k for (k,) in chosen]
            if len(chosen_keys) != len(set(archive_ids)):
                raise ValueError("archive_ids must name active messages of the attempt's session")
            start = order.index(chosen_keys[0])
            if order[start : start + len(chosen_keys)] != chosen_keys:
                raise ValueError("archive_ids must be consecutive in the active transcript")
            conn.execute(
                f"UPDATE messages SET active = 0, archived_by = ? WHERE id IN ({marks})",
                (attempt_id, *archive_ids),
            )
            (row,) = insert_messages(
                conn, session_id, [as_new(summary)], None, now, order_key=chosen_keys[0]
            )
            conn.execute(
                "UPDATE compression_attempts SET ended_at = ?, phase = 'done',"
                " outcome = 'committed', tokens_in = ?, tokens_out = ?, summary_message_id = ?"
                " WHERE id = ?",
                (now, tokens_in, tokens_out, row.id, attempt_id),
            )
            conn.execute(
                "UPDATE sessions SET compression_cooldown_until = NULL,"
                " compression_cooldown_step = 0 WHERE id = ?",
                (session_id,),
            )
            if release:
                conn.execute(
                    "DELETE FROM compression_leases WHERE session_id = ? AND holder = ?",
                    (session_id, holder),
                )
            return row

    def finish_compression(
        self,
        attempt_id: int,
        outcome: str,
        *,
        error: str | None = None,
        cooldown: Cooldown | None = None,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        release: bool = False,
    ) -> bool:
        """End an attempt that did not commit (``cancelled``, ``failed``, ``timeout``...), once.

        The cooldown is written in the same transaction, and only when this attempt is still
        the session's newest (a late, superseded attempt changes nothing but its own row).
        With ``release``, the attempt's holder's lease row is deleted in that transaction too
        (only that holder's: a lease another holder took meanwhile stays).

        Returns:
            False when the attempt had ended already: nothing is written.

        Raises:
            StoreNotFound: no such attempt.
        """
        now = self._clock()
        with self._db.write() as conn:
            found = conn.execute(
                "SELECT session_id, generation, ended_at FROM compression_attempts WHERE id = ?",
                (attempt_id,),
            ).fetchone()
            if found is None:
                raise StoreNotFound(f"no compression attempt {attempt_id}", self._path)
            session_id, generation, ended_at = found
            if ended_at is not None:
                return False
            if release:
                conn.execute(
                    "DELETE FROM compression_leases WHERE session_id = ?"
                    " AND holder = (SELECT holder FROM compression_attempts WHERE id = ?)",
                    (session_id, attempt_id),
                )
            conn.execute(
                "UPDATE compression_attempts SET ended_at = ?, outcome = ?, error = ?,"
                " tokens_in = COALESCE(?, tokens_in), tokens_out = COALESCE(?, tokens_out)"
                " WHERE id = ? AND ended_at IS NULL",
                (now, outcome, error, tokens_in, tokens_out, attempt_id),
            )
            (latest,) = conn.execute(
                "SELECT MAX(generation) FROM compression_attempts WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if cooldown is not None and generation == latest:
                conn.execute(
                    "UPDATE sessions SET compression_cooldown_until = ?,"
                    " compression_cooldown_step = ? WHERE id = ?",
                    (cooldown.until, cooldown.step, session_id),
                )
            return True

    def recover_abandoned_compressions(self) -> list[int]:
        """Release the leases of holders whose process is provably gone, then end open attempts
        whose holder no longer holds an unexpired lease, as ``abandoned``.

        Such an attempt can never commit (commit needs the lease), so closing it only tidies
        the record; the cooldown is left unchanged.

        Returns:
            the ids of the attempts ended.
        """
        now = self._clock()
        with self._db.write() as conn:
            for session_id, holder in conn.execute(
                "SELECT session_id, holder FROM compression_leases"
            ).fetchall():
                owner = holder_owner(holder)
                gone = owner is not None and owner != self._owner
                if gone and not self._liveness.is_alive(owner or ""):
                    conn.execute(
                        "DELETE FROM compression_leases WHERE session_id = ? AND holder = ?",
                        (session_id, holder),
                    )
            rows = conn.execute(
                "SELECT a.id FROM compression_attempts AS a WHERE a.ended_at IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM compression_leases AS l"
                " WHERE l.session_id = a.session_id AND l.holder = a.holder"
                " AND l.expires_at > ?)",
                (now,),
            ).fetchall()
            ids = [r[0] for r in rows]
            for attempt_id in ids:
                conn.execute(
                    "UPDATE compression_attempts SET ended_at = ?, outcome = 'abandoned',"
                    " error = 'desk stopped during this compression' WHERE id = ?",
                    (now, attempt_id),
                )
        return ids
