"""The events a session showed among its messages (a compression's outcome line), put back in
their place in a resumed transcript.

The store keeps each one after the message it followed
(:meth:`~agent.store.protocol.Messages.append_event`). Its place in the transcript read back
(active messages, in order) is where it was live: after the prompt of its turn when that turn
compressed before its request (the prompt is saved after the compression, and the live line
sits between the prompt and its reply), else after every message it followed (a compression
summary, read in the place of what it replaced, comes before it; later messages after it).
An event a newer desk wrote that this one cannot read is left out.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from agent.store import MessageRow, TranscriptEventRow
from contract.events import CompressionComplete
from contract.results import TranscriptEntry
from tui_gateway.wire.codec import decode, loads


def with_events(
    messages: Sequence[MessageRow],
    transcript: Sequence[TranscriptEntry],
    events: Sequence[TranscriptEventRow],
) -> list[TranscriptEntry]:
    """``transcript`` with the session's events in their places.

    Args:
        messages: the active messages, in order (``order_key``).
        transcript: their entries, one per message, in the same order.
        events: the session's kept events, in the order they happened.

    Returns:
        the entries, each event an ``event`` entry (events at one place in the order they
        happened).
    """
    keys = [m.order_key for m in messages]
    prompts: dict[str, int] = {}  # turn -> the index of its prompt
    for index, message in enumerate(messages):
        if message.role == "user" and message.turn_id and not transcript[index].summary:
            prompts.setdefault(message.turn_id, index)
    placed: dict[int, list[TranscriptEntry]] = {}  # index of the entry it goes before
    for row in events:
        entry = _entry(row)
        if entry is None:
            continue
        prompt = prompts.get(row.turn_id or "")
        slot = prompt + 1 if prompt is not None else bisect_right(keys, row.after_position)
        placed.setdefault(slot, []).append(entry)
    if not placed:
        return list(transcript)
    out: list[TranscriptEntry] = []
    for index, entry in enumerate(transcript):
        out.extend(placed.get(index, ()))
        out.append(entry)
    out.extend(placed.get(len(transcript), ()))
    return out


def _entry(row: TranscriptEventRow) -> TranscriptEntry | None:
    """The entry of a kept event, or None for one this desk cannot read."""
    if row.type != CompressionComplete.TYPE:
        return None
    try:
        outcome = decode(CompressionComplete, loads(row.payload), strict=False)
    except ValueError:  # not JSON, or not a payload this desk knows
        return None
    return TranscriptEntry(role="event", content="", turn_id=row.turn_id or "", compression=outcome)
