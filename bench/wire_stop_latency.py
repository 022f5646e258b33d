"""How fast a stop reaches the model server through each way in: the figures the tests do not
assert (they check that the close cut the reply short; how fast it came is measured here).

For every surface it runs N stops of a reply streaming from the demo model (40 tokens/s) and
measures, from the moment the stop was made (the signal sent, the request written, the key
byte written, the connection closed) to the moment the model server noticed the closed
connection (its own record; both sides on the system-wide monotonic clock):

- ``desk_run_sigint`` / ``desk_run_sigterm``: ``desk run`` as a child process, sent a signal;
- ``stdio_interrupt`` / ``stdio_eof``: ``desk gateway --stdio``: ``session.interrupt``, and the
  frontend closing stdin;
- ``http_stop_route`` / ``sse_disconnect`` / ``openai_stream_closed``: ``desk serve``'s stop
  route, an SSE client leaving mid-run, an OpenAI client closing its stream;
- ``pty_esc``: the desk in a pseudo-terminal, the Esc byte written;
- ``server_notice`` (the demo server itself): a raw client socket closed mid-stream -> the
  server's ``peer_closed_at``, and ``slot_free_after_close``: -> its slot released.

Target (DESIGN.md): the server sees the close within 100 ms in every case. Prints JSON.
Usage::

    .venv/bin/python bench/wire_stop_latency.py [--stops 20] [--only NAME...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from stats import percentiles  # noqa: E402

from agent.provider.client import ProviderConfig  # noqa: E402
from agent.stops import StopRequest, Surface  # noqa: E402
from contract.events import MessageDelta  # noqa: E402
from demo_model.config import DemoConfig  # noqa: E402
from demo_model.server import DemoModelServer  # noqa: E402
from tests.demo_model.kit import RawRequest, chat  # noqa: E402
from tests.desk.test_pty_stop import desk_in_pty, start_streaming  # noqa: E402
from tests.support import EventLog  # noqa: E402
from tests.wire.kit import ROOT, Child, child_env, gateway_cmd, wire_cmd  # noqa: E402
from tui_gateway.gateway import Gateway, GatewayConfig  # noqa: E402
from tui_gateway.wire.client import RemoteGateway  # noqa: E402
from tui_gateway.wire.http_server import HttpServer  # noqa: E402

STORY = "tell me a story about a lighthouse"
TOKEN = "bench-token"


def close_ms(server: DemoModelServer, since: float) -> float:
    """Milliseconds from ``since`` until the server saw the last request's connection close."""
    record = server.records.wait_for_record(lambda r: r.peer_closed_at is not None, 10.0)
    assert record is not None and record.peer_closed_at is not None, "no close seen"
    return (record.peer_closed_at - since) * 1000.0


def streaming(server: DemoModelServer) -> None:
    """Wait until the server streams the reply of its newest request."""
    assert server.records.wait_for(lambda rs: bool(rs) and rs[-1].tokens_generated >= 2, 20)


def desk_run(server: DemoModelServer, sig: signal.Signals) -> float:
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    child = Child(wire_cmd("run", provider, STORY))
    try:
        assert child.out.wait_for(lambda data: len(data) > 20, 20.0)
        sent = time.monotonic()
        child.proc.send_signal(sig)
        child.wait()
        return close_ms(server, sent)
    finally:
        child.kill()


def stdio(server: DemoModelServer, eof: bool) -> float:
    provider = ProviderConfig(base_url=server.base_url, model="demo")
    remote = RemoteGateway(gateway_cmd(provider), env=child_env(), cwd=ROOT)
    try:
        log = EventLog()
        remote.subscribe(log)
        session = remote.session_create()
        remote.prompt_submit(session, STORY)
        assert log.wait_for(lambda ev: any(isinstance(e.payload, MessageDelta) for e in ev), 20)
        if eof:
            sent = time.monotonic()
            remote.disconnect()
        else:
            stop = StopRequest.by_user(Surface.DESK_KEY)
            sent = stop.requested_at
            remote.session_interrupt(session, stop)
        return close_ms(server, sent)
    finally:
        remote.shutdown()


class Served:
    """``desk serve``'s HTTP server over a gateway, in this process."""

    def __init__(self, server: DemoModelServer) -> None:
        provider = ProviderConfig(base_url=server.base_url, model="demo")
        self.gateway = Gateway(GatewayConfig(provider=provider))
        self.http = HttpServer(self.gateway, TOKEN).start()
        self.client = httpx.Client(
            base_url=self.http.base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=20
        )

    def close(self) -> None:
        self.client.close()
        self.http.stop()
        self.gateway.shutdown(timeout_s=5)


