"""The gateway's closed types for turns (their values are the wire's words, unchanged)."""

from __future__ import annotations

from enum import StrEnum


class TurnStage(StrEnum):
    """Where a turn is in its session: waiting in the queue, running on a worker, or done."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class TurnKind(StrEnum):
    """What a turn runs: a prompt (a model turn) or a ``/compress``."""

    PROMPT = "prompt"
    COMPRESS = "compress"


class TurnActivity(StrEnum):
    """What the running turn does now (the ``state`` of a ``turn.state`` event).

    ``waiting``: a request was sent and no byte came back yet; ``streaming``: the reply
    arrives; ``retrying``: the server asked to wait; ``tool``: a tool call runs; ``stopping``:
    a hard stop was sent; ``compressing``: the turn compresses the transcript first.
    """

    WAITING = "waiting"
    STREAMING = "streaming"
    RETRYING = "retrying"
    TOOL = "tool"
    STOPPING = "stopping"
    COMPRESSING = "compressing"


__all__ = ["TurnActivity", "TurnKind", "TurnStage"]
