"""The line cap of a stdio server's output: whole lines under the cap, cuts past it (with the
request they answer), runaways, whatever the chunks."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.mcp.line_cap import Cut, Line, LineCap, Piece, Runaway, top_level_id


def feed_all(cap: LineCap, data: bytes, cuts: list[int]) -> list[Piece]:
    out: list[Piece] = []
    start = 0
    for end in [*sorted(cuts), len(data)]:
        out.extend(cap.feed(data[start:end]))
        start = end
        if cap.ended:
            break
    return out


def answer(request_id: int | str, size: int, *, id_last: bool = False) -> bytes:
    result = {"content": [{"type": "text", "text": "y" * size, "id": 999}]}
    message = (
        {"jsonrpc": "2.0", "result": result, "id": request_id}
        if id_last
        else {"jsonrpc": "2.0", "id": request_id, "result": result}
    )
    return json.dumps(message).encode()


def test_the_id_is_read_at_the_top_level_only() -> None:
    assert top_level_id(b'{"result": {"id": 5, "x": "\\"id\\": 6"}, "id": 7') == 7
    assert top_level_id(b'{"jsonrpc": "2.0", "id": "a\\"b", "result"') == 'a"b'
    assert top_level_id(b'{"jsonrpc": "2.0", "result": {"id": 3') is None


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=6),
    id_last=st.booleans(),
    cuts=st.lists(st.integers(0, 3000), max_size=12),
)
def test_lines_and_cuts_come_out_in_order_whatever_the_chunks(
    sizes: list[int], id_last: bool, cuts: list[int]
) -> None:
    lines = [answer(n, size, id_last=id_last) for n, size in enumerate(sizes)]
    data = b"\n".join(lines) + b"\n"
    cap = LineCap(300)
    pieces = feed_all(cap, data, [c for c in cuts if c <= len(data)])
    assert len(pieces) == len(lines)
    for n, (line, piece) in enumerate(zip(lines, pieces, strict=True)):
        if len(line) <= 300:
            assert piece == Line(line)
        else:
            assert piece == Cut(n, len(line))
        assert cap.pending <= 300 + 2 * 65_536


def test_a_line_without_end_is_a_runaway_once_past_four_times_the_cap() -> None:
    cap = LineCap(1000)
    assert cap.feed(b'{"jsonrpc": "2.0", "id": 4, "result": "' + b"y" * 3500) == []
    assert cap.feed(b"y" * 400) == []
    assert cap.feed(b"y" * 200) == [Runaway(4, 4139)]
    assert cap.ended
