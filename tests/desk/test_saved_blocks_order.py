"""A resumed turn's blocks come in the order they had live."""

from __future__ import annotations

from agent.compression.status import CompressionStatus
from contract.events import CompressionComplete
from contract.results import ChildOutcome, SavedToolCall, TranscriptEntry
from desk.saved_blocks import saved_blocks
from desk.widgets.agent_card import AgentCard
from desk.widgets.saved_reply import SavedReply
from desk.widgets.saved_tool_calls import SavedToolCalls
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


def test_each_resumed_child_sits_under_its_own_delegate_call_and_says_background() -> None:
    # Two delegate calls of one message were listed together, both cards after them; a
    # background child read 'agent', as a foreground one does
    calls = (
        SavedToolCall("c1", "delegate", '{"task": "map the north"}'),
        SavedToolCall("c2", "read_file", '{"path": "a.txt"}'),
        SavedToolCall("c3", "delegate", '{"task": "map the south", "background": true}'),
    )
    children = tuple(
        ChildOutcome(f"k{n}", "t1", task, "completed", "completed", reply=f"{task}: done")
        for n, task in ((1, "map the north"), (3, "map the south"))
    )
    entries = [
        TranscriptEntry("user", "map it", turn_id="t1"),
        TranscriptEntry(
            "assistant",
            "",
            turn_id="t1",
            tool_names=tuple(c.name for c in calls),
            tool_calls=calls,
        ),
        TranscriptEntry("tool", "north: done", turn_id="t1", tool_call_id="c1"),
        TranscriptEntry("tool", "A", turn_id="t1", tool_call_id="c2"),
        TranscriptEntry("tool", "started k3", turn_id="t1", tool_call_id="c3"),
        TranscriptEntry("assistant", "both mapped", turn_id="t1", children=children),
    ]
    blocks = saved_blocks(entries, 0)
    shown = [
        (b.turn_id, b.background) if isinstance(b, AgentCard) else b.names
        for b in blocks
        if isinstance(b, (AgentCard, SavedToolCalls))
    ]
    assert shown == [("delegate",), ("k1", False), ("read_file",), ("delegate",), ("k3", True)]
    north, south = (b for b in blocks if isinstance(b, AgentCard))
    assert "answer returned to its parent" in north.export_markdown()  # as the live card said
    assert "answer returned" not in south.export_markdown()  # a steer or a note: not saved
