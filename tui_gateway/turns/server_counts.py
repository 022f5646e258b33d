"""The model server's own counts of requests, which a shutdown ends at once.

A session's first request is counted by the server (llama.cpp's ``/apply-template`` and
``/tokenize``, :func:`agent.provider.tokenize.server_request_count`) when the server answers,
on the thread that learned it answers; a prompt refused as too large is counted again on its
turn's thread. Each request may take up to :data:`COUNT_TIMEOUT_S` (a busy server, or one that
streams a reply to every POST), and a quit waited for them: 4.6-6.3 s after Ctrl+Q, a new count
started after the quit had begun. :class:`ServerCounts` keeps the counts in flight; its
:meth:`~ServerCounts.close` cancels them (their connections are closed) and answers every later
one with None at once.

A count asked under an :class:`~agent.scope.InterruptScope` (the turn's, while its fit step
waits for the count) is a member of that scope: a stop of the turn cancels it the same way, and
a scope cancelled before the count began has it answered with None without asking.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from agent.scope import current_scope
from agent.stops import StopRequest
from agent.tokens import MESSAGE_OVERHEAD_TOKENS

if TYPE_CHECKING:
    from agent.provider.tokenize import ServerTokens

COUNT_TIMEOUT_S = 5.0
"""Bound of each of the requests that count a request with the server, in seconds."""


class _InFlight:
    """One count being asked: its task, on its own event loop (another thread's)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self._loop = loop
        self._task = task

    def cancel(self) -> None:
        """Cancel the count from any thread (its connection is closed); never blocks."""
        with contextlib.suppress(RuntimeError):  # its loop has just ended
            self._loop.call_soon_threadsafe(self._task.cancel)

    def interrupt(self, _stop: StopRequest) -> None:
        """A stop of the scope it was asked under (:class:`agent.scope.Interruptible`)."""
        self.cancel()


class ServerCounts:
    """The server's count of a request, asked from any thread; thread-safe.

    Calling it (``counts(provider, messages, tools)``) blocks the caller up to
    :data:`COUNT_TIMEOUT_S` a request and never raises: it returns tokens (template
    included; a count of the texts only gets the template's few tokens per message added), or
    None when the server counts nothing, is unreachable, the counts were closed, or the
    :class:`~agent.scope.InterruptScope` current where it was called was cancelled.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False
        self._running: set[_InFlight] = set()

    def __call__(
        self,
        provider: ProviderConfig,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]],
    ) -> ServerTokens | None:
        """The server's count of ``messages`` with ``tools`` (as sent), template included
        (estimated where it only tokenizes), or None."""
        import httpx

        from agent.provider.tls import shared_ssl_context
        from agent.provider.tokenize import server_request_count

        headers = {"Authorization": f"Bearer {provider.api_key}"} if provider.api_key else {}

        scope = current_scope()  # the asking turn's: its stop ends the count
        if scope is not None and scope.cancelled:
            return None

        async def ask() -> ServerTokens | None:
            task = asyncio.current_task()
            with self._lock:
                if self._closed or task is None:
                    return None
                running = _InFlight(asyncio.get_running_loop(), task)
                self._running.add(running)
            member = scope.register(running) if scope is not None else None
            try:
                if member is not None and not member.active:
                    return None  # the scope was cancelled meanwhile (the task is cancelled too)
                async with httpx.AsyncClient(
                    timeout=COUNT_TIMEOUT_S, headers=headers, verify=shared_ssl_context()
                ) as http:
                    counted = await server_request_count(http, provider, messages, tools)
            finally:
                if member is not None:
                    member.unregister()
                with self._lock:
                    self._running.discard(running)
            if counted is None or counted.exact:
                return counted
            overhead = MESSAGE_OVERHEAD_TOKENS * len(messages)
            return replace(counted, tokens=counted.tokens + overhead)

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
        for count in running:
            count.cancel()


__all__ = ["COUNT_TIMEOUT_S", "ServerCounts"]
