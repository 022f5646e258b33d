"""What the bridge keeps of each session's running turn, to draw it again in a new view: its
events from its start to its end, small (pieces of one reply or call joined), with the time
each came; nothing of a session whose turn ended or that was evicted. A child agent that
outlives its turn is kept, with its own children, until the last of them ends."""

from __future__ import annotations

from contract.events import (
    ApprovalRequest,
    ChildCompleted,
    ChildStarted,
    CompressionComplete,
    CompressionProgressed,
    MessageComplete,
    MessageDelta,
    MessageStart,
    PromptQueued,
    SessionEvicted,
    ToolOutput,
    ToolStart,
    TurnState,
)
from desk.live_turns import OUTPUT_KEPT_CHARS, LiveTurns


def test_a_running_turn_is_kept_from_its_start_with_its_pieces_joined() -> None:
    live = LiveTurns()
    live.note("s1", 1, 5.0, MessageDelta("before", "not kept: no turn started"))
    live.note("s1", 2, 10.0, MessageStart("t", "hi"))
    live.note("s1", 3, 10.5, TurnState("t", "streaming"))
    live.note("s1", 4, 11.0, MessageDelta("t", "Hel"))
    live.note("s1", 5, 11.2, MessageDelta("child", "a child's "))
    live.note("s1", 6, 11.4, MessageDelta("t", "lo"))  # joins "Hel" past the child's piece
    live.note("s1", 7, 11.5, PromptQueued("q", "later", 1))  # the queue is read anew
    live.note("s1", 8, 12.0, ToolStart("t", "c1", "shell", '{"command": "ls"}'))
    live.note("s1", 9, 12.1, ToolOutput("t", "c1", "a\n"))
    live.note("s1", 10, 12.2, ToolOutput("t", "c1", "b\n"))
    live.note("s1", 11, 12.3, MessageDelta("t", " again"))  # after the call: a piece of its own
    live.note("s2", 1, 13.0, MessageStart("u", "other"))

    turn = live.running("s1")
    assert turn is not None and (turn.turn_id, turn.started_at) == ("t", 10.0)
    assert [(e.seq, e.at, e.payload) for e in turn.events] == [
        (2, 10.0, MessageStart("t", "hi")),
        (3, 10.5, TurnState("t", "streaming")),
        (6, 11.0, MessageDelta("t", "Hello")),
        (5, 11.2, MessageDelta("child", "a child's ")),
        (8, 12.0, ToolStart("t", "c1", "shell", '{"command": "ls"}')),
        (10, 12.1, ToolOutput("t", "c1", "a\nb\n")),
        (11, 12.3, MessageDelta("t", " again")),
    ]
    other = live.running("s2")
    assert other is not None and other.turn_id == "u" and len(other.events) == 1


def test_a_turn_is_forgotten_at_its_end_and_a_session_when_it_is_evicted() -> None:
    live = LiveTurns()
    live.note("s1", 1, 1.0, MessageStart("t", "hi"))
    live.note("s1", 2, 1.5, ApprovalRequest("t", "r1", "write_file", "{}"))
    live.note("s1", 3, 2.0, MessageComplete("child", "completed", "completed", "x"))  # not its
    assert live.running("s1") is not None
    live.note("s1", 4, 3.0, MessageComplete("t", "completed", "completed", "x"))
    assert live.running("s1") is None
    live.note("s1", 5, 4.0, MessageDelta("t", "late"))
    assert live.running("s1") is None

    live.note("s2", 1, 1.0, MessageStart("u", "hi"))
    live.note("s2", 2, 2.0, SessionEvicted("too many live sessions"))
    assert live.running("s2") is None


