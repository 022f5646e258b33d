"""AsgiServer: an ASGI app on a loopback thread, its port known, its exit in a fixed order."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import httpx
import pytest

from asgi_server import AsgiServer

Scope = dict[str, Any]


class StreamingApp:
    """``GET /`` answers ``ok``; ``GET /stream`` sends ``start`` and ends when told to."""

    def __init__(self) -> None:
        self.streaming = threading.Event()
        self.end: asyncio.Event | None = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        headers = [(b"content-type", b"text/plain")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if scope["path"] != "/stream":
            await send({"type": "http.response.body", "body": b"ok"})
            return
        self.end = asyncio.Event()
        await send({"type": "http.response.body", "body": b"start ", "more_body": True})
        self.streaming.set()
        await self.end.wait()
        await send({"type": "http.response.body", "body": b"end"})


def test_an_app_on_a_thread_with_its_port_known_then_stopped() -> None:
    loops: list[asyncio.AbstractEventLoop] = []
    server = AsgiServer(StreamingApp(), name="probe", on_started=loops.append)
    with pytest.raises(RuntimeError):
        _ = server.port  # not bound yet
    assert server.stop() is True  # before a start: nothing to do
    server.start()
    try:
        assert server.running and server.started and len(loops) == 1
        assert server.root_url == f"http://127.0.0.1:{server.port}"
        assert any(t.name == f"probe-{server.port}" for t in threading.enumerate())
        assert httpx.get(server.root_url + "/").text == "ok"
        with pytest.raises(RuntimeError, match="only once"):
            server.start()
    finally:
        assert server.stop() is True
    assert not server.running
    assert server.stop() is True  # twice is fine
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{server.port}/")


def test_a_busy_address_is_an_oserror_in_the_caller() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        server = AsgiServer(StreamingApp(), port=port)
        with pytest.raises(OSError):
            server.start()
        assert not server.running


def test_the_exit_runs_on_exit_then_before_close_then_closes_the_connections() -> None:
    app = StreamingApp()
    order: list[str] = []
    body: list[bytes] = []

    def on_exit() -> None:
        order.append("on_exit")

    def before_close() -> None:
        # The open stream is still connected here: end it cleanly, as desk serve's gateway
        # shutdown ends every run with its message.complete.
        order.append("before_close")
        end, loop = app.end, server_loop[0]
        assert end is not None
        loop.call_soon_threadsafe(end.set)

    server_loop: list[asyncio.AbstractEventLoop] = []
    server = AsgiServer(
        app, on_started=server_loop.append, on_exit=on_exit, before_close=before_close
    )
    server.start()

    def read() -> None:
        with httpx.stream("GET", server.root_url + "/stream", timeout=10.0) as response:
            body.extend(response.iter_raw())

    reader = threading.Thread(target=read)
    reader.start()
    assert app.streaming.wait(10.0)
    assert server.stop(10.0) is True
    reader.join(10.0)
    assert order == ["on_exit", "before_close"]
    assert b"".join(body) == b"start end"  # the stream ended whole, before the close
