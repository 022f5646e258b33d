"""The summary a compression wrote, in a resumed session: shown as what it is, not as a prompt.

After a compression the active transcript holds one user message (``TranscriptEntry.summary``)
in place of the messages it replaced (those stay in the database; ``/archived`` lists them); its
first line is the gateway's marker, the summary follows. Live, the desk showed those messages and a
"⇊ compressed" line; resumed, this block stands for them: a line saying so, then the summary,
dimmed, drawn like a reply. It keeps the messages the summary replaced (when the gateway gave
them, ``TranscriptEntry.replaced``), so an ``/export`` holds the whole conversation.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static

from contract.results import TranscriptEntry
from desk.export_text import quote
from desk.widgets._css import css_beside
from desk.widgets.reply_body import finished_markdown

HEADING = "⇊ the earlier conversation, as compressed into a summary · /archived lists it in full"
"""The line above a saved summary."""

EXPORT_HEADING = "⇊ the conversation above, as compressed into a summary"
"""The line above a summary in an export that holds the messages it replaced."""


class SavedSummary(Widget):
    """A compression's summary in a resumed transcript.

    Args:
        content: the summary message's content (the marker line, then the summary).
        replaced: the messages it replaced, oldest first (empty when unknown).
    """

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, content: str, replaced: tuple[TranscriptEntry, ...] = ()) -> None:
        super().__init__()
        self.summary = content.partition("\n")[2].strip()
        """The summary's Markdown, without the marker line."""
        self.replaced = replaced
        """The messages the summary replaced, as the store keeps them (for ``/export``)."""

    def compose(self) -> ComposeResult:
        yield Static(HEADING, classes="heading", markup=False)
        yield finished_markdown(self, self.summary, classes="body")

    def export_markdown(self) -> str:
        """For ``/export``: the heading line and the summary, quoted (the export puts the
        messages it replaced above it, when it has them)."""
        heading = EXPORT_HEADING if self.replaced else HEADING
        return quote(f"{heading}\n\n{self.summary}")
