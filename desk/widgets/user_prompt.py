"""One prompt the person sent, as shown in the transcript (sent, a steer, or dropped).

A prompt waiting in the queue is not in the transcript: it is listed above the prompt box
(:class:`desk.widgets.queue_list.QueueList`) and comes here when it runs.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from contract.text import terminal_safe
from desk.widgets._css import css_beside


class UserPrompt(Widget):
    """A prompt block.

    Args:
        turn_id: the turn the prompt starts.
        text: the prompt as typed.
    """

    DEFAULT_CSS = css_beside(__file__)

    status: reactive[str] = reactive("sent")
    """``sent``, ``dropped`` (a queued prompt that never ran), ``steer`` (waiting for the
    running turn's next step) or ``steered`` (the running turn took it there)."""

    detail: reactive[str] = reactive("")
    """Why a prompt was dropped."""

    def __init__(self, turn_id: str, text: str) -> None:
        super().__init__(id=f"prompt-{turn_id}")
        self.turn_id = turn_id
        """The turn this prompt starts."""
        self.text = text
        """The prompt text."""
        self._composed = False
        # The status line (hidden for a prompt that was simply sent: most of them) is made
        # when there is one to show; a resumed long session renders many prompts at once.
        self._label: Static | None = None

    def compose(self) -> ComposeResult:
        self._composed = True
        yield Static(terminal_safe(self.text), classes="prompt-text", markup=False)
        if self.status != "sent":
            self._label = Static("", classes="prompt-status", markup=False)
            yield self._label

    def on_mount(self) -> None:
        self._show_status()

    def watch_status(self) -> None:
        self._show_status()

    def watch_detail(self) -> None:
        self._show_status()

    def _show_status(self) -> None:
        if not self._composed:
            return  # on_mount shows it
        label = self._label
        if label is None:
            if self.status == "sent":
                self.remove_class("-dropped", "-steer")
                return
            label = self._label = Static("", classes="prompt-status", markup=False)
            self.mount(label)
        self.set_class(self.status == "dropped", "-dropped")
        self.set_class(self.status in ("steer", "steered"), "-steer")
        if self.status == "steer":
            label.update("steers the running turn at its next step (never cuts a reply)")
        elif self.status == "steered":
            label.update("added while the turn ran")
        elif self.status == "dropped":
            label.update(terminal_safe(f"not sent: {self.detail}" if self.detail else "not sent"))
        else:
            label.update("")
