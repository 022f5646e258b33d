"""What the table groups of one PostgreSQL store share: their context, and plain helpers.

As in the SQLite store (:mod:`agent.store.sqlite.shared`), each table group is a class of its
own built from one :class:`StoreContext`, and a write that touches another group's tables does
it inside its own transaction with the helpers here. Row mapping (``columns``, ``as_new``,
``message_row``) is the SQLite store's, unchanged: the rows have the same columns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agent.store.liveness import OwnerLiveness
from agent.store.postgres.claims import Claims
from agent.store.postgres.database import Cursor, Database
from agent.store.rows import MessageRow, NewMessage, tool_calls_to_json
from agent.store.sqlite.shared import Clock
from agent.tokens import estimate_tokens


@dataclass(frozen=True, slots=True)
class StoreContext:
    """What every table group of one store shares.

    Attributes:
        db: the store's pool.
        where: the database as messages name it (its URL without the password).
        clock: wall-clock source in unix seconds, for row times and compression lease expiry.
        owner: this store's owner string, written on the turns and queued prompts it starts.
        liveness: tells whether another owner still runs (crash recovery, claims).
        claims: the sessions this store holds, checked by every write of a session.
    """

    db: Database
    where: str
    clock: Clock
    owner: str
    liveness: OwnerLiveness
    claims: Claims


def insert_messages(
    cur: Cursor,
    session_id: str,
    items: Iterable[NewMessage],
    turn_id: str | None,
    now: float,
    *,
    order_key: int | None = None,
) -> list[MessageRow]:
    """Append messages to a session inside the caller's write transaction (which holds the
    session: :meth:`Claims.hold`), and touch the session's ``updated_at``; positions continue
    without gaps. See :func:`agent.store.sqlite.shared.insert_messages`.

    Returns:
        the stored rows, in order ([] for no items; then nothing is written).
    """
    items = list(items)
    if not items:
        return []
    cur.execute(
        "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = %s",
        (session_id,),
    )
    found = cur.fetchone()
    position = int(found[0]) if found is not None else 0
    rows: list[MessageRow] = []
    for item in items:
        msg = item.message
        tokens = item.token_estimate if item.token_estimate is not None else estimate_tokens(msg)
        key = position if order_key is None else order_key
        cur.execute(
            "INSERT INTO messages (session_id, position, order_key, role, content, reasoning,"
            " tool_calls, tool_call_id, token_estimate, active, partial, turn_id, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, TRUE, %s, %s, %s) RETURNING id",
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
        inserted = cur.fetchone()
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
    cur.execute("UPDATE sessions SET updated_at = %s WHERE id = %s", (now, session_id))
    return rows
