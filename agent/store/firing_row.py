"""One firing of a schedule, as the store keeps it (:class:`~agent.store.protocol.Firings`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FiringRow:
    """A row of ``schedule_firings`` (field order is the table's column order).

    Attributes:
        schedule: the schedule's name.
        due_at: when it was due, unix seconds.
        owner: the store owner (host) that won it and runs it.
        claimed_at: when that owner won it, unix seconds.
        session_id: the session its turn ran in, or None before the turn started.
        turn_id: its turn, or None before it started (or when none could).
        ended_at: when its outcome was noted, unix seconds, or None.
        outcome: its turn's exit reason, or why no turn ran; None while it runs (or when its
            host died: the turn's own row then says ``failed(Crash)``).
    """

    schedule: str
    due_at: float
    owner: str
    claimed_at: float
    session_id: str | None
    turn_id: str | None
    ended_at: float | None
    outcome: str | None
