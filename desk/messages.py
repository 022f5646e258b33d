"""Textual messages that carry gateway events into the app (posted by :mod:`desk.bridge`), and
the app's other messages from threads of its own (server facts, terminal, quit).

One message class per gateway event type the app shows. Each carries the event's
``session_id`` and its typed payload unchanged. Each is handled where the bridge posted it:
the view of its session (which stops it there), or the app.
"""

from __future__ import annotations

from typing import ClassVar

from textual.message import Message

from contract.events import (
    GatewayStopping,
    MessageComplete,
    MessageDelta,
    MessageStart,
    PromptDropped,
    PromptQueued,
    TurnState,
)
from contract.mcp_events import McpServerChanged
from contract.server_events import ServerStatus


class GatewayMessage(Message):
    """Base of the messages made from gateway events.

    Args:
        session_id: the event's session ("" for gateway-wide events).
        seq: the event's sequence number.
    """

    FOR_VIEW: ClassVar[bool] = True
    """Posted to the view of its session when one is shown (else to the app)."""

    def __init__(self, session_id: str, seq: int) -> None:
        super().__init__()
        self.session_id = session_id
        """The session the event belongs to ("" for gateway-wide events)."""
        self.seq = seq
        """The event's per-session sequence number."""


class TurnStarted(GatewayMessage):
    """``message.start``: a turn began and its reply starts."""

    def __init__(self, session_id: str, seq: int, payload: MessageStart) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class ReplyDelta(GatewayMessage):
    """``message.delta``: a (coalesced) piece of the streaming reply."""

    def __init__(self, session_id: str, seq: int, payload: MessageDelta) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""

    def can_replace(self, message: Message) -> bool:
        """Batch a backlog: the next queued delta of the same turn takes this one's text too.

        Textual asks this while the app is behind (a delta is about to be handled and another
        already waits): the waiting one absorbs this text and this one is dropped, so a burst
        is rendered once instead of once per delta.
        """
        if not isinstance(message, ReplyDelta) or message.session_id != self.session_id:
            return False
        merged = self.payload.merged(message.payload)
        if not isinstance(merged, MessageDelta):
            return False
        message.payload = merged
        return True


class TurnStateChanged(GatewayMessage):
    """``turn.state``: waiting, streaming, retrying or stopping."""

    def __init__(self, session_id: str, seq: int, payload: TurnState) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class TurnCompleted(GatewayMessage):
    """``message.complete``: the turn's one terminal outcome."""

    def __init__(self, session_id: str, seq: int, payload: MessageComplete) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class PromptWasQueued(GatewayMessage):
    """``prompt.queued``: a prompt waits behind the running turn."""

    def __init__(self, session_id: str, seq: int, payload: PromptQueued) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class PromptWasDropped(GatewayMessage):
    """``prompt.dropped``: a queued prompt will never run."""

    def __init__(self, session_id: str, seq: int, payload: PromptDropped) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class GatewayIsStopping(GatewayMessage):
    """``gateway.stopping``: the gateway shuts down and waits for running turns."""

    FOR_VIEW = False

    def __init__(self, session_id: str, seq: int, payload: GatewayStopping) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class McpServerNotice(GatewayMessage):
    """``mcp.server``: an MCP server changed state (gateway-wide: to the app)."""

    FOR_VIEW = False

    def __init__(self, session_id: str, seq: int, payload: McpServerChanged) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class ServerStatusNotice(GatewayMessage):
    """``server.status``: the model server's state changed (gateway-wide: to the app)."""

    FOR_VIEW = False

    def __init__(self, session_id: str, seq: int, payload: ServerStatus) -> None:
        super().__init__(session_id, seq)
        self.payload = payload
        """The event payload."""


class TerminalClosed(Message):
    """The terminal hung up (posted from the input thread, see :mod:`desk.driver`)."""


class BrowserGone(Message):
    """The browser went away (posted from the web driver's input thread, see
    :mod:`desk.web_driver`)."""


class ShutdownFinished(Message):
    """The gateway's shutdown returned (posted from the quit thread)."""
