"""Bounded output capture: keep the head and the tail of a stream, cut the middle with a marker.

A command can print gigabytes; a tool result must stay a few kilobytes so that it fits the
model's context. :class:`OutputBuffer` keeps at most ``max_bytes`` bytes in memory however much
arrives (the first half and the last half of the budget), and renders them with a marker
that says how much was cut, e.g. ``[... 12,345 bytes cut ...]``.
"""

from __future__ import annotations


def cut_marker(cut_bytes: int) -> str:
    """The line that replaces ``cut_bytes`` bytes of output, e.g. ``[... 12,345 bytes cut ...]``."""
    return f"[... {cut_bytes:,} bytes cut ...]"


def _char_start(data: bytes | bytearray, index: int) -> int:
    """The first index >= ``index`` that is not inside a UTF-8 multi-byte sequence."""
    while index < len(data) and (data[index] & 0xC0) == 0x80:
        index += 1
    return index


def _char_end(data: bytes | bytearray, index: int) -> int:
    """The last index <= ``index`` at which a cut does not split a UTF-8 sequence."""
    index = min(index, len(data))
    start = index
    while start > 0 and (data[start - 1] & 0xC0) == 0x80 and index - start < 3:
        start -= 1
    if start > 0 and data[start - 1] >= 0xC0:
        lead = data[start - 1]
        need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if index - (start - 1) < need:  # the sequence is not complete before ``index``
            return start - 1
    return index


LINE_SNAP = 200
"""Most bytes a cut moves to end on a line's end (and no more than a quarter of the part)."""


def _line_end(head: bytes | bytearray, end: int) -> int:
    """``end``, or just after the last newline before it when one is near."""
    reach = min(LINE_SNAP, end // 4)
    newline = head.rfind(b"\n", end - reach, end)
    return newline + 1 if newline >= 0 and reach > 0 else end


def _line_start(tail: bytes | bytearray, start: int) -> int:
    """``start``, or just after the first newline from it when one is near."""
    reach = min(LINE_SNAP, (len(tail) - start) // 4)
    newline = tail.find(b"\n", start, start + reach)
    return newline + 1 if newline >= 0 and reach > 0 else start


class OutputBuffer:
    """Collects a byte stream and keeps only its head and tail, ``max_bytes`` bytes in all.

    Memory stays O(``max_bytes``) however much is appended. Not thread-safe: one writer.

    Args:
        max_bytes: the budget in bytes for :meth:`text` (the marker line comes on top); at
            least 2.

    Raises:
        ValueError: for ``max_bytes`` < 2.
    """

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 2:
            raise ValueError(f"max_bytes must be at least 2, not {max_bytes}")
        self.max_bytes = max_bytes
        self._head_limit = max_bytes // 2
        self._tail_limit = max_bytes - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0
        """Bytes appended so far (kept or not)."""

    def append(self, data: bytes | str) -> None:
        """Add output; ``str`` is encoded as UTF-8."""
        chunk = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        self.total_bytes += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            excess = len(self._tail) - self._tail_limit
            if excess > 0:
                del self._tail[:excess]

    @property
    def truncated(self) -> bool:
        """True when more arrived than the budget keeps."""
        return self.total_bytes > self.max_bytes

    @property
    def cut_bytes(self) -> int:
        """How many bytes from the middle are not kept (0 when nothing was cut)."""
        return max(0, self.total_bytes - self.max_bytes)

    def text(self) -> str:
        """The kept output decoded as UTF-8 (invalid bytes become U+FFFD), with a cut marker.

        Cuts never split a UTF-8 character: the head ends and the tail starts on character
        boundaries (so up to 3 more bytes may be left out, counted in the marker); and where a
        line ends near the cut (within `LINE_SNAP` bytes, or a quarter of the part), on that
        line's end, so the text read on each side of the marker is whole lines (``49830``,
        not ``830``).
        """
        if not self.truncated:
            return (bytes(self._head) + bytes(self._tail)).decode("utf-8", "replace")
        head_end = _line_end(self._head, _char_end(self._head, len(self._head)))
        tail_start = _line_start(self._tail, _char_start(self._tail, 0))
        cut = self.cut_bytes + (len(self._head) - head_end) + tail_start
        head = self._head[:head_end].decode("utf-8", "replace")
        tail = self._tail[tail_start:].decode("utf-8", "replace")
        sep_head = "" if head.endswith("\n") or not head else "\n"
        sep_tail = "" if tail.startswith("\n") else "\n"
        return f"{head}{sep_head}{cut_marker(cut)}{sep_tail}{tail}"


def truncate_text(text: str, max_bytes: int) -> tuple[str, bool]:
    """Keep the head and tail of ``text`` within ``max_bytes`` UTF-8 bytes.

    Args:
        text: any text.
        max_bytes: the byte budget (at least 2).

    Returns:
        ``(text, truncated)``: the text unchanged and False when it fits, else the head and the
        tail around a cut marker, and True.
    """
    buffer = OutputBuffer(max_bytes)
    buffer.append(text)
    return buffer.text(), buffer.truncated


__all__ = ["OutputBuffer", "cut_marker", "truncate_text"]
