"""The contract's closed words for turns and child agents (their values are the wire's words)."""

from __future__ import annotations

from enum import StrEnum


class ChildDelivery(StrEnum):
    """How a child agent's answer reached the agent that delegated it.

    ``tool_result``: a foreground child; its answer was the ``delegate`` call's result.
    ``steer``: a background child; its answer was handed to the running parent as a steer
    (a ``prompt.steered`` event with the child's id as ``steer_id`` follows when the parent
    takes it at its next boundary). ``note``: a background child whose parent had ended; its
    answer stays a note in the transcript (its card), and on its turn's row.
    """

    TOOL_RESULT = "tool_result"
    STEER = "steer"
    NOTE = "note"


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


__all__ = ["ChildDelivery", "TurnActivity"]
