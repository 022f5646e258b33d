"""``desk gateway --stdio``: the gateway as newline-delimited JSON-RPC 2.0 on stdin/stdout.

Three threads, none of which ever waits for another one's slow peer:

- the *reader* reads stdin (raw ``os.read``, no buffered-file locks) and answers each request:
  quick methods inline, so a ``session.interrupt`` is acted on the moment its line arrives;
  blocking ones (``contract.Method.blocking``) on a thread of their own;
- the gateway's *delivery* thread (a :class:`contract.subscription.Subscription`) hands each
  event to the replay ring and to the :class:`~tui_gateway.wire.outbox.Outbox` (never blocks:
  deltas merge, then drop, when the client does not read);
- the *writer* writes the outbox to stdout; it alone may block on a full pipe.

Neither the reader nor the writer ends on what it did not expect: a request that fails is
answered with an internal error, an event that cannot be encoded is left out, each said in one
line on the log, and the next one goes on.

End of file on stdin (or a broken stdout) means the frontend went away:
``gateway.frontend_gone()`` (a system stop, ``api.disconnect``), then ``gateway.shutdown()``, a
bounded flush of what is queued, and :meth:`StdioServer.serve` returns 0. A ``gateway.shutdown``
request, SIGTERM or SIGINT shut down the same way, without the ``frontend_gone`` step.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import threading
from types import FrameType
from typing import Any

import contract as c
from agent.valid_text import valid_text
from contract.events import GatewayEvent
from contract.subscription import Subscription
from tui_gateway.gateway import Gateway
from tui_gateway.wire.codec import dumps, encode
from tui_gateway.wire.dispatch import Dispatcher, error_response, parse_line
from tui_gateway.wire.outbox import Outbox
from tui_gateway.wire.replay import ReplayRing

_log = logging.getLogger(__name__)

READ_CHUNK = 1 << 16
FLUSH_BOUND_S = 2.0
"""How long the exit waits for queued lines to be written, in seconds."""


class LineWriter:
    """Writes an outbox to a file descriptor on a thread of its own.

    Args:
        fd: where to write (a pipe, usually stdout's duplicate).
        outbox: what to write: gateway events become ``event`` notifications, strings are
            written as given (one JSON line each).
        on_broken: called once when the fd cannot be written any more (the reader is gone).
    """

    def __init__(
        self, fd: int, outbox: Outbox[str], on_broken: Any = None, name: str = "desk-stdio-writer"
    ) -> None:
        self._fd = fd
        self._outbox = outbox
        self._on_broken = on_broken
        self.broken = False
        self.written = 0
        """Lines written."""
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (items := self._outbox.wait_take()) is not None:
            chunks = []
            for item in items:
                try:
                    line = dumps(item.to_wire()) if isinstance(item, GatewayEvent) else item
                except Exception as exc:  # a bug in one event: said once, the rest go on
                    _log.error("desk: an event could not be sent: %s", _one_line(exc))
                    continue
                chunks.append(line)
            if self.broken or not chunks:
                continue
            data = valid_text("\n".join(chunks) + "\n").encode("utf-8")
            try:
                _write_all(self._fd, data)
                self.written += len(chunks)
            except OSError as exc:
                self.broken = True
                if exc.errno not in (errno.EPIPE, errno.EBADF):
                    _log.warning("cannot write to the frontend: %s", exc)
                if self._on_broken is not None:
                    self._on_broken()

    def close(self, timeout_s: float = FLUSH_BOUND_S) -> bool:
        """Write what is queued (bounded), then end the thread; True if it ended in time."""
        self._outbox.close()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


def _one_line(exc: BaseException) -> str:
    text = " ".join(valid_text(str(exc)).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class StdioServer:
    """Serves one gateway on a pair of file descriptors.

    Args:
        gateway: the in-process gateway (the server shuts it down before returning).
        in_fd: where requests arrive (stdin).
        out_fd: where responses and notifications go (stdout).
        ready: the ``gateway.ready`` notification's params, written first.
        replay_capacity: events kept per session for ``session.events.since``.
        max_queued_deltas: delta lines waiting for a slow client before new ones are dropped.
    """

    def __init__(
        self,
        gateway: Gateway,
        *,
        in_fd: int = 0,
        out_fd: int = 1,
        ready: c.Ready | None = None,
        replay_capacity: int = c.REPLAY_CAPACITY,
        max_queued_deltas: int = 256,
    ) -> None:
        self.gateway = gateway
        self.ring = ReplayRing(replay_capacity)
        self.dispatcher = Dispatcher(
            gateway, self.ring, on_shutdown=lambda: self.finish("shutdown")
        )
        self.outbox: Outbox[str] = Outbox(max_deltas=max_queued_deltas)
        self._in_fd = in_fd
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._why: str | None = None
        self._blocking: list[threading.Thread] = []
        self.writer = LineWriter(out_fd, self.outbox, on_broken=lambda: self.finish("gone"))
        if ready is not None:  # the first line, before any event
            note = {"jsonrpc": "2.0", "method": "gateway.ready", "params": encode(ready)}
            self.outbox.put(dumps(note))
        self._subscription: Subscription = gateway.subscribe(self._on_event)

    # -- lifecycle ---------------------------------------------------------------------------------

    def finish(self, why: str) -> None:
        """Ask :meth:`serve` to end: ``gone`` (frontend gone), ``shutdown`` (done) or ``signal``.

        The first reason wins. Safe from any thread and from a signal handler.
        """
        with self._lock:
            if self._why is None:
                self._why = why
        self._wake.set()

    def install_signals(self) -> None:
        """SIGTERM and SIGINT shut the gateway down (a system stop). Call from the main thread."""

        def on_signal(_sig: int, _frame: FrameType | None) -> None:
            self.finish("signal")

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    def serve(self) -> int:
        """Serve until the frontend goes away or the gateway is shut down; returns 0.

        Events are queued from construction on; requests are read from here on.
        """
        reader = threading.Thread(target=self._read_loop, name="desk-stdio-reader", daemon=True)
        reader.start()
        self._wake.wait()
        with self._lock:
            why = self._why
        if why == "gone":
            self.gateway.frontend_gone()
        self.gateway.shutdown()  # idempotent: a shutdown request may have run it already
        for thread in list(self._blocking):
            thread.join(FLUSH_BOUND_S)
        self.writer.close()
        return 0

    def _on_event(self, event: GatewayEvent) -> None:
        # On the gateway's delivery thread: O(1) work, never blocks.
        self.ring.add(event)
        self.outbox.put_event(event)

    # -- reading -----------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        pending = bytearray()
        discarding = False
        while True:
            try:
                chunk = os.read(self._in_fd, READ_CHUNK)
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                chunk = b""
            if not chunk:
                if pending.strip() and not discarding:
                    self._handle_line(bytes(pending))
                self.finish("gone")
                return
            pending += chunk
            while True:
                end = pending.find(b"\n")
                if end < 0:
                    break
                line = bytes(pending[:end])
                del pending[: end + 1]
                if discarding:
                    discarding = False
                    continue
                self._handle_line(line)
            if len(pending) > c.MAX_LINE_BYTES and not discarding:
                discarding = True
                pending.clear()
                message = f"invalid request: a line is longer than {c.MAX_LINE_BYTES:,} bytes"
                self.outbox.put(dumps(error_response(None, c.INVALID_REQUEST, message)))
            elif discarding:
                pending.clear()

    def _handle_line(self, line: bytes) -> None:
        try:
            self._answer_line(line)
        except Exception as exc:  # a bug in one request: answered, said, and the next is read
            _log.error("desk: a request failed: %s", _one_line(exc))
            message = f"internal error: {_one_line(exc)}"
            self.outbox.put(dumps(error_response(None, c.INTERNAL_ERROR, message)))

    def _answer_line(self, line: bytes) -> None:
        if not line.strip():
            return
        message, error = parse_line(line)
        if error is not None:
            self.outbox.put(dumps(error))
            return
        if self.dispatcher.is_blocking(message):
            thread = threading.Thread(
                target=self._answer, args=(message,), name="desk-stdio-call", daemon=True
            )
            self._blocking = [t for t in self._blocking if t.is_alive()] + [thread]
            thread.start()
        else:
            self._answer(message)

    def _answer(self, message: Any) -> None:
        try:
            response = self.dispatcher.handle(message)
            if response is not None:
                self.outbox.put(dumps(response))
        except Exception as exc:  # answered, said in one line; the wire goes on
            _log.error("desk: a request failed: %s", _one_line(exc))
            request_id = message.get("id") if isinstance(message, dict) else None
            error = error_response(
                request_id, c.INTERNAL_ERROR, f"internal error: {_one_line(exc)}"
            )
            self.outbox.put(dumps(error))
