"""The model server's own counts of requests, which a shutdown ends at once.

A session's first request is counted by the server (llama.cpp's ``/apply-template`` and
``/tokenize``, :func:`agent.provider.tokenize.server_request_count`) when the server answers,
on the thread that learned it answers; a prompt refused as too large is counted again on its
turn's thread. Each request may take up to :data:`COUNT_TIMEOUT_S` (a busy server, or one that
streams a reply to every POST), and a quit waited for them: 4.6-6.3 s after Ctrl+Q, a new count
started after the quit had begun. :class:`ServerCounts` keeps the counts in flight; its
:meth:`~ServerCounts.close` cancels them (their connections are closed) and answers every later
one with None at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from typing import Any

from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from agent.tokens import MESSAGE_OVERHEAD_TOKENS

COUNT_TIMEOUT_S = 5.0
"""Bound of each of the requests that count a request with the server, in seconds."""


class ServerCounts:
    """The server's count of a request, asked from any thread; thread-safe.

    Calling it (``counts(provider, messages, tools)``) blocks the caller up to
    :data:`COUNT_TIMEOUT_S` a request and never raises: it returns tokens (template
    included; a count of the texts only gets the template's few tokens per message added), or
    None when the server counts nothing, is unreachable, or the counts were closed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False
        self._running: set[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = set()

    def __call__(
        self,
        provider: ProviderConfig,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]],
    ) -> int | None:
        """The server's count of ``messages`` with ``tools`` (as sent), in tokens, or None."""
        import httpx

        from agent.provider.tls import shared_ssl_context
        from agent.provider.tokenize import server_request_count

        headers = {"Authorization": f"Bearer {provider.api_key}"} if provider.api_key else {}

        async def ask() -> int | None:
            task = asyncio.current_task()
            with self._lock:
                if self._closed or task is None:
                    return None
                running = (asyncio.get_running_loop(), task)
                self._running.add(running)
            try:
                client = httpx.AsyncClient(
                    timeout=COUNT_TIMEOUT_S, headers=headers, verify=shared_ssl_context()
                )
                async with client as http:
                    counted = await server_request_count(http, provider, messages, tools)
            finally:
                with self._lock:
                    self._running.discard(running)
            if counted is None:
                return None
            if counted.exact:
                return counted.tokens
            return counted.tokens + MESSAGE_OVERHEAD_TOKENS * len(messages)

        try:
            return asyncio.run(ask())
        except (Exception, asyncio.CancelledError):  # nonsense, or closed: counts nothing
            return None

    @property
    def in_flight(self) -> int:
        """How many counts are being asked now."""
        with self._lock:
            return len(self._running)

    def close(self) -> None:
        """End the counts in flight (their connections closed; each returns None) and answer
        every later one with None without asking. Idempotent; never blocks."""
        with self._lock:
            self._closed = True
            running = list(self._running)
        for loop, task in running:
            with contextlib.suppress(RuntimeError):  # its loop has just ended
                loop.call_soon_threadsafe(task.cancel)


__all__ = ["COUNT_TIMEOUT_S", "ServerCounts"]
