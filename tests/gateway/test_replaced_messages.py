"""What each summary of a saved session replaced: an earlier summary that a later compression
archived is read back as the messages it stood for, in order."""

from __future__ import annotations

from agent.store import MessageRow
from tui_gateway.sessions.replaced import replaced_messages


def row(id_: int, content: str, order_key: int, archived_by: int | None = None) -> MessageRow:
    return MessageRow(
        id=id_,
        session_id="s",
        position=id_,
        order_key=order_key,
        role="user",
        content=content,
        reasoning=None,
        tool_calls=(),
        tool_call_id=None,
        token_estimate=1,
        active=archived_by is None,
        archived_by=archived_by,
        partial=False,
        turn_id=None,
        created_at=0.0,
    )


def test_a_summary_of_a_summary_is_read_as_every_message_it_stands_for() -> None:
    # 0..5; attempt 1 archives 1, 2 (summary 6 at key 1); attempt 2 archives 6, 3 (summary 7)
    every = [
        row(0, "m0", 0),
        row(1, "m1", 1, archived_by=1),
        row(2, "m2", 2, archived_by=1),
        row(3, "m3", 3, archived_by=2),
        row(4, "m4", 4),
        row(5, "m5", 5),
        row(6, "summary one", 1, archived_by=2),
        row(7, "summary two", 1),
    ]
    active = sorted((r for r in every if r.active), key=lambda r: r.order_key)
    summaries = {1: 6, 2: 7}
    found = replaced_messages(active, every, summaries.get)
    assert {key: [r.content for r in rows] for key, rows in found.items()} == {
        7: ["m1", "m2", "m3"]
    }


def test_a_summary_whose_attempt_is_unknown_replaced_nothing_that_can_be_shown() -> None:
    every = [row(0, "m0", 0, archived_by=1), row(1, "summary", 0)]
    assert replaced_messages([every[1]], every, lambda _attempt: None) == {}
