"""The summary a compression wrote, in a resumed session: shown as what it is, not as a prompt.

After a compression the active transcript holds one user message (``TranscriptEntry.summary``)
in place of the messages it replaced (those stay in the database; ``/archived`` lists them); its
first line is the gateway's marker, the summary follows. Live, the desk showed those messages and a
"⇊ compressed" line; resumed, this block stands for them: a line saying so, then the summary,
dimmed, drawn like a reply.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static

from desk.export_text import quote
from desk.widgets._css import css_beside
from desk.widgets.reply_body import finished_markdown

HEADING = "⇊ the earlier conversation, as compressed into a summary · /archived lists it in full"
"""The line above a saved summary."""


class SavedSummary(Widget):
    """A compression's summary in a resumed transcript.

    Args:
        content: the summary message's content (the marker line, then the summary).
    """

    DEFAULT_CSS = css_beside(__file__)

    def __init__(self, content: str) -> None:
        super().__init__()
        self.summary = content.partition("\n")[2].strip()
        """The summary's Markdown, without the marker line."""

    def compose(self) -> ComposeResult:
        yield Static(HEADING, classes="heading", markup=False)
        yield finished_markdown(self, self.summary, classes="body")

    def export_markdown(self) -> str:
        """For ``/export``: the heading line and the summary, quoted."""
        return quote(f"{HEADING}\n\n{self.summary}")
