"""Where a quit spends its time: one line per step, when ``DESK_QUIT_STAMPS`` names a file.

``bench/quit_latency.py`` sets ``DESK_QUIT_STAMPS=PATH`` for the desk it measures; each step of
a quit (the key read, the system stop booked, each worker joined, the store closed, the
terminal given back) then appends ``<time.monotonic()> <thread name> <step>`` to that file, and
the bench puts them beside the key's own time (``time.monotonic()`` is system-wide on Linux).
Unset (always, outside the bench), :func:`stamp` does nothing but one comparison.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

_PATH = os.environ.get("DESK_QUIT_STAMPS", "")


def stamp(step: str) -> None:
    """Append ``step`` with the time and the thread's name to ``$DESK_QUIT_STAMPS`` (when set).

    Never raises: a file that cannot be written loses the stamp, not the quit.
    """
    if not _PATH:
        return
    line = f"{time.monotonic():.6f} {threading.current_thread().name} {step}\n"
    with contextlib.suppress(OSError), open(_PATH, "a", encoding="utf-8") as out:
        out.write(line)


__all__ = ["stamp"]
