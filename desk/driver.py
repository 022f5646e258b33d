"""A Linux terminal driver whose Esc key arrives after the escape delay, not 100 ms later.

Textual's :class:`~textual.drivers.linux_driver.LinuxDriver` reads the terminal on an input
thread that waits in ``select()`` for up to 0.1 s. A lone ESC byte may be the start of an escape
sequence, so the parser holds it until ``constants.ESCAPE_DELAY`` has passed, but it only checks
that timeout (``parser.tick()``) when ``select()`` wakes up: with nothing else typed, Esc reaches
the app up to 100 ms after the delay expired. :class:`FastEscapeDriver` is the same input loop
with one change: while the parser holds a pending ESC, ``select()`` waits no longer than until
the parser's own deadline (``Parser._timeout_time``), so Esc is delivered about
``ESCAPE_DELAY`` after the key press (10 ms by default in desk, see :mod:`desk.config`).

An ESC that ends a read, with nothing more readable at once, is the Esc key at once (and one
followed in the same read by a character that starts no sequence is the Esc key then that
character: :mod:`desk.escape_split`, which also keeps a bracketed paste's ESCs in the paste),
without the escape delay (while the delay is at most :data:`LONE_ESCAPE_MAX_DELAY_S`): a
terminal writes an escape sequence in one piece, so a read that holds only ESC is the key.
crossterm (used by Codex and most Rust terminal apps) reads it the same way (``parse_event``
in ``src/event/sys/unix/parse.rs``: a lone ESC is Esc unless more input is available). A person
on a link that splits sequences raises ``escdelay``, which turns this off.

Second, a stop key does not queue behind the UI. While a reply streams, the app's message loop
is busy re-rendering Markdown, and a key posted to it waited there 10-35 ms more (measured at
200 tokens/s), seconds behind a fast stream. So the input thread offers the stop keys
(:attr:`TerminalHooks.input_stop_keys`) first to the app's
:meth:`~TerminalHooks.stop_from_input_thread`, with the moment the key's bytes were read
(``time.monotonic()``): the app sends the stop to the gateway right there (thread-safe, it
only schedules a cancel) and consumes the key when a turn was stopped; otherwise the key goes
to the app as usual (bindings, modals).

Ctrl+Q likewise starts the quit on the input thread (:class:`QuitHook`): the gateway's shutdown
begins when the key is read, not when the busy UI gets to it; the key then reaches the app as
usual, which shows what the quit waits for.

Third, a quit whose shutdown has saved everything need not wait for the UI thread (on a busy
machine seconds behind a fast stream) to unmount the app: :meth:`FastEscapeDriver.leave_terminal`
gives the terminal back from the quit's own thread, after the frames already queued, and drops
every frame the UI makes after it; the process then ends (:mod:`desk.__main__`).

Fourth, a terminal that goes away (window closed, ssh dropped) ends desk through its normal
quit path instead of hanging it. Reading a hung-up terminal gives end-of-file (or EIO), which
made Textual's input thread spin (or panic the app); here the input thread tells the app
(:meth:`TerminalHooks.terminal_closed`) and stops reading. Writing to it fails too, which killed
Textual's output thread and left the next write blocked for ever on its full queue (seen:
``desk`` processes still alive 30 minutes after their tmux session was killed); here the output
file drops writes once the terminal is gone (:class:`HangupSafeOutput`).

Fifth, a bracketed paste whose end marker never comes (a terminal that cut it, a stray
``ESC[200~``) ends by itself once no byte has arrived for :data:`PASTE_IDLE_S`: what was pasted
goes into the box, and the keys after it are keys again (Esc stops, Ctrl+Q quits). Before, every
later key was pasted text, and an Esc crashed the app. A terminal writes a paste in one burst,
so a long paste (185 KB through a pty) stays one paste; a link that stalls longer than that in
mid-paste splits it in two. The parser is :class:`desk.key_parser.DeskParser`, which ignores an
escape sequence it does not know rather than typing a character made of it.

The loop below follows ``LinuxDriver.run_input_thread`` of Textual 8.2.8 (pinned); only the
``select()`` timeout, the lone ESC, the read times, the paste that never ends, the parser and the
handling of a hung-up terminal differ.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import termios
import threading
import time
from codecs import getincrementaldecoder
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Protocol, runtime_checkable

from textual import constants, events
from textual._loop import loop_last
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from agent.stamps import stamp
from desk import typed_ahead
from desk.approval_keys import chord_keys
from desk.escape_split import EscapeSplitter, Piece
from desk.key_parser import DeskParser

if TYPE_CHECKING:
    from textual.app import App

IDLE_WAIT_S = 0.1
"""Longest ``select()`` wait, in seconds, when no escape sequence is pending (as Textual)."""

LONE_ESCAPE_MAX_DELAY_S = 0.010
"""A read holding only ESC is the Esc key at once while the escape delay is at most this (s)."""

PASTE_IDLE_S = 0.5
"""A bracketed paste whose end marker has not come ends once no byte arrived for this long (s)."""

ESC = "\x1b"


def input_wait_s(timeout_time: float | None, now: float, idle_wait_s: float = IDLE_WAIT_S) -> float:
    """How long the input thread may block in ``select()``.

    Args:
        timeout_time: the parser's pending escape deadline (``get_time()`` seconds), or None
            when no escape sequence is pending.
        now: the current ``get_time()`` seconds.
        idle_wait_s: the wait when nothing is pending, in seconds.

    Returns:
        Seconds to wait: ``idle_wait_s`` when nothing is pending, else the time left until the
        deadline (0 when it has passed), never more than ``idle_wait_s``.
    """
    if timeout_time is None:
        return idle_wait_s
    return min(idle_wait_s, max(0.0, timeout_time - now))


def paste_wait_s(last_read: float, now: float, idle_s: float = PASTE_IDLE_S) -> float:
    """How long an open paste may still wait for its next byte before it ends by itself.

    Args:
        last_read: ``time.monotonic()`` of the last read that gave bytes.
        now: ``time.monotonic()`` now.
        idle_s: the pause that ends a paste, in seconds.

    Returns:
        Seconds left (0 when the pause is over).
    """
    return max(0.0, last_read + idle_s - now)


@runtime_checkable
class TerminalHooks(Protocol):
    """What an app offers the driver's input thread (called off the UI thread)."""

    @property
    def input_stop_keys(self) -> frozenset[str]:
        """The keys offered to :meth:`stop_from_input_thread` (read on the input thread)."""
        ...

    def stop_from_input_thread(
        self, key: str, read_at: float | None = None, key_time: float | None = None
    ) -> bool:
        """Stop the running turn for ``key`` (one of :attr:`input_stop_keys`).

        Args:
            key: the key.
            read_at: ``time.monotonic()`` when its bytes were read (None: now).
            key_time: the key event's own time (``Message.time``), or None.

        Returns:
            True when the key was taken as a stop (it is then consumed), else False.
        """
        ...

    def terminal_closed(self) -> None:
        """The terminal hung up: no more input will come, and output goes nowhere."""
        ...


