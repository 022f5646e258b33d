"""The gateway's closed types for turns (their values are the wire's words, unchanged)."""

from __future__ import annotations

from enum import StrEnum


class TurnStage(StrEnum):
    """Where a turn is in its session: waiting in the queue, running on a worker, or done."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class TurnKind(StrEnum):
    """What a turn runs: a prompt (a model turn), a ``/compress``, or a child agent's task (a
    ``delegate`` call of another turn)."""

    PROMPT = "prompt"
    COMPRESS = "compress"
    CHILD = "child"


__all__ = ["TurnKind", "TurnStage"]
