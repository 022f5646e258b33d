"""The status bar: the running turn's state and elapsed time, queued prompts, the server."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from desk.config import ConnectionInfo
from desk.receipts import format_elapsed
from desk.widgets._css import css_beside

Clock = Callable[[], float]
"""Returns seconds (``time.monotonic`` or a test's fake clock)."""

STATE_ICONS: dict[str, str] = {
    "idle": "○",
    "waiting": "◌",
    "streaming": "●",
    "retrying": "↻",
    "stopping": "■",
}
"""Glyph shown before each turn state."""

TICK_S = 0.1
"""How often the elapsed time is redrawn while a turn runs, in seconds."""


def server_text(connection: ConnectionInfo) -> str:
    """The right-hand side: ``"<model> · demo model · <url>"`` or ``"<model> · <url>"``."""
    parts = [connection.model]
    if connection.is_demo:
        parts.append("demo model")
    parts.append(connection.base_url)
    return " · ".join(parts)


class StatusBar(Horizontal):
    """One line at the bottom: turn state on the left, the model server on the right.

    The app sets the reactive attributes; the bar redraws itself and ticks the elapsed time
    of a running turn with its own timer.

    Args:
        connection: the model server shown on the right.
        clock: the clock the elapsed time is measured with.
    """

    DEFAULT_CSS = css_beside(__file__)

    state: reactive[str] = reactive("idle")
    """``idle``, ``waiting``, ``streaming``, ``retrying`` or ``stopping``."""
    detail: reactive[str] = reactive("")
    """Short text after the state (e.g. the retry reason)."""
    started_at: reactive[float | None] = reactive(None)
    """Clock time when the running turn started, or None."""
    queued: reactive[int] = reactive(0)
    """Prompts waiting behind the running turn."""
    notice: reactive[str] = reactive("")
    """Overrides the left side when set (e.g. ``stopping 1 turn…``)."""

    def __init__(
        self, connection: ConnectionInfo, *, clock: Clock = time.monotonic, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.connection = connection
        """The model server shown on the right."""
        self._clock = clock
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="turn", markup=False)
        yield Static(server_text(self.connection), classes="server", markup=False)

    def on_mount(self) -> None:
        self._timer = self.set_interval(TICK_S, self._redraw, pause=True)
        self._redraw()

    def turn_text(self) -> str:
        """The left-hand side as it should read now."""
        if self.notice:
            return self.notice
        parts = [f"{STATE_ICONS.get(self.state, '·')} {self.state}"]
        if self.state != "idle" and self.started_at is not None:
            parts[0] += f" {format_elapsed(self._clock() - self.started_at)}"
        if self.detail:
            parts.append(self.detail)
        if self.queued:
            parts.append(f"{self.queued} queued")
        return " · ".join(parts)

    def _redraw(self) -> None:
        labels = self.query(".turn").results(Static)
        label = next(labels, None)
        if label is None:
            return  # not composed yet; on_mount draws
        label.update(self.turn_text())
        self.set_class(self.state != "idle", "-running")
        ticking = self.state != "idle" and self.started_at is not None and not self.notice
        if self._timer is not None:
            if ticking:
                self._timer.resume()
            else:
                self._timer.pause()

    def watch_state(self) -> None:
        self._redraw()

    def watch_detail(self) -> None:
        self._redraw()

    def watch_started_at(self) -> None:
        self._redraw()

    def watch_queued(self) -> None:
        self._redraw()

    def watch_notice(self) -> None:
        self._redraw()
