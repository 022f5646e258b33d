"""Plain-HTTP requests to the model server whose bodies are read in bulk: one pass per socket read.

A local model server (llama.cpp's ``llama-server``, Ollama, vLLM) streams each token as its own
SSE event in its own HTTP chunk, 1,000-20,000 a second. Through httpcore each chunk is one h11
event, handed up through four async generators: 8.4 us of the turn thread's CPU per chunk on a
2-core machine, 45 % of what reading the stream cost, and the turn's thread shares the
interpreter with the UI. :class:`BulkTransport` reads what the socket has (up to 64 KiB) and
takes every complete chunk out of it in one pass (0.7 us a chunk), handing the joined payloads
up as one piece.

Only the body is read here. The request and the response's head go through h11 (the parser
httpx itself uses), so headers are checked as strictly as before; the body's framing (chunked,
``Content-Length``, or until the server closes) follows the head. Each request has a connection
of its own, closed when its response is: a turn opens a handful at most, on loopback a
fraction of a millisecond each. ``https://`` URLs keep httpx's own transport (TLS, HTTP/2).

The socket is reported through the request's ``trace`` extension as httpcore reports it
(``connection.connect_tcp.complete``) and as the response's ``network_stream`` extension, so
:class:`agent.provider.connection.ProviderConnection` can shut it down from a stopping thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import h11
import httpx

READ_BYTES = 64 * 1024
"""Most bytes taken from the socket per read."""

MAX_HEAD_BYTES = 64 * 1024
"""Longest response head accepted (status line and headers), in bytes."""

_Trace = Callable[[str, dict[str, Any]], Awaitable[None]]


class _Socket:
    """What httpcore's network streams answer to ``get_extra_info("socket")``."""

    def __init__(self, sock: socket.socket | None) -> None:
        self._sock = sock

    def get_extra_info(self, info: str) -> Any:
        return self._sock if info == "socket" else None


