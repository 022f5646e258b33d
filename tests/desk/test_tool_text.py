"""Human text for tool calls, and the shape of a resumed transcript (pure functions)."""

from __future__ import annotations

from agent.compression.plan import SUMMARY_MARKER
from contract.events import ToolComplete
from contract.results import TranscriptEntry
from desk.saved_blocks import saved_blocks, split_recent
from desk.tool_text import (
    children_text,
    describe_arguments,
    full_command,
    outcome_text,
    stopped_text,
    tail_lines,
)
from desk.widgets import UserPrompt
from desk.widgets.saved_reply import SavedReply
from desk.widgets.saved_summary import SavedSummary
from desk.widgets.saved_tool_calls import SavedToolCalls, call_lines


def result(**fields: object) -> ToolComplete:
    base: dict[str, object] = {
        "turn_id": "t",
        "call_id": "c",
        "name": "shell",
        "content": "",
        "is_error": False,
    }
    base.update(fields)
    return ToolComplete(**base)  # type: ignore[arg-type]


def test_arguments_read_like_what_they_do() -> None:
    assert describe_arguments("shell", '{"command": "make  test\\n"}') == "$ make test"
    assert describe_arguments("read_file", '{"path": "a/b.py"}') == "a/b.py"
    assert describe_arguments("write_file", '{"path": "x", "content": "abc"}') == (
        "x (3 characters)"
    )
    assert describe_arguments("search", '{"q": "stop"}') == '{"q": "stop"}'
    assert describe_arguments("shell", "not json") == "not json"
    assert describe_arguments("shell", "") == ""
    assert len(describe_arguments("shell", '{"command": "' + "x" * 500 + '"}')) == 200
    assert full_command("shell", '{"command": "a\\nb"}') == "a\nb"
    assert full_command("read_file", '{"path": "a"}') is None


def test_outcomes() -> None:
    assert outcome_text(result(exit_code=0), 0.25) == "✓ exit 0 · 0.2 s"
    assert outcome_text(result(exit_code=2, is_error=True), 1.0) == "✖ exit 2 · 1.0 s"
    stopped = result(stopped_by="stopped by the user", children_ended=2, is_error=True)
    assert outcome_text(stopped, 4.0) == "■ stopped by you · 2 child processes ended · 4.0 s"
    system = result(stopped_by="stopped by the system: desk is shutting down", is_error=True)
    assert outcome_text(system, None) == "■ stopped by the system: desk is shutting down"
    declined = result(content="the person declined to run this shell call", is_error=True)
    assert outcome_text(declined, 0.0) == "✖ the person declined to run this shell call · 0.0 s"
    assert outcome_text(result(name="read_file", content="x"), 0.0) == "✓ done · 0.0 s"
    assert stopped_text("stopped by the user") == "stopped by you"
    assert children_text(1) == "1 child process ended" and children_text(0) == ""


def test_tail_lines() -> None:
    assert tail_lines("a\nb\nc\n", 2) == "b\nc"
    assert tail_lines("a\nb", 5) == "a\nb"
    assert tail_lines("", 3) == ""


def test_saved_transcript_blocks_pair_tool_calls_with_their_results() -> None:
    entries = [
        TranscriptEntry("system", "be brief"),
        TranscriptEntry("user", "list files"),
        TranscriptEntry("assistant", "Looking.", tool_names=("list_dir", "read_file")),
        TranscriptEntry("tool", "\n a.txt\n b.txt"),
        TranscriptEntry("tool", "hello"),
        TranscriptEntry("assistant", "Two files.", partial=True),
    ]
    blocks = saved_blocks(entries, 0)
    assert [type(b) for b in blocks] == [UserPrompt, SavedReply, SavedToolCalls, SavedReply]
    assert call_lines(("list_dir", "read_file"), ["\n a.txt\n b.txt", "hello"]) == (
        "⚙ list_dir → a.txt\n⚙ read_file → hello"
    )
    last = blocks[-1]
    assert isinstance(last, SavedReply) and last.partial


def test_the_recent_window_never_starts_on_a_tool_result() -> None:
    entries = [
        TranscriptEntry("user", "u"),
        TranscriptEntry("assistant", "", tool_names=("shell",)),
        TranscriptEntry("tool", "out"),
        TranscriptEntry("assistant", "done"),
    ]
    assert split_recent(entries, 2) == 1  # moved back to the call
    assert split_recent(entries, 1) == 3
    assert split_recent(entries, 10) == 0


def test_a_compression_summary_is_shown_as_a_summary_not_as_a_prompt() -> None:
    entries = [
        TranscriptEntry("user", "first"),
        TranscriptEntry("assistant", "ok"),
        TranscriptEntry(
            "user", f"{SUMMARY_MARKER}\n\n- the person asked about stops", summary=True
        ),
        TranscriptEntry("assistant", "Stops close the socket."),
        TranscriptEntry("user", "next"),
    ]
    blocks = saved_blocks(entries, 0)
    assert [type(b) for b in blocks] == [
        UserPrompt,
        SavedReply,
        SavedSummary,
        SavedReply,
        UserPrompt,
    ]
    summary = blocks[2]
    assert isinstance(summary, SavedSummary)
    assert summary.summary == "- the person asked about stops"
    exported = summary.export_markdown()
    assert exported.startswith("> ⇊ the earlier conversation") and SUMMARY_MARKER not in exported
