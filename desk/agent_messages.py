"""Textual messages for the gateway's steering and child-agent events.

The companion of :mod:`desk.messages` and :mod:`desk.activity_messages`: :func:`agent_message`
is called by :func:`desk.bridge.to_message` for ``prompt.steered``, ``child.start`` and
``child.complete``. Each message carries the event's ``session_id`` and its payload unchanged.
"""

from __future__ import annotations

from contract.events import ChildCompleted, ChildStarted, GatewayEvent, PromptSteered
from desk.messages import GatewayMessage


class PromptWasSteered(GatewayMessage):
    """``prompt.steered``: a steer reached its turn at a model-call boundary."""

    def __init__(self, session_id: str, seq: int, payload: PromptSteered) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class AgentStarted(GatewayMessage):
    """``child.start``: a ``delegate`` call started a child agent."""

    def __init__(self, session_id: str, seq: int, payload: ChildStarted) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class AgentCompleted(GatewayMessage):
    """``child.complete``: a child agent's one outcome."""

    def __init__(self, session_id: str, seq: int, payload: ChildCompleted) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


def agent_message(event: GatewayEvent) -> GatewayMessage | None:
    """The message for a steering or child-agent event, else None."""
    payload = event.payload
    sid, seq = event.session_id, event.seq
    if isinstance(payload, PromptSteered):
        return PromptWasSteered(sid, seq, payload)
    if isinstance(payload, ChildStarted):
        return AgentStarted(sid, seq, payload)
    if isinstance(payload, ChildCompleted):
        return AgentCompleted(sid, seq, payload)
    return None
