"""Agent events of one turn -> gateway event payloads (and the turn's visible state)."""

from __future__ import annotations

from collections.abc import Callable

from agent.events import (
    AgentEvent,
    AgentListener,
    ModelCallStarted,
    Retrying,
    SteerDelivered,
    TextDelta,
    ToolCompleted,
    ToolOutput,
    ToolStarted,
)
from contract import events as ev
from contract.kinds import TurnActivity


def turn_listener(
    turn_id: str,
    publish: Callable[[ev.Payload], None],
    *,
    on_text: Callable[[str], None] | None = None,
    on_tool: Callable[[ToolStarted | ToolCompleted], None] | None = None,
) -> AgentListener:
    """A listener that publishes one turn's agent events as gateway payloads.

    Args:
        turn_id: the turn the events belong to.
        publish: sends a payload to the session's subscribers; must not block.
        on_text: also gets each piece of visible reply text (for draft checkpoints).
        on_tool: also gets each tool call's start (before the tool runs) and its result
            (to save them as they happen).

    Returns:
        the listener to give the turn's :class:`agent.agent.Agent`.
    """
    state: TurnActivity | None = None

    def set_state(new: TurnActivity, detail: str = "") -> None:
        nonlocal state
        if new != state or detail:
            state = new
            publish(ev.TurnState(turn_id=turn_id, state=new, detail=detail))

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            set_state(TurnActivity.STREAMING)
            publish(ev.MessageDelta(turn_id=turn_id, text=event.text, reasoning=event.reasoning))
            if on_text is not None:
                on_text(event.text)
        elif isinstance(event, ModelCallStarted):
            set_state(TurnActivity.WAITING)
        elif isinstance(event, Retrying):
            set_state(TurnActivity.RETRYING, f"{event.message}; retrying in {event.delay_s:g} s")
        elif isinstance(event, ToolStarted):
            if on_tool is not None:
                on_tool(event)
            set_state(TurnActivity.TOOL, event.name)
            publish(
                ev.ToolStart(
                    turn_id=turn_id,
                    call_id=event.call_id,
                    name=event.name,
                    arguments=event.arguments,
                )
            )
        elif isinstance(event, ToolOutput):
            publish(ev.ToolOutput(turn_id=turn_id, call_id=event.call_id, text=event.text))
        elif isinstance(event, ToolCompleted):
            if on_tool is not None:
                on_tool(event)
            publish(ev.ToolComplete.of(turn_id, event))
        elif isinstance(event, SteerDelivered):
            steered = ev.PromptSteered(
                turn_id, event.steer_id, event.text, event.issuer, event.surface
            )
            publish(steered)

    return on_event
