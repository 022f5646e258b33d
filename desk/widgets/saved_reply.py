"""An assistant reply of a resumed session, drawn as one widget, marked when it was cut short.

A live reply is a Textual ``Markdown`` widget (a widget per paragraph, list item, code
block...), which is what streaming needs. A saved reply never changes, so it is drawn with
Rich's Markdown renderable inside one ``Static``: the same structure (emphasis, lists, code,
tables) at a fraction of the cost, so a long session opens fast (see ``bench/session_open.py``:
200 saved messages took 2.4 s as Markdown widgets and 0.8 s like this).
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import JustifyMethod
from rich.markdown import Heading
from rich.markdown import Markdown as RichMarkdown
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static

from desk.receipts import format_failure
from desk.widgets._css import css_beside

PARTIAL_NOTE = "■ stopped · the reply was cut short here"
"""The line under a reply saved as partial when the store does not say who stopped it."""


def note_line(note: str) -> str:
    """The line a live turn shows for a saved turn note, without the live figures.

    Args:
        note: ``TranscriptEntry.note``: "stopped by you", "stopped by the system: <reason>"
            or "failed: <error>".

    Returns:
        ``"■ stopped by you"``, ``"■ stopped by the system: <reason>"``, ``"✖ <error>"`` (the
        error line of a live failure), or "" for no note.
    """
    text = " ".join(note.split())
    if not text:
        return ""
    if text.startswith("failed:"):
        return format_failure(text.removeprefix("failed:").strip() or "failed", "failed")
    return f"■ {text}"


class _LeftHeading(Heading):
    """Headings flush left, as the live transcript shows them (Rich centres ``#``)."""

    LEVEL_ALIGN: ClassVar[dict[str, JustifyMethod]] = {
        **Heading.LEVEL_ALIGN,
        "h1": "left",
    }


class HistoryMarkdown(RichMarkdown):
    """Rich Markdown with left-aligned headings."""

    elements: ClassVar[dict[str, type]] = {
        **RichMarkdown.elements,
        "heading_open": _LeftHeading,
    }


class SavedReply(Widget):
    """A finished reply from the store.

    Args:
        text: the reply's Markdown.
        partial: True for a reply that was cut short.
        note: the saved turn note ("stopped by you", "failed: ..."), shown as the live stop
            or error line; "" for none.
    """

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, text: str, *, partial: bool = False, note: str = "") -> None:
        failed = " ".join(note.split()).startswith("failed:")
        classes = ("-partial " if partial else "") + ("-failed" if failed else "")
        super().__init__(classes=classes.strip())
        self.text = text
        """The reply text."""
        self.partial = partial
        """True for a reply that was cut short."""
        self.note = note_line(note) or (PARTIAL_NOTE if partial else "")
        """The line under the reply (stop marker or error line), or ""."""

    def compose(self) -> ComposeResult:
        if self.text.strip():
            yield Static(HistoryMarkdown(self.text), classes="body")
        if self.note:
            yield Static(self.note, classes="note", markup=False)

    def export_markdown(self) -> str:
        """The reply for ``/export``: an "Assistant" block with its note as a quote."""
        parts = ["## Assistant"]
        if self.text.strip():
            parts.append(self.text.strip())
        if self.note:
            parts.append("> " + self.note)
        return "\n\n".join(parts)