class BulkTransport(httpx.AsyncBaseTransport):
    """An httpx transport for ``http://`` URLs that reads response bodies in bulk.

    Raises (from :meth:`handle_async_request` and the body's iteration) httpx's own errors:
    :class:`httpx.ConnectError` / :class:`httpx.ConnectTimeout` while connecting,
    :class:`httpx.WriteError` / :class:`httpx.WriteTimeout` while sending,
    :class:`httpx.ReadError` / :class:`httpx.ReadTimeout` while reading, and
    :class:`httpx.RemoteProtocolError` for a malformed response or one cut short.
    """

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` on a connection of its own; the response's body streams from it."""
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        trace: _Trace | None = request.extensions.get("trace")
        url = request.url
        port = url.port or 80
        try:
            async with asyncio.timeout(timeouts.get("connect")):
                reader, writer = await asyncio.open_connection(url.host, port, limit=READ_BYTES)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"connecting to {url.host}:{port} timed out") from exc
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        try:
            sock: socket.socket | None = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if trace is not None:
                await trace("connection.connect_tcp.complete", {"return_value": _Socket(sock)})
            return await _exchange(request, reader, writer, timeouts, _Socket(sock))
        except BaseException:
            writer.close()
            raise


async def _exchange(
    request: httpx.Request,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    timeouts: dict[str, float | None],
    network: _Socket,
) -> httpx.Response:
    h11_conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
    body = await request.aread()
    target = request.url.raw_path
    head = h11.Request(method=request.method, target=target, headers=list(request.headers.raw))
    out = (
        h11_conn.send(head) + h11_conn.send(h11.Data(data=body)) + h11_conn.send(h11.EndOfMessage())
    )
    try:
        async with asyncio.timeout(timeouts.get("write")):
            writer.write(out)
            await writer.drain()
    except TimeoutError as exc:
        raise httpx.WriteTimeout("sending the request timed out", request=request) from exc
    except OSError as exc:
        raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc
    read_s = timeouts.get("read")
    while True:
        try:
            event = h11_conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        if event is h11.NEED_DATA:
            data = await _read(reader, read_s, request)
            if not data and h11_conn.their_state == h11.SEND_RESPONSE:
                raise httpx.RemoteProtocolError(
                    "Server disconnected without sending a response.", request=request
                )
            h11_conn.receive_data(data)
            continue
        if isinstance(event, h11.Response):
            break
        if not isinstance(event, h11.InformationalResponse):  # closed, or paused: no response
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            )
        # an informational (1xx) response: the real one follows
    start, closed = h11_conn.trailing_data
    headers = httpx.Headers(event.headers.raw_items())
    framing = _framing(request.method, event.status_code, headers)
    stream = _BulkBody(reader, writer, bytes(start), closed, framing, read_s, request)
    return httpx.Response(
        status_code=event.status_code,
        headers=event.headers.raw_items(),
        stream=stream,
        extensions={
            "http_version": b"HTTP/" + event.http_version,
            "reason_phrase": event.reason,
            "network_stream": network,
        },
    )


def _framing(method: str, status: int, headers: httpx.Headers) -> int | str:
    """How the body ends: ``"chunked"``, ``"close"`` (at the server's close), or its length."""
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return 0
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return "chunked"
    length = headers.get("content-length")
    if length is not None:
        try:
            return int(length)
        except ValueError:
            return "close"
    return "close"


async def _read(
    reader: asyncio.StreamReader, timeout_s: float | None, request: httpx.Request
) -> bytes:
    try:
        async with asyncio.timeout(timeout_s):
            return await reader.read(READ_BYTES)
    except TimeoutError as exc:
        raise httpx.ReadTimeout("reading the response timed out", request=request) from exc
    except OSError as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc


class _BulkBody(httpx.AsyncByteStream):
    """A response body, de-framed: one piece (the payload of every complete chunk) per read."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        start: bytes,
        closed: bool,
        framing: int | str,
        read_s: float | None,
        request: httpx.Request,
    ) -> None:
        self._reader, self._writer = reader, writer
        self._start, self._closed = start, closed
        self._framing = framing
        self._read_s = read_s
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            if self._framing == "chunked":
                async for piece in self._chunked():
                    yield piece
            elif self._framing == "close":
                async for piece in self._until_close():
                    yield piece
            else:
                assert isinstance(self._framing, int)
                async for piece in self._sized(self._framing):
                    yield piece
        finally:
            self._writer.close()

    async def aclose(self) -> None:
        """Close the response's connection (httpx calls it when the response is closed)."""
        self._writer.close()

    async def _more(self) -> bytes:
        if self._closed:
            return b""
        return await _read(self._reader, self._read_s, self._request)

    def _cut_short(self, what: str) -> httpx.RemoteProtocolError:
        return httpx.RemoteProtocolError(
            f"peer closed connection without sending complete message body: {what}",
            request=self._request,
        )

    async def _sized(self, left: int) -> AsyncIterator[bytes]:
        data, self._start = self._start, b""
        while True:
            if data and left > 0:
                piece = data[:left]
                left -= len(piece)
                yield piece
            if left <= 0:
                return
            data = await self._more()
            if not data:
                raise self._cut_short(f"received fewer bytes than the length ({left} missing)")

    async def _until_close(self) -> AsyncIterator[bytes]:
        data, self._start = self._start, b""
        while True:
            if data:
                yield data
            data = await self._more()
            if not data:
                return

    async def _chunked(self) -> AsyncIterator[bytes]:
        chunks = Dechunker()
        data, self._start = self._start, b""
        while True:
            try:
                payload = chunks.feed(data)
            except ValueError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=self._request) from None
            if payload:
                yield payload
            if chunks.ended:
                return
            data = await self._more()
            if not data:
                raise self._cut_short("incomplete chunked read")


class Dechunker:
    """Takes the payload out of a chunked body (RFC 9112 section 7.1) as its bytes arrive.

    A chunk's payload is handed on as far as it came, not held until the chunk is whole, so a
    server that sends one endless chunk costs no more memory than one that sends many.
    """

    MAX_LINE_BYTES = 4096
    """Longest size line or trailer line accepted, in bytes."""

    def __init__(self) -> None:
        self._buffer = bytearray()  # framing not parsed yet (a size line cut by a read)
        self._left = 0  # payload bytes of the current chunk still to come
        self._crlf_due = False  # the CRLF that ends a chunk's payload
        self._trailers = False  # past the last chunk: trailer lines up to a blank one
        self.ended = False
        """True once the last chunk and the blank line after its trailers arrived."""

    def feed(self, data: bytes) -> bytes:
        """The payload bytes in ``data`` (with what earlier calls left unparsed), joined.

        Raises:
            ValueError: a size that is not hexadecimal, a payload not ended by CRLF, or a
                size or trailer line longer than :attr:`MAX_LINE_BYTES`.
        """
        buffer = self._buffer
        buffer += data
        out: list[bytes] = []
        pos, end = 0, len(buffer)
        while pos < end and not self.ended:
            if self._left:
                take = min(self._left, end - pos)
                out.append(bytes(buffer[pos : pos + take]))
                pos += take
                self._left -= take
                if self._left:
                    break
                self._crlf_due = True
                continue
            if self._crlf_due:
                if end - pos < 2:
                    break
                if buffer[pos : pos + 2] != b"\r\n":
                    raise ValueError("a chunk did not end with CRLF")
                pos += 2
                self._crlf_due = False
                continue
            eol = buffer.find(b"\r\n", pos)
            if eol < 0:
                if end - pos > self.MAX_LINE_BYTES:
                    raise ValueError("a chunk size or trailer line is too long")
                break
            line = bytes(buffer[pos:eol])
            pos = eol + 2
            if self._trailers:
                self.ended = not line
                continue
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ValueError(f"bad chunk size {size_text[:20]!r}") from None
            if size < 0 or not size_text.isalnum():
                raise ValueError(f"bad chunk size {size_text[:20]!r}")
            if size:
                self._left = size
            else:
                self._trailers = True
        del buffer[:pos]
        return b"".join(out)


__all__ = ["BulkTransport", "Dechunker"]
