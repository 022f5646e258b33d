"""What the feature parts of the desk share: the app's state and a few helpers.

:class:`DeskBase` declares the attributes and methods :class:`desk.app.DeskApp` provides (the
gateway, the shown session, the running turn...), so each part can be type-checked on its own,
and adds helpers every part uses (a note line in the transcript, focusing the prompt box).
"""

from __future__ import annotations

from textual.app import App
from textual.widgets import Static

from agent.terminal_text import terminal_safe
from desk.ports import DeskGateway
from desk.receipts import ReceiptFormatter
from desk.startup import Startup
from desk.widgets.prompt_input import PromptInput
from desk.widgets.status_bar import Clock
from desk.widgets.transcript import Transcript
from tui_gateway.types import TranscriptEntry


class DeskBase(App[int]):
    """The contract between :class:`desk.app.DeskApp` and its feature parts."""

    gateway: DeskGateway
    """The gateway (set by the app)."""
    startup: Startup
    """How the desk starts (set by the app)."""
    _session_id: str | None
    _running_turn: str | None
    _queued: set[str]
    _clock: Clock
    _format_receipt: ReceiptFormatter

    # -- provided by DeskApp ---------------------------------------------------------------------

    def _ours(self, session_id: str) -> bool:
        raise NotImplementedError

    def _set_running(self, turn_id: str | None) -> None:
        raise NotImplementedError

    def _set_queued(self) -> None:
        raise NotImplementedError

    # -- provided by the parts -------------------------------------------------------------------

    async def show_session(
        self, session_id: str, transcript: list[TranscriptEntry], model: str = ""
    ) -> None:
        """Show another session (see :class:`desk.features.sessions.SessionsFeature`)."""
        raise NotImplementedError

    async def refresh_sessions(self) -> None:
        """Re-read the sessions sidebar if it is open (see ``SessionsFeature``)."""
        raise NotImplementedError

    def open_sessions(self) -> None:
        """Open the sessions sidebar (see ``SessionsFeature``)."""
        raise NotImplementedError

    async def take_queued(self, turn_id: str) -> bool:
        """Take a queued turn's card away as the turn starts (see ``QueueFeature``)."""
        raise NotImplementedError

    # -- shared helpers --------------------------------------------------------------------------

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        return self.query_one("#transcript", Transcript)

    async def add_note(self, text: str, *, error: bool = False) -> Static:
        """Add one line at the end of the transcript (a notice, not a turn).

        Args:
            text: the line.
            error: show it in the error colour.
        """
        note = Static(terminal_safe(text), classes="note -error" if error else "note", markup=False)
        await self.transcript.mount(note)
        return note

    def focus_prompt(self) -> None:
        """Give the focus back to the prompt box."""
        box = next(self.query(PromptInput).results(PromptInput), None)
        if box is not None and not box.disabled:
            box.focus()
