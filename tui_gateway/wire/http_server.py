"""Serving :class:`~tui_gateway.wire.http_api.DeskApi` with uvicorn, in front or on a thread.

Exit order, whatever asked for it (SIGINT, SIGTERM, :meth:`HttpServer.stop`): the gateway shuts
down first (a system stop, ``gateway.shutdown``: every running turn ends with its
``message.complete``, so every open stream ends cleanly), then uvicorn stops accepting, closes
the connections and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import uvicorn

from tui_gateway.gateway import Gateway
from tui_gateway.wire import contract as c
from tui_gateway.wire.http_api import DeskApi


class _Server(uvicorn.Server):
    """uvicorn's server with a start callback, the gateway's shutdown first, and quiet signals."""

    def __init__(
        self,
        config: uvicorn.Config,
        on_started: Callable[[], None],
        before_shutdown: Callable[[], None],
    ) -> None:
        super().__init__(config)
        self._on_started = on_started
        self._before_shutdown = before_shutdown

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self._on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await asyncio.to_thread(self._before_shutdown)
        await super().shutdown(sockets=sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn re-raises a caught signal after serving; desk exits with its own status.
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


class HttpServer:
    """``desk serve``: one gateway behind HTTP.

    Args:
        gateway: the gateway (shut down when the server stops).
        token: the bearer token.
        host: address to bind (127.0.0.1 unless told otherwise).
        port: TCP port; 0 picks a free one (read :attr:`port` after starting).
        max_body_bytes: largest request body, in bytes.
        log_level: uvicorn's log level.
    """

    def __init__(
        self,
        gateway: Gateway,
        token: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_body_bytes: int = c.MAX_HTTP_BODY_BYTES,
        log_level: str = "warning",
    ) -> None:
        self.gateway = gateway
        self.api = DeskApi(gateway, token, max_body_bytes=max_body_bytes)
        self.host = host
        self._requested_port = port
        self._log_level = log_level
        self.port = 0
        self._started = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: _Server | None = None
        self._closed = threading.Lock()
        self._closed_done = False

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` once started."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _bind(self) -> tuple[socket.socket, _Server]:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.create_server((self.host, self._requested_port), family=family)
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            self.api.app,
            host=self.host,
            port=self.port,
            http="h11",
            ws="none",
            lifespan="off",
            log_config=None,
            log_level=self._log_level,
            access_log=False,
            timeout_graceful_shutdown=5,
        )
        server = _Server(config, self._on_started, self._close_gateway)
        self._server = server
        return sock, server

    def _on_started(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._started.set()

    def _close_gateway(self) -> None:
        with self._closed:
            if self._closed_done:
                return
            self._closed_done = True
        self.gateway.shutdown()
        self.api.close()

    # -- in front ----------------------------------------------------------------------------------

    def run_foreground(self, on_listening: Callable[[str], None] | None = None) -> int:
        """Serve on this thread until SIGINT/SIGTERM; returns the exit code (0, or 1 on failure).

        Args:
            on_listening: called with :attr:`base_url` once the server accepts connections.
        """
        try:
            sock, server = self._bind()
        except OSError as exc:
            where = f"{self.host}:{self._requested_port}"
            print(f"desk serve: cannot listen on {where}: {exc}", file=sys.stderr, flush=True)
            self._close_gateway()
            return 1
        if on_listening is not None:
            previous = self._on_started

            def announce() -> None:
                previous()
                on_listening(self.base_url)

            server._on_started = announce
        try:
            asyncio.run(server.serve(sockets=[sock]))
        finally:
            sock.close()
            self._close_gateway()
        return 0 if server.started else 1

    # -- on a thread -------------------------------------------------------------------------------

    def start(self, timeout_s: float = 10.0) -> HttpServer:
        """Serve on a daemon thread; returns once listening.

        Raises:
            OSError: the address cannot be bound.
            TimeoutError: uvicorn did not start in time.
        """
        sock, server = self._bind()

        def serve() -> None:
            try:
                asyncio.run(server.serve(sockets=[sock]))
            finally:
                sock.close()
                self._started.set()

        self._thread = threading.Thread(target=serve, name=f"desk-serve-{self.port}", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s) or not server.started:
            self.stop()
            raise TimeoutError(f"desk serve did not start within {timeout_s} s")
        return self

    def stop(self, timeout_s: float = 15.0) -> None:
        """Shut the gateway down, then the server; waits (bounded) for the thread."""
        server, loop, thread = self._server, self._loop, self._thread
        if server is not None and loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(setattr, server, "should_exit", True)
        if thread is not None:
            thread.join(timeout_s)
        self._close_gateway()

    def __enter__(self) -> HttpServer:
        if self._thread is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
