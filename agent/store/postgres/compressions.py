"""Compressions of the PostgreSQL store: the ``compression_attempts`` table and each session's
automatic-compression cooldown (columns of ``sessions``), with the rules of
:class:`agent.store.sqlite.compressions.SqliteCompressions`. Every write holds the session's
claim, so an attempt of a host whose session was taken over can never commit."""

from __future__ import annotations

from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreFenced, StoreNotFound
from agent.store.liveness import holder_owner
from agent.store.postgres.database import Cursor
from agent.store.postgres.shared import StoreContext, insert_messages
from agent.store.rows import CompressionAttemptRow, Cooldown, MessageRow, NewMessage
from agent.store.sqlite.shared import as_new, columns

_ATTEMPT_COLUMNS = columns(CompressionAttemptRow)


class PostgresCompressions:
    """Compression attempts and cooldowns in PostgreSQL (implements
    :class:`~agent.store.protocol.Compressions`).

    Args:
        context: what the table groups of the store share.
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._where = context.where
        self._clock = context.clock
        self._claims = context.claims
        self._owner = context.owner
        self._liveness = context.liveness

    def _attempt_session(self, cur: Cursor, attempt_id: int) -> tuple[str, int, float | None]:
        cur.execute(
            "SELECT session_id, generation, ended_at FROM compression_attempts WHERE id = %s",
            (attempt_id,),
        )
        found = cur.fetchone()
        if found is None:
            raise StoreNotFound(f"no compression attempt {attempt_id}", self._where)
        return found[0], int(found[1]), found[2]

    def set_cooldown(self, session_id: str, until: float | None, step: int) -> None:
        """Set the session's automatic-compression cooldown (``until=None, step=0`` clears it).

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another host holds the session.
        """

        def tx(cur: Cursor) -> None:
            self._claims.hold(cur, session_id)
            cur.execute(
                "UPDATE sessions SET compression_cooldown_until = %s,"
                " compression_cooldown_step = %s WHERE id = %s",
                (until, step, session_id),
            )

        self._db.write(tx)

    def get_cooldown(self, session_id: str) -> Cooldown | None:
        """The session's cooldown, or None when there is no such session."""

        def q(cur: Cursor) -> Cooldown | None:
            cur.execute(
                "SELECT compression_cooldown_until, compression_cooldown_step FROM sessions"
                " WHERE id = %s",
                (session_id,),
            )
            row = cur.fetchone()
            return None if row is None else Cooldown(until=row[0], step=row[1])

        return self._db.read(q)

    def begin_compression(
        self, session_id: str, holder: str, *, phase: str = "acquire lease"
    ) -> CompressionAttemptRow:
        """Start a compression attempt with the session's next generation (1, 2, 3...).

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another host holds the session.
        """
        now = self._clock()

        def tx(cur: Cursor) -> CompressionAttemptRow:
            self._claims.hold(cur, session_id)
            cur.execute(
                f"INSERT INTO compression_attempts (session_id, generation, holder, started_at,"
                f" phase) SELECT %s, COALESCE(MAX(generation), 0) + 1, %s, %s, %s"
                f" FROM compression_attempts WHERE session_id = %s RETURNING {_ATTEMPT_COLUMNS}",
                (session_id, holder, now, phase, session_id),
            )
            return CompressionAttemptRow(*cur.fetchone())  # type: ignore[misc]

        return self._db.write(tx)

    def set_compression_phase(self, attempt_id: int, phase: str) -> bool:
        """Record the phase an open attempt reached; False when it ended already (or its
        session belongs to another host now)."""

        def tx(cur: Cursor) -> bool:
            cur.execute("SELECT session_id FROM compression_attempts WHERE id = %s", (attempt_id,))
            found = cur.fetchone()
            if found is None:
                return False
            self._claims.hold(cur, found[0])
            cur.execute(
                "UPDATE compression_attempts SET phase = %s WHERE id = %s AND ended_at IS NULL",
                (phase, attempt_id),
            )
            return cur.rowcount == 1

        try:
            return self._db.write(tx)
        except StoreFenced:
            return False

    def get_compression(self, attempt_id: int) -> CompressionAttemptRow | None:
        """The attempt, or None."""

        def q(cur: Cursor) -> CompressionAttemptRow | None:
            cur.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE id = %s",
                (attempt_id,),
            )
            row = cur.fetchone()
            return None if row is None else CompressionAttemptRow(*row)

        return self._db.read(q)

    def latest_compression(self, session_id: str) -> CompressionAttemptRow | None:
        """The session's attempt with the highest generation, or None."""

        def q(cur: Cursor) -> CompressionAttemptRow | None:
            cur.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE session_id = %s"
                " ORDER BY generation DESC LIMIT 1",
                (session_id,),
            )
            row = cur.fetchone()
            return None if row is None else CompressionAttemptRow(*row)

        return self._db.read(q)

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
        """Replace a run of active messages by a summary, in one transaction, or change nothing
        (see :meth:`agent.store.sqlite.compressions.SqliteCompressions.commit_compression`).

        Returns:
            the summary row; None when refused: the attempt ended, a newer one exists, the
            holder's lease expired, or the session belongs to another host now.

        Raises:
            ValueError: ``archive_ids`` is not a run of consecutive active messages of the
                attempt's session (nothing changed).
            StoreNotFound: no such attempt.
        """
        if not archive_ids:
            raise ValueError("a compression must archive at least one message")
        now = self._clock()
        ids = list(archive_ids)

        def tx(cur: Cursor) -> MessageRow | None:
            session_id, generation, ended_at = self._attempt_session(cur, attempt_id)
            self._claims.hold(cur, session_id)
            if ended_at is not None:
                return None
            cur.execute(
                "SELECT MAX(generation) FROM compression_attempts WHERE session_id = %s",
                (session_id,),
            )
            latest = cur.fetchone()
            if latest is None or generation != latest[0]:
                return None
            cur.execute(
                "SELECT 1 FROM compression_leases WHERE session_id = %s AND holder = %s"
                " AND expires_at > %s",
                (session_id, holder, now),
            )
            if cur.fetchone() is None:
                return None
            cur.execute(
                "SELECT order_key FROM messages WHERE session_id = %s AND active"
                " ORDER BY order_key",
                (session_id,),
            )
            order = [int(k) for (k,) in cur.fetchall()]
            cur.execute(
                "SELECT order_key FROM messages WHERE session_id = %s AND active"
                " AND id = ANY(%s) ORDER BY order_key",
                (session_id, ids),
            )
            chosen = [int(k) for (k,) in cur.fetchall()]
            if len(chosen) != len(set(ids)):
                raise ValueError("archive_ids must name active messages of the attempt's session")
            start = order.index(chosen[0])
            if order[start : start + len(chosen)] != chosen:
                raise ValueError("archive_ids must be consecutive in the active transcript")
            cur.execute(
                "UPDATE messages SET active = FALSE, archived_by = %s WHERE id = ANY(%s)",
                (attempt_id, ids),
            )
            (row,) = insert_messages(
                cur, session_id, [as_new(summary)], None, now, order_key=chosen[0]
            )
            cur.execute(
                "UPDATE compression_attempts SET ended_at = %s, phase = 'done',"
                " outcome = 'committed', tokens_in = %s, tokens_out = %s,"
                " summary_message_id = %s WHERE id = %s",
                (now, tokens_in, tokens_out, row.id, attempt_id),
            )
            cur.execute(
                "UPDATE sessions SET compression_cooldown_until = NULL,"
                " compression_cooldown_step = 0 WHERE id = %s",
                (session_id,),
            )
            if release:
                cur.execute(
                    "DELETE FROM compression_leases WHERE session_id = %s AND holder = %s",
                    (session_id, holder),
                )
            return row

        try:
            return self._db.write(tx)
        except StoreFenced:
            return None

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
        """End an attempt that did not commit, once (see
        :meth:`agent.store.sqlite.compressions.SqliteCompressions.finish_compression`).

        Returns:
            False when the attempt had ended already: nothing is written.

        Raises:
            StoreNotFound: no such attempt.
            StoreFenced: another host holds the session.
        """
        now = self._clock()

        def tx(cur: Cursor) -> bool:
            session_id, generation, ended_at = self._attempt_session(cur, attempt_id)
            self._claims.hold(cur, session_id)
            if ended_at is not None:
                return False
            if release:
                cur.execute(
                    "DELETE FROM compression_leases WHERE session_id = %s"
                    " AND holder = (SELECT holder FROM compression_attempts WHERE id = %s)",
                    (session_id, attempt_id),
                )
            cur.execute(
                "UPDATE compression_attempts SET ended_at = %s, outcome = %s, error = %s,"
                " tokens_in = COALESCE(%s, tokens_in), tokens_out = COALESCE(%s, tokens_out)"
                " WHERE id = %s AND ended_at IS NULL",
                (now, outcome, error, tokens_in, tokens_out, attempt_id),
            )
            cur.execute(
                "SELECT MAX(generation) FROM compression_attempts WHERE session_id = %s",
                (session_id,),
            )
            latest = cur.fetchone()
            if cooldown is not None and latest is not None and generation == latest[0]:
                cur.execute(
                    "UPDATE sessions SET compression_cooldown_until = %s,"
                    " compression_cooldown_step = %s WHERE id = %s",
                    (cooldown.until, cooldown.step, session_id),
                )
            return True

        return self._db.write(tx)

    def recover_abandoned_compressions(self) -> list[int]:
        """Release the leases of holders whose owner is provably gone, then end open attempts
        whose holder no longer holds an unexpired lease, as ``abandoned`` (no claim is needed:
        such an attempt can never commit, and the cooldown is unchanged).

        Returns:
            the ids of the attempts ended.
        """
        now = self._clock()

        def held(cur: Cursor) -> list[tuple[str, str]]:
            cur.execute("SELECT session_id, holder FROM compression_leases")
            return [(str(r[0]), str(r[1])) for r in cur.fetchall()]

        gone = []  # asked before the transaction: liveness reads the database on its own
        for session_id, holder in self._db.read(held):
            owner = holder_owner(holder)
            if owner is not None and owner != self._owner and not self._liveness.is_alive(owner):
                gone.append((session_id, holder))

        def tx(cur: Cursor) -> list[int]:
            for session_id, holder in gone:
                cur.execute(
                    "DELETE FROM compression_leases WHERE session_id = %s AND holder = %s",
                    (session_id, holder),
                )
            cur.execute(
                "UPDATE compression_attempts AS a SET ended_at = %s, outcome = 'abandoned',"
                " error = 'desk stopped during this compression' WHERE a.ended_at IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM compression_leases AS l"
                " WHERE l.session_id = a.session_id AND l.holder = a.holder"
                " AND l.expires_at > %s) RETURNING a.id",
                (now, now),
            )
            return sorted(int(r[0]) for r in cur.fetchall())

        return self._db.write(tx)
