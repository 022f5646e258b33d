"""Code-block lexers made ready off the UI thread.

Pygments compiles a lexer's regular expressions the first time the lexer is made: 80-300 ms for
Python on a 2-core machine (JavaScript 120, Rust 70), once per language and process. That
happened on the UI thread, in the frame that first drew a code block of the language: the screen
and every key typed meanwhile waited for it, mid-stream.

Here the first use of a language hands the work to a short-lived thread and the block is drawn
plain meanwhile; once the lexer is ready, whoever listens (:func:`on_ready`, the app) draws the
blocks of that language again, in colour. A lexer that is ready is returned at once. The thread
ends as soon as nothing is left to make; :func:`join` waits for it (the app's end).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Pygments loads with the first code block, not before desk's first frame
    from pygments.lexer import Lexer

log = logging.getLogger(__name__)

PLAIN = "text"
"""The language a block is drawn in until its own lexer is ready (and when it has none)."""

Make = Callable[[str], "Lexer"]
"""Makes the lexer of a language name (the slow part: Pygments compiles it)."""


def make_lexer(name: str) -> Lexer:
    """The Pygments lexer for a fence's language (the plain-text one when unknown)."""
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=True, tabsize=4)
    except ClassNotFound:
        return get_lexer_by_name(PLAIN, stripnl=False, ensurenl=True, tabsize=4)


class Lexers:
    """Lexers by language name, made on a thread of their own the first time one is asked for.

    Args:
        make: makes one lexer (:func:`make_lexer`; tests hold it on an event).
    """

    def __init__(self, make: Make = make_lexer) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._ready: dict[str, Lexer] = {}
        self._wanted: list[str] = []  # names asked for, not made yet, in order
        self._thread: threading.Thread | None = None
        self._listeners: list[Callable[[str], object]] = []
        self._plain: Lexer | None = None

    @property
    def plain(self) -> Lexer:
        """The lexer a block is drawn with until its own is ready (made on first use: it
        compiles nothing)."""
        if self._plain is None:
            self._plain = make_lexer(PLAIN)
        return self._plain

    def get(self, name: str) -> Lexer:
        """The lexer of ``name`` if it is ready, else :attr:`plain` (and it is made soon, off
        this thread; :func:`on_ready` listeners hear when). Never blocks for long."""
        with self._lock:
            lexer = self._ready.get(name)
            if lexer is not None:
                return lexer
            if name not in self._wanted:
                self._wanted.append(name)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="desk-lexers", daemon=True)
                self._thread.start()
        return self.plain

    def on_ready(self, listener: Callable[[str], object]) -> Callable[[], None]:
        """Call ``listener(name)`` (on the making thread) each time a lexer becomes ready.

        Returns:
            a function that removes the listener.
        """
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def join(self, timeout_s: float) -> bool:
        """Wait at most ``timeout_s`` seconds for the making thread to end; True if none runs."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)
            return not thread.is_alive()
        return True

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._wanted:
                    self._thread = None
                    return
                name = self._wanted[0]
            try:
                lexer = self._make(name)
            except Exception as error:  # a lexer that fails to build: drawn plain for good
                log.warning(
                    "the %r lexer could not be made (%s); its code stays plain", name, error
                )
                lexer = self.plain
            with self._lock:
                self._ready[name] = lexer
                self._wanted.remove(name)
                listeners = list(self._listeners)
            for listener in listeners:
                try:
                    listener(name)
                except Exception as error:
                    log.warning("a lexer listener failed: %s", error)


def fences(markdown: str, name: str) -> bool:
    """True if ``markdown`` opens a code block in language ``name`` (a fence line: three or
    more backticks or tildes, then the name)."""
    pattern = rf"^ {{0,3}}(`{{3,}}|~{{3,}})[ \t]*{re.escape(name)}\b"
    return re.search(pattern, markdown, re.MULTILINE) is not None


@functools.cache
def lexers() -> Lexers:
    """The process's lexers (one set: Pygments keeps what it compiled per class anyway)."""
    return Lexers()