def http_stop_route(served: Served, server: DemoModelServer) -> float:
    session = served.client.post("/v1/sessions").json()["session_id"]
    run: dict[str, str] = {}
    started = threading.Event()

    def watch() -> None:
        url = f"/v1/sessions/{session}/runs"
        with served.client.stream("POST", url, json={"prompt": STORY}) as response:
            run["id"] = response.headers["x-desk-run-id"]
            for line in response.iter_lines():
                if line.startswith("event: message.delta"):
                    started.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert started.wait(20)
    sent = time.monotonic()
    served.client.post(f"/v1/runs/{run['id']}/stop", json={"reason": "bench"})
    took = close_ms(server, sent)
    watcher.join(10)
    return took


def sse_disconnect(served: Served, server: DemoModelServer) -> float:
    session = served.client.post("/v1/sessions").json()["session_id"]
    url = f"/v1/sessions/{session}/runs"
    with served.client.stream("POST", url, json={"prompt": STORY}) as response:
        for line in response.iter_lines():
            if line.startswith("event: message.delta"):
                break
        sent = time.monotonic()
    return close_ms(server, sent)


def openai_stream_closed(served: Served, server: DemoModelServer) -> float:
    api = openai.OpenAI(base_url=served.http.base_url + "/v1", api_key=TOKEN, max_retries=0)
    stream = api.chat.completions.create(
        model="demo", messages=[{"role": "user", "content": STORY}], stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    sent = time.monotonic()
    stream.close()
    return close_ms(server, sent)


def pty_esc(server: DemoModelServer) -> float:
    with desk_in_pty(server) as (proc, screen):
        start_streaming(server, screen)
        sent = time.monotonic()
        screen.write(b"\x1b")
        took = close_ms(server, sent)
        screen.wait_for(b"stopped by you", timeout_s=10.0)
        screen.write(b"\x11")  # Ctrl+Q
        proc.wait(timeout=10.0)
        return took


def server_notice(server: DemoModelServer) -> tuple[float, float]:
    last = server.records.last()
    before = last.id if last is not None else 0
    request = RawRequest(server.port, chat("stream to me", stream=True))
    request.read_until(b'"content":')
    closed = request.close()
    record = server.records.wait_for_record(
        lambda r: r.id > before and r.slot_released_at is not None, 10.0
    )
    assert record is not None and record.peer_closed_at is not None
    assert record.slot_released_at is not None
    return (record.peer_closed_at - closed) * 1000.0, (record.slot_released_at - closed) * 1000.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--stops", type=int, default=20, help="stops per surface")
    parser.add_argument("--only", nargs="*", default=None, help="surfaces to run")
    args = parser.parse_args(argv)
    home = tempfile.TemporaryDirectory(prefix="desk-bench-")  # never the person's own files
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        os.environ[name] = str(Path(home.name) / name.lower())
    server = DemoModelServer(DemoConfig(tokens_per_second=40.0, max_tokens=2000, slots=2))
    server.start()
    served = Served(server)
    cases: dict[str, Callable[[], float]] = {
        "desk_run_sigint": lambda: desk_run(server, signal.SIGINT),
        "desk_run_sigterm": lambda: desk_run(server, signal.SIGTERM),
        "stdio_interrupt": lambda: stdio(server, eof=False),
        "stdio_eof": lambda: stdio(server, eof=True),
        "http_stop_route": lambda: http_stop_route(served, server),
        "sse_disconnect": lambda: sse_disconnect(served, server),
        "openai_stream_closed": lambda: openai_stream_closed(served, server),
        "pty_esc": lambda: pty_esc(server),
    }
    results: dict[str, object] = {"stops_per_surface": args.stops, "target_ms": 100.0}
    try:
        for name, case in cases.items():
            if args.only and name not in args.only:
                continue
            figures = []
            for _ in range(args.stops):
                figures.append(case())
                server.records.clear()
            results[name] = {"stop_to_server_close_ms": percentiles(figures)}
        if not args.only or "server_notice" in args.only:
            notices = [server_notice(server) for _ in range(args.stops)]
            results["server_notice"] = {
                "close_to_noticed_ms": percentiles([n for n, _ in notices]),
                "close_to_slot_free_ms": percentiles([s for _, s in notices]),
            }
    finally:
        served.close()
        server.stop()
        home.cleanup()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
