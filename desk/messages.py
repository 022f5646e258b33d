"""The Textual messages of the app's own threads: one for every gateway event (posted by
:mod:`desk.bridge`), and the few the terminal and the quit post.

A gateway event becomes one :class:`GatewayMessage` carrying its typed payload unchanged; the
view of its session (or the app) matches on the payload's type where it is handled, so the
payload classes of the contract are the only list of what an event can be.
"""

from __future__ import annotations

from textual.message import Message

from contract.events import Payload


class GatewayMessage(Message):
    """A gateway event, posted to the view of its session (or to the app).

    A backlog coalesces by payload type: while the UI is behind, a queued event whose payload
    joins the next one's (:meth:`contract.events.Payload.merged`: deltas and output of one
    turn, call or command, progress of one compression phase) is dropped into it, so a burst is
    rendered once instead of once per piece. Control events never join.

    Args:
        session_id: the event's session ("" for gateway-wide events).
        seq: the event's per-session sequence number.
        payload: the event's typed payload.
        at: when it was delivered (the app's clock, seconds), for an event of a running turn
            drawn again in a new view of its session (:mod:`desk.live_turns`); None for an
            event drawn as it comes (now).
    """

    def __init__(
        self, session_id: str, seq: int, payload: Payload, at: float | None = None
    ) -> None:
        super().__init__()
        self.session_id = session_id
        """The session the event belongs to ("" for gateway-wide events)."""
        self.seq = seq
        """The event's per-session sequence number."""
        self.payload = payload
        """The event's payload; match on its type (``message.delta`` is ``MessageDelta``...)."""
        self.at = at
        """When it was delivered (the app's clock, seconds), or None: now."""

    def can_replace(self, message: Message) -> bool:
        """True when ``message`` (queued right behind this one) takes this one's payload in.

        Textual asks while the app is behind: the queued message absorbs this payload (its
        own becomes the two merged) and this one is dropped.
        """
        if self.payload.CONTROL or not isinstance(message, GatewayMessage):
            return False
        if message.session_id != self.session_id:
            return False
        merged = self.payload.merged(message.payload)
        if merged is None:
            return False
        message.payload = merged
        return True


class TerminalClosed(Message):
    """The terminal hung up (posted from the input thread, see :mod:`desk.driver`)."""


class BrowserGone(Message):
    """The browser went away (posted from the web driver's input thread, see
    :mod:`desk.web_driver`)."""


class ShutdownFinished(Message):
    """The gateway's shutdown returned (posted from the quit thread)."""


class GatewayBuilt(Message):
    """The gateway desk waited for is built, or its build failed (posted from the build's
    thread, see :mod:`desk.late_gateway`).

    Args:
        error: what the build raised, or None.
    """

    def __init__(self, error: BaseException | None) -> None:
        super().__init__()
        self.error = error
