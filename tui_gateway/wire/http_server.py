"""Serving :class:`~tui_gateway.wire.http_api.DeskApi` with uvicorn, in front or on a thread.

Every request passes :class:`~tui_gateway.wire.host_check.HostCheck` first (a ``Host`` that is
not this server's gets 421: DNS rebinding), then the bearer token's check.

The thread, the socket, the signals and the quick exit are
:class:`asgi_server.AsgiServer`'s (the demo model server runs on it too). Exit order,
whatever asked for it (SIGINT, SIGTERM, :meth:`HttpServer.stop`): the gateway shuts down first
(a system stop, ``gateway.shutdown``: every running turn ends with its ``message.complete``, so
every open stream ends cleanly), then uvicorn stops accepting, closes the connections and exits.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable

import contract as c
from asgi_server import AsgiServer
from tui_gateway.gateway import Gateway
from tui_gateway.wire.host_check import HostCheck
from tui_gateway.wire.http_api import DeskApi

GRACEFUL_S = 5
"""At shutdown, how long the last requests may take to finish, in seconds."""


class HttpServer:
    """``desk serve``: one gateway behind HTTP.

    Args:
        gateway: the gateway (shut down when the server stops).
        token: the bearer token.
        host: address to bind (127.0.0.1 unless told otherwise).
        port: TCP port; 0 picks a free one (read :attr:`port` after starting).
        max_body_bytes: largest request body, in bytes.
        log_level: uvicorn's log level.
        before_shutdown: called before the gateway shuts down (the schedules stop first).
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
        before_shutdown: Callable[[], None] | None = None,
    ) -> None:
        self.gateway = gateway
        self._before_shutdown = before_shutdown
        self.api = DeskApi(gateway, token, max_body_bytes=max_body_bytes)
        self.host = host
        self._requested_port = port
        self._on_listening: Callable[[str], None] | None = None
        self._serving = AsgiServer(
            HostCheck(self.api.app, host=host),
            host=host,
            port=port,
            name="desk-serve",
            log_level=log_level,
            graceful_s=GRACEFUL_S,
            on_started=self._on_started,
            before_close=self._close_gateway,
        )
        self._closed = threading.Lock()
        self._closed_done = False

    @property
    def port(self) -> int:
        """The bound TCP port (0 before the server is started)."""
        try:
            return self._serving.port
        except RuntimeError:
            return 0

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` once started."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _on_started(self, _loop: asyncio.AbstractEventLoop) -> None:
        if self._on_listening is not None:
            self._on_listening(self.base_url)

    def _close_gateway(self) -> None:
        with self._closed:
            if self._closed_done:
                return
            self._closed_done = True
        if self._before_shutdown is not None:
            self._before_shutdown()
        self.gateway.shutdown()
        self.api.close()

    # -- in front ----------------------------------------------------------------------------------

    def run_foreground(self, on_listening: Callable[[str], None] | None = None) -> int:
        """Serve on this thread until SIGINT/SIGTERM; returns the exit code (0, or 1 on failure).

        Args:
            on_listening: called with :attr:`base_url` once the server accepts connections.
        """
        self._on_listening = on_listening
        try:
            self._serving.bind()
        except OSError as exc:
            where = f"{self.host}:{self._requested_port}"
            print(f"desk serve: cannot listen on {where}: {exc}", file=sys.stderr, flush=True)
            self._close_gateway()
            return 1
        try:
            started = self._serving.serve_in_front()
        finally:
            self._close_gateway()
        return 0 if started else 1

    # -- on a thread -------------------------------------------------------------------------------

    def start(self, timeout_s: float = 10.0) -> HttpServer:
        """Serve on a daemon thread; returns once listening.

        Raises:
            OSError: the address cannot be bound.
            RuntimeError: started already, or uvicorn failed to start.
            TimeoutError: uvicorn did not start in time.
        """
        if self._serving.started or self._serving.running:
            raise RuntimeError("desk serve can be started only once")
        try:
            self._serving.start(timeout_s)
        except TimeoutError:
            self.stop()
            raise TimeoutError(f"desk serve did not start within {timeout_s} s") from None
        except RuntimeError:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float = 15.0) -> None:
        """Shut the gateway down, then the server; waits (bounded) for the thread."""
        self._serving.stop(timeout_s)
        self._close_gateway()

    def __enter__(self) -> HttpServer:
        if not self._serving.started:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
