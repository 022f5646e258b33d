"""Prompt history: Up on the prompt box's first line recalls earlier prompts, Down comes back.

Shell-like: browsing starts from the text being typed (the draft), which comes back after the
newest entry. Consecutive duplicates are stored once. With a file
(:class:`~desk.history_file.HistoryFile`), the prompts of earlier runs come first and each one
sent is added to it: Up after a restart recalls them. No Textual here, so it is tested alone.
"""

from __future__ import annotations

from desk.history_file import HistoryFile

MAX_ENTRIES = 500
"""Prompts remembered; older ones are forgotten first."""


class PromptHistory:
    """Sent prompts, oldest first, and a browsing position.

    Args:
        max_entries: how many prompts are remembered.
        file: where they are kept across runs (read when first needed), or None.
    """

    def __init__(self, max_entries: int = MAX_ENTRIES, file: HistoryFile | None = None) -> None:
        self._entries: list[str] = []
        self._max = max_entries
        self._index: int | None = None  # position while browsing; None when not browsing
        self._draft = ""
        self._file = file
        self._unread = file is not None  # the file's prompts are read on first use

    def _read(self) -> None:
        if self._unread and self._file is not None:
            self._unread = False
            earlier = self._file.read(self._max)
            self._entries[:0] = earlier
            del self._entries[: -self._max]

    @property
    def entries(self) -> list[str]:
        """A copy of the remembered prompts, oldest first."""
        self._read()
        return list(self._entries)

    @property
    def browsing(self) -> bool:
        """True while an entry (not the draft) is shown."""
        return self._index is not None

    def add(self, text: str) -> None:
        """Remember a sent prompt (blank ones and repeats of the newest are skipped)."""
        self._read()
        self._index = None
        self._draft = ""
        if not text.strip() or (self._entries and self._entries[-1] == text):
            return
        self._entries.append(text)
        del self._entries[: -self._max]
        if self._file is not None:
            self._file.append(text)

    def older(self, current: str) -> str | None:
        """The entry before the one shown, or None at the oldest (or with no history).

        Args:
            current: the prompt box's text; kept as the draft when browsing starts.
        """
        self._read()
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
