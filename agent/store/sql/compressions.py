"""Compressions: the ``compression_attempts`` table and each session's automatic-compression
cooldown (columns of ``sessions``).

A commit is one transaction over several tables: it holds the session, checks the attempt is
the newest and its holder's lease unexpired, archives the replaced messages, inserts the summary
in their place (:func:`~agent.store.sql.messages.insert_messages`), ends the attempt, clears the
cooldown and optionally releases the lease; or it changes nothing. An attempt of an owner whose
session was taken over can never commit."""

from __future__ import annotations

from collections.abc import Sequence

from agent.provider.types import ChatMessage
from agent.store.errors import StoreFenced, StoreNotFound
from agent.store.liveness import holder_owner
from agent.store.rows import CompressionAttemptRow, Cooldown, MessageRow, NewMessage
from agent.store.sql.core import Core, Tx, must
from agent.store.sql.messages import as_new, columns, insert_messages

_ATTEMPT_COLUMNS = columns(CompressionAttemptRow)


class SqlCompressions:
    """Compression attempts and cooldowns (implements
    :class:`~agent.store.protocol.Compressions`).

    Args:
        core: what the table groups of the store share.
    """

    def __init__(self, core: Core) -> None:
        self._e = core.engine
        self._where = core.where
        self._clock = core.clock
        self._owner = core.owner
        self._liveness = core.liveness

    def _attempt(self, t: Tx, attempt_id: int) -> tuple[str, int, float | None]:
        found = t.one(
            "SELECT session_id, generation, ended_at FROM compression_attempts WHERE id = ?",
            (attempt_id,),
        )
        if found is None:
            raise StoreNotFound(f"no compression attempt {attempt_id}", self._where)
        return found[0], int(found[1]), found[2]

    def set_cooldown(self, session_id: str, until: float | None, step: int) -> None:
        """Set the session's automatic-compression cooldown (``until=None, step=0`` clears it).

        Args:
            session_id: the session.
            until: unix seconds before which automatic compression waits, or None.
            step: failed attempts in a row.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds the session.
        """

        def tx(t: Tx) -> None:
            self._e.hold(t, session_id)
            t.run(_SET_COOLDOWN, (until, step, session_id))

        self._e.write(tx)

    def get_cooldown(self, session_id: str) -> Cooldown | None:
        """The session's cooldown, or None when there is no such session."""
        row = self._e.read(
            lambda t: t.one(
                "SELECT compression_cooldown_until, compression_cooldown_step FROM sessions"
                " WHERE id = ?",
                (session_id,),
            )
        )
        return None if row is None else Cooldown(until=row[0], step=row[1])

    def begin_compression(
        self, session_id: str, holder: str, *, phase: str = "acquire lease"
    ) -> CompressionAttemptRow:
        """Start a compression attempt with the session's next generation (1, 2, 3...).

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds the session.
        """
        now = self._clock()

        def tx(t: Tx) -> CompressionAttemptRow:
            self._e.hold(t, session_id)
            row = t.one(
                "INSERT INTO compression_attempts (session_id, generation, holder, started_at,"
                " phase) SELECT ?, COALESCE(MAX(generation), 0) + 1, ?, ?, ?"
                f" FROM compression_attempts WHERE session_id = ? RETURNING {_ATTEMPT_COLUMNS}",
                (session_id, holder, now, phase, session_id),
            )
            return CompressionAttemptRow(*must(row))

        return self._e.write(tx)

    def set_compression_phase(self, attempt_id: int, phase: str) -> bool:
        """Record the phase an open attempt reached; False when it ended already (or its
        session belongs to another owner now)."""

        def tx(t: Tx) -> bool:
            found = t.one("SELECT session_id FROM compression_attempts WHERE id = ?", (attempt_id,))
            if found is None:
                return False
            self._e.hold(t, found[0])
            changed = t.run(
                "UPDATE compression_attempts SET phase = ? WHERE id = ? AND ended_at IS NULL",
                (phase, attempt_id),
            )
            return changed == 1

        try:
            return self._e.write(tx)
        except StoreFenced:
            return False

    def get_compression(self, attempt_id: int) -> CompressionAttemptRow | None:
        """The attempt, or None."""
        row = self._e.read(
            lambda t: t.one(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE id = ?", (attempt_id,)
            )
        )
        return None if row is None else CompressionAttemptRow(*row)

    def latest_compression(self, session_id: str) -> CompressionAttemptRow | None:
        """The session's attempt with the highest generation, or None."""
        row = self._e.read(
            lambda t: t.one(
                f"SELECT {_ATTEMPT_COLUMNS} FROM compression_attempts WHERE session_id = ?"
                " ORDER BY generation DESC LIMIT 1",
                (session_id,),
            )
        )
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

        The archived rows stay (``active = FALSE``, ``archived_by = attempt_id``); the summary
        is appended at the next position with the ``order_key`` of the first archived message,
        so the active transcript reads head, summary, tail. The attempt ends as ``committed``
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
            ended already, a newer attempt exists, ``holder`` does not hold an unexpired
            lease of the session, or the session belongs to another owner now.

        Raises:
            ValueError: ``archive_ids`` is empty or not a run of consecutive active messages of
                the attempt's session (a caller bug; nothing changed).
            StoreNotFound: no such attempt.
        """
        if not archive_ids:
            raise ValueError("a compression must archive at least one message")
        now = self._clock()
        ids = list(archive_ids)
        chosen_ids, chosen_params = self._e.dialect.any_of("id", ids)

        def tx(t: Tx) -> MessageRow | None:
            session_id, generation, ended_at = self._attempt(t, attempt_id)
            self._e.hold(t, session_id)
            if ended_at is not None or generation != self._latest(t, session_id):
                return None
            if not t.one(
                "SELECT 1 FROM compression_leases WHERE session_id = ? AND holder = ?"
                " AND expires_at > ?",
                (session_id, holder, now),
            ):
                return None
            order = [
                int(k)
                for (k,) in t.all(
                    "SELECT order_key FROM messages WHERE session_id = ? AND active = TRUE"
                    " ORDER BY order_key",
                    (session_id,),
                )
            ]
            chosen = [
                int(k)
                for (k,) in t.all(
                    "SELECT order_key FROM messages WHERE session_id = ? AND active = TRUE"
                    f" AND {chosen_ids} ORDER BY order_key",
                    (session_id, *chosen_params),
                )
            ]
            if len(chosen) != len(set(ids)):
                raise ValueError("archive_ids must name active messages of the attempt's session")
            start = order.index(chosen[0])
            if order[start : start + len(chosen)] != chosen:
                raise ValueError("archive_ids must be consecutive in the active transcript")
            t.run(
                f"UPDATE messages SET active = FALSE, archived_by = ? WHERE {chosen_ids}",
                (attempt_id, *chosen_params),
            )
            (row,) = insert_messages(
                t, session_id, [as_new(summary)], None, now, order_key=chosen[0]
            )
            t.run(
                "UPDATE compression_attempts SET ended_at = ?, phase = 'done',"
                " outcome = 'committed', tokens_in = ?, tokens_out = ?, summary_message_id = ?"
                " WHERE id = ?",
                (now, tokens_in, tokens_out, row.id, attempt_id),
            )
            t.run(_SET_COOLDOWN, (None, 0, session_id))
            if release:
                t.run(
                    "DELETE FROM compression_leases WHERE session_id = ? AND holder = ?",
                    (session_id, holder),
                )
            return row

        try:
            return self._e.write(tx)
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
        """End an attempt that did not commit (``cancelled``, ``failed``, ``timeout``...), once.

        The cooldown is written in the same transaction, and only when this attempt is still
        the session's newest (a late, superseded attempt changes nothing but its own row).
        With ``release``, the attempt's holder's lease row is deleted in that transaction too
        (only that holder's: a lease another holder took meanwhile stays).

        Returns:
            False when the attempt had ended already: nothing is written.

        Raises:
            StoreNotFound: no such attempt.
            StoreFenced: another owner holds the session.
        """
        now = self._clock()

        def tx(t: Tx) -> bool:
            session_id, generation, ended_at = self._attempt(t, attempt_id)
            self._e.hold(t, session_id)
            if ended_at is not None:
                return False
            if release:
                t.run(
                    "DELETE FROM compression_leases WHERE session_id = ?"
                    " AND holder = (SELECT holder FROM compression_attempts WHERE id = ?)",
                    (session_id, attempt_id),
                )
            t.run(
                "UPDATE compression_attempts SET ended_at = ?, outcome = ?, error = ?,"
                " tokens_in = COALESCE(?, tokens_in), tokens_out = COALESCE(?, tokens_out)"
                " WHERE id = ? AND ended_at IS NULL",
                (now, outcome, error, tokens_in, tokens_out, attempt_id),
            )
            if cooldown is not None and generation == self._latest(t, session_id):
                t.run(_SET_COOLDOWN, (cooldown.until, cooldown.step, session_id))
            return True

        return self._e.write(tx)

    def recover_abandoned_compressions(self) -> list[int]:
        """Release the leases of holders whose owner is provably gone, then end open attempts
        whose holder no longer holds an unexpired lease, as ``abandoned``.

        Such an attempt can never commit (commit needs the lease), so closing it only tidies
        the record (no claim is needed); the cooldown is left unchanged.

        Returns:
            the ids of the attempts ended.
        """
        now = self._clock()
        held = self._e.read(lambda t: t.all("SELECT session_id, holder FROM compression_leases"))
        gone = []  # asked before the transaction: a liveness may read the database on its own
        for session_id, holder in held:
            owner = holder_owner(holder)
            if owner is not None and owner != self._owner and not self._liveness.is_alive(owner):
                gone.append((session_id, holder))

        def tx(t: Tx) -> list[int]:
            for session_id, holder in gone:
                t.run(
                    "DELETE FROM compression_leases WHERE session_id = ? AND holder = ?",
                    (session_id, holder),
                )
            rows = t.all(
                "SELECT a.id FROM compression_attempts AS a WHERE a.ended_at IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM compression_leases AS l"
                " WHERE l.session_id = a.session_id AND l.holder = a.holder"
                " AND l.expires_at > ?)",
                (now,),
            )
            ids = sorted(int(r[0]) for r in rows)
            for attempt_id in ids:
                t.run(
                    "UPDATE compression_attempts SET ended_at = ?, outcome = 'abandoned',"
                    " error = 'desk stopped during this compression' WHERE id = ?",
                    (now, attempt_id),
                )
            return ids

        return self._e.write(tx)

    @staticmethod
    def _latest(t: Tx, session_id: str) -> int | None:
        found = t.one(
            "SELECT MAX(generation) FROM compression_attempts WHERE session_id = ?", (session_id,)
        )
        return None if found is None or found[0] is None else int(found[0])


_SET_COOLDOWN = (
    "UPDATE sessions SET compression_cooldown_until = ?, compression_cooldown_step = ? WHERE id = ?"
)
