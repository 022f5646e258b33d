"""Cutting an MCP server's stdout into lines, none longer than a cap, in memory bounded by it.

A stdio MCP server sends one JSON-RPC message a line; a tool's whole result is one line. A server
that answers with hundreds of megabytes, or writes a line that never ends, must not take desk's
memory with it, nor its time: lines are gathered as a list of chunks (joined once, so reading is
linear in the bytes read) and a line past ``cap`` bytes is not kept. Its start is kept (64 KiB)
to find the request it answers, then the rest is read and dropped up to its newline, and its
last 64 KiB are kept in case the id comes after the result. A line that passes
:data:`RUNAWAY` times the cap without ending is a runaway: desk stops reading that connection.

Pure: no I/O, fed chunks by the transport (:mod:`agent.mcp.stdio`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_KEPT = 65_536

RUNAWAY = 4
"""A line past this many times the cap, still without its end, is a :class:`Runaway`."""
_TAIL_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*}\s*$')


@dataclass(frozen=True, slots=True)
class Line:
    """One whole line, without its newline."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Cut:
    """A line longer than the cap, read to its end and dropped.

    Attributes:
        request_id: the id of the request it answers (an ``int`` or ``str``, as sent), or None
            when it could not be found in the line's first or last 64 KiB.
        size: the line's length in bytes.
    """

    request_id: int | str | None
    size: int


@dataclass(frozen=True, slots=True)
class Runaway:
    """A line that went on past :data:`RUNAWAY` times the cap without ending: nothing more is read.

    Attributes:
        request_id: as for :class:`Cut`, from the line's start.
        size: the bytes read of it so far.
    """

    request_id: int | str | None
    size: int


Piece = Line | Cut | Runaway
"""What :meth:`LineCap.feed` gives."""


def top_level_id(head: bytes) -> int | str | None:
    """The ``id`` member of the JSON object that ``head`` begins (possibly cut short).

    Walks the text keeping track of strings and nesting, and reads the value of an ``"id"`` key
    at depth 1 only (an ``"id"`` inside the result is not the message's).

    Returns:
        the id (a number as ``int``, a string as ``str``), or None when ``head`` has no such key.
    """
    depth = 0
    i = 0
    n = len(head)
    while i < n:
        c = head[i]
        if c == 0x22:  # a string: a key when at depth 1 and followed by ':'
            end = i + 1
            while end < n and head[end] != 0x22:
                end += 2 if head[end] == 0x5C else 1
            if end >= n:
                return None
            if depth == 1 and head[i + 1 : end] == b"id":
                match = re.match(rb'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")', head[end + 1 :])
                if match is not None:
                    return _id_value(match.group(1))
            i = end + 1
            continue
        if c in (0x7B, 0x5B):
            depth += 1
        elif c in (0x7D, 0x5D):
            depth -= 1
        i += 1
    return None


def _id_value(raw: bytes) -> int | str | None:
    if raw.startswith(b'"'):
        import json

        try:
            value = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            return None
        return value if isinstance(value, str) else None
    return int(raw)


class LineCap:
    """Splits a byte stream into lines of at most ``cap`` bytes.

    Args:
        cap: the longest line kept, in bytes (> 0).
    """

    def __init__(self, cap: int) -> None:
        if cap <= 0:
            raise ValueError(f"cap must be positive, not {cap}")
        self.cap = cap
        self._parts: list[bytes] = []
        self._size = 0  # bytes of the current line so far
        self._dropping = False
        self._head = b""
        self._tail = b""
        self.ended = False
        """True after a :class:`Runaway`: feed nothing more."""

    @property
    def pending(self) -> int:
        """Bytes of the current (unfinished) line held in memory."""
        return sum(len(p) for p in self._parts) + len(self._head) + len(self._tail)

    def feed(self, chunk: bytes) -> list[Piece]:
        """The lines (and cuts) that ``chunk`` completes, in order.

        Raises:
            RuntimeError: called after a :class:`Runaway`.
        """
        if self.ended:
            raise RuntimeError("the line cap ended on a runaway line")
        out: list[Piece] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            runaway = self._take(piece)
            if runaway is not None:
                out.append(runaway)
                return out
            if newline < 0:
                return out
            out.append(self._finish())
            start = newline + 1

    def _take(self, piece: bytes) -> Runaway | None:
        if not piece:
            return None
        self._size += len(piece)
        if not self._dropping:
            self._parts.append(piece)
            if self._size <= self.cap:
                return None
            self._head = b"".join(self._parts)[:_KEPT]
            self._parts = []
            self._dropping = True
            self._tail = piece[-_KEPT:]
            return None
        self._tail = (self._tail + piece)[-_KEPT:]
        if self._size > RUNAWAY * self.cap:
            self.ended = True
            return Runaway(top_level_id(self._head), self._size)
        return None

    def _finish(self) -> Piece:
        piece: Piece
        if self._dropping:
            found = top_level_id(self._head)
            if found is None:
                match = _TAIL_ID.search(self._tail.rstrip(b"\r"))
                found = _id_value(match.group(1)) if match is not None else None
            piece = Cut(found, self._size)
        else:
            piece = Line(b"".join(self._parts))
        self._parts = []
        self._size = 0
        self._dropping = False
        self._head = self._tail = b""
        return piece


__all__ = ["RUNAWAY", "Cut", "Line", "LineCap", "Piece", "Runaway", "top_level_id"]
