"""Server-sent events in: the ``data:`` lines of a stream, each line bounded in size.

A model server streams a chat completion as ``data: {json}`` lines (the SSE format,
https://html.spec.whatwg.org/multipage/server-sent-events.html). A reader that joins bytes until
the next newline holds a whole line in memory however long it is: a server that sends 200 MB
without a newline made the client take 721 MB. :func:`data_lines` holds at most
:data:`MAX_LINE_BYTES` of an unfinished line and fails the stream with :class:`LineTooLong`
beyond that.

Lines end with LF, CRLF or CR, as the format allows. Blank lines, comments (``: ping``) and
fields other than ``data`` (``event:``, ``id:``, ``retry:``) are skipped, and so is a ``data:``
line with nothing after it (no chunk to parse). One ``data:`` line is one chunk: OpenAI-compatible
servers never split a chunk over several ``data:`` lines.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest line of a stream, in bytes (16 MiB): far above any real chunk (a chunk carries a few
tokens; a whole tool call's arguments rarely pass a megabyte)."""


class LineTooLong(Exception):
    """The server sent a line longer than the bound without ending it.

    Attributes:
        limit: the bound, in bytes.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"a line longer than {limit:,} bytes")
        self.limit = limit


async def data_lines(
    chunks: AsyncIterable[bytes], *, max_line_bytes: int = MAX_LINE_BYTES
) -> AsyncIterator[str]:
    """The payloads of the ``data:`` lines of a byte stream, in order.

    Args:
        chunks: the response body as it arrives (already content-decoded).
        max_line_bytes: longest line accepted, in bytes.

    Yields:
        each non-empty ``data`` payload, decoded as UTF-8 (invalid bytes replaced) and
        stripped of surrounding whitespace; ``[DONE]`` is yielded like any other payload.

    Raises:
        LineTooLong: an unfinished line grew past ``max_line_bytes``; what was held is freed.
    """
    held = bytearray()  # the start of an unfinished line
    async for chunk in chunks:
        if b"\n" not in chunk and b"\r" not in chunk:
            if len(held) + len(chunk) > max_line_bytes:
                held.clear()
                raise LineTooLong(max_line_bytes)
            held += chunk
            continue
        if held:
            held += chunk
            data = bytes(held)
            held.clear()
        else:
            data = chunk
        if b"\r" in data:  # CRLF and lone CR end lines too (a CRLF cut in two: a blank line)
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        rest = lines.pop()
        for line in lines:
            if len(line) > max_line_bytes:
                raise LineTooLong(max_line_bytes)
            if line.startswith(b"data:"):
                payload = line[5:].decode("utf-8", errors="replace").strip()
                if payload:
                    yield payload
            # else: a blank separator, a comment (": ping") or another field
        if len(rest) > max_line_bytes:
            raise LineTooLong(max_line_bytes)
        held += rest
    if held:  # the stream ended in the middle of a line: what came is still a line
        payload = _data(bytes(held))
        if payload:
            yield payload


def _data(line: bytes) -> str:
    if not line.startswith(b"data:"):
        return ""  # blank separators, comments (": ping"), other fields
    return line[5:].decode("utf-8", errors="replace").strip()


__all__ = ["MAX_LINE_BYTES", "LineTooLong", "data_lines"]
