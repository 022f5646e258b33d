"""A chunked body's payload comes out whole and in order however the reads cut it, and as it
arrives: an endless chunk is handed on, never held."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.provider.bulk_http import Dechunker

pieces = st.lists(st.binary(min_size=1, max_size=40), max_size=12)
extensions = st.sampled_from([b"", b";name=value", b"; ext", b';q="a;b"'])
trailers = st.lists(st.sampled_from([b"X-Checksum: 1", b"Server-Timing: total;dur=1"]), max_size=2)


def encode(chunks: list[bytes], ext: bytes, trailer_lines: list[bytes], upper: bool) -> bytes:
    out = b""
    for data in chunks:
        size = b"%X" % len(data) if upper else b"%x" % len(data)
        out += size + ext + b"\r\n" + data + b"\r\n"
    out += b"0" + ext + b"\r\n"
    for line in trailer_lines:
        out += line + b"\r\n"
    return out + b"\r\n"


def feed(body: bytes, cuts: list[int]) -> tuple[bytes, bool, list[bytes]]:
    chunks = Dechunker()
    got: list[bytes] = []
    start = 0
    for cut in [*sorted(set(cuts)), len(body)]:
        got.append(chunks.feed(body[start:cut]))
        start = cut
    return b"".join(got), chunks.ended, got


@given(pieces, extensions, trailers, st.booleans(), st.data())
def test_any_cut_gives_the_payload_back(
    chunks: list[bytes], ext: bytes, trailer_lines: list[bytes], upper: bool, data: st.DataObject
) -> None:
    body = encode(chunks, ext, trailer_lines, upper)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=12))
    payload, ended, _ = feed(body, cuts)
    assert payload == b"".join(chunks)
    assert ended


def test_the_end_is_only_the_blank_line_after_the_trailers() -> None:
    chunks = Dechunker()
    assert chunks.feed(b"3\r\nabc\r\n0\r\nX-A: 1\r\n") == b"abc"
    assert not chunks.ended  # the trailers may go on
    assert chunks.feed(b"\r\n") == b""
    assert chunks.ended


def test_an_endless_chunk_is_handed_on_as_it_arrives() -> None:
    chunks = Dechunker()
    assert chunks.feed(b"%x\r\n" % (1 << 40)) == b""
    block = b"x" * 65536
    for _ in range(64):  # 4 MiB of a 1 TiB chunk: every read comes out whole, at once
        assert chunks.feed(block) == block
    assert not chunks.ended


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"zz\r\nab\r\n", "bad chunk size"),
        (b"-2\r\nab\r\n", "bad chunk size"),
        (b"2\r\nabXY", "did not end with CRLF"),
        (b"1" * 5000, "too long"),
    ],
)
def test_a_malformed_body_is_refused(body: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        Dechunker().feed(body)
