"""The transcript blocks of a saved session: what ``session.resume`` returned, as widgets.

User prompts (a steer marked as one), replies (a reply saved as partial is marked as stopped),
tool calls in brief, a compression's summary and its outcome line (``⇊ compressed…``,
``⇊ compression cancelled…``, where it was live), and the child agents a turn delegated to
(their outcomes and answers), each with the stop receipt or error line the live turn showed
under it.
A long transcript renders only its last messages at first (:func:`split_recent`), under an
"N earlier messages · show more" line.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from textual.widget import Widget

from contract.events import CompressionComplete, StopReceipt
from contract.kinds import ChildDelivery
from contract.results import ChildOutcome, SavedToolCall, TranscriptEntry
from desk.receipts import format_stop_receipt
from desk.widgets.agent_card import DELIVERY, AgentCard
from desk.widgets.compression_panel import outcome_line
from desk.widgets.saved_reply import SavedReply, note_line
from desk.widgets.saved_summary import SavedSummary
from desk.widgets.saved_tool_calls import SavedToolCalls
from desk.widgets.user_prompt import UserPrompt


def split_recent(entries: list[TranscriptEntry], count: int) -> int:
    """Where the last ``count`` messages begin, moved back so no tool result loses its call.

    Returns:
        the index of the first entry to render now (0 renders everything).
    """
    start = max(0, len(entries) - count)
    while 0 < start < len(entries) and entries[start].role == "tool":
        start -= 1
    return start


def saved_blocks(
    entries: list[TranscriptEntry],
    offset: int,
    format_receipt: Callable[[StopReceipt], str] = format_stop_receipt,
) -> list[Widget]:
    """The transcript blocks for saved messages.

    Args:
        entries: consecutive messages of a session, oldest first (system messages are skipped;
            ``tool`` results are shown with the assistant message that called them).
        offset: the index of ``entries[0]`` in the whole transcript (keeps block ids unique).
        format_receipt: how the desk writes a stop receipt (so a resumed stop reads as it did).

    Returns:
        the widgets, in order.
    """
    blocks: list[Widget] = []
    agents = _SavedAgents(entries, format_receipt)
    index = 0
    while index < len(entries):
        entry = entries[index]
        # Shown under the turn's last block, as the live stop receipt or error line was.
        note = note_line(entry.note, entry.stop, format_receipt)
        if entry.role == "user" and entry.summary:
            blocks.append(SavedSummary(entry.content, entry.replaced))
        elif entry.role == "user":
            prompt = UserPrompt(f"saved{offset + index}", entry.content)
            if entry.steer:
                prompt.status = "steered"
            blocks.append(prompt)
        elif entry.role == "assistant":
            if entry.content.strip() or (entry.partial and not entry.tool_names):
                blocks.append(SavedReply(entry.content, partial=entry.partial, note=note))
                note = ""
            if entry.tool_names:
                results: list[str] = []
                while (
                    index + 1 < len(entries)
                    and entries[index + 1].role == "tool"
                    and len(results) < len(entry.tool_names)
                ):
                    index += 1
                    results.append(entries[index].content)
                    result = entries[index]
                    note = note_line(result.note, result.stop, format_receipt) or note
                blocks.extend(agents.calls(entry, results))  # a child under its delegate call
        elif entry.role == "tool":  # a result whose call is not shown: show it briefly
            blocks.append(SavedToolCalls(["tool"], [entry.content]))
        elif entry.role == "event" and entry.compression is not None:
            blocks.append(outcome_line(entry.compression))  # as it was left live
        if entries[index].children:  # the turn's last message: children not placed yet
            blocks.extend(agents.left(entries[index].turn_id))
        if note:  # a turn that ended without a reply to put it under
            # below its compression's line, saved after its prompt (live, that line came first)
            while (compressed := _compression_of(entries, index + 1, entry.turn_id)) is not None:
                index += 1
                blocks.append(outcome_line(compressed))
            blocks.append(SavedReply("", note=note))
        index += 1
    return blocks


def _compression_of(
    entries: list[TranscriptEntry], index: int, turn_id: str
) -> CompressionComplete | None:
    """The compression outcome ``entries[index]`` is, when turn ``turn_id`` saved it."""
    if not turn_id or index >= len(entries):
        return None
    entry = entries[index]
    return entry.compression if entry.role == "event" and entry.turn_id == turn_id else None


def with_replaced(
    blocks: list[Widget], format_receipt: Callable[[StopReceipt], str] = format_stop_receipt
) -> list[Widget]:
    """``blocks`` with the messages each saved summary replaced put back above it (as
    :func:`saved_blocks` of them), for ``/export``: the conversation as the person saw it."""
    out: list[Widget] = []
    for block in blocks:
        if isinstance(block, SavedSummary) and block.replaced:
            out.extend(saved_blocks(list(block.replaced), 0, format_receipt))
        out.append(block)
    return out


DELEGATE = "delegate"
"""The tool that starts a child agent: each call starts one."""


class _SavedAgents:
    """The saved child agents of ``entries``' turns, as cards, each placed once: under the
    ``delegate`` call that started it (the k-th call of a turn started its k-th child), its
    own children inside it, as they were live; any left at its turn's end."""

    def __init__(
        self, entries: list[TranscriptEntry], format_receipt: Callable[[StopReceipt], str]
    ) -> None:
        self._children: dict[str, tuple[ChildOutcome, ...]] = {}
        for entry in entries:  # the turn's last message carries its child agents
            if entry.children:
                self._children[entry.turn_id] = entry.children
        self._format = format_receipt
        self._placed: set[str] = set()

    def calls(self, entry: TranscriptEntry, results: list[str]) -> list[Widget]:
        """An assistant message's tool calls (``results``: their results, in order), the card
        of each child a ``delegate`` call of it started right under that call, as live."""
        turn_id = entry.turn_id
        if DELEGATE not in entry.tool_names:
            return [SavedToolCalls(entry.tool_names, results, entry.tool_calls, turn_id=turn_id)]
        roots = [
            c
            for c in self._children.get(turn_id, ())
            if c.parent_turn_id == turn_id and c.turn_id not in self._placed
        ]
        blocks: list[Widget] = []
        for index, name in enumerate(entry.tool_names):
            result = results[index : index + 1]
            call = entry.tool_calls[index : index + 1]
            blocks.append(SavedToolCalls([name], result, call, turn_id=turn_id))
            if name == DELEGATE and roots:
                arguments = call[0].arguments if call else ""
                blocks.append(self._card(turn_id, roots.pop(0), _background(arguments)))
        return blocks

    def left(self, turn_id: str) -> list[Widget]:
        """The cards of ``turn_id``'s children not placed under a call (their calls were not
        among the messages shown: a transcript shown from its middle, a compression)."""
        return [
            self._card(turn_id, child)
            for child in self._children.get(turn_id, ())
            if child.turn_id not in self._placed
        ]

    def _card(self, turn_id: str, child: ChildOutcome, background: bool | None = None) -> AgentCard:
        """A finished child's card: its calls in brief, each child it started under the
        ``delegate`` call that started it, its answer, its stop receipt (``background``: its
        call did not wait for it; None: its call is not shown)."""
        self._placed.add(child.turn_id)
        below = [
            c
            for c in self._children.get(turn_id, ())
            if c.parent_turn_id == child.turn_id and c.turn_id not in self._placed
        ]
        box: list[Widget] = []
        for call in child.calls:
            saved = SavedToolCall(call.call_id, call.name, call.arguments)
            box.append(SavedToolCalls([call.name], [call.result], (saved,), turn_id=child.turn_id))
            if call.name == DELEGATE and below:
                box.append(self._card(turn_id, below.pop(0), _background(call.arguments)))
        box.extend(self._card(turn_id, c) for c in below if c.turn_id not in self._placed)
        card = AgentCard(
            child.turn_id,
            child.parent_turn_id,
            child.task,
            background=bool(background),
            clock=lambda: 0.0,
            started_at=0.0,
            saved=box,
        )
        card.show_outcome(
            child.exit_reason,
            child.reply,
            completed=child.status == "completed",
            note=note_line(child.note, child.stop, self._format) if child.stop else child.note,
            elapsed_s=child.elapsed_s,
            # a foreground child's answer was its call's result (a background one's went as a
            # steer or stayed a note: not saved)
            delivery=DELIVERY[ChildDelivery.TOOL_RESULT] if background is False else "",
        )
        return card


def _background(arguments: str) -> bool:
    """Whether a ``delegate`` call's JSON arguments ran its child in the background (False
    for arguments that do not parse, as the tool read them)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return False
    return isinstance(parsed, dict) and bool(parsed.get("background", False))
