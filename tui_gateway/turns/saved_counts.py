"""A saved session's transcript and token count as the gateway takes them back on resume."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.compression.plan import SUMMARY_MARKER
from agent.context.budget import ContextBudget
from agent.context.shape import well_formed, withdrawn
from agent.provider.types import ChatMessage
from agent.provider.window import DEFAULT_WINDOW, ContextWindow, WindowSource
from agent.store import MessageRow, TurnRow


def saved_history(rows: Sequence[MessageRow], turns: Sequence[TurnRow]) -> list[ChatMessage]:
    """A saved transcript as the gateway holds it: prompts of turns that never ran (queued
    ones a stop dropped, or requests that could not fit) and of turns that ended without a
    reply (:func:`~agent.context.shape.withdrawn`, as the live session marked them) are marked
    as not sent, and a user message of a turn after its prompt as a steer (so a resumed
    session's requests carry the same note before it as the live ones did)."""
    prompted: set[str] = set()  # turns whose prompt was seen: a later user message steered
    kinds: list[tuple[bool, bool]] = []  # per row: (its turn's prompt, a steer)
    replied: set[str] = set()  # turns with a message after their prompt (a reply, a steer)
    for m in rows:
        user = m.role == "user"
        summary = user and m.content.startswith(SUMMARY_MARKER)
        steer = user and m.turn_id in prompted and not summary
        prompt = user and not summary and not steer and bool(m.turn_id)
        if user and m.turn_id:
            prompted.add(m.turn_id)
        if m.turn_id and not summary and not prompt:
            replied.add(m.turn_id)
        kinds.append((prompt, steer))
    not_sent = {
        t.id
        for t in turns
        if t.not_sent or (not t.is_open and withdrawn(t.status, replied=t.id in replied))
    }
    history: list[ChatMessage] = []
    for m, (prompt, steer) in zip(rows, kinds, strict=True):
        history.append(
            ChatMessage(
                role=m.role,
                content=m.content,
                tool_calls=m.tool_calls,
                tool_call_id=m.tool_call_id,
                unsent=prompt and m.turn_id in not_sent,
                steer=steer,
            )
        )
    return history


def saved_budget(
    rows: Sequence[MessageRow], turns: Sequence[TurnRow], tools: Sequence[dict[str, Any]]
) -> ContextBudget | None:
    """A resumed session's budget, calibrated from its last saved server count.

    The last completed turn's ``prompt_tokens`` is the server's count of the request its final
    reply answered: every active message before that reply (and the tool definitions); with its
    ``completion_tokens``, of that reply too. It is used when no later compression has
    rewritten what stands before the reply. It calibrates
    once the window is known (:meth:`SessionWindows.budget`): the window decides whether the
    tool definitions were sent whole or compact, as the live session's counts did.

    Returns:
        the budget, or None when nothing saved can calibrate it.
    """
    counted = [t for t in turns if t.prompt_tokens and t.status == "completed"]
    if not counted:
        return None
    turn = max(counted, key=lambda t: t.ended_at or 0.0)
    mine = [i for i, m in enumerate(rows) if m.turn_id == turn.id]
    if not mine:
        return None
    last = mine[-1]
    final = rows[last]
    if final.role != "assistant" or final.tool_calls:
        return None
    if any(m.position > final.position for m in rows[:last]):
        return None  # a later compression's summary stands before the reply
    history = saved_history(rows[: last + 1], turns)
    request = well_formed(history[:-1])
    assert turn.prompt_tokens is not None
    budget = ContextBudget(ContextWindow(DEFAULT_WINDOW, WindowSource.ASSUMED))
    # the definitions were sent compact or whole as the window said: calibrated once it is
    # known; the reply's own tokens count as the server said, as they did before the quit
    replied = turn.completion_tokens or 0
    budget.observe_when_known(request, tools, turn.prompt_tokens, history[-1], replied)
    return budget
