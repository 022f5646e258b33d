"""The model servers a stop bench points desk at, each able to say when it saw the close.

Every server here answers :meth:`StreamServer.outcome`: for the first chat request made after a
:meth:`~StreamServer.mark`, when the server saw the client close the connection (a stop took
effect), or that the reply ran to its end (the stop did nothing), or that no request came. All
times are ``time.monotonic()`` seconds, which is system-wide on Linux, so they compare with the
bench's own stamps.

- :class:`DemoServer`: ``python -m demo_model`` in a process of its own; its request records
  carry ``peer_closed_at``.
- :class:`ReplayServer`: ``../shared/streams/replay.py``, llama.cpp's own server replayed byte
  for byte and gap for gap; its log carries ``peer_closed``.
- :class:`WatchedServer`: any real server (a ``llama-server``) behind a small TCP relay in this
  process that stamps the moment desk closed its side (a blocked ``recv`` returning end of file).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

REPLAY = Path(os.environ.get("DESK_REPLAY", "/work/shared/streams/replay.py"))
"""The replay server (``DESK_REPLAY`` overrides)."""

NEVER_SENT_S = 2.0
"""How long after the key a request that has not come counts as never sent, in seconds (a
bench that knows the turn has ended already may pass a shorter grace)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the server saw of one request.

    Attributes:
        kind: ``closed`` (the client closed it before the end), ``done`` (the reply ran to its
            end), ``never_sent`` (no request came).
        at: ``time.monotonic()`` of the close or the end (None for ``never_sent``).
    """

    kind: str
    at: float | None


class StreamServer(Protocol):
    """A model server a bench can ask about closes."""

    base_url: str

    def configure(self, rate: float, shape: str) -> None:
        """Stream at ``rate`` tokens/s in ``shape`` (servers that replay ignore it)."""
        ...

    def mark(self) -> int:
        """A position: :meth:`outcome` looks at requests made after it."""
        ...

    def outcome(
        self, mark: int, key_at: float, timeout_s: float, grace_s: float = NEVER_SENT_S
    ) -> Outcome | None:
        """The first chat request after ``mark``; None when it did not end in ``timeout_s``;
        ``never_sent`` when none came ``grace_s`` after ``key_at``."""
        ...

    def started(self, mark: int, timeout_s: float) -> float | None:
        """When the first chat request after ``mark`` reached the server (None: not within
        ``timeout_s``, or the server does not say)."""
        ...

    def stop(self) -> None:
        """Stop the server (and whatever the bench started for it)."""
        ...


class DemoServer:
    """``python -m demo_model`` in a process of its own, one SSE event per token."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "demo_model", "--port", "0", "--flush-each-token"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        self.root = self.base_url.removesuffix("/v1")
        self._client = httpx.Client(base_url=self.root, timeout=10.0, trust_env=False)

    def configure(self, rate: float, shape: str) -> None:
        """``POST /demo/config``: ``rate`` tokens/s, replies of ``shape``."""
        knobs = {
            "tokens_per_second": rate,
            "reply_shape": shape,
            "max_tokens": int(rate * 4) + 2000,  # longer than any press waits
            "n_ctx": 1_000_000_000,
            "flush_each_token": True,
        }
        self._client.post("/demo/config", json=knobs).raise_for_status()

    def _records(self, since: int) -> list[dict[str, Any]]:
        data = self._client.get("/demo/requests", params={"since": since}).json()
        return [r for r in data["requests"] if "chat" in r["path"]]

    def mark(self) -> int:
        """The id of the last request seen (0: none)."""
        data = self._client.get("/demo/requests").json()
        return max((int(r["id"]) for r in data["requests"]), default=0)

    def outcome(
        self, mark: int, key_at: float, timeout_s: float, grace_s: float = NEVER_SENT_S
    ) -> Outcome | None:
        """See :meth:`StreamServer.outcome`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            records = self._records(mark)
            done = [r for r in records if r["outcome"] != "running"]
            if done:
                if done[0]["peer_closed_at"] is not None:
                    return Outcome("closed", float(done[0]["peer_closed_at"]))
                return Outcome("done", float(done[0]["completed_at"]))
            if not records and time.monotonic() - key_at > grace_s:
                return Outcome("never_sent", None)
            time.sleep(0.01)
        return None

    def started(self, mark: int, timeout_s: float) -> float | None:
        """Not said by the demo model's records: None (presses count from Enter)."""
        return None

    def stop(self) -> None:
        """Stop the server."""
        self._client.close()
        self.proc.terminate()
        self.proc.wait(10.0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _EventLog:
    """JSON lines ``{"t", "event", "conn"}`` appended by a server; read from an offset."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.touch()

    def mark(self) -> int:
        return self.path.stat().st_size

    def events(self, mark: int) -> list[dict[str, Any]]:
        """The whole lines written since ``mark`` (a line still being written is left for the
        next read: parsed half written, it failed a bench run)."""
        with self.path.open("rb") as f:
            f.seek(mark)
            data = f.read()
        whole = data[: data.rfind(b"\n") + 1]
        return [json.loads(line) for line in whole.splitlines() if line.strip()]

    def started(self, mark: int, timeout_s: float) -> float | None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for event in self.events(mark):
                if event["event"] == "request_start":
                    return float(event["t"])
            time.sleep(0.002)
        return None

    def outcome(
        self, mark: int, key_at: float, timeout_s: float, grace_s: float = NEVER_SENT_S
    ) -> Outcome | None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            lines = self.events(mark)
            started = [e["conn"] for e in lines if e["event"] == "request_start"]
            if started:
                for event in lines:
                    if event["conn"] != started[0]:
                        continue
                    if event["event"] == "peer_closed":
                        return Outcome("closed", float(event["t"]))
                    if event["event"] == "request_done":
                        return Outcome("done", float(event["t"]))
            elif time.monotonic() - key_at > grace_s:
                return Outcome("never_sent", None)
            time.sleep(0.01)
        return None


def short_recording(events: int, out: Path) -> Path:
    """The recording next to :data:`REPLAY` cut to its headers, its first ``events`` writes
    and its last two (the ``finish_reason`` chunk and ``[DONE]``), at the recorded gaps: the
    same bytes in a short turn. Returns ``out``.

    Raises:
        OSError: the recording cannot be read or ``out`` written.
    """
    recording = json.loads((REPLAY.parent / "llama-server-fast.json").read_text())
    post = recording["post"]
    body = post[: 1 + events]
    at = body[-1][0]
    recording["post"] = body + [
        [at + 0.0005 * (i + 1), piece] for i, (_, piece) in enumerate(post[-2:])
    ]
    out.write_text(json.dumps(recording))
    return out


class ReplayServer:
    """``replay.py --log`` on a free port: llama-server's recorded stream to every POST.

    It runs in a session of its own, as a model server started from another terminal does:
    with Linux's autogroup scheduling a session shares the CPU as one, and in the bench's
    session the replay shared it with the bench's busy loops (``--hog``), so "the server saw
    the close" came 90-135 ms (p99) after desk had shut the socket, a delay of the bench's
    making (desk's own part, key read -> socket shut, was p99 20 ms in the same run).

    Args:
        events: when given, every POST gets only the first ``events`` writes of the stream
            and its end (:func:`short_recording`): short turns of the same bytes.
    """

    def __init__(self, events: int | None = None) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="desk-replay-"))
        self._log = _EventLog(self._dir / "replay.jsonl")
        port = _free_port()
        argv = [sys.executable, str(REPLAY), "--port", str(port), "--log", str(self._log.path)]
        if events is not None:
            argv += ["--recording", str(short_recording(events, self._dir / "short.json"))]
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        self.proc.stdout.readline()  # "replaying llama-server on ..." once it listens
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def configure(self, rate: float, shape: str) -> None:
        """Nothing to configure: the recording streams at its own pace (~1,000 events/s)."""

    def mark(self) -> int:
        """The log's size now."""
        return self._log.mark()

    def outcome(
        self, mark: int, key_at: float, timeout_s: float, grace_s: float = NEVER_SENT_S
    ) -> Outcome | None:
        """See :meth:`StreamServer.outcome`."""
        return self._log.outcome(mark, key_at, timeout_s, grace_s)

    def started(self, mark: int, timeout_s: float) -> float | None:
        """See :meth:`StreamServer.started`."""
        return self._log.started(mark, timeout_s)

    def stop(self) -> None:
        """Stop the replay server."""
        self.proc.terminate()
        self.proc.wait(10.0)


class WatchedServer:
    """A real server behind a relay on a free loopback port that logs like ``replay.py``.

    Each connection desk opens is relayed by two threads; the one reading desk's side stamps
    ``peer_closed`` when its blocked ``recv`` returns end of file (or an error) before the
    server's reply ended (``data: [DONE]`` seen, logged as ``request_done``). The relay closes
    the server's side at once, so the server frees its slot as it would have.

    Args:
        base_url: the real server's ``http://host:port/v1``.
    """

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._dir = Path(tempfile.mkdtemp(prefix="desk-watch-"))
        self._log = _EventLog(self._dir / "watch.jsonl")
        self._lock = threading.Lock()
        self._count = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        port = self._listener.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}{parts.path or '/v1'}"
        self._thread = threading.Thread(target=self._accept, name="relay", daemon=True)
        self._thread.start()

    def _say(self, event: str, conn: int) -> None:
        line = json.dumps({"t": time.monotonic(), "event": event, "conn": conn}) + "\n"
        with self._lock, self._log.path.open("a") as f:
            f.write(line)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._count += 1
            threading.Thread(
                target=self._relay, args=(client, self._count), name="relay-conn", daemon=True
            ).start()

    def _relay(self, client: socket.socket, conn: int) -> None:
        try:
            upstream = socket.create_connection(self._upstream)
        except OSError:
            client.close()
            return
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        state = {"post": False, "done": False}

        def down() -> None:  # server -> desk
            try:
                while chunk := upstream.recv(1 << 16):
                    if state["post"] and b"[DONE]" in chunk and not state["done"]:
                        state["done"] = True
                        self._say("request_done", conn)
                    client.sendall(chunk)
            except OSError:
                pass

        threading.Thread(target=down, name="relay-down", daemon=True).start()
        try:
            while chunk := client.recv(1 << 16):
                if chunk.startswith(b"POST"):
                    state["post"], state["done"] = True, False
                    self._say("request_start", conn)
                upstream.sendall(chunk)
        except OSError:
            pass
        if state["post"] and not state["done"]:
            self._say("peer_closed", conn)
        for sock in (upstream, client):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def configure(self, rate: float, shape: str) -> None:
        """Nothing to configure: the real server streams at its own pace."""

    def mark(self) -> int:
        """The log's size now."""
        return self._log.mark()

    def outcome(
        self, mark: int, key_at: float, timeout_s: float, grace_s: float = NEVER_SENT_S
    ) -> Outcome | None:
        """See :meth:`StreamServer.outcome`."""
        return self._log.outcome(mark, key_at, timeout_s, grace_s)

    def started(self, mark: int, timeout_s: float) -> float | None:
        """See :meth:`StreamServer.started`."""
        return self._log.started(mark, timeout_s)

    def stop(self) -> None:
        """Stop relaying (the real server is not ours to stop)."""
        self._listener.close()
