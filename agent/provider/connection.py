"""One turn's connection to the model server, and the one place its socket is closed.

A turn opens one :class:`ProviderConnection` (:func:`open_connection`, through
:meth:`agent.provider.client.ChatClient.session`) and every request of the turn goes over it.
Its socket is closed here, in one of two ways:

- :meth:`ProviderConnection.shut_down`, from the thread that makes a hard stop
  (:meth:`agent.agent.Agent.interrupt`): ``shutdown(SHUT_RDWR)`` of the live socket at once, so
  the model server sees the close even while the turn's event loop waits for the GIL behind a
  busy frontend. The cancel of the turn's task that follows unwinds the request.
  The socket is known from the moment it connects (httpx's ``trace`` extension,
  :meth:`ProviderConnection.trace`), or from the moment a kept-alive one starts a new request,
  not only once the response's headers came: a stop while the server is still reading the
  prompt (a long prompt on a busy machine takes seconds before the first header) closes it
  from the stopping thread too, without waiting for the turn's own thread to get the CPU.
- leaving :func:`open_connection` (normally, by an error, or by that cancel): the
  ``httpx.AsyncClient`` is closed, and with it every socket of its pool, so none outlives the
  turn. httpcore drops a half-used connection instead of pooling it when a ``CancelledError``
  unwinds through the request, so a cancel while connecting or waiting for headers closes too.
  Plain-HTTP servers are reached through :class:`agent.provider.bulk_http.BulkTransport`
  (bodies read in bulk), whose connection is closed with its response or by that cancel.
"""

from __future__ import annotations

import contextlib
import importlib
import socket
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from agent.provider.config import ProviderConfig
from agent.provider.tls import shared_ssl_context
from agent.stamps import stamp

if TYPE_CHECKING:
    import httpx  # imported where it is used: not before desk's first frame


class ProviderConnection:
    """The ``httpx.AsyncClient`` of one turn and the socket of the response it streams now.

    Thread-safe: :meth:`attach` and :meth:`detach` run on the turn's loop thread,
    :meth:`shut_down` on any thread.

    Args:
        http: the turn's client (its lifetime is :func:`open_connection`'s).
    """

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self._lock = threading.Lock()
        self._socket: Any = None
        self._connected: Any = None  # the socket last connected (kept alive between requests)
        self._shut = False
        self.shut_at: float | None = None
        """``time.monotonic()`` when a live socket was shut down by a stop (None: never)."""

    def _live(self, sock: Any) -> None:
        with self._lock:
            self._socket = sock
            shut = self._shut
        if shut:
            self._shut_down(sock)

    def _shut_down(self, sock: Any) -> None:
        if sock is not None:
            _shutdown(sock)
            if self.shut_at is None:
                self.shut_at = time.monotonic()
                stamp("socket.shut")

    async def trace(self, name: str, info: dict[str, Any]) -> None:
        """httpx's ``trace`` extension for this connection's requests (pass it as
        ``extensions={"trace": conn.trace}``): a socket is live from the moment it connected
        (``connection.connect_tcp.complete``), and a kept-alive one again from the moment it
        sends a new request (``http11.send_request_headers.started``).

        When the connection was shut down already, the socket is shut down at once.
        """
        if name == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            with self._lock:
                self._connected = sock
            self._live(sock)
        elif name == "http11.send_request_headers.started":
            with self._lock:
                sock = self._connected
            self._live(sock)

    def attach(self, response: httpx.Response) -> None:
        """Remember the socket of a response whose headers arrived (its body streams now).

        When the connection was shut down already, the socket is shut down at once.
        """
        network = response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
        with self._lock:
            self._connected = sock
        self._live(sock)

    def detach(self) -> None:
        """The response ended: its socket is no longer the live one."""
        with self._lock:
            self._socket = None

    def shut_down(self) -> None:
        """Close the live socket now, from any thread (a hard stop); later ones too.

        Safe to call more than once. The cancel that follows the stop unwinds the request and
        closes the client for good.
        """
        with self._lock:
            self._shut = True
            sock = self._socket
        self._shut_down(sock)


def _shutdown(sock: Any) -> None:
    if sock is not None:
        with contextlib.suppress(OSError):  # closed already: nothing left to close
            sock.shutdown(socket.SHUT_RDWR)


@asynccontextmanager
async def open_connection(config: ProviderConfig) -> AsyncIterator[ProviderConnection]:
    """The connection of one turn; its client (sockets included) is closed on exit.

    Args:
        config: where the model server is, its key and timeouts.

    Yields:
        the connection; pass it to :meth:`~agent.provider.client.ChatClient.stream` or
        :meth:`~agent.provider.client.ChatClient.complete`.
    """
    import httpx

    headers = {"Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    timeout = httpx.Timeout(
        connect=config.connect_timeout,
        read=config.read_timeout,
        write=config.write_timeout,
        pool=config.connect_timeout,
    )
    from agent.provider.bulk_http import BulkTransport

    client = httpx.AsyncClient(
        headers=headers,
        timeout=timeout,
        trust_env=False,
        verify=shared_ssl_context(),
        mounts={"http://": BulkTransport()},  # plain HTTP: bodies read in bulk
    )
    try:
        yield ProviderConnection(client)
    finally:
        await client.aclose()


FIRST_REQUEST_MODULES = (
    "agent.provider.bulk_http",
    "anyio._backends._asyncio",
    "anyio.streams.memory",
    "anyio.streams.stapled",
    "anyio.streams.tls",
    "anyio.to_thread",
    "httpcore._backends.anyio",
    "httpcore._async.connection_pool",
    "httpcore._async.http11",
    "h11",
)
"""Modules the async HTTP stack imports on a process's first request (plain HTTP goes through
:mod:`agent.provider.bulk_http`, TLS through httpcore)."""


def warm_up() -> None:
    """Build now what the process's first turn would otherwise build before its request: the
    TLS context (its certificates) and the modules of the async HTTP stack. Measured on a busy
    2-core machine: 0.4 s and 0.65 s, during which a stop or a quit of that first turn waited
    for its thread. Call it on a thread that may wait (idempotent; fails silently: the turn
    builds what is missing)."""
    with contextlib.suppress(Exception):
        shared_ssl_context()
        for name in FIRST_REQUEST_MODULES:
            importlib.import_module(name)


__all__ = ["ProviderConnection", "open_connection", "warm_up"]
