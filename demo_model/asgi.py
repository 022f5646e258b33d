"""Minimal ASGI types and response helpers for the demo server (no framework)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON_TYPE = b"application/json; charset=utf-8"
SSE_TYPE = b"text/event-stream"


def dumps(value: Any) -> bytes:
    """Encode a value as compact UTF-8 JSON, the way OpenAI's servers do."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def header(scope: Scope, name: bytes) -> bytes | None:
    """Return the first request header with this lower-case name, or ``None``."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return None


async def read_body(receive: Receive) -> bytes | None:
    """Read the whole request body.

    Returns:
        The body, or ``None`` when the client disconnected before it was complete.
    """
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def send_start(
    send: Send, status: int, content_type: bytes, extra: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """Send the response status line and headers."""
    headers = [(b"content-type", content_type), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})


async def send_json(
    send: Send, status: int, value: Any, extra: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """Send a complete JSON response with a Content-Length."""
    body = dumps(value)
    await send_start(send, status, JSON_TYPE, [(b"content-length", b"%d" % len(body)), *extra])
    await send({"type": "http.response.body", "body": body, "more_body": False})


def error_body(
    message: str, kind: str = "invalid_request_error", code: str | int | None = None
) -> dict[str, Any]:
    """Return an OpenAI-style error body: ``{"error": {message, type, param, code}}``."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
