"""Pieces the HTTP routes share: errors, bounded JSON bodies, bearer auth, watched SSE streams.

:class:`WatchedStream` is the response of every streamed run. It sends the stream and, at the
same time, awaits the ASGI ``receive()`` for ``http.disconnect`` (as the demo model server does):
a client that goes away before the stream's end is noticed at once, and the route's
``on_disconnect`` stops the run as the system (``api.disconnect``) while its provider request is
still open.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contract import INVALID_PARAMS
from contract.errors import GatewayError
from tui_gateway.wire.auth import bearer_ok
from tui_gateway.wire.codec import JsonTooDeep, dumps, loads

SSE_MEDIA_TYPE = "text/event-stream"


class HttpError(Exception):
    """An HTTP error answer: ``status``, a one-line ``message`` and an OpenAI-style ``kind``."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind


class NestedTooDeep(HttpError):
    """A body whose JSON is nested deeper than the parser follows (400)."""

    def __init__(self, message: str) -> None:
        super().__init__(400, message)


def http_error_of(exc: GatewayError) -> HttpError:
    """The HTTP answer to a gateway refusal: 404 unknown session, 400 bad params, else 503."""
    if exc.code == INVALID_PARAMS:
        if exc.message.startswith("no session"):
            return HttpError(404, exc.message, "not_found_error")
        return HttpError(400, exc.message)
    return HttpError(503, exc.message, "server_error")


def error_json(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    """An OpenAI-style error body: ``{"error": {"message", "type", "code"}}``."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
    return JSONResponse(body, status_code=status)


async def http_error_handler(_request: Request, exc: Exception) -> Response:
    """Starlette exception handler for :class:`HttpError`."""
    assert isinstance(exc, HttpError)
    return error_json(exc.status, exc.message, exc.kind)


async def starlette_error_handler(_request: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown route 404, wrong method 405) as OpenAI-style JSON."""
    assert isinstance(exc, StarletteHTTPException)
    kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
    return error_json(exc.status_code, str(exc.detail), kind)


async def read_json(request: Request, limit: int, *, required: bool = True) -> Any:
    """The request body as JSON, read at most ``limit`` bytes far.

    Returns:
        the parsed value, or None for an empty body when not ``required``.

    Raises:
        HttpError: 413 for a body over ``limit`` (refused before reading it when its
            Content-Length says so), 400 for malformed JSON or a missing body
            (:class:`NestedTooDeep` for JSON nested too deeply).
    """
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise HttpError(400, "the Content-Length header is not a number")
        if int(length) > limit:
            raise HttpError(413, f"the body is larger than {limit:,} bytes")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise HttpError(413, f"the body is larger than {limit:,} bytes")
    except ClientDisconnect:
        raise HttpError(400, "the client went away while sending the body") from None
    if not body.strip():
        if required:
            raise HttpError(400, "the body is empty; send a JSON object")
        return None
    try:
        return loads(bytes(body).decode("utf-8"))
    except JsonTooDeep as exc:
        raise NestedTooDeep(f"malformed JSON: {exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise HttpError(400, f"malformed JSON: {exc}") from None


def json_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object; else HttpError 400."""
    if not isinstance(value, dict):
        raise HttpError(400, "the body must be a JSON object")
    return value


def sse(event: str | None, data: Any, event_id: int | None = None) -> bytes:
    """One server-sent event: optional ``event:`` and ``id:`` lines, one ``data:`` line."""
    lines = []
    if event is not None:
        lines.append(f"event: {event}")
    if event_id is not None:
        lines.append(f"id: {event_id}")
    text = data if isinstance(data, str) else dumps(data)
    lines.append(f"data: {text}")
    return ("\n".join(lines) + "\n\n").encode("utf-8")


async def wait_disconnect(receive: Receive) -> None:
    """Return when the client has gone away (the request body must have been read)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


SendChunk = Callable[[bytes], Awaitable[None]]
Body = Callable[[SendChunk], Awaitable[bool]]


class WatchedStream(Response):
    """A streamed response that notices at once when its client goes away.

    Args:
        body: writes the stream with the ``send_chunk`` it is given; returns True when it sent
            the stream's natural end, False when it gave up (the source closed).
        on_disconnect: called once (on the loop; must not block) when the client went away, or
            the write failed, before the stream's end.
        on_close: called once when the response is over, whatever happened.
        headers: extra response headers.
        media_type: the content type (default ``text/event-stream``).
    """

    def __init__(
        self,
        body: Body,
        *,
        on_disconnect: Callable[[], None],
        on_close: Callable[[], None] | None = None,
        headers: dict[str, str] | None = None,
        media_type: str = SSE_MEDIA_TYPE,
    ) -> None:
        self._body = body
        self._on_disconnect = on_disconnect
        self._on_close = on_close
        self.status_code = 200
        self.media_type = media_type
        self.background = None
        extra = {"cache-control": "no-cache", "x-accel-buffering": "no", **(headers or {})}
        self.raw_headers = [(b"content-type", media_type.encode("latin-1"))] + [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in extra.items()
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        finished = False
        try:
            try:
                start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
                await send(start)
            except Exception:
                self._on_disconnect()
                raise

            async def send_chunk(data: bytes) -> None:
                await send({"type": "http.response.body", "body": data, "more_body": True})

            pump = asyncio.ensure_future(self._body(send_chunk))
            watch = asyncio.ensure_future(wait_disconnect(receive))
            await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
            pumped = pump.done() and pump.exception() is None
            finished = pumped and bool(pump.result())
            if not pumped or (watch.done() and not finished):  # the client left first
                self._on_disconnect()
            for task in (pump, watch):
                task.cancel()
            for task in (pump, watch):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if finished:
                with contextlib.suppress(Exception):  # the client may leave at the last byte
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            if self._on_close is not None:
                self._on_close()


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>`` (else 401).

    The check runs before routing, so an unknown route without the token is a 401 too.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = None
            for key, value in scope.get("headers", ()):
                if key == b"authorization":
                    header = value.decode("latin-1")
                    break
            if not bearer_ok(header, self.token):
                response = error_json(401, "missing or wrong bearer token", "authentication_error")
                response.headers["www-authenticate"] = "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


__all__ = [
    "BearerAuth",
    "HttpError",
    "Message",
    "NestedTooDeep",
    "WatchedStream",
    "error_json",
    "http_error_of",
    "json_object",
    "read_json",
    "sse",
    "wait_disconnect",
]
