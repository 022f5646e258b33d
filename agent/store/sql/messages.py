"""Row helpers every table group shares, and the one way messages are inserted.

A write that adds messages inside its own transaction (a session's first messages, a turn's
prompt and reply, a prompt that never ran, a compression summary) calls :func:`insert_messages`,
so it stays one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import Any

from agent.provider.types import ChatMessage
from agent.store.rows import MessageRow, NewMessage, tool_calls_from_json, tool_calls_to_json
from agent.store.sql.core import Row, Tx
from agent.tokens import estimate_tokens


def columns(row_type: type[Any]) -> str:
    """The select list of a row dataclass: its field names, in order.

    Each row type's fields are named after its table's columns, so selecting them in field
    order lets the fetched tuple build the row by position (``SessionRow(*r)``): one list for
    the query and the mapping, instead of a column string and a mapper per row type.

    Args:
        row_type: a dataclass of :mod:`agent.store.rows`.
    """
    return ", ".join(f.name for f in fields(row_type))


MESSAGE_COLUMNS = columns(MessageRow)


def as_new(item: ChatMessage | NewMessage) -> NewMessage:
    """``item`` as a :class:`NewMessage` (a bare message gets the default flags)."""
    return item if isinstance(item, NewMessage) else NewMessage(item)


def insert_messages(
    tx: Tx,
    session_id: str,
    items: Iterable[NewMessage],
    turn_id: str | None,
    now: float,
    *,
    order_key: int | None = None,
) -> list[MessageRow]:
    """Append messages to a session inside the caller's write transaction (which holds the
    session), and touch the session's ``updated_at``; positions continue without gaps.

    A new message's ``order_key`` is its position (every older row's key is at most its own
    position, so it sorts last), unless ``order_key`` places one summary elsewhere.

    Args:
        tx: the write transaction.
        session_id: the session (the caller checked it exists).
        items: the messages, in order.
        turn_id: the turn that adds them, or None.
        now: unix seconds, for ``created_at`` and ``updated_at``.
        order_key: the place of a single summary in the active transcript, or None.

    Returns:
        the stored rows, in order ([] for no items; then nothing is written).
    """
    items = list(items)
    if not items:
        return []
    found = tx.one(
        "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = ?", (session_id,)
    )
    position = int(found[0]) if found is not None else 0
    rows: list[MessageRow] = []
    for item in items:
        msg = item.message
        tokens = item.token_estimate if item.token_estimate is not None else estimate_tokens(msg)
        key = position if order_key is None else order_key
        inserted = tx.one(
            "INSERT INTO messages (session_id, position, order_key, role, content, reasoning,"
            " tool_calls, tool_call_id, token_estimate, active, partial, turn_id, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, TRUE, ?, ?, ?) RETURNING id",
            (
                session_id,
                position,
                key,
                msg.role,
                msg.content,
                item.reasoning,
                tool_calls_to_json(msg.tool_calls),
                msg.tool_call_id,
                tokens,
                item.partial,
                turn_id,
                now,
            ),
        )
        assert inserted is not None
        rows.append(
            MessageRow(
                id=int(inserted[0]),
                session_id=session_id,
                position=position,
                order_key=key,
                role=msg.role,
                content=msg.content,
                reasoning=item.reasoning,
                tool_calls=msg.tool_calls,
                tool_call_id=msg.tool_call_id,
                token_estimate=tokens,
                active=True,
                archived_by=None,
                partial=item.partial,
                turn_id=turn_id,
                created_at=now,
            )
        )
        position += 1
    tx.run("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
    return rows


def message_row(r: Row) -> MessageRow:
    """A :class:`MessageRow` from a row of :data:`MESSAGE_COLUMNS` (the one row type whose
    columns need converting: tool calls are JSON, SQLite's flags are 0/1)."""
    # Positional, in MessageRow's field order (this runs once per message on session open).
    return MessageRow(
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        r[6],
        tool_calls_from_json(r[7]) if r[7] is not None else (),
        r[8],
        r[9],
        bool(r[10]),
        r[11],
        bool(r[12]),
        r[13],
        r[14],
    )
