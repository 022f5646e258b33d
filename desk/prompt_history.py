"""Prompt history: Up on the prompt box's first line recalls earlier prompts, Down comes back.

Shell-like: browsing starts from the text being typed (the draft), which comes back after the
newest entry. Consecutive duplicates are stored once. No Textual here, so it is tested alone.
"""

from __future__ import annotations

MAX_ENTRIES = 500
"""Prompts remembered; older ones are forgotten first."""


class PromptHistory:
    """Sent prompts, oldest first, and a browsing position.

    Args:
        max_entries: how many prompts are remembered.
    """

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: list[str] = []
        self._max = max_entries
        self._index: int | None = None  # position while browsing; None when not browsing
        self._draft = ""

    @property
    def entries(self) -> list[str]:
        """A copy of the remembered prompts, oldest first."""
        return list(self._entries)

    @property
    def browsing(self) -> bool:
        """True while an entry (not the draft) is shown."""
        return self._index is not None

    def add(self, text: str) -> None:
        """Remember a sent prompt (blank ones and repeats of the newest are skipped)."""
        self._index = None
        self._draft = ""
        if not text.strip() or (self._entries and self._entries[-1] == text):
            return
        self._entries.append(text)
        del self._entries[: -self._max]

    def older(self, current: str) -> str | None:
        """The entry before the one shown, or None at the oldest (or with no history).

        Args:
            current: the prompt box's text; kept as the draft when browsing starts.
        """
        if not self._entries:
            return None
        if self._index is None:
            self._draft = current
            self._index = len(self._entries)
        if self._index == 0:
            return None
        self._index -= 1
        return self._entries[self._index]

    def newer(self) -> str | None:
        """The entry after the one shown, the draft after the newest, or None when not browsing."""
        if self._index is None:
            return None
        self._index += 1
        if self._index >= len(self._entries):
            self._index = None
            return self._draft
        return self._entries[self._index]

    def reset(self) -> None:
        """Stop browsing (the person edited the text)."""
        self._index = None
