"""The ``max_result_mb`` cap on a streamable HTTP MCP server's answers.

A stdio server's messages are capped line by line (:mod:`agent.mcp.line_cap`); over HTTP one
message is a whole JSON response body, or one event of a server-sent event stream. The HTTP
client's transport here (:class:`CappedTransport`) counts the bytes of each answer as it is read
and, past the cap, stops reading it and raises :class:`httpx2.StreamError`: at most the cap is
held in memory. The MCP SDK answers the request with an error of its own then; the request's id
(read from the POST's JSON body) is noted, and :func:`capped_messages` puts a
:class:`~agent.mcp.stdio.TooLarge` in place of that error, so the call ends with the same honest
line as over stdio ("the answer was cut: ... (max_result_mb)") and the connection goes on.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from agent.mcp.stdio import TooLarge


class CappedTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport whose responses end past ``cap`` bytes in one message.

    A JSON body is one message; in an event stream, each event (up to its blank line) is one.

    Args:
        inner: the transport that does the work.
        cap: the most bytes of one message, > 0.

    Attributes:
        cut: request id -> the answer that was cut, until :func:`capped_messages` takes it.
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport, cap: int) -> None:
        self._inner = inner
        self.cap = cap
        self.cut: dict[int | str, TooLarge] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """The inner transport's response, its body counted as it is read."""
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        events = response.headers.get("content-type", "").startswith("text/event-stream")
        counted = _Counted(response.stream, self, _request_id(request), events=events)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=counted,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()


class _Counted(httpx2.AsyncByteStream):
    """A response body that raises ``StreamError`` once one message passes the cap."""

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        owner: CappedTransport,
        request_id: int | str | None,
        *,
        events: bool,
    ) -> None:
        self._inner = inner
        self._owner = owner
        self._request_id = request_id
        self._events = events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0  # bytes of the current message
        tail = b""  # the last bytes seen, to find an event's end across chunks
        async for chunk in self._inner:
            if self._events:
                seen = tail + chunk
                end = max(seen.rfind(b"\n\n"), seen.rfind(b"\r\n\r\n"))
                size = len(seen) - end - 2 if end >= 0 else size + len(chunk)
                tail = seen[-3:]
            else:
                size += len(chunk)
            if size > self._owner.cap:
                cut = TooLarge(self._request_id, size, self._owner.cap, runaway=False)
                if self._request_id is not None:
                    self._owner.cut[self._request_id] = cut
                raise httpx2.StreamError(cut.describe())
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _request_id(request: httpx2.Request) -> int | str | None:
    """The JSON-RPC id of the request a POST carries (None for a notification, or a GET)."""
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content)
    except (ValueError, UnicodeDecodeError, httpx2.RequestNotRead):
        return None
    found = body.get("id") if isinstance(body, dict) else None
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


async def capped_messages(source: Any, transport: CappedTransport) -> AsyncIterator[Any]:
    """The SDK's read stream ``source``, with the SDK's error for a cut answer replaced by its
    :class:`~agent.mcp.stdio.TooLarge` (which the connection turns into the call's error)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCError

    async for item in source:
        if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCError):
            request_id = item.message.id
            cut = transport.cut.pop(request_id, None) if request_id is not None else None
            if cut is not None:
                yield cut
                continue
        yield item


__all__ = ["CappedTransport", "capped_messages"]
