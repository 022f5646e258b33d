"""Textual messages for the gateway's tool, approval, console, compression and session events.

The companion of :mod:`desk.messages` (turn and prompt events): :func:`activity_message` is
called by :func:`desk.bridge.to_message` for the event types listed here. Each message carries
the event's ``session_id`` and its typed payload unchanged.
"""

from __future__ import annotations

from textual.message import Message

from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    CompressionComplete,
    CompressionProgressed,
    ConsoleComplete,
    ConsoleOutput,
    ContextWindowKnown,
    GatewayEvent,
    SessionEvicted,
    StoreFailed,
    StoreWaiting,
    ToolComplete,
    ToolOutput,
    ToolStart,
)
from desk.messages import GatewayMessage


class ToolCallStarted(GatewayMessage):
    """``tool.start``: a tool call of a turn starts (before its approval, if it needs one)."""

    def __init__(self, session_id: str, seq: int, payload: ToolStart) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class ToolCallOutput(GatewayMessage):
    """``tool.output``: output of a running tool call (possibly several pieces merged)."""

    def __init__(self, session_id: str, seq: int, payload: ToolOutput) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class ToolCallCompleted(GatewayMessage):
    """``tool.complete``: a tool call's one result."""

    def __init__(self, session_id: str, seq: int, payload: ToolComplete) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class ApprovalRequested(GatewayMessage):
    """``approval.request``: a tool call waits for the person's answer."""

    def __init__(self, session_id: str, seq: int, payload: ApprovalRequest) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class ApprovalWasResolved(GatewayMessage):
    """``approval.resolved``: a pending approval ended (answered, or denied by a stop)."""

    def __init__(self, session_id: str, seq: int, payload: ApprovalResolved) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class ConsoleOutputArrived(GatewayMessage):
    """``console.output``: output of a running console command (to the app, always)."""

    FOR_VIEW = False

    def __init__(self, session_id: str, seq: int, payload: ConsoleOutput) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class ConsoleCommandEnded(GatewayMessage):
    """``console.complete``: a console command's one outcome (to the app, always)."""

    FOR_VIEW = False

    def __init__(self, session_id: str, seq: int, payload: ConsoleComplete) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class SessionWasEvicted(GatewayMessage):
    """``session.evicted``: the session left the gateway's live set."""

    def __init__(self, session_id: str, seq: int, payload: SessionEvicted) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class SessionStoreFailed(GatewayMessage):
    """``session.store_error``: saving failed; the session goes on in memory only."""

    def __init__(self, session_id: str, seq: int, payload: StoreFailed) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class SessionStoreWaiting(GatewayMessage):
    """``session.store_waiting``: the session's writes wait for the database, or are all
    written again."""

    def __init__(self, session_id: str, seq: int, payload: StoreWaiting) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class CompressionProgress(GatewayMessage):
    """``compression.progress``: a running compression's phase and counts.

    A backlog of progress of the same turn and phase collapses into the newest (the gateway
    coalesces too; this covers a busy UI).
    """

    def __init__(self, session_id: str, seq: int, payload: CompressionProgressed) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""

    def can_replace(self, message: Message) -> bool:
        """True when ``message`` is newer progress of the same turn and phase."""
        return (
            isinstance(message, CompressionProgress)
            and message.session_id == self.session_id
            and self.payload.merged(message.payload) is not None
        )


class ContextWindowReported(GatewayMessage):
    """``context.window``: the session's window, where it came from, and how full it is."""

    def __init__(self, session_id: str, seq: int, payload: ContextWindowKnown) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class CompressionEnded(GatewayMessage):
    """``compression.complete``: a compression attempt's one outcome."""

    def __init__(self, session_id: str, seq: int, payload: CompressionComplete) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


def activity_message(event: GatewayEvent) -> GatewayMessage | None:
    """The message for a tool, approval, console or session-lifecycle event, else None."""
    payload = event.payload
    sid, seq = event.session_id, event.seq
    if isinstance(payload, ToolOutput):
        return ToolCallOutput(sid, seq, payload)
    if isinstance(payload, ToolStart):
        return ToolCallStarted(sid, seq, payload)
    if isinstance(payload, ToolComplete):
        return ToolCallCompleted(sid, seq, payload)
    if isinstance(payload, ApprovalRequest):
        return ApprovalRequested(sid, seq, payload)
    if isinstance(payload, ApprovalResolved):
        return ApprovalWasResolved(sid, seq, payload)
    if isinstance(payload, ConsoleOutput):
        return ConsoleOutputArrived(sid, seq, payload)
    if isinstance(payload, ConsoleComplete):
        return ConsoleCommandEnded(sid, seq, payload)
    if isinstance(payload, CompressionProgressed):
        return CompressionProgress(sid, seq, payload)
    if isinstance(payload, CompressionComplete):
        return CompressionEnded(sid, seq, payload)
    if isinstance(payload, ContextWindowKnown):
        return ContextWindowReported(sid, seq, payload)
    if isinstance(payload, SessionEvicted):
        return SessionWasEvicted(sid, seq, payload)
    if isinstance(payload, StoreFailed):
        return SessionStoreFailed(sid, seq, payload)
    if isinstance(payload, StoreWaiting):
        return SessionStoreWaiting(sid, seq, payload)
    return None
