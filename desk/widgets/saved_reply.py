"""An assistant reply of a resumed session, marked when it was cut short.

Its text is cut and drawn as a live reply's is once it finished (the same pieces in the same
:class:`SealedMarkdown`, so a resumed session looks as it did live), created finished: its
pieces show estimated heights at first and are rendered when painted or, one at a time, when the
transcript has time, so a long session opens without rendering every reply first (see
``bench/session_open.py``: 10,000 messages open in 0.53 s).
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static

from contract.events import LENGTH_MARK, StopReceipt
from desk.export_text import quote
from desk.markdown_cuts import closed_fences
from desk.receipts import FAILURE_MARK, format_failure, format_stop_receipt
from desk.widgets._css import css_beside
from desk.widgets.reply_body import finished_markdown

PARTIAL_NOTE = "■ stopped · the reply was cut short here"
"""The line under a reply saved as partial when the store does not say who stopped it."""


def note_line(
    note: str,
    stop: StopReceipt | None = None,
    format_receipt: Callable[[StopReceipt], str] = format_stop_receipt,
) -> str:
    """The line a live turn showed under it, for a saved turn.

    Args:
        note: ``TranscriptEntry.note``: "stopped by you", "stopped by the system: <reason>",
            "failed: <error>", or the line of a reply cut at its token limit.
        stop: ``TranscriptEntry.stop``: the stop's saved figures, if any.
        format_receipt: how the desk writes a stop receipt (the live one's formatter).

    Returns:
        the stop receipt (``"■ stopped by you · connection closed in 3 ms · ..."``), or
        ``"■ <note>"`` when no figures were saved, ``"✖ <error>"`` (the error line of a live
        failure), or "" for no note.
    """
    if stop is not None:
        return format_receipt(stop)
    text = " ".join(note.split())
    if not text:
        return ""
    if text.startswith("failed:"):
        return format_failure(text.removeprefix("failed:").strip() or "failed", "failed")
    if text.startswith(LENGTH_MARK):  # a completed reply, cut at its token limit
        return text
    return f"■ {text}"


class SavedReply(Widget):
    """A finished reply from the store.

    Args:
        text: the reply's Markdown.
        partial: True for a reply that was cut short.
        note: the line under the reply, as the live turn showed it (see :func:`note_line`):
            its stop receipt or its error line; "" for none.
    """

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, text: str, *, partial: bool = False, note: str = "") -> None:
        failed = note.startswith(FAILURE_MARK)
        classes = ("-partial " if partial else "") + ("-failed " if failed else "")
        classes += "" if text.strip() else "-empty"
        super().__init__(classes=classes.strip())
        self.text = text
        """The reply text."""
        self.partial = partial
        """True for a reply that was cut short."""
        self.note = note or (PARTIAL_NOTE if partial else "")
        """The line under the reply (stop receipt or error line), or ""."""

    def compose(self) -> ComposeResult:
        if self.text.strip():
            yield finished_markdown(self, self.text, classes="body")
        if self.note:
            yield Static(self.note, classes="note", markup=False)

    def export_markdown(self) -> str:
        """The reply for ``/export``: an "Assistant" block with its note as a quote."""
        parts = ["## Assistant"]
        if self.text.strip():
            parts.append(closed_fences(self.text.strip()))
        if self.note:
            parts.append(quote(self.note))
        return "\n\n".join(parts)