QUIT_KEY = "ctrl+q"
"""The key that quits (Textual's priority binding): its shutdown starts on the input thread."""


@runtime_checkable
class QuitHook(Protocol):
    """What an app offers the input thread for Ctrl+Q (called off the UI thread)."""

    def quit_from_input_thread(self, keys_posted: int = 0) -> None:
        """Start the quit now: stop every turn as the system (the key still reaches the app);
        ``keys_posted``: how many keys this thread had posted to the app before it (those the
        app has not seen yet are sent first)."""
        ...


POPUP_KEY = "ctrl+p"
"""The key that opens the command palette, where Esc closes the palette and stops nothing."""


@runtime_checkable
class PopupHook(Protocol):
    """What an app offers the input thread for the key that opens the command palette."""

    def popup_key_from_input_thread(self, keys_posted: int = 0) -> None:
        """The palette's key was read, after ``keys_posted`` keys posted to the app: an Esc
        read before the app has seen it is the palette's, not a stop."""
        ...


def key_taken(
    hooks: TerminalHooks | None,
    stop_keys: frozenset[str],
    message: Message,
    read_at: float,
    keys_posted: int = 0,
) -> bool:
    """Offer a key the input thread parsed to the app's hooks before the UI queue.

    A stop key the app took as a stop is consumed; Ctrl+Q starts the quit here and goes on.

    Args:
        hooks: the app's hooks, or None (then nothing is taken).
        stop_keys: the keys offered to :meth:`TerminalHooks.stop_from_input_thread`.
        message: what the parser made of the input.
        read_at: ``time.monotonic()`` when the key's bytes were read.
        keys_posted: how many keys were posted to the app before this one, for Ctrl+Q.

    Returns:
        True when the key was consumed (not to be posted to the app).
    """
    if hooks is None or not isinstance(message, events.Key):
        return False
    if message.key in stop_keys and hooks.stop_from_input_thread(
        message.key, read_at, message.time
    ):
        return True
    if message.key == QUIT_KEY and isinstance(hooks, QuitHook):
        hooks.quit_from_input_thread(keys_posted)  # the key goes on: the app shows the quit
    elif message.key == POPUP_KEY and isinstance(hooks, PopupHook):
        hooks.popup_key_from_input_thread(keys_posted)  # and goes on: the app opens it
    return False


