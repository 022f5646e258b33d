"""``desk serve`` with real HTTP clients: SSE runs, disconnects, stops, refusals."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from starlette.applications import Starlette

from agent.provider.client import ProviderConfig
from contract.events import GatewayEvent, MessageComplete
from demo_model.server import DemoModelServer
from tests.support import EventLog, cut_short
from tests.wire.kit import slow_reply
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.wire.host_check import HostCheck
from tui_gateway.wire.http_server import HttpServer

TOKEN = "test-token"
STORY = "tell me a story about a lighthouse"


@dataclass
class Served:
    gateway: Gateway
    log: EventLog
    server: HttpServer
    client: httpx.Client


@pytest.fixture
def served(provider: ProviderConfig) -> Iterator[Served]:
    gateway = Gateway(GatewayConfig(provider=provider))
    log = EventLog()
    gateway.subscribe(log)
    server = HttpServer(gateway, TOKEN).start()
    client = httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10.0
    )
    try:
        yield Served(gateway, log, server, client)
    finally:
        client.close()
        server.stop()


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, object]]]:
    """(event name, data) of each server-sent event."""
    name = "message"
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            yield name, json.loads(line[len("data: ") :])
            name = "message"


def test_a_run_streams_its_events_until_its_complete(served: Served) -> None:
    session = served.client.post("/v1/sessions", json={"title": "t"}).json()["session_id"]
    body = {"prompt": "reply with exactly: the quick brown fox"}
    with served.client.stream("POST", f"/v1/sessions/{session}/runs", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        run_id = response.headers["x-desk-run-id"]
        events = list(sse_events(response.iter_lines()))
    assert events[0] == ("run.accepted", {"run_id": run_id, "session_id": session, "queued": False})
    names = [name for name, _ in events[1:]]
    if names[0] == "session.created":
        # The session's creation is a turn-less event of the session, which every run of it
        # streams; on a loaded machine it can still be on its way when the run starts
        # listening. It may come first, never among the run's own events.
        assert events[1][1]["session_id"] == session
        names = names[1:]
    assert names[0] == "message.start" and names[-1] == "message.complete"
    assert "session.created" not in names
    text = "".join(
        str(data["payload"]["text"])  # type: ignore[index]
        for name, data in events
        if name == "message.delta"
    )
    assert text == "the quick brown fox"
    complete = events[-1][1]["payload"]
    assert complete["exit_reason"] == "completed"  # type: ignore[index]
    messages = served.client.get(f"/v1/sessions/{session}/messages").json()["messages"]
    assert messages == [
        {"role": "user", "content": "reply with exactly: the quick brown fox"},
        {"role": "assistant", "content": "the quick brown fox"},
    ]
    replay = served.client.get(f"/v1/sessions/{session}/events", params={"since": 0}).json()
    assert not replay["truncated"] and replay["events"][-1]["type"] == "message.complete"


def test_a_client_that_disconnects_mid_run_is_a_system_stop(
    served: Served, demo_server: DemoModelServer
) -> None:
    slow_reply(demo_server)
    session = served.client.post("/v1/sessions").json()["session_id"]
    with served.client.stream(
        "POST", f"/v1/sessions/{session}/runs", json={"prompt": STORY}
    ) as response:
        run_id = response.headers["x-desk-run-id"]
        for name, _data in sse_events(response.iter_lines()):
            if name == "message.delta":
                break
    # Leaving the block closed the connection mid-stream.
    cut_short(demo_server)
    complete = served.log.complete(run_id)
    assert complete.exit_reason == "interrupted_by_system(api.disconnect)"
    assert complete.stop is not None and complete.stop.issuer == "system"
    assert complete.stop.surface == "api.disconnect"
    assert served.gateway.worker_threads() == []


def test_the_stop_route_is_a_user_stop(served: Served, demo_server: DemoModelServer) -> None:
    slow_reply(demo_server)
    session = served.client.post("/v1/sessions").json()["session_id"]
    streamed: list[tuple[str, dict[str, object]]] = []
    started = threading.Event()
    run: dict[str, str] = {}

    def watch() -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10.0) as c:
            url = f"{served.server.base_url}/v1/sessions/{session}/runs"
            with c.stream("POST", url, json={"prompt": STORY}) as response:
                run["id"] = response.headers["x-desk-run-id"]
                for item in sse_events(response.iter_lines()):
                    streamed.append(item)
                    if item[0] == "message.delta":
                        started.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    assert started.wait(10.0)
    answer = served.client.post(f"/v1/runs/{run['id']}/stop", json={"reason": "enough"})
    assert answer.status_code == 200 and answer.json() == {"run_id": run["id"], "stopped": True}
    cut_short(demo_server)
    watcher.join(10.0)
    name, data = streamed[-1]  # the stream ended on its own, with the outcome
    assert name == "message.complete"
    payload = data["payload"]
    assert payload["exit_reason"] == "interrupted_by_user"  # type: ignore[index]
    assert payload["stop"]["surface"] == "api.stop"  # type: ignore[index]
    assert payload["stop"]["reason"] == "enough"  # type: ignore[index]
    again = served.client.post(f"/v1/runs/{run['id']}/stop")
    assert again.json()["stopped"] is False


def test_a_queued_run_is_removed_by_its_stop(served: Served, demo_server: DemoModelServer) -> None:
    slow_reply(demo_server)
    session = served.client.post("/v1/sessions").json()["session_id"]
    served.gateway.prompt_submit(session, STORY)
    with served.client.stream(
        "POST", f"/v1/sessions/{session}/runs", json={"prompt": "reply with exactly: later"}
    ) as response:
        events = sse_events(response.iter_lines())
        name, accepted = next(events)
        assert name == "run.accepted" and accepted["queued"] is True
        stop = served.client.post(f"/v1/runs/{accepted['run_id']}/stop")
        assert stop.json()["stopped"] is True
        # the session's creation and the running turn's context.window may be delivered at any
        # moment (each subscriber's delivery thread has its own pace): they say nothing of this run
        unrelated = {"context.window", "session.created"}
        names = (name for name, _data in events if name not in unrelated)
        assert next(names) == "prompt.queued"
        assert next(names) == "prompt.dropped"


def test_a_wrong_or_missing_token_is_401_on_every_route(served: Served) -> None:
    session = served.client.post("/v1/sessions").json()["session_id"]
    before = served.gateway.live_sessions()
    routes = [
        ("POST", "/v1/sessions"),
        ("GET", "/v1/sessions"),
        ("POST", f"/v1/sessions/{session}/runs"),
        ("GET", f"/v1/sessions/{session}/messages"),
        ("GET", f"/v1/sessions/{session}/events"),
        ("POST", "/v1/runs/x/stop"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
        ("POST", "/v1/rpc"),
        ("GET", "/nowhere"),
    ]
    bad_headers: list[dict[str, str]] = [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
    ]
    for method, path in routes:
        for headers in bad_headers:
            response = httpx.request(
                method,
                served.server.base_url + path,
                headers=headers,
                json={"prompt": "reply with exactly: no"},
            )
            assert response.status_code == 401, (method, path, headers)
            assert response.headers["www-authenticate"] == "Bearer"
    assert served.gateway.live_sessions() == before
    assert served.log.of_type(MessageComplete) == []


def test_refused_requests_change_nothing(served: Served, demo_server: DemoModelServer) -> None:
    session = served.client.post("/v1/sessions").json()["session_id"]
    assert served.log.wait_for(lambda events: _created(events, session))
    before = served.gateway.live_sessions()
    events_before = len(served.log.events)
    huge = {"prompt": "x" * 1_000_001}
    c = served.client
    checks = [
        (c.post(f"/v1/sessions/{session}/runs", json=huge), 413),
        (c.post(f"/v1/sessions/{session}/runs", content=_chunks(1_100_000)), 413),
        (c.post("/v1/sessions", content=b'{"title": '), 400),
        (c.post(f"/v1/sessions/{session}/runs", content=b"{nope"), 400),
        (c.post(f"/v1/sessions/{session}/runs", json=["not", "an", "object"]), 400),
        (c.post(f"/v1/sessions/{session}/runs", json={"prompt": 3}), 400),
        (c.post(f"/v1/sessions/{session}/runs", json={"prompt": "  "}), 400),
        (c.post("/v1/sessions/unknown/runs", json={"prompt": "hi"}), 404),
        (c.get("/v1/sessions/unknown/messages"), 404),
        (c.get("/v1/sessions/unknown/events"), 404),
        (c.get(f"/v1/sessions/{session}/events", params={"since": "-1"}), 400),
        (c.post("/v1/runs/unknown/stop"), 404),
        (c.post("/v1/chat/completions", json={"messages": []}), 400),
        (c.post("/v1/chat/completions", content=b"[1,"), 400),
        (c.get("/v1/unknown"), 404),
    ]
    for response, status in checks:
        assert response.status_code == status, (response.request.url, response.text)
        assert response.json()["error"]["code"] == status
    assert served.gateway.live_sessions() == before
    # A marker session: once its event arrived, any event a refused request made has too.
    marker = served.client.post("/v1/sessions").json()["session_id"]
    assert served.log.wait_for(lambda events: _created(events, marker))
    assert len(served.log.events) == events_before + 1
    assert demo_server.records.list() == []


def _created(events: list[GatewayEvent], session_id: str) -> bool:
    return any(e.type == "session.created" and e.session_id == session_id for e in events)


def _chunks(size: int) -> Iterator[bytes]:
    """A body without a Content-Length (chunked), larger than the limit."""
    yield b'{"prompt": "'
    for _ in range(size // 10_000):
        yield b"x" * 10_000
    yield b'"}'


def test_json_rpc_over_http(served: Served) -> None:
    answer = served.client.post(
        "/v1/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "session.create", "params": {}}
    ).json()
    session = answer["result"]["session_id"]
    assert session in served.gateway.live_sessions()
    wrong = served.client.post(
        "/v1/rpc",
        json={
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session.interrupt",
            "params": {
                "session_id": session,
                "stop": {"issuer": "user", "surface": "inactivity", "reason": "x"},
            },
        },
    ).json()
    assert wrong["error"]["code"] == -32602
    assert "is a system surface" in wrong["error"]["message"]


def test_a_host_that_is_not_this_server_is_refused_before_anything_runs(served: Served) -> None:
    port = served.server.port
    before = served.gateway.live_sessions()
    for host in (
        f"evil.example:{port}",  # a page that rebound its own name to 127.0.0.1
        f"localhost.evil.example:{port}",
        f"127.0.0.1:{port + 1}",  # the right address, another port
        "127.0.0.1",  # no port (only port 80 may leave it out)
        f"localhost:{port}x",
    ):
        answer = served.client.post("/v1/sessions", headers={"Host": host})
        assert answer.status_code == 421, host
        [line] = answer.text.splitlines()
        assert "does not answer for the host" in line and json.dumps(host) in line
    assert served.gateway.live_sessions() == before
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
        assert served.client.get("/v1/models", headers={"Host": host}).status_code == 200, host


def test_a_server_on_every_interface_answers_for_the_address_it_was_reached_by() -> None:
    # desk serve --host 0.0.0.0, reached from another machine at 192.168.1.5 (no real bind).
    check = HostCheck(Starlette(), host="0.0.0.0")
    server = ("192.168.1.5", 8765)
    assert check.allows("192.168.1.5:8765", server)
    assert check.allows("localhost:8765", server)
    assert not check.allows("10.0.0.9:8765", server)  # not the address the request came to
    assert not check.allows("desk.evil.example:8765", server)
    assert not check.allows("192.168.1.5:8766", server)
    assert not check.allows(None, server)
    named = HostCheck(Starlette(), host="devbox.lan")
    assert named.allows("DEVBOX.lan:8765", server) and not named.allows("devbox.lan", server)


def test_a_steer_over_http_reaches_the_running_run_as_the_user(
    served: Served, demo_server: DemoModelServer
) -> None:
    # slow enough (about a second) that the steer comes while the first reply streams, however
    # busy the machine: a steer that finds the run ended is not a steer
    demo_server.configure(tokens_per_second=5.0)
    session = served.client.post("/v1/sessions", json={}).json()["session_id"]
    body = {"prompt": "reply with exactly: one two three four five"}
    with served.client.stream("POST", f"/v1/sessions/{session}/runs", json=body) as response:
        lines = response.iter_lines()
        for name, _data in sse_events(lines):
            if name == "message.delta":
                break
        steer = served.client.post(
            f"/v1/sessions/{session}/steer", json={"text": "reply with exactly: six"}
        )
        assert steer.status_code == 200 and steer.json()["steered"] is True
        rest = [(name, data) for name, data in sse_events(lines)]
    names = [name for name, _ in rest]
    assert "prompt.steered" in names and names[-1] == "message.complete"
    steered = next(data for name, data in rest if name == "prompt.steered")
    assert steered["payload"]["surface"] == "api.steer"  # type: ignore[index]
    assert rest[-1][1]["payload"]["text"] == "six"  # type: ignore[index]
    empty = served.client.post(f"/v1/sessions/{session}/steer", json={"text": " "})
    assert empty.status_code == 400
    unknown = served.client.post("/v1/sessions/nope/steer", json={"text": "x"})
    assert unknown.status_code == 404
