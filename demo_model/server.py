"""Run the demo model app under uvicorn on a background thread with its own event loop."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import uvicorn

from .app import DemoModelApp
from .config import DemoConfig
from .records import RecordBook


class _UvicornServer(uvicorn.Server):
    """uvicorn's server with a start callback and an exit that needs no polling.

    uvicorn's own main loop checks ``should_exit`` every 0.1 s; this one sleeps on an event
    (waking once a second to refresh the Date header), so `request_exit` acts at once.
    """

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = on_started
        self._exit_event: asyncio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._exit_event = asyncio.Event()
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
        """Like uvicorn's shutdown, minus its fixed 0.1 s sleep and 0.1 s polling.

        Stops accepting, closes idle connections, asks busy ones to close after their
        response, then waits (bounded by ``timeout_graceful_shutdown``) for the request tasks
        themselves, cancelling any that overrun.
        """
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


class DemoModelServer:
    """The demo model server on loopback, served by uvicorn from a daemon thread.

    Use as a context manager, or call `start` and `stop`::

        with DemoModelServer(DemoConfig(tokens_per_second=500)) as server:
            httpx.post(server.base_url + "/chat/completions", json=...)
            server.records.wait_for_record(lambda r: r.finished, timeout=5)

    Args:
        config: the knobs; changed in place by `configure`. Defaults to `DemoConfig()`.
        host: address to bind; keep loopback.
        port: TCP port; ``0`` picks a free one (read it from `port` after `start`).
        log_level: uvicorn's log level (``"warning"``: only problems are logged).
        max_records: how many request records to keep (oldest dropped; ``None``: all).
    """

    def __init__(
        self,
        config: DemoConfig | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_level: str = "warning",
        max_records: int | None = 1000,
    ) -> None:
        self.config = config if config is not None else DemoConfig()
        self.records = RecordBook(max_records)
        self.app = DemoModelApp(self.config, self.records)
        self.host = host
        self._requested_port = port
        self._log_level = log_level
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: _UvicornServer | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    # -- addresses --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound TCP port.

        Raises:
            RuntimeError: the server was not started.
        """
        if self._port is None:
            raise RuntimeError("the demo model server is not started")
        return self._port

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT`` (``/health``, ``/slots``, ``/props``, ``/demo/*`` live here)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://HOST:PORT/v1``."""
        return f"{self.root_url}/v1"

    @property
    def running(self) -> bool:
        """Whether the serving thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    # -- lifecycle --------------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> DemoModelServer:
        """Bind the socket, start serving on a daemon thread, return once listening.

        Args:
            timeout: longest wait for uvicorn's startup, in seconds.

        Returns:
            ``self``.

        Raises:
            OSError: the address cannot be bound.
            RuntimeError: already started, or uvicorn failed to start.
            TimeoutError: uvicorn did not start within ``timeout``.
        """
        if self._thread is not None:
            raise RuntimeError("a DemoModelServer can be started only once")
        sock = socket.create_server((self.host, self._requested_port))
        self._port = int(sock.getsockname()[1])
        uv_config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self._port,
            http="h11",
            ws="none",
            lifespan="off",
            log_config=None,
            log_level=self._log_level,
            access_log=False,
            timeout_graceful_shutdown=3,
        )
        self._server = _UvicornServer(uv_config, on_started=self._on_started)
        self._thread = threading.Thread(
            target=self._serve, args=(sock,), name=f"demo-model-{self._port}", daemon=True
        )
        self._thread.start()
        if not self._started.wait(timeout):
            self.stop()
            raise TimeoutError(f"the demo model server did not start within {timeout} s")
        if self._error is not None or not self.running:
            raise RuntimeError("the demo model server failed to start") from self._error
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Shut down: running requests end at once (503, or a stream cut short), open
        connections close, the thread exits. Safe to call twice.

        Args:
            timeout: longest wait for the thread, in seconds (plus up to 1 s of forced exit).

        Raises:
            TimeoutError: the serving thread is still alive after the wait.
        """
        thread, loop, server = self._thread, self._loop, self._server
        if thread is None or not thread.is_alive():
            return
        if loop is not None and server is not None:
            with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
                loop.call_soon_threadsafe(self._begin_exit, server)
        thread.join(timeout)
        if thread.is_alive() and server is not None:
            server.force_exit = True
            thread.join(1.0)
        if thread.is_alive():
            raise TimeoutError("the demo model server thread did not exit")

    def configure(self, **changes: Any) -> DemoConfig:
        """Change knobs, all or nothing, from any thread; see `DemoConfig`.

        Returns:
            A copy of the knobs after the change.

        Raises:
            KeyError: an unknown knob.
            TypeError: a value of the wrong type.
            ValueError: a value out of range.
        """
        return self.app.configure(changes)

    def reset(self, *, config: bool = False) -> None:
        """Forget the records; with ``config=True`` also restore the starting knobs."""
        self.app.reset(config=config)

    def __enter__(self) -> DemoModelServer:
        if self._thread is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- the serving thread -----------------------------------------------------------------

    def _on_started(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.app.attach_loop(self._loop)
        self._started.set()

    def _begin_exit(self, server: _UvicornServer) -> None:
        self.app.begin_shutdown()
        server.request_exit()

    def _serve(self, sock: socket.socket) -> None:
        assert self._server is not None
        try:
            asyncio.run(self._server.serve(sockets=[sock]))
        except BaseException as exc:  # noqa: BLE001 - reported to start() or kept for stop()
            self._error = exc
        finally:
            sock.close()
            self._started.set()