def feed_keys(
    text: str,
    parser: XTermParser,
    splitter: EscapeSplitter,
    process: Callable[[Message], None],
) -> None:
    """Parse ``text`` read from the terminal, delivering an Esc the splitter found at once.

    Args:
        text: decoded input.
        parser: the input thread's parser.
        splitter: the input thread's :class:`~desk.escape_split.EscapeSplitter`.
        process: takes each event the parser makes.
    """
    feed_pieces(splitter.split(text), parser, process)


def feed_pieces(
    pieces: list[Piece], parser: XTermParser, process: Callable[[Message], None]
) -> None:
    """Feed the splitter's ``pieces`` to ``parser``, delivering an Esc a piece ends with at once.

    Args:
        pieces: from :meth:`EscapeSplitter.split` or :meth:`EscapeSplitter.end_paste`.
        parser: the input thread's parser.
        process: takes each event the parser makes.
    """
    for piece in pieces:
        if piece.text:  # the parser reads "" as the end of its input, then raises
            for event in parser.feed(piece.text):
                process(event)
        if piece.escape_key and parser._timeout_time is not None:
            parser._timeout_time = get_time()  # an Esc, then more keys
            for event in parser.tick():
                process(event)


def lone_escape_pending(text: str, parser: XTermParser, splitter: EscapeSplitter) -> bool:
    """True when ``text`` ended on an ESC the parser holds (outside a paste): with nothing more
    readable at once, it is the Esc key (see the module docstring)."""
    return (
        text.endswith(ESC)
        and not splitter.in_paste
        and parser._timeout_time is not None
        and constants.ESCAPE_DELAY <= LONE_ESCAPE_MAX_DELAY_S
    )


class HangupSafeOutput:
    """The terminal's output file, made safe to write after the terminal hung up.

    The first write or flush that fails (EIO, EPIPE) marks it ``broken``; from then on writes are
    dropped, so Textual's output thread keeps draining its queue instead of dying.

    Args:
        file: the real output file (``sys.__stderr__``, as Textual uses).
    """

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self.broken = False
        """True once a write or flush failed."""

    def write(self, text: str) -> int:
        """Write ``text``, or drop it once broken; returns ``len(text)`` either way."""
        if not self.broken:
            try:
                self._file.write(text)
            except OSError:
                self.broken = True
        return len(text)

    def flush(self) -> None:
        """Flush, unless broken."""
        if not self.broken:
            try:
                self._file.flush()
            except OSError:
                self.broken = True

    def fileno(self) -> int:
        """The real file's descriptor."""
        return self._file.fileno()

    def isatty(self) -> bool:
        """Whether the real file is a terminal."""
        return self._file.isatty()