def test_a_call_keeps_the_tail_of_its_output_and_a_finished_compression_its_outcome() -> None:
    live = LiveTurns()
    live.note("s1", 1, 1.0, MessageStart("t", "hi"))
    live.note("s1", 2, 1.0, CompressionProgressed("t", "prepare"))
    live.note("s1", 3, 1.0, CompressionProgressed("t", "summarize", tokens_out=5))
    done = CompressionComplete("t", "committed", "compressed", 900, 300)
    live.note("s1", 4, 2.0, done)
    live.note("s1", 5, 2.0, ToolStart("t", "c1", "shell", "{}"))
    for seq in range(6, 16):
        live.note("s1", seq, 3.0, ToolOutput("t", "c1", "x" * (OUTPUT_KEPT_CHARS // 4) + "\n"))
    live.note("s1", 16, 3.0, ToolOutput("t", "c1", "end\n"))

    turn = live.running("s1")
    assert turn is not None
    payloads = [e.payload for e in turn.events]
    assert not any(isinstance(p, CompressionProgressed) for p in payloads)
    assert done in payloads
    (output,) = (p for p in payloads if isinstance(p, ToolOutput))
    assert len(output.text) == OUTPUT_KEPT_CHARS and output.text.endswith("x\nend\n")


def test_a_long_reply_read_midway_keeps_every_piece_in_order() -> None:
    live = LiveTurns()
    live.note("s1", 0, 1.0, MessageStart("t", "hi"))
    words = [f"w{n} " for n in range(50_000)]
    for seq, word in enumerate(words[:25_000], start=1):
        live.note("s1", seq, 2.0, MessageDelta("t", word, "r" if seq % 2 else ""))
    midway = live.running("s1")  # a switch to the session while the reply streams
    for seq, word in enumerate(words[25_000:], start=25_001):
        live.note("s1", seq, 3.0, MessageDelta("t", word, "r" if seq % 2 else ""))
    live.note("s1", 50_001, 4.0, CompressionProgressed("t", "summarize", tokens_out=1))
    live.note("s1", 50_002, 4.0, CompressionProgressed("t", "summarize", tokens_out=7))

    assert midway is not None
    assert midway.events[1].payload == MessageDelta("t", "".join(words[:25_000]), "r" * 12_500)
    turn = live.running("s1")
    assert turn is not None
    assert [(e.seq, e.at, e.payload) for e in turn.events[1:]] == [
        (50_000, 2.0, MessageDelta("t", "".join(words), "r" * 25_000)),
        (50_002, 4.0, CompressionProgressed("t", "summarize", tokens_out=7)),
    ]


def started(child: str, parent: str, call: str = "c1") -> ChildStarted:
    return ChildStarted(child, parent, call, f"task of {child}", True, 1)


def ended(child: str, parent: str) -> ChildCompleted:
    return ChildCompleted(child, parent, "completed", "completed", "done", "note")


def test_a_child_that_outlives_its_turn_is_kept_with_its_own_children_until_they_end() -> None:
    live = LiveTurns()
    live.note("s1", 1, 1.0, MessageStart("t", "hi"))
    live.note("s1", 2, 1.1, ToolStart("t", "c1", "delegate", "{}"))
    live.note("s1", 3, 1.2, started("bg", "t", "c1"))
    live.note("s1", 4, 1.3, started("fg", "t", "c2"))  # a sibling that ends with the turn
    live.note("s1", 5, 1.4, MessageDelta("bg", "map"))
    live.note("s1", 6, 1.5, started("grand", "bg", "c9"))
    live.note("s1", 7, 1.6, MessageDelta("grand", "sub"))
    live.note("s1", 8, 1.7, ended("grand", "bg"))
    live.note("s1", 9, 1.8, ended("fg", "t"))
    live.note("s1", 10, 1.9, MessageDelta("t", "the turn's own"))
    shown = live.shown("s1")
    assert shown is not None and shown.turn is not None and shown.background == ()
    assert shown.events == shown.turn.events  # while the turn runs, its events draw all

    live.note("s1", 11, 2.0, MessageComplete("t", "completed", "completed", "x"))
    live.note("s1", 12, 2.5, MessageDelta("bg", "ping"))
    assert live.running("s1") is None
    shown = live.shown("s1")
    assert shown is not None and shown.turn is None
    assert shown.agents == {"bg", "grand"}  # not the sibling that ended: the transcript has it
    assert [(e.seq, e.at, e.payload) for e in shown.events] == [
        (3, 1.2, started("bg", "t", "c1")),
        (5, 1.4, MessageDelta("bg", "map")),
        (6, 1.5, started("grand", "bg", "c9")),
        (7, 1.6, MessageDelta("grand", "sub")),
        (8, 1.7, ended("grand", "bg")),
        (12, 2.5, MessageDelta("bg", "ping")),
    ]

    live.note("s1", 13, 3.0, MessageStart("u", "next"))  # the session's next turn
    live.note("s1", 14, 3.1, MessageDelta("bg", "!"))
    live.note("s1", 15, 3.2, MessageDelta("u", "reply"))
    shown = live.shown("s1")
    assert shown is not None and shown.turn is not None and shown.turn.turn_id == "u"
    assert [e.payload for e in shown.events] == [
        started("bg", "t", "c1"),
        MessageDelta("bg", "map"),
        started("grand", "bg", "c9"),
        MessageDelta("grand", "sub"),
        ended("grand", "bg"),
        MessageDelta("bg", "ping!"),  # its pieces since the last control event join
        MessageStart("u", "next"),
        MessageDelta("u", "reply"),
    ]

    live.note("s1", 16, 4.0, ended("bg", "t"))
    shown = live.shown("s1")
    assert shown is not None and shown.background == () and shown.agents == frozenset()
    live.note("s1", 17, 5.0, MessageComplete("u", "completed", "completed", "x"))
    assert live.shown("s1") is None


def test_children_that_end_with_their_turn_or_an_evicted_session_are_forgotten() -> None:
    live = LiveTurns()
    live.note("s1", 1, 1.0, MessageStart("t", "hi"))
    live.note("s1", 2, 1.0, started("a", "t"))
    live.note("s1", 3, 1.0, ended("a", "t"))
    live.note("s1", 4, 1.0, MessageComplete("t", "completed", "completed", "x"))
    assert live.shown("s1") is None

    live.note("s2", 1, 1.0, MessageStart("t2", "hi"))
    live.note("s2", 2, 1.0, started("b", "t2"))
    live.note("s2", 3, 1.0, MessageComplete("t2", "completed", "completed", "x"))
    assert live.shown("s2") is not None
    live.note("s2", 4, 2.0, SessionEvicted("too many live sessions"))
    assert live.shown("s2") is None
    live.note("s2", 5, 3.0, MessageDelta("b", "late"))
    assert live.shown("s2") is None
