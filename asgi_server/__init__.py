"""Serve an ASGI app with uvicorn: on a daemon thread, or on this thread until SIGINT/SIGTERM.

:class:`AsgiServer` binds the socket itself (so a port of ``0`` is known at once and a busy
address is an ``OSError`` in the caller's thread), runs uvicorn with a main loop that sleeps on
an event instead of polling ``should_exit`` every 0.1 s, and shuts down without uvicorn's fixed
sleeps, so :meth:`AsgiServer.stop` acts at once. The demo model server and ``desk serve`` both
run on it; it imports nothing of the project, so any layer may use it.

Exit order, whatever asked for it (:meth:`AsgiServer.stop`, or a signal when serving in front):
``on_exit`` runs on the loop (it must not block), the main loop ends, ``before_close`` runs on a
worker thread (it may block, e.g. to end every open stream cleanly), then the server stops
accepting, closes idle connections, waits (bounded) for the running requests and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import uvicorn

FORCE_EXIT_S = 1.0
"""How long :meth:`AsgiServer.stop` waits after forcing the exit, in seconds."""


class _Server(uvicorn.Server):
    """uvicorn's server with hooks, an exit that needs no polling, and quiet signals.

    uvicorn's own main loop checks ``should_exit`` every 0.1 s; this one sleeps on an event
    (waking once a second to refresh the Date header), so :meth:`request_exit` acts at once.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        on_started: Callable[[], None],
        before_close: Callable[[], None] | None,
    ) -> None:
        super().__init__(config)
        self._on_started = on_started
        self._before_close = before_close
        self._exit_event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._exit_event = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets=sockets)
        if self.started:
            self._on_started()

    async def main_loop(self) -> None:
        exit_event = self._exit_event
        assert exit_event is not None
        # A counter that is always a multiple of 10 makes on_tick refresh the Date header.
        while not await self.on_tick(0):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(exit_event.wait(), timeout=1.0)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Like uvicorn's shutdown, after ``before_close``, minus its fixed sleeps and polling.

        Stops accepting, closes idle connections, asks busy ones to close after their
        response, then waits (bounded by ``timeout_graceful_shutdown``) for the request tasks
        themselves, cancelling any that overrun.
        """
        if self._before_close is not None:
            await asyncio.to_thread(self._before_close)
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        tasks = set(self.server_state.tasks)
        if tasks and not self.force_exit:
            _, late = await asyncio.wait(tasks, timeout=self.config.timeout_graceful_shutdown)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=1.0)
        await asyncio.sleep(0)  # let closed transports report connection_lost
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()

    def request_exit(self) -> None:
        """Ask the server to shut down (call on its loop's thread)."""
        self.should_exit = True
        if self._exit_event is not None:
            self._exit_event.set()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        loop, exit_event = self._loop, self._exit_event
        if loop is not None and exit_event is not None:  # a signal handler: wake the loop
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(exit_event.set)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn re-raises a caught signal after serving; the caller exits with its own status.
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_signal(sig: int, frame: FrameType | None) -> None:
            self.handle_exit(sig, frame)

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


class AsgiServer:
    """One ASGI app behind uvicorn (HTTP/1.1, no WebSocket, no lifespan), on a thread or in front.

    Args:
        app: the ASGI application.
        host: address to bind (keep loopback unless told otherwise; an IPv6 address works).
        port: TCP port; ``0`` picks a free one (read :attr:`port` after :meth:`bind`).
        name: the serving thread is called ``NAME-PORT``.
        log_level: uvicorn's log level (``"warning"``: only problems are logged).
        graceful_s: at shutdown, how long running requests may take to finish, in seconds.
        on_started: called on the serving loop once it accepts connections, with that loop.
        on_exit: called on the serving loop when :meth:`stop` asks for the exit (must not
            block).
        before_close: called on a worker thread after the main loop ends and before any
            connection is closed (may block).
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        name: str = "asgi",
        log_level: str = "warning",
        graceful_s: int = 3,
        on_started: Callable[[asyncio.AbstractEventLoop], None] | None = None,
        on_exit: Callable[[], None] | None = None,
        before_close: Callable[[], None] | None = None,
    ) -> None:
        self.app = app
        self.host = host
        self.name = name
        self._requested_port = port
        self._log_level = log_level
        self._graceful_s = graceful_s
        self._on_started = on_started
        self._on_exit = on_exit
        self._before_close = before_close
        self._sock: socket.socket | None = None
        self._port: int | None = None
        self._server: _Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    # -- addresses -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound TCP port.

        Raises:
            RuntimeError: the socket is not bound yet.
        """
        if self._port is None:
            raise RuntimeError(f"the {self.name} server is not started")
        return self._port

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT`` (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def started(self) -> bool:
        """Whether uvicorn started serving (it stays true after the exit)."""
        return self._server is not None and self._server.started

    @property
    def running(self) -> bool:
        """Whether the serving thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    # -- serving ---------------------------------------------------------------------------------

    def bind(self) -> int:
        """Bind the listening socket (once); returns the port.

        Raises:
            OSError: the address cannot be bound.
            RuntimeError: bound already.
        """
        if self._sock is not None or self._server is not None:
            raise RuntimeError(f"the {self.name} server can be started only once")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.create_server((self.host, self._requested_port), family=family)
        self._port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self._port,
            http="h11",
            ws="none",
            lifespan="off",
            log_config=None,
            log_level=self._log_level,
            access_log=False,
            timeout_graceful_shutdown=self._graceful_s,
        )
        self._sock = sock
        self._server = _Server(config, self._served, self._before_close)
        return self._port

    def _served(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        if self._on_started is not None:
            self._on_started(loop)
        self._started.set()

    def _serve(self) -> None:
        server, sock = self._server, self._sock
        assert server is not None and sock is not None
        try:
            asyncio.run(server.serve(sockets=[sock]))
        finally:
            sock.close()
            self._started.set()

    def start(self, timeout_s: float = 10.0) -> None:
        """Bind (unless :meth:`bind` did), serve on a daemon thread, return once listening.

        Raises:
            OSError: the address cannot be bound.
            RuntimeError: started already, or uvicorn failed to start.
            TimeoutError: uvicorn did not start within ``timeout_s`` seconds.
        """
        if self._sock is None:
            self.bind()
        if self._thread is not None:
            raise RuntimeError(f"the {self.name} server can be started only once")

        def serve() -> None:
            try:
                self._serve()
            except BaseException as exc:  # noqa: BLE001 - reported to start() or kept for stop()
                self._error = exc

        self._thread = threading.Thread(target=serve, name=f"{self.name}-{self.port}", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s):
            self.stop()
            raise TimeoutError(f"the {self.name} server did not start within {timeout_s} s")
        if self._error is not None or not self.started:
            raise RuntimeError(f"the {self.name} server failed to start") from self._error

    def serve_in_front(self) -> bool:
        """Bind (unless :meth:`bind` did) and serve on this thread until SIGINT, SIGTERM (on the
        main thread) or :meth:`stop`; the signals are caught, not re-raised.

        Returns:
            whether uvicorn started serving.

        Raises:
            OSError: the address cannot be bound.
        """
        if self._sock is None:
            self.bind()
        self._serve()
        return self.started

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Ask for the exit (see the module docstring) and wait, bounded, for the thread.

        Safe to call twice, before a start or after the exit. A thread still alive after
        ``timeout_s`` seconds is forced to exit (its running requests are abandoned) and
        waited for up to :data:`FORCE_EXIT_S` more.

        Returns:
            False when the serving thread is still alive after that.
        """
        server, loop, thread = self._server, self._loop, self._thread
        if server is not None and loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
                loop.call_soon_threadsafe(self._begin_exit, server)
        if thread is None:
            return True
        thread.join(timeout_s)
        if thread.is_alive() and server is not None:
            server.force_exit = True
            thread.join(FORCE_EXIT_S)
        return not thread.is_alive()

    def _begin_exit(self, server: _Server) -> None:
        if self._on_exit is not None:
            self._on_exit()
        server.request_exit()