class FastEscapeDriver(LinuxDriver):
    """:class:`LinuxDriver` with a prompt Esc, stop keys off the UI queue, and hang-up safety.

    Args:
        app: the app.
        debug: Textual's debug flag.
        mouse: enable mouse support.
        size: initial terminal size, or None to detect it.
    """

    def __init__(
        self,
        app: App[object],
        *,
        debug: bool = False,
        mouse: bool = True,
        size: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        if self._file is not None:
            self._file = HangupSafeOutput(self._file)  # type: ignore[assignment]
        self._read_at = 0.0  # time.monotonic() of the last read that gave bytes
        self._gate = threading.RLock()  # orders frames and leave_terminal's last writes
        self._left = False  # leave_terminal ran: frames are dropped
        hooks = app if isinstance(app, TerminalHooks) else None
        self._hooks = hooks
        self._posted = 0  # keys posted to the app
        self._stop_keys = hooks.input_stop_keys if hooks is not None else frozenset[str]()

    def write(self, data: str) -> None:
        """Queue ``data`` for the terminal, or drop it once :meth:`leave_terminal` ran."""
        with self._gate:
            if not self._left:
                super().write(data)
                stamp("frame.queued")

    def leave_terminal(self) -> None:
        """Give the terminal back now, from any thread: the frames queued so far go out, then
        the sequences that end the app's modes (mouse, paste, alternate screen, hidden cursor),
        then the terminal's settings from before; every later write is dropped. Returns once
        all of it is written (idempotent). The process is expected to end right after."""
        with self._gate:
            if self._left or self._writer_thread is None:
                return
            self._disable_mouse_support()
            self._disable_bracketed_paste()
            self._enable_line_wrap()
            self._disable_in_band_window_resize()
            self.write("\x1b[<u\x1b[?1049l\x1b[?25h\x1b[?1004l")
            self._left = True
            writer = self._writer_thread
        if writer.is_alive():  # not one being made by a resume from a suspend (the editor)
            writer.stop()  # drains its queue, then ends
        if self.attrs_before is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self.fileno, termios.TCSANOW, self.attrs_before)
        stamp("quit.terminal_given_back")

    def process_message(self, message: Message) -> None:
        """Offer stop keys to the app on this (input) thread, start a quit on Ctrl+Q here too,
        then post the rest as usual."""
        if not key_taken(self._hooks, self._stop_keys, message, self._read_at, self._posted):
            if isinstance(message, events.Key):
                self._posted += 1
            super().process_message(message)

    def _terminal_closed(self) -> None:
        if self._hooks is not None:
            self._hooks.terminal_closed()

    def run_input_thread(self) -> None:
        """Wait for input and dispatch events (see the module docstring for the change)."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)

        fileno = self.fileno
        event_read = selectors.EVENT_READ

        parser = DeskParser(self._debug)
        feed = parser.feed
        tick = parser.tick

        # A byte that is not UTF-8 (a terminal in another encoding, line noise) is U+FFFD.
        decode = getincrementaldecoder("utf-8")(errors="replace").decode
        splitter = EscapeSplitter(chord_keys(self._stop_keys))  # none while Esc stops
        read = os.read
        monotonic = time.monotonic

        early = typed_ahead.take()  # typed before the first frame took the terminal
        if early:
            feed_keys(decode(early), parser, splitter, self.process_message)

        def process_selector_events(
            selector_events: list[tuple[selectors.SelectorKey, int]],
            final: bool = False,
        ) -> None:
            for last, (_selector_key, mask) in loop_last(selector_events):
                if mask & event_read:
                    data = read(fileno, 1024 * 4)
                    self._read_at = monotonic()
                    if not data:
                        if self.input_tty and not final:
                            raise EOFError  # a terminal at end of file has hung up
                        break  # stdin is a pipe that closed
                    unicode_data = decode(data, final=final and last)
                    feed_keys(unicode_data, parser, splitter, self.process_message)
                    if lone_escape_pending(unicode_data, parser, splitter) and not selector.select(
                        0
                    ):
                        parser._timeout_time = get_time()  # tick() below delivers it
            for event in tick():
                self.process_message(event)

        try:
            try:
                self._read_at = monotonic()
                while not self.exit_event.is_set():
                    wait = input_wait_s(parser._timeout_time, get_time())
                    if splitter.in_paste:
                        wait = min(wait, paste_wait_s(self._read_at, monotonic()))
                    ready = selector.select(wait)
                    process_selector_events(ready)
                    if (
                        not ready
                        and splitter.in_paste
                        and not paste_wait_s(self._read_at, monotonic())
                    ):
                        feed_pieces(splitter.end_paste(), parser, self.process_message)
                selector.unregister(self.fileno)
                process_selector_events(selector.select(IDLE_WAIT_S), final=True)
            except (OSError, EOFError):  # the terminal hung up: quit through the app
                self._terminal_closed()
                self.exit_event.wait()
        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, ParseError):
                pass
