"""What a controller may touch of the session on screen: :class:`ShownSession`.

The controllers are handed the :class:`~desk.widgets.session_view.SessionView` of the session a
message is about, and the view is handed the controllers (:mod:`desk.controllers`). The
controllers name the view only through this Protocol, so the view may name the controllers'
types without an import cycle, not even one the type checker alone follows.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from textual.widgets import Static

from agent.usage import TokenUsage
from contract.results import TranscriptEntry
from desk.queue_state import SessionQueue

if TYPE_CHECKING:  # the transcript loads Markdown, which the first frame does not wait for
    from desk.live_turns import LiveSession
    from desk.widgets.transcript import Transcript


class ShownSession(Protocol):
    """One session on screen (a :class:`~desk.widgets.session_view.SessionView`).

    Attributes:
        session_id: the session shown.
        running_turn: the turn shown as running, if any.
        usage: the session's model requests summed, as the gateway last said (None: none yet).
        queue: the prompts waiting in the session's queue, in order.
        earlier: saved messages above the rendered ones, waiting behind "show more".
        transcript: the session's blocks.
    """

    session_id: str
    running_turn: str | None
    usage: TokenUsage | None
    queue: SessionQueue
    earlier: list[TranscriptEntry]
    transcript: Transcript

    @property
    def is_attached(self) -> bool:
        """Whether the view is still in the app's DOM (False while the app exits)."""
        ...

    def remove(self) -> Awaitable[object]:
        """Take the view off the screen (Textual's ``Widget.remove``; await it)."""
        ...

    def hold(self, live: LiveSession | None) -> None:
        """Hold the gateway messages that reach the view, behind the events so far of what the
        session runs, until :meth:`release` (see ``SessionView.hold``)."""
        ...

    async def release(self) -> None:
        """Handle the messages held, in order, then every message as it comes."""
        ...

    async def add_note(self, text: str, *, error: bool = False, scroll: bool = False) -> Static:
        """Add one line at the end of the transcript (see ``SessionView.add_note``)."""
        ...
