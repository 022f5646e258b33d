"""The desk in a browser (``desk web``, or any ``textual-serve``): Textual's web driver with
desk's prompt Esc, and a closed tab booked as the system's stop (``web.disconnect``).

``textual-serve`` runs one desk process per browser connection and speaks to it over pipes:
what the browser types comes on stdin in packets (``D`` for keys, ``M`` for meta: resize,
focus, ``quit``), the screen goes out on stdout. It starts the process with
``TEXTUAL_DRIVER=textual.drivers.web_driver:WebDriver``; desk's app then picks
:class:`DeskWebDriver` (:meth:`desk.app.DeskApp.get_driver_class`).

How the desk learns the browser went away (read in textual-serve 1.1 and Textual 8.2.8): when
the tab closes or the connection drops, the server's WebSocket handler ends and sends the
process the meta packet ``{"type": "quit"}``, which Textual's driver turns into an ``ExitApp``
(a quit booked ``gateway.shutdown``); when the server itself is gone (killed), stdin ends and
Textual's input thread just stops, leaving the app running with nobody to see it, and the next
write to the closed stdout raises. Here all three (the ``quit`` packet, the end of stdin, a
write that fails) call the app's :meth:`BrowserHooks.browser_gone` once, on the input thread:
the running turns are stopped as ``interrupted_by_system(web.disconnect)``, the gateway waits
for their workers (bounded), everything is saved, and the process exits; the session can be
resumed later like any other.

Keys take the terminal's path (:mod:`desk.driver`): a packet that ends on ESC with nothing more
to read is the Esc key at once (xterm.js sends a key press as one message), not after Textual's
0.1 s input wait, and the stop keys go to the app on the input thread, before the UI queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import signal
import sys
import threading
import time
from codecs import getincrementaldecoder
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from textual import constants, messages
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers._byte_stream import ByteStream
from textual.drivers.web_driver import WebDriver, _ExitInput
from textual.message import Message

from desk.approval_keys import chord_keys
from desk.driver import (
    IDLE_WAIT_S,
    TerminalHooks,
    feed_keys,
    input_wait_s,
    key_taken,
    lone_escape_pending,
)
from desk.escape_split import EscapeSplitter

if TYPE_CHECKING:
    from textual.app import App

TEXTUAL_WEB_DRIVER = "textual.drivers.web_driver:WebDriver"
"""The driver ``textual-serve`` asks for (``TEXTUAL_DRIVER``): desk answers with its own."""

READ_BYTES = 64 * 1024
"""Most bytes read from stdin at once."""


def served_to_browser() -> bool:
    """True when this process runs under ``textual-serve`` (it asked for the web driver)."""
    return constants.DRIVER == TEXTUAL_WEB_DRIVER


def _ignore() -> None:
    """A signal handler that does nothing."""


@runtime_checkable
class BrowserHooks(Protocol):
    """What the app offers the web driver (called off the UI thread)."""

    def browser_gone(self) -> None:
        """The browser went away (tab closed, connection lost, server gone): a system stop
        booked ``web.disconnect``, then quit. Called once. Thread-safe."""
        ...


class DeskWebDriver(WebDriver):
    """:class:`~textual.drivers.web_driver.WebDriver` with a prompt Esc, stop keys off the UI
    queue, and the browser's going away handed to the app (see the module docstring).

    Args:
        app: the app.
        debug: Textual's debug flag.
        mouse: enable mouse support.
        size: initial size, or None to read ``COLUMNS`` and ``ROWS``.
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
        self._write = self._write_out  # type: ignore[assignment]
        self._out_broken = False
        self._gone_lock = threading.Lock()
        self._gone = False
        self._read_at = 0.0  # time.monotonic() of the last read that gave bytes
        self._terminal_hooks = app if isinstance(app, TerminalHooks) else None
        self._browser_hooks = app if isinstance(app, BrowserHooks) else None
        hooks = self._terminal_hooks
        self._stop_keys = hooks.input_stop_keys if hooks is not None else frozenset[str]()

    def start_application_mode(self) -> None:
        """Textual's start, then SIGINT ignored: a Ctrl+C in the terminal that runs the server
        reaches every desk of its process group, and it is the server that ends them (it closes
        each connection: ``web.disconnect``). SIGTERM and SIGHUP stay desk's quit."""
        super().start_application_mode()
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, _ignore)

    def _write_out(self, data: bytes) -> int:
        """Write to stdout; once that failed (the server is gone) drop everything."""
        if self._out_broken:
            return len(data)
        try:
            return os.write(self.fileno, data)
        except OSError:
            self._out_broken = True
            self._browser_gone()
            return len(data)

    def _browser_gone(self) -> None:
        with self._gone_lock:
            if self._gone:
                return
            self._gone = True
        if self._browser_hooks is not None:
            self._browser_hooks.browser_gone()
        else:  # not desk's app: Textual's own behaviour
            self._app.post_message(messages.ExitApp())

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        """``quit`` (the browser's connection ended) is the browser gone; the rest as Textual."""
        if packet_type == "quit":
            self._browser_gone()
            return
        super().on_meta(packet_type, payload)

    def _meta(self, packet_type: str, payload: bytes) -> None:
        try:
            self._on_meta(packet_type, payload)
        except ValueError as exc:  # not JSON: say so, read on
            print(f"desk: a meta packet was not understood: {exc}", file=sys.stderr, flush=True)

    def process_message(self, message: Message) -> None:
        """Offer stop keys to the app on this (input) thread, then post the rest as usual."""
        if not key_taken(self._terminal_hooks, self._stop_keys, message, self._read_at):
            super().process_message(message)

    def run_input_thread(self) -> None:
        """Read stdin's packets and dispatch keys and meta (see the module docstring)."""
        stdin = sys.__stdin__
        assert stdin is not None
        fileno = stdin.fileno()
        selector = selectors.SelectSelector()
        selector.register(fileno, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")(errors="replace").decode
        splitter = EscapeSplitter(chord_keys(self._stop_keys))  # none while Esc stops
        packets = ByteStream()
        try:
            while not self.exit_event.is_set():
                wait = input_wait_s(parser._timeout_time, get_time(), IDLE_WAIT_S)
                if selector.select(wait):
                    data = os.read(fileno, READ_BYTES)
                    self._read_at = time.monotonic()
                    if not data:
                        raise EOFError  # the server is gone
                    lone_escape = False
                    for packet_type, payload in packets.feed(data):
                        if packet_type == "D":
                            text = decode(payload)
                            feed_keys(text, parser, splitter, self.process_message)
                            lone_escape = lone_escape_pending(text, parser, splitter)
                        else:
                            self._meta(packet_type, payload)
                    if lone_escape and not selector.select(0):
                        parser._timeout_time = get_time()  # tick() below delivers it
                for event in parser.tick():
                    self.process_message(event)
        except _ExitInput:
            pass
        except (OSError, EOFError):
            self._browser_gone()
        finally:
            selector.close()
