"""What a model server streams is read with care: blank data, huge lines, chunks of odd shape.

A tiny raw-socket server on loopback answers every request with a scripted SSE body, so the
stream can hold what the demo model never sends.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterable, Iterator

import psutil
import pytest

from agent.provider.client import ProviderConfig
from agent.provider.sse import MAX_LINE_BYTES
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

MiB = 1024 * 1024
HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"connection: close\r\n\r\n"
)
CHUNKED_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    b"Keep-Alive: timeout=5, max=100\r\n\r\n"
)


def chunk(delta: object, finish: str | None = None) -> bytes:
    body = {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0}]}
    body["choices"][0].update({"delta": delta, "finish_reason": finish})
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class RawServer:
    """Answers each POST on loopback with the bytes ``body()`` yields, then closes."""

    def __init__(self, body: Callable[[], Iterable[bytes]], head: bytes = HEAD) -> None:
        self._body = body
        self._head = head
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.requests = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def provider(self) -> ProviderConfig:
        return ProviderConfig(base_url=f"http://127.0.0.1:{self.port}/v1", model="raw")

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        if not head.startswith(b"POST /v1/chat/completions "):  # e.g. asking for /props
            conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            return
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(rest) < length:
            rest += conn.recv(65536)
        self.requests += 1
        with contextlib.suppress(OSError):  # the client may hang up: that is the point
            conn.sendall(self._head)
            for piece in self._body():
                conn.sendall(piece)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone does not)
        self._sock.close()
        self._thread.join(timeout=5)


@contextlib.contextmanager
def raw_gateway(
    body: Callable[[], Iterable[bytes]], head: bytes = HEAD
) -> Iterator[tuple[Gateway, EventLog]]:
    server = RawServer(body, head)
    config = GatewayConfig(provider=server.provider, tools=False, context_window=8192)
    gateway = Gateway(config)
    log = EventLog()
    gateway.subscribe(log)
    try:
        yield gateway, log
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
        server.close()


def test_an_empty_data_line_is_skipped() -> None:
    def body() -> Iterator[bytes]:
        yield b"data:\n\n"
        yield b"data: \r\n\r\n"
        yield chunk({"role": "assistant", "content": "still "})
        yield b"data:\n\n"
        yield chunk({"content": "here"})
        yield chunk({}, "stop")
        yield b"data: [DONE]\n\n"

    with raw_gateway(body) as (gateway, log):
        done = log.complete(gateway.prompt_submit(gateway.session_create(), "hi").turn_id)
    assert done.status == "completed", done.error
    assert done.text == "still here"


@pytest.mark.parametrize(
    ("sent", "names"),
    [
        (b'{"choices": [1]}', "choices[0] is a number"),
        (b'{"choices": [{"delta": "str"}]}', "choices[0].delta is a string"),
        (b'{"choices": null}', "choices is null"),
        (b"[1, 2]", "an array, not an object"),
        (b'"text"', "a string, not an object"),
        (b'{"choices": [{"delta": {"content": 5}}]}', "delta.content is a number"),
        (b'{"choices": [{"delta": {"tool_calls": [7]}}]}', "tool_calls[0] is a number"),
        (b'{"choices": [{"delta": {"tool_calls": [{"index": "a"}]}}]}', "index"),
        (b'{"choices": [], "usage": {"prompt_tokens": "many"}}', "usage"),
        (b"{not json", "not JSON"),
    ],
)
def test_a_chunk_of_unexpected_shape_fails_the_turn_with_a_clear_line(
    sent: bytes, names: str
) -> None:
    def body() -> Iterator[bytes]:
        yield chunk({"role": "assistant", "content": "before "})
        yield b"data: " + sent + b"\n\n"
        yield chunk({}, "stop")
        yield b"data: [DONE]\n\n"

    with raw_gateway(body) as (gateway, log):
        done = log.complete(gateway.prompt_submit(gateway.session_create(), "hi").turn_id)
    assert done.exit_reason == "failed(MalformedChunk)"
    assert done.error is not None
    assert done.error.startswith("model server sent a malformed chunk (")
    assert names in done.error
    assert "internal error" not in done.error and "attribute" not in done.error
    assert done.text == "before "  # what came before is kept


class PeakRss:
    """The largest resident set size of this process while the block runs, in bytes."""

    def __init__(self) -> None:
        self._process = psutil.Process()
        self.before = self._process.memory_info().rss
        self.peak = self.before
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.002):
            self.peak = max(self.peak, self._process.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=5)
        self.peak = max(self.peak, self._process.memory_info().rss)


def test_a_line_longer_than_the_bound_fails_the_turn_without_growing_memory() -> None:
    block = b"x" * MiB
    sent_mib = 200

    def body() -> Iterator[bytes]:
        yield chunk({"role": "assistant", "content": "a start "})
        yield b'data: {"choices": [{"index": 0, "delta": {"content": "'
        for _ in range(sent_mib):
            yield block
        yield b'"}}]}\n\n'

    with raw_gateway(body) as (gateway, log), PeakRss() as rss:
        turn = gateway.prompt_submit(gateway.session_create(), "hi").turn_id
        done = log.complete(turn, timeout=60)
    grew_mib = (rss.peak - rss.before) / MiB
    assert done.exit_reason == "failed(MalformedChunk)", done.error
    assert done.error is not None and "longer than 16 MiB" in done.error
    assert done.text == "a start "
    bound_mib = 4 * MAX_LINE_BYTES / MiB
    assert grew_mib < bound_mib, (
        f"reading a {sent_mib} MiB line grew the process by {grew_mib:.0f} MiB "
        f"(bound {bound_mib:.0f} MiB)"
    )


def as_chunk(data: bytes, extension: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), extension, data)


def test_a_chunked_stream_is_read_whole_however_its_chunks_fall() -> None:
    events = [
        chunk({"role": "assistant", "content": "one "}),
        chunk({"content": "two "}),
        chunk({"content": "thrée"}),
        chunk({}, "stop"),
        b"data: [DONE]\n\n",
    ]

    def body() -> Iterator[bytes]:
        yield as_chunk(events[0], b";ext=1")  # a chunk extension, as HTTP allows
        joined = b"".join(as_chunk(e) for e in events[1:])
        yield joined[:7]  # a size line and a payload cut across writes
        yield joined[7:40]
        yield joined[40:]
        yield b"0\r\nX-Trailer: yes\r\n\r\n"

    with raw_gateway(body, CHUNKED_HEAD) as (gateway, log):
        done = log.complete(gateway.prompt_submit(gateway.session_create(), "hi").turn_id)
    assert done.status == "completed", done.error
    assert done.text == "one two thrée"


def test_a_chunked_stream_cut_inside_a_chunk_ends_the_turn_as_cut_short() -> None:
    def body() -> Iterator[bytes]:
        yield as_chunk(chunk({"role": "assistant", "content": "kept "}))
        whole = as_chunk(chunk({"content": "lost"}))
        yield whole[: len(whole) // 2]  # then the server closes

    with raw_gateway(body, CHUNKED_HEAD) as (gateway, log):
        done = log.complete(gateway.prompt_submit(gateway.session_create(), "hi").turn_id)
    assert done.exit_reason == "failed(EarlyClose)", done.error
    assert done.text == "kept "


def test_one_endless_chunk_fails_the_turn_without_growing_memory() -> None:
    block = b"x" * MiB
    sent_mib = 200

    def body() -> Iterator[bytes]:
        yield as_chunk(chunk({"role": "assistant", "content": "a start "}))
        yield b"%x\r\n" % (1 << 40)  # one chunk of a terabyte: a line that never ends
        yield b'data: {"choices": [{"index": 0, "delta": {"content": "'
        for _ in range(sent_mib):
            yield block

    with raw_gateway(body, CHUNKED_HEAD) as (gateway, log), PeakRss() as rss:
        turn = gateway.prompt_submit(gateway.session_create(), "hi").turn_id
        done = log.complete(turn, timeout=60)
    grew_mib = (rss.peak - rss.before) / MiB
    assert done.exit_reason == "failed(MalformedChunk)", done.error
    assert done.text == "a start "
    bound_mib = 4 * MAX_LINE_BYTES / MiB
    assert grew_mib < bound_mib, f"one endless chunk grew the process by {grew_mib:.0f} MiB"


def test_a_server_that_closes_without_answering_ends_the_turn_with_a_clear_line() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def hang_up() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                with conn:
                    conn.recv(65536)  # the request, then the connection closes unanswered

    threading.Thread(target=hang_up, daemon=True).start()
    provider = ProviderConfig(base_url=f"http://127.0.0.1:{port}/v1", model="raw")
    gateway = Gateway(GatewayConfig(provider=provider, tools=False, context_window=8192))
    log = EventLog()
    gateway.subscribe(log)
    try:
        done = log.complete(gateway.prompt_submit(gateway.session_create(), "hi").turn_id)
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
    assert done.status == "failed"
    assert done.error is not None and "without sending a response" in done.error, done.error
