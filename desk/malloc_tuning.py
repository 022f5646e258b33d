"""glibc malloc settings for a long-running process with many short-lived threads.

The gateway runs each turn, tool call, compression and stop on threads of their own. glibc gives
each new thread that allocates an arena of its own, up to eight per core (16 on two cores), and
keeps every arena's freed memory: a block freed in one arena cannot serve an allocation made in
another, so free memory piles up, scattered, in all of them. In ``bench/soak.py`` (two gateways,
turns stopped at random) the memory glibc handed out stayed at 13-15 MiB while the free memory
it kept grew from 3 to 12 MiB in five minutes, in 12-13 arenas: resident memory +19 %, with
Python's objects, SQLite's caches and the thread count flat. With two arenas the kept free memory
grew half as much (2 to 6 MiB).

So desk caps glibc at :data:`ARENA_MAX` arenas as its process starts (:func:`cap_arenas`, called
by :func:`desk.__main__.main` first thing for a subcommand, and just after the early first frame
for the app: before the gateway and its threads). Threads beyond the
cap share arenas (a lock per ``malloc``, uncontended at desk's rates). ``MALLOC_ARENA_MAX`` in
the environment, when set, is the person's choice and is left as it is. Elsewhere than glibc
(musl, macOS) nothing is done.

:func:`arena_count` counts the arenas glibc has made (``malloc_info``), for tests and benches.
"""

from __future__ import annotations

import ctypes
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

ARENA_MAX = 2
"""The most malloc arenas desk's process uses (the main one and one shared by the threads)."""

M_ARENA_MAX = -8
"""``mallopt``'s parameter for the most arenas (glibc's ``malloc.h``)."""


def _glibc() -> Any:
    try:
        libc = ctypes.CDLL(None)  # the symbols the process has loaded: libc's among them
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt.restype = ctypes.c_int
        libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.malloc_info.restype = ctypes.c_int
        libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
        libc.fdopen.restype = ctypes.c_void_p
        libc.fclose.argtypes = [ctypes.c_void_p]
        libc.fclose.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None  # not glibc
    return libc


def cap_arenas(env: Mapping[str, str], limit: int = ARENA_MAX) -> bool:
    """Cap glibc's malloc arenas at ``limit`` for this process (``mallopt(M_ARENA_MAX)``).

    Call before threads start: arenas made before stay. Children do not inherit it.

    Args:
        env: the process environment; a ``MALLOC_ARENA_MAX`` in it is left to glibc.
        limit: the most arenas, >= 1.

    Returns:
        True when the cap was set; False when the environment sets it or libc is not glibc.
    """
    if env.get("MALLOC_ARENA_MAX"):
        return False
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, limit))


def arena_count() -> int | None:
    """The malloc arenas glibc has made in this process, the main one included (None: not
    glibc). Reads ``malloc_info``'s XML (one ``<heap nr=...>`` per arena)."""
    import re
    import tempfile

    libc = _glibc()
    if libc is None:
        return None
    with tempfile.TemporaryFile() as out:
        fd = os.dup(out.fileno())
        stream = libc.fdopen(fd, b"w")
        if not stream:
            os.close(fd)
            return None
        try:
            libc.malloc_info(0, stream)
        finally:
            libc.fclose(stream)  # flushes, closes fd
        out.seek(0)
        return len(re.findall(rb"<heap nr=", out.read()))
