"""The transcript of the PostgreSQL store: reading and appending rows of the ``messages`` table
(as :class:`agent.store.sqlite.transcript.SqliteTranscript` does)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from agent.provider.types import ChatMessage, Role
from agent.store.errors import StoreNotFound
from agent.store.postgres.database import Cursor
from agent.store.postgres.shared import StoreContext, insert_messages
from agent.store.rows import MessageRow, NewMessage, tool_calls_from_json
from agent.store.sqlite.shared import MESSAGE_COLUMNS, as_new, message_row


class PostgresTranscript:
    """Messages in PostgreSQL (implements :class:`~agent.store.protocol.Transcript`).

    Args:
        context: what the table groups of the store share.
    """

    def __init__(self, context: StoreContext) -> None:
        self._db = context.db
        self._where = context.where
        self._clock = context.clock
        self._claims = context.claims

    def append_message(
        self,
        session_id: str,
        message: ChatMessage | NewMessage,
        *,
        turn_id: str | None = None,
        partial: bool = False,
        reasoning: str | None = None,
        token_estimate: int | None = None,
    ) -> MessageRow:
        """Append one message at the session's next position (see
        :meth:`agent.store.sqlite.transcript.SqliteTranscript.append_message`).

        Raises:
            StoreNotFound: no such session, or ``turn_id`` names no turn of it.
            StoreFenced: another host holds the session.
        """
        item = (
            message
            if isinstance(message, NewMessage)
            else NewMessage(message, partial, reasoning, token_estimate)
        )
        return self.append_messages(session_id, [item], turn_id=turn_id)[0]

    def append_messages(
        self,
        session_id: str,
        messages: Sequence[ChatMessage | NewMessage],
        *,
        turn_id: str | None = None,
    ) -> list[MessageRow]:
        """Append several messages in one transaction (all or none).

        Raises:
            StoreNotFound: no such session, or ``turn_id`` names no turn of it.
            StoreFenced: another host holds the session.
        """
        items = [as_new(m) for m in messages]

        def tx(cur: Cursor) -> list[MessageRow]:
            self._claims.hold(cur, session_id)
            if turn_id is not None:
                cur.execute(
                    "SELECT 1 FROM turns WHERE id = %s AND session_id = %s", (turn_id, session_id)
                )
                if cur.fetchone() is None:
                    raise StoreNotFound(
                        f"no turn {turn_id!r} in session {session_id!r}", self._where
                    )
            return insert_messages(cur, session_id, items, turn_id, self._clock())

        return self._db.write(tx)

    def active_messages(self, session_id: str) -> list[MessageRow]:
        """The active transcript (archived rows left out), in order; [] for an unknown session."""

        def q(cur: Cursor) -> list[MessageRow]:
            cur.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages"
                " WHERE session_id = %s AND active ORDER BY order_key",
                (session_id,),
            )
            return [message_row(r) for r in cur.fetchall()]

        return self._db.read(q)

    def active_message_ids(self, session_id: str) -> list[int]:
        """Ids of the active transcript's messages, in order."""

        def q(cur: Cursor) -> list[int]:
            cur.execute(
                "SELECT id FROM messages WHERE session_id = %s AND active ORDER BY order_key",
                (session_id,),
            )
            return [int(r[0]) for r in cur.fetchall()]

        return self._db.read(q)

    def all_messages(self, session_id: str) -> list[MessageRow]:
        """Every message ever appended, archived ones included, in append order (position)."""

        def q(cur: Cursor) -> list[MessageRow]:
            cur.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = %s ORDER BY position",
                (session_id,),
            )
            return [message_row(r) for r in cur.fetchall()]

        return self._db.read(q)

    def load_history(self, session_id: str) -> list[ChatMessage]:
        """The transcript sent to the model: active messages, in order ([] if unknown)."""

        def q(cur: Cursor) -> list[ChatMessage]:
            cur.execute(
                "SELECT role, content, tool_calls, tool_call_id FROM messages"
                " WHERE session_id = %s AND active ORDER BY order_key",
                (session_id,),
            )
            return [
                ChatMessage(
                    role=cast(Role, r[0]),
                    content=r[1],
                    tool_calls=tool_calls_from_json(r[2]) if r[2] is not None else (),
                    tool_call_id=r[3],
                )
                for r in cur.fetchall()
            ]

        return self._db.read(q)
