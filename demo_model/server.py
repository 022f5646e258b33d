"""Run the demo model app under uvicorn on a background thread with its own event loop.

The thread, the socket and the quick exit are :class:`~asgi_server.AsgiServer`'s; this
module adds the demo's knobs, its request records and its shutdown (running requests end at
once).
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

from asgi_server import AsgiServer

from .app import DemoModelApp
from .config import DemoConfig
from .records import RecordBook


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
        self._serving = AsgiServer(
            self.app,
            host=host,
            port=port,
            name="demo-model",
            log_level=log_level,
            graceful_s=3,
            on_started=self._on_started,
            on_exit=self.app.begin_shutdown,
        )

    # -- addresses --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound TCP port.

        Raises:
            RuntimeError: the server was not started.
        """
        try:
            return self._serving.port
        except RuntimeError:
            raise RuntimeError("the demo model server is not started") from None

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
        return self._serving.running

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
        if self._serving.running or self._serving.started:
            raise RuntimeError("a DemoModelServer can be started only once")
        try:
            self._serving.start(timeout)
        except TimeoutError:
            raise TimeoutError(f"the demo model server did not start within {timeout} s") from None
        except RuntimeError as exc:
            raise RuntimeError("the demo model server failed to start") from exc.__cause__
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Shut down: running requests end at once (503, or a stream cut short), open
        connections close, the thread exits. Safe to call twice.

        Args:
            timeout: longest wait for the thread, in seconds (plus up to 1 s of forced exit).

        Raises:
            TimeoutError: the serving thread is still alive after the wait.
        """
        if not self._serving.stop(timeout):
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
        if not self._serving.started:
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

    def _on_started(self, loop: asyncio.AbstractEventLoop) -> None:
        self.app.attach_loop(loop)
