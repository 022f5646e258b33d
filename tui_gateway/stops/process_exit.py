"""The end of a desk process: no thread runs while the interpreter finalizes.

Python ends a process by finalizing the interpreter: modules, objects and the C state of
extensions are torn down while daemon threads may still run. A daemon thread that is inside a C
extension then (SQLite, a socket library, an event loop's selector) can touch what was freed,
and the process dies of SIGSEGV after it printed everything, with nothing on stderr.

So every entry point (``desk``, ``desk run``, ``desk serve``, ``desk gateway --stdio``, and
headless uses of the app) ends through :func:`exit_process` once its gateway is shut down:

1. every other thread is joined, together bounded by ``timeout_s`` (the gateway's shutdown
   already joined its own; what is left is usually a thread blocked in a read that will never
   return, e.g. stdin);
2. when none is left, the process exits normally (``sys.exit``: atexit handlers, buffers);
3. when some are left, stdout and stderr are flushed and the process ends with ``os._exit``
   without finalizing, so no thread can run into a half torn-down interpreter; their names
   go to the log in one line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from typing import NoReturn

_log = logging.getLogger(__name__)

JOIN_S = 2.0
"""How long :func:`exit_process` waits for the threads left, together, in seconds."""


def threads_left(timeout_s: float = JOIN_S) -> list[threading.Thread]:
    """Join every thread but this one and the main thread, together within ``timeout_s``.

    Returns:
        the threads still alive then.
    """
    deadline = time.monotonic() + timeout_s
    me, main = threading.current_thread(), threading.main_thread()
    for thread in threading.enumerate():
        if thread is me or thread is main:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threading.enumerate() if t is not me and t is not main and t.is_alive()]


def exit_process(code: int, timeout_s: float = JOIN_S) -> NoReturn:
    """End the process with ``code`` once no other thread runs (see the module docstring).

    Raises:
        SystemExit: when every thread ended (a normal exit).
    """
    left = threads_left(timeout_s)
    if not left:
        sys.exit(code)
    names = ", ".join(sorted(t.name for t in left))
    _log.info("desk: ended without finalizing; threads still running: %s", names)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


__all__ = ["JOIN_S", "exit_process", "threads_left"]
