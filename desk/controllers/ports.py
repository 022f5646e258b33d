"""What the controllers may ask of the app: small callables, so each gets only what it needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from textual.notifications import SeverityLevel
from textual.timer import Timer

REFUSED_TOAST_S = 10.0
"""Seconds the toast of a refused prompt stays (twice Textual's default: its text is back in the
box, and nothing else on screen says it was not sent)."""


class Notify(Protocol):
    """Shows a toast (``App.notify``)."""

    def __call__(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
    ) -> None:
        """Show ``message`` for ``timeout`` seconds (None: Textual's default)."""
        ...


FocusPrompt = Callable[[], None]
"""Gives the focus back to the prompt box (when it is enabled)."""

SetTimer = Callable[[float, Callable[[], object]], Timer]
"""Calls a callback (or coroutine function) once after a delay in seconds (``App.set_timer``)."""
