"""One event of a session shown among its messages, as the store keeps it
(:meth:`~agent.store.protocol.Messages.append_event`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TranscriptEventRow:
    """A row of ``transcript_events`` (field order is the table's column order).

    An event the person saw in the transcript that is not a message (a compression's outcome
    line), kept so that a resumed session shows it again in its place.

    Attributes:
        id: the row id (events of a session are in the order of their ids).
        session_id: the session.
        after_position: the ``position`` of the last message it came after: the session's
            last message when it was appended, compression summaries left out (a summary is
            appended last but read in the place of what it replaced); -1 before any message.
        turn_id: the turn it belongs to, or None.
        type: what it is, e.g. ``compression.complete`` (the frontend's event type).
        payload: the event as its writer encoded it (JSON text).
        created_at: unix seconds.
    """

    id: int
    session_id: str
    after_position: int
    turn_id: str | None
    type: str
    payload: str
    created_at: float
