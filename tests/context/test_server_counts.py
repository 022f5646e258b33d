"""A count of the server's (llama.cpp ``/apply-template`` + ``/tokenize``) never holds a quit:
the gateway's shutdown ends the counts in flight (their connections closed) and asks no more.

The server here is a real HTTP server on loopback that lists a model and its window, and takes
every POST without ever answering it, as a busy server (or one that streams a reply to every
POST) does for seconds: it records each POST's path and when the client closed it.
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


def silent_server(posts: Posts) -> ThreadingHTTPServer:
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


@pytest.fixture
def silent() -> Iterator[tuple[str, Posts]]:
    posts = Posts()
    server = silent_server(posts)
    thread = threading.Thread(target=server.serve_forever, name="silent-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", posts
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


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
