"""Time stamps along one event's way through desk's threads, for benchmarks (off by default).

With ``DESK_STAMPS=PATH`` in the environment, :func:`stamp` appends one line per call to
``PATH``: ``<time.monotonic() s> <thread name> <what> <key> <the thread's CPU s>``. The stop
path stamps the socket shut down, the turn's thread done with the request, booked, saved and
its ``message.complete`` published, the event on the delivery thread, in the UI, "idle" set,
and every frame queued for the terminal (``bench/idle_after_stop.py`` reads them beside what
the terminal received). ``time.monotonic()`` is system-wide on Linux, so stamps of several
processes line up.

With the variable set, every collection of the garbage collector is stamped too (``gc.start``
and ``gc.stop``, the generation as the key): it holds the interpreter lock throughout, so a
key read late may have waited for one.

Without the variable :func:`stamp` does nothing but one test of a module global.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from typing import Any

ENV = "DESK_STAMPS"
"""The environment variable naming the file stamps are appended to."""

_path = os.environ.get(ENV, "")
_lock = threading.RLock()  # a collection may start inside stamp() and stamp itself


def stamp(what: str, key: str = "") -> None:
    """Append ``what`` (one word) and ``key`` (e.g. a turn id) with the time and the calling
    thread's name to the stamps file, when ``DESK_STAMPS`` names one; else nothing. Never
    raises (a file that cannot be written loses the stamp)."""
    if not _path:
        return
    thread = threading.current_thread().name.replace(" ", "_")
    line = f"{time.monotonic():.6f} {thread} {what} {key} {time.thread_time():.6f}\n"
    with _lock:
        try:
            with open(_path, "a", encoding="utf-8") as out:
                out.write(line)
        except OSError:
            pass


def _collection(phase: str, info: dict[str, Any]) -> None:
    stamp(f"gc.{phase}", str(info.get("generation", "")))


if _path:
    gc.callbacks.append(_collection)
