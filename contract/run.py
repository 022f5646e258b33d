"""``desk run --json``: one JSON object a line, each an event of the run with a contract payload.

A line is ``{"type", "session_id", "payload"}`` (:class:`RunLine`): ``type`` is one of
:data:`RUN_EVENTS`' names, and ``payload`` is the wire contract's payload of the gateway event it
stands for, serialized as on the wire (``Payload.to_wire``: with its ``version``). Only
``session.started`` has a payload of its own (:class:`SessionStarted`). The names follow what
scripts of other agents read (``turn.started``, ``tool.completed``...); the payloads are the
gateway's, so a frontend of the wire and a script read the same members.

Every run writes ``session.started`` first and ``turn.completed`` last, exactly once, whatever
ends it (the turn's end, Ctrl+C, SIGTERM, SIGHUP, a refusal before the turn started); the
process's exit status is ``desk run``'s (0, 130, 143, 1). A Ctrl+C, SIGTERM or SIGHUP before the
session existed writes ``turn.completed`` alone, with an empty ``session_id``
(:mod:`tui_gateway.wire.run_early`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from contract.envelope import Payload
from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    CompressionComplete,
    CompressionProgressed,
    ContextWindowKnown,
    MessageComplete,
    MessageDelta,
    MessageStart,
    ToolComplete,
    ToolStart,
)

DELTA_INTERVAL_S = 0.1
"""Seconds between two ``message.delta`` lines of a run: the pieces streamed meanwhile are joined
into one line (about ten lines a second, whatever the server's pace)."""


@dataclass(frozen=True, slots=True)
class SessionStarted(Payload):
    """The run's session: a new one, or the saved one ``--session`` continues.

    Attributes:
        model: the model the turn talks to.
        base_url: the model server's OpenAI base URL.
        resumed: true when ``--session`` continues a saved session.
        title: the session's title ("" until a prompt names it).
    """

    TYPE: ClassVar[str] = "session.started"
    model: str
    base_url: str
    resumed: bool
    title: str = ""


@dataclass(frozen=True, slots=True)
class RunLine:
    """One line of ``desk run --json``.

    Attributes:
        type: the event (see ``desk run --json`` lines).
        session_id: the run's session ("" when it has none: a refusal before it existed).
        payload: the event's payload, with its ``version``.
    """

    type: str
    session_id: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One kind of line ``desk run --json`` writes.

    Attributes:
        name: the line's ``type``.
        payload: the payload's class (a gateway event's, or :class:`SessionStarted`).
        summary: when it is written.
    """

    name: str
    payload: type[Payload]
    summary: str


RUN_EVENTS: tuple[RunEvent, ...] = (
    RunEvent("session.started", SessionStarted, "First, once: the run's session."),
    RunEvent("turn.started", MessageStart, "The turn started: its prompt went to the model."),
    RunEvent(
        "message.delta",
        MessageDelta,
        f"Reply text as it streams, joined: at most one line every {DELTA_INTERVAL_S:g} s.",
    ),
    RunEvent(
        "tool.started",
        ToolStart,
        "A tool call the model made (it may ask first: then `approval.requested` follows).",
    ),
    RunEvent("tool.completed", ToolComplete, "A tool call's one result."),
    RunEvent(
        "approval.requested",
        ApprovalRequest,
        "A tool call asks first; `desk run` answers at once: allowed once with `--yes`, else "
        "denied.",
    ),
    RunEvent("approval.resolved", ApprovalResolved, "How that approval was answered."),
    RunEvent(
        "compression.progress",
        CompressionProgressed,
        "A compression's phase and counts (the newest counts of a phase only).",
    ),
    RunEvent("compression.completed", CompressionComplete, "A compression's one outcome."),
    RunEvent(
        "context.window",
        ContextWindowKnown,
        "The context window and how full it is: once known, then before the turn ends and after "
        "a compression.",
    ),
    RunEvent(
        "turn.completed",
        MessageComplete,
        "Last, once: the turn's outcome (status, exit reason, the stop's receipt, usage).",
    ),
)
"""Every kind of line, in the order a run may write them."""

RUN_EVENT_OF: dict[type[Payload], str] = {
    e.payload: e.name for e in RUN_EVENTS if e.payload is not SessionStarted
}
"""The gateway payload class -> the line's ``type`` (events of other classes are not written)."""
