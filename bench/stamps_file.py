"""Reading the stamps file desk appends to with ``DESK_STAMPS`` set (:mod:`agent.stamps`).

Each line is ``<time.monotonic() s> <thread> <what> <key> <the thread's CPU s>``; the clock is
system-wide on Linux, so a bench lines them up with its own ``time.monotonic()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Stamp(NamedTuple):
    """One line of the file: ``at`` and ``cpu_s`` in seconds, ``key`` possibly empty."""

    at: float
    thread: str
    what: str
    key: str
    cpu_s: float


def read_stamps(path: Path, offset: int = 0) -> tuple[list[Stamp], int]:
    """The stamps appended to ``path`` after byte ``offset``, and the offset after them (a
    file that cannot be read: none, and ``offset``)."""
    try:
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return [], offset
    stamps = []
    for line in data.decode(errors="replace").splitlines():
        parts = line.split(" ")
        if len(parts) >= 5:
            stamps.append(Stamp(float(parts[0]), parts[1], parts[2], parts[3], float(parts[4])))
    return stamps, offset + len(data)
