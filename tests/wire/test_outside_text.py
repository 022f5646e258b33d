"""Lone surrogates and deep JSON from a client, over every wire: answered, saved, served on.

A client may send ``"\\ud800"`` (valid JSON, not valid text) in a prompt or a title, over the
stdio wire, the HTTP API, JSON-RPC over HTTP or the OpenAI-compatible facade; before, it killed
the store's writer (and the stdio writer) and the gateway answered nothing more. And JSON nested
100,000 deep was an HTTP 500 with a traceback. Each case here goes through the real wire, to a
real gateway, demo model and SQLite database.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from contract.events import StoreFailed
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tests.wire.kit import ROOT, Child, RawStdio, child_env, gateway_cmd, wire_cmd
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.wire.http_server import HttpServer

TOKEN = "outside-text-token"
SHOWN = "\ufffd|\ufffd|\ufffd\ufffd|\U0001f600"
"""What the demo model's ``surrogate`` fault is shown and saved as."""
DEEP = 100_000


def escaped(value: object) -> bytes:
    """JSON with every non-ASCII character escaped, as a client may send it (lone surrogates
    included; httpx's own encoder would refuse them)."""
    return json.dumps(value).encode("ascii")


def completed_text(raw: RawStdio, turn_id: str) -> str:
    def done(m: dict[str, object]) -> bool:
        params = m.get("params")
        return (
            isinstance(params, dict)
            and params.get("type") == "message.complete"
            and isinstance(params.get("payload"), dict)
            and params["payload"].get("turn_id") == turn_id
        )

    message = raw.wait_message(done, 30.0)
    assert message is not None, f"no message.complete for {turn_id}"
    return str(message["params"]["payload"]["text"])  # type: ignore[index]


def submit(raw: RawStdio, session: str, text: str) -> str:
    answer = raw.call("prompt.submit", {"session_id": session, "text": text})
    return str(answer["result"]["turn_id"])


