"""A resumed turn's blocks come in the order they had live."""

from __future__ import annotations

from agent.compression.status import CompressionStatus
from contract.events import CompressionComplete
from contract.results import TranscriptEntry
from desk.saved_blocks import saved_blocks
from desk.widgets.saved_reply import SavedReply
from desk.widgets.user_prompt import UserPrompt

STOPPED = "■ stopped by you"


def compression(turn_id: str, status: CompressionStatus) -> TranscriptEntry:
    """A compression's outcome as the session saved it, by turn ``turn_id``."""
    outcome = CompressionComplete(
        turn_id=turn_id, status=status, message=status.value, before_tokens=3000, after_tokens=900
    )
    return TranscriptEntry("event", "", turn_id=turn_id, compression=outcome)


def test_a_turn_stopped_during_its_compression_shows_the_receipt_below_the_compression() -> None:
    # Live: the prompt, the compression's cancelled line, then the stop receipt. A resumed
    # session put the receipt right under the prompt, above the line (a turn with no reply
    # hangs its receipt under its last message, the prompt, and the line was saved after it).
    entries = [
        TranscriptEntry("user", "hello", turn_id="t1", note=STOPPED),
        compression("t1", CompressionStatus.CANCELLED),
        TranscriptEntry("user", "next", turn_id="t2"),
    ]
    blocks = saved_blocks(entries, 0)
    kinds = [type(b).__name__ for b in blocks]
    assert kinds == ["UserPrompt", "Static", "SavedReply", "UserPrompt"]
    assert isinstance(blocks[0], UserPrompt) and blocks[0].text == "hello"
    assert isinstance(blocks[2], SavedReply) and not blocks[2].text


def test_another_turns_compression_stays_where_it_was_saved() -> None:
    entries = [
        TranscriptEntry("user", "hello", turn_id="t1", note=STOPPED),
        compression("c9", CompressionStatus.COMMITTED),
    ]
    kinds = [type(b).__name__ for b in saved_blocks(entries, 0)]
    assert kinds == ["UserPrompt", "SavedReply", "Static"]
