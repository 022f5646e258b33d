"""The outbox (merge, then drop, deltas; never a control event) and the replay ring."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contract.events import GatewayEvent, MessageDelta, SessionEvicted, ToolOutput, TurnState
from tui_gateway.wire.outbox import Outbox
from tui_gateway.wire.replay import ReplayRing


def delta(session: str, seq: int, text: str, turn: str = "t") -> GatewayEvent:
    return GatewayEvent("message.delta", session, seq, MessageDelta(turn_id=turn, text=text))


def state(session: str, seq: int, turn: str = "t") -> GatewayEvent:
    return GatewayEvent("turn.state", session, seq, TurnState(turn_id=turn, state="streaming"))


# A stream: (session index, is a control event, text).
streams = st.lists(
    st.tuples(st.integers(0, 2), st.booleans(), st.text("ab", min_size=1, max_size=3)),
    max_size=80,
)


def feed(box: Outbox[str], steps: list[tuple[int, bool, str]]) -> list[GatewayEvent]:
    seqs = [0, 0, 0]
    sent = []
    for index, control, text in steps:
        seqs[index] += 1
        session = f"s{index}"
        event = state(session, seqs[index]) if control else delta(session, seqs[index], text)
        sent.append(event)
        box.put_event(event)
    return sent


@given(steps=streams, max_deltas=st.integers(0, 4))
def test_control_events_are_never_dropped_and_order_is_kept(
    steps: list[tuple[int, bool, str]], max_deltas: int
) -> None:
    box: Outbox[str] = Outbox(max_deltas=max_deltas)
    sent = feed(box, steps)
    got = [e for e in box.take() if isinstance(e, GatewayEvent)]
    assert [e for e in got if e.control] == [e for e in sent if e.control]
    for session in ("s0", "s1", "s2"):
        seqs = [e.seq for e in got if e.session_id == session]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert sum(not e.control for e in got) <= max_deltas


@given(steps=streams)
def test_without_pressure_merged_deltas_keep_every_character(
    steps: list[tuple[int, bool, str]],
) -> None:
    box: Outbox[str] = Outbox(max_deltas=10_000)
    sent = feed(box, steps)
    got = [e for e in box.take() if isinstance(e, GatewayEvent)]
    for session in ("s0", "s1", "s2"):
        want = "".join(
            e.payload.text
            for e in sent
            if e.session_id == session and isinstance(e.payload, MessageDelta)
        )
        have = "".join(
            e.payload.text
            for e in got
            if e.session_id == session and isinstance(e.payload, MessageDelta)
        )
        assert have == want
    assert box.dropped == 0


def test_a_full_box_drops_new_deltas_but_keeps_lines_and_controls() -> None:
    box: Outbox[str] = Outbox(max_deltas=1)
    box.put_event(delta("a", 1, "x"))
    box.put_event(state("a", 2))
    box.put_event(delta("a", 3, "y"))  # dropped: one delta waits already
    box.put("a response line")
    box.put_event(state("a", 4))
    items = box.take()
    assert [getattr(i, "seq", i) for i in items] == [1, 2, "a response line", 4]
    assert box.dropped == 1
    box.close()
    assert box.wait_take(0.0) is None


def test_replay_returns_events_after_seq_and_says_when_truncated() -> None:
    ring = ReplayRing(capacity=3)
    for seq in (1, 2, 4, 5, 6):  # 3 was coalesced away: a gap is not a truncation
        ring.add(state("s", seq))
    replay = ring.since("s", 0)
    assert [e.seq for e in replay.events] == [4, 5, 6]
    assert replay.truncated and replay.last_seq == 6
    assert not ring.since("s", 2).truncated  # 1 and 2 were dropped, but the caller has them
    assert [e.seq for e in ring.since("s", 5).events] == [6]
    assert ring.since("s", 9).events == [] and ring.since("s", 9).last_seq == 9
    assert not ring.since("nobody", 0).known


def test_replay_forgets_the_least_recently_active_session() -> None:
    ring = ReplayRing(capacity=5, max_sessions=2)
    ring.add(state("a", 1))
    ring.add(state("b", 1))
    ring.add(state("a", 2))
    ring.add(state("c", 1))
    assert ring.sessions() == ["a", "c"]


def test_an_evicted_session_keeps_only_its_eviction_in_the_ring() -> None:
    ring = ReplayRing(capacity=50)
    for seq in range(1, 41):
        ring.add(delta("gone", seq, "x" * 100))
        ring.add(delta("live", seq, "y"))
    evicted = SessionEvicted(reason="too many live sessions")
    ring.add(GatewayEvent(evicted.TYPE, "gone", 41, evicted))
    replay = ring.since("gone", 10)
    assert [e.payload for e in replay.events] == [evicted]
    assert replay.truncated and replay.last_seq == 41  # the client knows it missed events
    assert not ring.since("gone", 40).truncated
    assert len(ring.since("live", 0).events) == 40  # the other sessions keep theirs


def test_output_without_a_canonical_copy_is_merged_but_never_dropped() -> None:
    box: Outbox[str] = Outbox(max_deltas=0)
    for seq in range(1, 7):
        if seq % 2:
            out = ToolOutput(turn_id="t", call_id="c", text=str(seq))
            box.put_event(GatewayEvent("tool.output", "s", seq, out))
            box.put_event(GatewayEvent("tool.output", "s", seq, out))  # joins the one before
        else:
            box.put_event(state("s", seq))
    box.put_event(delta("s", 7, "dropped"))  # a reply delta: message.complete has it
    items = [i for i in box.take() if isinstance(i, GatewayEvent)]
    text = "".join(i.payload.text for i in items if isinstance(i.payload, ToolOutput))
    assert text == "113355"
    assert box.dropped == 1 and box.merged == 3
