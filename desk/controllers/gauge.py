"""The status bar's context gauge: how full the server's context window is.

The window comes from the server once at start (:mod:`desk.server_facts`). What is used comes
from each finished turn as the server counted it (its prompt plus the reply, which the next
request carries too); for a turn the server sent no count for (stopped, failed) and for a
resumed transcript it is estimated with the gateway's own rule of thumb
(:func:`tui_gateway.text.tokens_in_chars`). A committed compression takes off what it saved.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from desk.widgets.status_bar import StatusBar
from tui_gateway.events import MessageComplete
from tui_gateway.text import tokens_in_chars
from tui_gateway.types import TranscriptEntry

if TYPE_CHECKING:
    from desk.widgets.session_view import SessionView


def context_estimate(entries: Iterable[TranscriptEntry]) -> int:
    """Tokens a saved transcript takes in the context window, estimated."""
    return sum(tokens_in_chars(len(entry.content)) for entry in entries)


class ContextGauge:
    """Keeps the status bar's ``context_window`` and ``context_used``.

    Args:
        status: the status bar.
    """

    def __init__(self, status: StatusBar) -> None:
        self._status = status

    def set_window(self, tokens: int) -> None:
        """The server's context window arrived (ignored once the status bar is gone)."""
        # The facts come from a thread and may land while the app exits, after the status bar
        # was removed (NoMatches('#status') was seen once): then there is nothing to update.
        if self._status.is_attached:
            self._status.context_window = tokens

    def reset(self, entries: Iterable[TranscriptEntry]) -> None:
        """Another session is shown: estimate what its saved transcript takes."""
        self._status.context_used = context_estimate(entries)

    def turn_completed(self, view: SessionView, payload: MessageComplete) -> None:
        """A turn of the view's session ended: what the next request will carry."""
        status = self._status
        if payload.prompt_tokens is not None:
            status.context_used = payload.prompt_tokens + (payload.completion_tokens or 0)
        elif status.context_used is not None or payload.text:
            # A stopped or failed turn: the server sent no count, but the prompt and the partial
            # reply are in the context now all the same (estimated).
            prompt = view.transcript.prompt(payload.turn_id)
            added = (len(prompt.text) if prompt is not None else 0) + len(payload.text)
            status.context_used = (status.context_used or 0) + tokens_in_chars(added)

    def compressed(self, before_tokens: int, after_tokens: int) -> None:
        """A compression committed: take off what it saved."""
        status = self._status
        saved = max(0, before_tokens - after_tokens)
        # The gauge holds the server's count when it has one: take off what was saved
        # (estimated) rather than replace it by an estimate of another kind.
        used = status.context_used
        status.context_used = after_tokens if used is None else max(0, used - saved)