def test_stdio_a_prompt_a_title_and_a_reply_with_lone_surrogates_are_saved_and_answered(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    raw = RawStdio(gateway_cmd(provider, "--db", str(db)))
    try:
        session = raw.call("session.create", {"title": "t\ud800"})["result"]["session_id"]
        turn = submit(raw, session, "reply with exactly: a\udfffb")
        assert completed_text(raw, turn) == "a\ufffdb"
        demo_server.configure(fault="surrogate", fault_after_tokens=1, fault_times=1)
        turn = submit(raw, session, "reply with exactly: before after")
        assert completed_text(raw, turn) == f"before {SHOWN}after"
        later = submit(raw, session, "reply with exactly: still answered")
        assert completed_text(raw, later) == "still answered"
        listed = raw.call("session.list")["result"]["sessions"]
        assert [s["title"] for s in listed if s["session_id"] == session] == ["t\ufffd"]
        assert raw.close() == 0
    finally:
        raw.child.kill()
    with SqliteStore(db) as store:
        assert [t.status for t in store.turns.list_turns(session)] == ["completed"] * 3
        texts = [m.content for m in store.transcript.load_history(session)]
        assert texts[:4] == [
            "reply with exactly: a\ufffdb",
            "a\ufffdb",
            "reply with exactly: before after",
            f"before {SHOWN}after",
        ]


def test_stdio_json_nested_too_deeply_is_an_invalid_request_and_the_next_is_answered(
    provider: ProviderConfig,
) -> None:
    raw = RawStdio(gateway_cmd(provider))
    try:
        raw.send_raw(b"[" * DEEP + b"]" * DEEP + b"\n")
        refused = raw.wait_message(lambda m: "error" in m and m.get("id") is None)
        assert refused is not None and refused["error"]["code"] == -32600
        assert "nested too deeply" in refused["error"]["message"]
        assert "result" in raw.call("session.list")
        assert raw.close() == 0
    finally:
        raw.child.kill()


@dataclass
class Served:
    gateway: Gateway
    log: EventLog
    client: httpx.Client
    db: Path


@pytest.fixture
def served(provider: ProviderConfig, tmp_path: Path) -> Iterator[Served]:
    db = tmp_path / "desk.db"
    gateway = Gateway(GatewayConfig(provider=provider), store=SqliteStore(db))
    log = EventLog()
    gateway.subscribe(log)
    server = HttpServer(gateway, TOKEN).start()
    client = httpx.Client(
        base_url=server.base_url,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        timeout=30.0,
    )
    try:
        yield Served(gateway, log, client, db)
    finally:
        client.close()
        server.stop()
    assert log.of_type(StoreFailed) == []


def rpc(served: Served, method: str, params: dict[str, object]) -> dict[str, object]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = served.client.post("/v1/rpc", content=escaped(body))
    assert answer.status_code == 200
    result = answer.json()
    assert isinstance(result, dict)
    return result


def test_http_rpc_a_prompt_and_a_title_with_lone_surrogates(served: Served) -> None:
    created = rpc(served, "session.create", {"title": "t\udc80"})
    session = created["result"]["session_id"]  # type: ignore[index]
    turn = rpc(
        served, "prompt.submit", {"session_id": session, "text": "reply with exactly: x\ud800"}
    )
    turn_id = turn["result"]["turn_id"]  # type: ignore[index]
    assert served.log.complete(turn_id, timeout=30).text == "x\ufffd"
    listed = rpc(served, "session.list", {})["result"]["sessions"]  # type: ignore[index]
    assert [s["title"] for s in listed if s["session_id"] == session] == ["t\ufffd"]
    history = served.client.get(f"/v1/sessions/{session}/messages").json()["messages"]
    assert [m["content"] for m in history] == ["reply with exactly: x\ufffd", "x\ufffd"]


def test_http_a_run_with_a_lone_surrogate_streams_and_is_saved(served: Served) -> None:
    session = served.client.post("/v1/sessions", content=escaped({"title": "r\ud800"})).json()
    assert session["title"] == "r\ufffd"
    body = escaped({"prompt": "reply with exactly: y\ud800"})
    with served.client.stream(
        "POST", f"/v1/sessions/{session['session_id']}/runs", content=body
    ) as run:
        assert run.status_code == 200
        text = "".join(run.iter_text())
    assert "y\ufffd" in text
    served.gateway.shutdown(timeout_s=10)
    with SqliteStore(served.db) as store:
        history = store.transcript.load_history(session["session_id"])
        assert [m.content for m in history] == ["reply with exactly: y\ufffd", "y\ufffd"]


def test_the_openai_facade_takes_a_lone_surrogate(served: Served) -> None:
    body = {
        "model": "demo",
        "messages": [{"role": "user", "content": "reply with exactly: z\ud800"}],
    }
    answer = served.client.post("/v1/chat/completions", content=escaped(body))
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "z\ufffd"
    again = {"model": "demo", "messages": [{"role": "user", "content": "reply with exactly: ok"}]}
    answer = served.client.post("/v1/chat/completions", content=escaped(again))
    assert answer.json()["choices"][0]["message"]["content"] == "ok"


def test_http_rpc_json_nested_too_deeply_is_an_invalid_request(served: Served) -> None:
    for body in (b"[" * DEEP + b"]" * DEEP, b'{"a":' * DEEP + b"1" + b"}" * DEEP):
        answer = served.client.post("/v1/rpc", content=body)
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error["code"] == -32600 and "nested too deeply" in error["message"]
    # deep, but within what the parser follows: still an answer, never a 500
    body = {"jsonrpc": "2.0", "id": 7, "method": "session.list", "params": {"limit": 1}}
    nested: object = body
    for _ in range(900):
        nested = [nested]
    answer = served.client.post("/v1/rpc", content=json.dumps(nested))
    assert answer.status_code in (200, 400) and "error" in answer.text
    assert rpc(served, "session.list", {})["result"] is not None


def test_desk_run_prints_and_saves_a_reply_with_lone_surrogates(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    db = tmp_path / "desk.db"
    demo_server.configure(fault="surrogate", fault_after_tokens=1, fault_times=1)
    child = Child(wire_cmd("run", provider, "--db", str(db), "reply with exactly: before after"))
    assert child.wait(30) == 0
    assert child.out.wait_closed().decode("utf-8") == f"before {SHOWN}after\n"
    with SqliteStore(db) as store:
        (turn,) = store.turns.list_turns(store.sessions.list_sessions(1)[0].id)
        assert turn.status == "completed"


def test_desk_run_takes_a_prompt_argument_that_is_not_utf8(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    """Python reads the byte 0xFF of an argument as U+DCFF (``surrogateescape``)."""
    argv: list[str | bytes] = [*wire_cmd("run", provider, "--db", str(tmp_path / "desk.db"))]
    argv.append(b"reply with exactly: a\xffb")
    done = subprocess.run(argv, capture_output=True, env=child_env(), cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("utf-8") == "a\ufffdb\n"
