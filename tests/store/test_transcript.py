"""The transcript: positions, round trips, all-or-nothing appends."""

from __future__ import annotations

import pytest

from agent.provider.types import ChatMessage, ToolCall
from agent.store import SessionStore, StoreError, StoreNotFound


def test_positions_are_contiguous_and_rows_round_trip(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    call = ToolCall(id="c1", name="shell", arguments='{"cmd": "ls"}')
    rows = [
        store.transcript.append_message("s1", ChatMessage("user", "list files")),
        store.transcript.append_message("s1", ChatMessage("assistant", "", tool_calls=(call,))),
        store.transcript.append_message("s1", ChatMessage("tool", "a\nb", tool_call_id="c1")),
        store.transcript.append_message(
            "s1", ChatMessage("assistant", "two fi"), partial=True, reasoning="think"
        ),
    ]
    assert [r.position for r in rows] == [0, 1, 2, 3]
    assert store.transcript.all_messages("s1") == rows
    assert store.transcript.active_messages("s1") == rows
    assert rows[1].tool_calls == (call,)
    assert rows[3].partial and rows[3].reasoning == "think"
    assert store.transcript.load_history("s1") == [
        ChatMessage("user", "list files"),
        ChatMessage("assistant", "", tool_calls=(call,)),
        ChatMessage("tool", "a\nb", tool_call_id="c1"),
        ChatMessage("assistant", "two fi"),
    ]
    assert all(r.token_estimate > 0 for r in rows)


def test_unicode_and_empty_content_round_trip(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    texts = ["", "é ü 漢字 🙂", "\x00nul inside", "line\r\nbreaks"]
    for text in texts:
        store.transcript.append_message("s1", ChatMessage("user", text))
    assert [m.content for m in store.transcript.load_history("s1")] == texts


def test_append_to_a_missing_session_or_turn(store: SessionStore) -> None:
    with pytest.raises(StoreNotFound, match="no session 'nope'"):
        store.transcript.append_message("nope", ChatMessage("user", "x"))
    store.sessions.create_session("s1")
    with pytest.raises(StoreNotFound, match="no turn"):
        store.transcript.append_message("s1", ChatMessage("user", "x"), turn_id="t-missing")
    assert store.transcript.all_messages("s1") == []


def test_append_messages_is_all_or_nothing(store: SessionStore) -> None:
    store.sessions.create_session("s1")
    bad = ChatMessage("robot", "x")  # type: ignore[arg-type]  # violates the role CHECK
    with pytest.raises(StoreError):
        store.transcript.append_messages("s1", [ChatMessage("user", "ok"), bad])
    assert store.transcript.all_messages("s1") == []
    store.transcript.append_messages("s1", [ChatMessage("user", "ok")])
    assert [m.position for m in store.transcript.all_messages("s1")] == [0]


def test_events_are_kept_after_the_last_message_summaries_left_out(store: SessionStore) -> None:
    store.sessions.create_session("s1", messages=[ChatMessage("system", "sys")])
    for text in ("m0", "m1", "m2", "m3"):
        store.transcript.append_message("s1", ChatMessage("user", text))
    assert store.leases.acquire_lease("s1", "h", ttl_s=30)
    attempt = store.compressions.begin_compression("s1", "h")
    middle = [m.id for m in store.transcript.active_messages("s1")[1:3]]
    summary = store.compressions.commit_compression(
        attempt.id, holder="h", archive_ids=middle, summary=ChatMessage("user", "[s]")
    )
    assert summary is not None and summary.position == 5  # appended last
    event = store.transcript.append_event(
        "s1", "compression.complete", '{"status": "committed"}', turn_id="t1"
    )
    # after m3 (position 4), not after the summary read in the place of m0 and m1
    assert (event.after_position, event.turn_id) == (4, "t1")
    store.transcript.append_message("s1", ChatMessage("user", "m4"))
    later = store.transcript.append_event("s1", "compression.complete", "{}")
    assert later.after_position == 6 and later.turn_id is None
    assert store.transcript.events("s1") == [event, later]
    assert event.payload == '{"status": "committed"}' and event.type == "compression.complete"
    assert store.transcript.events("missing") == []
    with pytest.raises(StoreNotFound):
        store.transcript.append_event("missing", "compression.complete", "{}")
    store.sessions.create_session("s2")
    assert store.transcript.append_event("s2", "x", "{}").after_position == -1
    assert store.sessions.delete_session("s1")
    assert store.transcript.events("s1") == []
