"""The tool calls of a resumed session, shown briefly: one line per call and its result."""

from __future__ import annotations

from collections.abc import Sequence

from textual.widgets import Static

from contract.results import SavedToolCall
from contract.text import terminal_safe
from desk.export_text import ExportedCall, tool_call_markdown
from desk.tool_text import saved_result_line
from desk.widgets._css import css_beside

RESULT_CHARS = 100
"""Longest result excerpt on a line, in characters."""


def call_lines(names: Sequence[str], results: Sequence[str]) -> str:
    """``⚙ name → first line of its result``, one line per call (results paired in order); a
    call a stop cut reads as its live card did (``⚙ shell → ■ stopped by you · ...``)."""
    lines = []
    for index, name in enumerate(names):
        result = results[index] if index < len(results) else ""
        first = next((line.strip() for line in result.splitlines() if line.strip()), "")
        first = saved_result_line(first)
        if len(first) > RESULT_CHARS:
            first = first[: RESULT_CHARS - 1] + "…"
        lines.append(f"⚙ {name} → {first}" if first else f"⚙ {name}")
    return terminal_safe("\n".join(lines))  # a saved tool's output may hold anything


class SavedToolCalls(Static):
    """One assistant message's tool calls from the store, briefly.

    Args:
        names: the tools called, in order.
        results: the text of the ``tool`` messages that answered them, in order.
        calls: the calls with their arguments (``TranscriptEntry.tool_calls``), for the
            export; empty when the gateway did not send them.
        turn_id: the turn that made the calls ("" when not known).
    """

    DEFAULT_CSS = css_beside(__file__)

    def __init__(
        self,
        names: Sequence[str],
        results: Sequence[str],
        calls: Sequence[SavedToolCall] = (),
        *,
        turn_id: str = "",
    ) -> None:
        super().__init__(call_lines(names, results), markup=False)
        self.names = tuple(names)
        """The tools called."""
        self.results = tuple(results)
        """Their results, in order."""
        self.calls = tuple(calls)
        """The calls with their arguments (may be empty)."""
        self.turn_id = turn_id
        """The turn that made them ("" when not known)."""

    def made(self, turn_id: str, call_id: str) -> bool:
        """True when this block shows call ``call_id`` of turn ``turn_id`` (call ids repeat
        across turns on some servers; a block whose turn is not known matches any turn)."""
        mine = turn_id == self.turn_id or not self.turn_id
        return mine and any(c.call_id == call_id for c in self.calls)

    def export_markdown(self) -> str:
        """The calls for ``/export``: each with its arguments and (capped) result."""
        parts = []
        for index, name in enumerate(self.names):
            arguments = self.calls[index].arguments if index < len(self.calls) else ""
            result = self.results[index] if index < len(self.results) else ""
            parts.append(tool_call_markdown(ExportedCall(name, arguments, result)))
        return "\n\n".join(parts)
