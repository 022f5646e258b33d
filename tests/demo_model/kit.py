"""Helpers for the demo model tests: SSE parsing and a raw-socket request."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

import httpx


def chat(prompt: str, **extra: Any) -> dict[str, Any]:
    """Return a chat-completion body with one user message."""
    return {"model": "demo", "messages": [{"role": "user", "content": prompt}], **extra}


@dataclass
class Stream:
    """A streamed reply, taken apart."""

    status: int
    headers: httpx.Headers
    lines: list[str] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)
    done: bool = False

    @property
    def content(self) -> str:
        return "".join(d.get("content") or "" for d in self.deltas)

    @property
    def reasoning(self) -> str:
        return "".join(d.get("reasoning_content") or "" for d in self.deltas)

    @property
    def deltas(self) -> list[dict[str, Any]]:
        return [c["delta"] for chunk in self.chunks for c in chunk["choices"]]

    @property
    def finish_reasons(self) -> list[str]:
        return [
            c["finish_reason"]
            for chunk in self.chunks
            for c in chunk["choices"]
            if c["finish_reason"] is not None
        ]

    @property
    def usages(self) -> list[tuple[int, dict[str, int]]]:
        """(index of the chunk, usage) for every chunk that carries usage."""
        return [(i, chunk["usage"]) for i, chunk in enumerate(self.chunks) if "usage" in chunk]


def parse_stream(response: httpx.Response) -> Stream:
    """Read a whole SSE response into a `Stream` (bad JSON lines are kept aside)."""
    stream = Stream(response.status_code, response.headers)
    for line in response.iter_lines():
        if not line:
            continue
        stream.lines.append(line)
        assert line.startswith("data: "), line
        data = line[len("data: ") :]
        if data == "[DONE]":
            stream.done = True
            continue
        try:
            stream.chunks.append(json.loads(data))
        except ValueError:
            stream.bad_lines.append(line)
    return stream


def post_stream(client: httpx.Client, body: dict[str, Any]) -> Stream:
    """POST a streaming chat completion and parse the whole answer."""
    with client.stream("POST", "/chat/completions", json={**body, "stream": True}) as response:
        return parse_stream(response)


class RawRequest:
    """A chat-completion request on a raw socket, so a test knows exactly when it closes."""

    def __init__(self, port: int, body: dict[str, Any], path: str = "/v1/chat/completions"):
        data = json.dumps(body).encode()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5.0)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self.sock.sendall(head.encode() + data)
        self.received = b""

    def read_until(self, marker: bytes) -> bytes:
        """Receive until ``marker`` has arrived (5 s socket timeout); return all received."""
        while marker not in self.received:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError(f"closed before {marker!r}: {self.received!r}")
            self.received += data
        return self.received

    def close(self) -> float:
        """Close the socket; return ``time.monotonic()`` taken just before closing."""
        closed_at = time.monotonic()
        self.sock.close()
        return closed_at
