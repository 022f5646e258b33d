"""The SSE line reader: however the bytes are cut into chunks, the same payloads come out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.provider.sse import LineTooLong, data_lines

ENDINGS = [b"\n", b"\r\n", b"\r"]
payloads = st.lists(st.text(alphabet='abc {}:"é', min_size=0, max_size=12), max_size=8)


async def chunked(data: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    start = 0
    for cut in sorted(set(cuts)):
        yield data[start:cut]
        start = cut
    yield data[start:]


def read(data: bytes, cuts: list[int], limit: int = 1 << 20) -> list[str]:
    async def collect() -> list[str]:
        return [p async for p in data_lines(chunked(data, cuts), max_line_bytes=limit)]

    return asyncio.run(collect())


@given(payloads, st.lists(st.sampled_from(ENDINGS), min_size=8, max_size=8), st.data())
def test_any_cut_gives_the_same_payloads(
    texts: list[str], endings: list[bytes], data: st.DataObject
) -> None:
    stream = b""
    for text, end in zip(texts, endings, strict=False):
        stream += b": ping" + end + b"data: " + text.encode() + end + end
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=10))
    expected = [t.strip() for t in texts if t.strip()]
    assert read(stream, cuts) == expected


def test_a_line_past_the_bound_is_refused_however_it_arrives() -> None:
    line = b"data: " + b"x" * 100 + b"\n"
    assert read(line, [], limit=200) == ["x" * 100]
    for cuts in ([], [3], list(range(0, 107, 5))):
        with pytest.raises(LineTooLong):
            read(line, cuts, limit=50)
