"""A turn's tool calls as saved while it runs, so a killed desk loses none of them.

A turn's messages are written when it ends (:meth:`~agent.store.protocol.Turns.record_turn_end`).
Its tool calls are saved before that, on the turn's row (``turns.calls``), when each starts and
again when it has its result (:meth:`~agent.store.protocol.Turns.save_calls`). A turn closed by
crash recovery gets them as messages: one assistant message asking for the calls, then each
call's result, :data:`LOST_RESULT` for a call that was still running, or :data:`NOT_ANSWERED`
for one whose approval the person had not answered (it never ran), so the resumed session shows
every card and the model sees every call answered. A child agent's calls are not its session's
messages: they stay on its row, where it ended or crashed, and its card shows them on resume.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from agent.provider.types import ChatMessage, ToolCall
from agent.store.rows import NewMessage

LOST_RESULT = "desk stopped while this call ran (it was killed or crashed): its result is lost"
"""The result of a call that was still running when its desk died."""

NOT_ANSWERED = "desk was closed before the person answered this call's approval: it was not run"
"""The result of a call whose approval was still waiting for the person when its desk died."""


@dataclass(frozen=True, slots=True)
class SavedCall:
    """One tool call of an open turn, as last saved.

    Attributes:
        id: the provider's call id.
        name: the tool.
        arguments: the arguments' JSON text, as the model sent it.
        content: the result the model sees, or None while the call runs.
        is_error: True for a failed, declined or stopped call.
        waiting: True while the call waits for the person's approval (it has not run yet).
    """

    id: str
    name: str
    arguments: str
    content: str | None = None
    is_error: bool = False
    waiting: bool = False

    @property
    def running(self) -> bool:
        """True while the call has no result."""
        return self.content is None


def calls_to_json(calls: Sequence[SavedCall]) -> str:
    """``calls`` as the JSON text of ``turns.calls``."""
    return json.dumps(
        [[c.id, c.name, c.arguments, c.content, c.is_error, c.waiting] for c in calls],
        ensure_ascii=False,
    )


def calls_from_json(text: str | None) -> list[SavedCall]:
    """Read what :func:`calls_to_json` wrote ([] for None or text that is not such a list;
    rows saved before ``waiting`` was saved read as not waiting)."""
    if not text:
        return []
    try:
        data = json.loads(text)
        return [
            SavedCall(str(i), str(n), str(a), c, bool(e), bool(w[0]) if w else False)
            for i, n, a, c, e, *w in data
        ]
    except (ValueError, TypeError):
        return []


def recovered_messages(calls: Sequence[SavedCall]) -> list[NewMessage]:
    """The messages a crashed turn gets for its saved calls: the assistant message that asked
    for them, then one result each (:data:`LOST_RESULT` for a call that was running,
    :data:`NOT_ANSWERED` for one waiting for its approval); [] for no calls."""
    if not calls:
        return []
    asked = ChatMessage(
        role="assistant",
        content="",
        tool_calls=tuple(ToolCall(c.id, c.name, c.arguments) for c in calls),
    )
    results = [ChatMessage(role="tool", content=result_of(c), tool_call_id=c.id) for c in calls]
    return [NewMessage(asked), *(NewMessage(r) for r in results)]


def result_of(call: SavedCall) -> str:
    """A saved call's result; for one a crash left without it, what it is answered with."""
    if call.content is not None:
        return call.content
    return NOT_ANSWERED if call.waiting else LOST_RESULT
