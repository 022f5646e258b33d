"""The transcript: reading and appending rows of the ``messages`` table, and of
``transcript_events`` (what the person saw among the messages that is not one: a compression's
outcome line), each placed after the message it followed.

The one way rows are inserted, :func:`~agent.store.sql.messages.insert_messages`, is shared
with the groups that add messages inside their own transactions (a session's first messages, a
turn's prompt and reply, a compression summary)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from agent.provider.types import ChatMessage, Role
from agent.store.errors import StoreNotFound
from agent.store.event_row import TranscriptEventRow
from agent.store.rows import MessageRow, NewMessage, tool_calls_from_json
from agent.store.sql.core import Core, Tx
from agent.store.sql.messages import (
    MESSAGE_COLUMNS,
    as_new,
    columns,
    insert_messages,
    message_row,
)

_EVENT_COLUMNS = columns(TranscriptEventRow)

_LAST_POSITION = (
    "SELECT COALESCE(MAX(position), -1) FROM messages WHERE session_id = ? AND id NOT IN"
    " (SELECT summary_message_id FROM compression_attempts"
    " WHERE session_id = ? AND summary_message_id IS NOT NULL)"
)
"""The position of the session's last message, compression summaries left out (a summary is
appended last, but read in the place of the messages it replaced)."""


class SqlTranscript:
    """Messages (implements :class:`~agent.store.protocol.Messages`).

    Args:
        core: what the table groups of the store share.
    """

    def __init__(self, core: Core) -> None:
        self._e = core.engine
        self._where = core.where
        self._clock = core.clock

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
        """Append one message at the session's next position (assigned inside the transaction).

        Args:
            session_id: the session.
            message: the message (a :class:`NewMessage` carries its own flags; then
                ``partial``, ``reasoning`` and ``token_estimate`` are ignored).
            turn_id: the turn that adds it, or None.
            partial: True for a reply cut short.
            reasoning: reasoning text shown with it.
            token_estimate: tokens; None for :func:`~agent.tokens.estimate_tokens`.

        Returns:
            the stored row.

        Raises:
            StoreNotFound: no such session, or ``turn_id`` names no turn of it.
            StoreFenced: another owner holds the session.
            StoreError: the write failed (nothing was written).
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
            StoreFenced: another owner holds the session.
            StoreError: the write failed (nothing was written).
        """
        items = [as_new(m) for m in messages]

        def tx(t: Tx) -> list[MessageRow]:
            self._e.hold(t, session_id)
            if turn_id is not None and not t.one(
                "SELECT 1 FROM turns WHERE id = ? AND session_id = ?", (turn_id, session_id)
            ):
                raise StoreNotFound(f"no turn {turn_id!r} in session {session_id!r}", self._where)
            return insert_messages(t, session_id, items, turn_id, self._clock())

        return self._e.write(tx)

    def active_messages(self, session_id: str) -> list[MessageRow]:
        """The active transcript (archived rows left out), in order; [] for an unknown session."""
        rows = self._e.read(
            lambda t: t.all(
                f"SELECT {MESSAGE_COLUMNS} FROM messages"
                " WHERE session_id = ? AND active = TRUE ORDER BY order_key",
                (session_id,),
            )
        )
        return [message_row(r) for r in rows]

    def active_message_ids(self, session_id: str) -> list[int]:
        """Ids of the active transcript's messages, in order (cheap: no row objects)."""
        rows = self._e.read(
            lambda t: t.all(
                "SELECT id FROM messages WHERE session_id = ? AND active = TRUE ORDER BY order_key",
                (session_id,),
            )
        )
        return [int(r[0]) for r in rows]

    def all_messages(self, session_id: str) -> list[MessageRow]:
        """Every message ever appended, archived ones included, in append order (position)."""
        rows = self._e.read(
            lambda t: t.all(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY position",
                (session_id,),
            )
        )
        return [message_row(r) for r in rows]

    def load_history(self, session_id: str) -> list[ChatMessage]:
        """The transcript sent to the model: active messages, in order ([] if unknown).

        Partial replies are included (the model sees what the person saw); reasoning is not.
        """
        rows = self._e.read(
            lambda t: t.all(
                "SELECT role, content, tool_calls, tool_call_id FROM messages"
                " WHERE session_id = ? AND active = TRUE ORDER BY order_key",
                (session_id,),
            )
        )
        return [
            ChatMessage(
                role=cast(Role, r[0]),
                content=r[1],
                tool_calls=tool_calls_from_json(r[2]) if r[2] is not None else (),
                tool_call_id=r[3],
            )
            for r in rows
        ]

    def append_event(
        self, session_id: str, type: str, payload: str, *, turn_id: str | None = None
    ) -> TranscriptEventRow:
        """Keep an event the person saw among the session's messages, after its last message
        (compression summaries left out), in one transaction.

        Args:
            session_id: the session.
            type: what it is, e.g. ``compression.complete``.
            payload: the event, encoded by the caller (JSON text).
            turn_id: the turn it belongs to, or None (not checked: a ``/compress`` turn
                keeps no row of its own in every store).

        Returns:
            the stored row.

        Raises:
            StoreNotFound: no such session.
            StoreFenced: another owner holds the session.
            StoreError: the write failed (nothing was written).
        """
        now = self._clock()

        def tx(t: Tx) -> TranscriptEventRow:
            self._e.hold(t, session_id)
            found = t.one(_LAST_POSITION, (session_id, session_id))
            after = int(found[0]) if found is not None else -1
            row = t.one(
                "INSERT INTO transcript_events (session_id, after_position, turn_id, type,"
                f" payload, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING {_EVENT_COLUMNS}",
                (session_id, after, turn_id, type, payload, now),
            )
            assert row is not None
            return TranscriptEventRow(*row)

        return self._e.write(tx)

    def events(self, session_id: str) -> list[TranscriptEventRow]:
        """The events kept for the session, in the order they were appended ([] if unknown)."""
        rows = self._e.read(
            lambda t: t.all(
                f"SELECT {_EVENT_COLUMNS} FROM transcript_events WHERE session_id = ? ORDER BY id",
                (session_id,),
            )
        )
        return [TranscriptEventRow(*r) for r in rows]
