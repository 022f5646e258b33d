"""A count of the server's (llama.cpp ``/apply-template`` + ``/tokenize``) never holds a quit
or a stop: the gateway's shutdown ends the counts in flight (their connections closed) and asks
no more, and a person's stop of a turn that waits for the count ends the count and the turn.

The server here is a real HTTP server on loopback that lists a model and its window, and takes
every POST without ever answering it, as a busy server (or one that streams a reply to every
POST) does for seconds: it records each POST's path and when the client closed it. One that
refuses every chat request as too large for its context (llama.cpp's 400) makes a turn wait
for the server's count of its prompt alone.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from agent.stops import StopRequest, Surface
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.turns.server_counts import ServerCounts


@dataclass
class Posts:
    """What the silent server saw: each POST's path, and the ones whose client closed."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(init=False)
    paths: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    def wait(self, what: str, count: int, timeout_s: float = 30.0) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: len(getattr(self, what)) >= count, timeout_s)

    def counts(self) -> list[str]:
        """The paths of the POSTs that asked for a count (every one but chat requests)."""
        with self.lock:
            return [p for p in self.paths if not p.endswith(CHAT)]


CHAT = "/chat/completions"

TOO_LARGE = {"error": {"code": 400, "type": "exceed_context_size_error", "message": "too large"}}
"""llama.cpp's refusal of a request larger than its context (here without its counts)."""


def silent_server(posts: Posts, *, refuse_chat: bool = False) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.endswith("/models"):
                body = {"data": [{"id": "counted", "object": "model"}]}
            else:  # /props: llama.cpp's window
                body = {"default_generation_settings": {"n_ctx": 4096}}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with posts.changed:
                posts.paths.append(self.path)
                posts.changed.notify_all()
            if refuse_chat and self.path.endswith(CHAT):
                data = json.dumps(TOO_LARGE).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.connection.settimeout(60.0)
            try:
                while self.connection.recv(4096):  # never answers; until the client closes
                    pass
            except OSError:
                return
            with posts.changed:
                posts.closed.append(self.path)
                posts.changed.notify_all()
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    return server


def serving(refuse_chat: bool) -> Iterator[tuple[str, Posts]]:
    posts = Posts()
    server = silent_server(posts, refuse_chat=refuse_chat)
    thread = threading.Thread(target=server.serve_forever, name="silent-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", posts
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def silent() -> Iterator[tuple[str, Posts]]:
    yield from serving(refuse_chat=False)


@pytest.fixture
def refusing() -> Iterator[tuple[str, Posts]]:
    """A silent server that refuses every chat request as too large for its context."""
    yield from serving(refuse_chat=True)


def test_closing_the_counts_ends_the_one_in_flight_and_asks_no_more(
    silent: tuple[str, Posts],
) -> None:
    base_url, posts = silent
    counts = ServerCounts()
    provider = ProviderConfig(base_url=base_url, model="counted")
    request = [ChatMessage("user", "how many tokens am I?")]
    answers: list[int | None] = []
    asking = threading.Thread(target=lambda: answers.append(counts(provider, request, [])))
    asking.start()
    assert posts.wait("paths", 1)  # the server holds the count
    counts.close()
    asking.join(30.0)
    assert not asking.is_alive() and answers == [None]
    assert posts.wait("closed", 1)  # its connection was closed: the server can let it go
    assert counts(provider, request, []) is None  # and no count is asked any more
    with socket.create_connection(("127.0.0.1", int(base_url.split(":")[2].split("/")[0]))):
        pass  # the server still listens: it was never asked again
    assert posts.paths == ["/apply-template"] and counts.in_flight == 0


def test_a_quit_ends_the_count_the_gateway_asked_when_the_server_answered(
    silent: tuple[str, Posts],
) -> None:
    base_url, posts = silent
    gateway = Gateway(GatewayConfig(provider=ProviderConfig(base_url=base_url, model="counted")))
    gateway.session_create()
    gateway.server.check()  # as the desk does once it is up: the server answers
    assert posts.wait("paths", 1)  # the first request is being counted, on the server's thread
    report = gateway.shutdown(timeout_s=10)
    assert report.threads_left == []
    assert posts.wait("closed", 1)
    assert posts.paths == ["/apply-template"]  # and no /tokenize after the quit began


def test_a_user_stop_ends_the_count_a_turn_waits_for_and_the_turn_as_the_user_s(
    refusing: tuple[str, Posts],
) -> None:
    base_url, posts = refusing
    gateway = Gateway(GatewayConfig(provider=ProviderConfig(base_url=base_url, model="counted")))
    log = EventLog()
    gateway.subscribe(log)
    try:
        session = gateway.session_create()
        turn_id = gateway.prompt_submit(session, "how many tokens am I?").turn_id
        # refused as too large (and once more), the turn asks the server to count its prompt
        # alone (whether a summary could make room) and waits: the server never answers
        with posts.changed:
            assert posts.changed.wait_for(lambda: len(posts.paths) > 2, 30.0)
        assert posts.counts() == ["/apply-template"]
        stop = StopRequest.by_user(Surface.DESK_KEY, "Esc")
        assert gateway.session_interrupt(session, stop) == turn_id
        complete = log.complete(turn_id, timeout=30.0)
        assert (complete.status, complete.exit_reason) == ("interrupted", "interrupted_by_user")
        assert complete.stop is not None and complete.stop.surface == Surface.DESK_KEY.value
        assert posts.wait("closed", 1)  # the count's connection was closed
        # by the stop: a count that ran out of time would have asked /tokenize next
        assert posts.counts() == ["/apply-template"]
    finally:
        report = gateway.shutdown(timeout_s=10)
    assert report.threads_left == []
    assert posts.counts() == ["/apply-template"]  # nothing was counted after the stop
