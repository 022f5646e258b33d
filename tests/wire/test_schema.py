"""docs/protocol.schema.json: generated from the contract, and true to what the wire carries.

The schema is checked by an independent validator (``jsonschema``) against every line of a real
stdio session, in both directions, and against params the gateway refuses.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

import contract as c
from agent.provider.client import ProviderConfig
from agent.stops import Issuer, Surface
from contract.events import EVENT_TYPES, GatewayEvent, Payload
from demo_model.server import DemoModelServer
from tests.wire.kit import ROOT, RawStdio, child_env, gateway_cmd, payloads
from tui_gateway.wire.contract_docs import SCHEMA_COMMAND
from tui_gateway.wire.contract_schema import SCHEMA_ID, schema_text

DOC = ROOT / "docs" / "protocol.schema.json"
SCHEMA: dict[str, Any] = json.loads(DOC.read_text(encoding="utf-8"))
REGISTRY: Registry[Any] = Registry().with_resource(SCHEMA_ID, Resource.from_contents(SCHEMA))


def validator(pointer: str = "") -> Draft202012Validator:
    """A validator of the schema's root, or of the part at ``pointer`` (``/methods/x/params``)."""
    return Draft202012Validator({"$ref": f"{SCHEMA_ID}#{pointer}"}, registry=REGISTRY)


ROOT_CHECK = validator()


def problems(check: Draft202012Validator, value: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in check.iter_errors(value)]


def test_docs_protocol_schema_json_is_generated_from_the_contract() -> None:
    assert DOC.read_text(encoding="utf-8") == schema_text(), (
        f"docs/protocol.schema.json and the contract drifted apart; regenerate it with "
        f"`{SCHEMA_COMMAND}`"
    )
    out = subprocess.run(
        [sys.executable, "-m", "tui_gateway.wire.contract_docs", "--schema"],
        capture_output=True,
        check=True,
        cwd=ROOT,
        env=child_env(),
        timeout=60,
    )
    assert out.stdout.decode("utf-8") == schema_text()
    assert out.stderr == b""


def test_it_is_a_2020_12_schema_of_every_method_and_event() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(SCHEMA["methods"]) == {m.name for m in c.METHODS}
    assert set(SCHEMA["events"]) == {cls.TYPE for cls in EVENT_TYPES}
    assert set(SCHEMA["notifications"]) == {n.name for n in c.NOTIFICATIONS}
    defs = SCHEMA["$defs"]
    assert defs["Surface"]["enum"] == [s.value for s in Surface]
    assert defs["Issuer"]["enum"] == [i.value for i in Issuer]
    for method in c.METHODS:  # strict params are closed; results are read leniently: open
        params = defs[method.params.__name__]
        assert params["additionalProperties"] is False, method.name
        assert "additionalProperties" not in defs[method.result.__name__], method.name
        required = {
            f.name
            for f in dataclasses.fields(method.params)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        assert set(params.get("required", [])) == required, method.name
    assert defs["StopParams"]["additionalProperties"] is False
    assert "hard" not in defs["StopParams"]["properties"]


def test_a_class_both_payload_and_result_gets_both_shapes() -> None:
    status = {"state": "ready", "base_url": "http://127.0.0.1:1/v1", "model": "m", "models": ["m"]}
    event = validator("/events/server.status")
    assert problems(event, {**status, "version": c.PROTOCOL_VERSION}) == []
    assert problems(event, status) != []  # an event's payload carries its version
    result = validator("/methods/server.status/result")
    assert problems(result, status) == []  # a result does not
    assert "version" not in SCHEMA["$defs"]["ServerStatus"]["properties"]


@pytest.mark.parametrize(
    "params",
    [
        {"session_id": "s", "stop": {"issuer": "user", "surface": "desk.key", "reason": "r"}},
        {
            "session_id": "s",
            "turn_id": None,
            "stop": {"issuer": "system", "surface": "inactivity", "reason": "r"},
        },
    ],
)
def test_a_nested_stop_is_valid(params: dict[str, Any]) -> None:
    assert problems(validator("/methods/session.interrupt/params"), params) == []


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("session.interrupt", {"session_id": "s", "issuer": "user", "surface": "desk.key"}),
        ("session.interrupt", {"session_id": "s"}),
        (
            "session.interrupt",
            {
                "session_id": "s",
                "stop": {"issuer": "user", "surface": "desk.key", "reason": "r", "hard": False},
            },
        ),
        ("session.interrupt", {"session_id": "s", "stop": {"issuer": "x", "surface": "desk.key"}}),
        ("console.cancel", {"command_id": "c", "stop": {"issuer": "user", "surface": "nowhere"}}),
        ("prompt.submit", {"session_id": "s", "text": "hi", "model": "x"}),
        ("prompt.submit", {"session_id": "s", "text": 5}),
        ("session.list", {"limit": True}),
        ("approval.respond", {"session_id": "s", "request_id": "r", "decision": "ok"}),
        ("console.commands", {"all": True}),
    ],
)
def test_params_the_gateway_refuses_are_invalid(method: str, params: dict[str, Any]) -> None:
    assert problems(validator(f"/methods/{method}/params"), params) != []
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    assert problems(ROOT_CHECK, request) != []


def test_envelopes_the_gateway_refuses_are_invalid() -> None:
    for bad in (
        {"jsonrpc": "1.0", "id": 1, "method": "session.list"},
        {"jsonrpc": "2.0", "id": True, "method": "session.list"},
        {"jsonrpc": "2.0", "id": 1, "method": "session.list", "extra": 1},
        {"jsonrpc": "2.0", "id": 1, "method": "no.such.method"},
        {"jsonrpc": "2.0", "id": 1, "method": "prompt.submit"},  # its params are required
        [],
    ):
        assert problems(ROOT_CHECK, bad) != [], bad
    assert problems(ROOT_CHECK, {"jsonrpc": "2.0", "method": "session.list"}) == []


class RecordingStdio(RawStdio):
    """A raw stdio gateway that also keeps every message sent to it."""

    def __init__(self, argv: list[str]) -> None:
        self.sent: list[Any] = []
        super().__init__(argv)

    def send(self, message: Any) -> None:
        self.sent.append(message)
        super().send(message)

    def event(self, kind: str, **match: Any) -> dict[str, Any]:
        """Wait for an event of ``kind`` whose payload has the ``match`` members; returns it."""

        def fits(m: dict[str, Any]) -> bool:
            if m.get("method") != "event" or m["params"]["type"] != kind:
                return False
            payload = m["params"]["payload"]
            return all(payload.get(k) == v for k, v in match.items())

        found = self.wait_message(fits, 15.0)
        assert found is not None, f"no {kind} event with {match}"
        return found


@pytest.fixture
def session_lines(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> Iterator[tuple[list[Any], list[Any]]]:
    """A stdio session that calls every method: (the messages sent, the messages received)."""
    raw = RecordingStdio(gateway_cmd(provider, "--db", str(tmp_path / "desk.db")))
    try:
        yield _drive(raw, demo_server)
    finally:
        raw.child.kill()


def _drive(raw: RecordingStdio, demo: DemoModelServer) -> tuple[list[Any], list[Any]]:
    stop = {"issuer": "user", "surface": "desk.key", "reason": "enough"}
    assert raw.call("console.commands")["result"]["commands"]
    session = raw.call("session.create", {"title": "schema"})["result"]["session_id"]
    raw.call("session.list", {"limit": 10})
    done = raw.call("prompt.submit", {"session_id": session, "text": "reply with exactly: a b c"})
    raw.event("message.complete", turn_id=done["result"]["turn_id"])

    delegated = {"session_id": session, "text": "delegate: reply with exactly: child done"}
    parent = raw.call("prompt.submit", delegated)["result"]["turn_id"]
    child = raw.event("child.start", parent_turn_id=parent)["params"]["payload"]["turn_id"]
    raw.event("child.complete", turn_id=child)
    raw.event("message.complete", turn_id=parent)
    agents = raw.call("session.agents", {"session_id": session})["result"]["agents"]
    assert [a["turn_id"] for a in agents] == [child]

    demo.configure(tokens_per_second=40.0)
    words = {"session_id": session, "text": "reply with exactly: one two three four five six"}
    steered = raw.call("prompt.submit", words)["result"]["turn_id"]
    raw.event("message.delta", turn_id=steered)
    # the request that takes the steer runs whole at once (a request keeps the pace it found)
    demo.configure(tokens_per_second=400.0)
    steer = {"session_id": session, "text": "and seven", "stop": stop}
    assert raw.call("prompt.steer", steer)["result"]["steered"] is True
    raw.event("prompt.steered", turn_id=steered)
    raw.event("message.complete", turn_id=steered)

    tool = 'call tool shell with {"command": "echo schema"}'
    turn = raw.call("prompt.submit", {"session_id": session, "text": tool})["result"]["turn_id"]
    asked = raw.event("approval.request", turn_id=turn)["params"]["payload"]
    answer = {"session_id": session, "request_id": asked["request_id"], "decision": "once"}
    assert raw.call("approval.respond", answer)["result"] == {"accepted": True}
    raw.event("message.complete", turn_id=turn)
    assert raw.call("session.diff", {"session_id": session})["result"]["files"] == []
    assert raw.call("session.undo", {"session_id": session})["result"]["undone"] is False

    demo.configure(tokens_per_second=40.0)
    story = {"session_id": session, "text": "tell me a story about a lighthouse"}
    running = raw.call("prompt.submit", story)["result"]["turn_id"]
    raw.event("message.delta", turn_id=running)
    queued = raw.call("prompt.submit", story)["result"]
    assert queued["queued"] is True
    waiting = raw.call("session.queue", {"session_id": session})["result"]["prompts"]
    assert [(p["turn_id"], p["position"], p["editable"]) for p in waiting] == [
        (queued["turn_id"], 1, True)
    ]
    edit = {"session_id": session, "turn_id": queued["turn_id"], "text": "a shorter story"}
    assert raw.call("prompt.edit", edit)["result"] == {"edited": True}
    removed = {"session_id": session, "turn_id": queued["turn_id"]}
    assert raw.call("prompt.remove", removed)["result"] == {"removed": True}
    interrupt = {"session_id": session, "stop": stop, "turn_id": running}
    assert raw.call("session.interrupt", interrupt)["result"] == {"turn_id": running}
    complete = raw.event("message.complete", turn_id=running)["params"]["payload"]
    assert complete["exit_reason"] == "interrupted_by_user" and complete["stop"] is not None
    demo.configure(tokens_per_second=400.0)

    compress = raw.call("session.compress", {"session_id": session, "focus": "the plan"})
    raw.event("compression.complete", turn_id=compress["result"]["turn_id"])
    cancel = {"session_id": session, "stop": stop}
    assert raw.call("compression.cancel", cancel)["result"] == {"cancelled": False}

    command = raw.call("console.run", {"session_id": session, "line": "/sessions"})["result"]
    raw.event("console.complete", command_id=command["command_id"])
    cancel = {"command_id": command["command_id"], "stop": {**stop, "surface": "console.cancel"}}
    assert raw.call("console.cancel", cancel)["result"] == {"cancelled": False}

    server = raw.call("server.status", {"check": True})["result"]
    assert server["base_url"] == demo.base_url and server["state"] in ("checking", "ready")
    raw.event("server.status", state="ready")
    files = raw.call("workspace.files", {"query": "", "limit": 5})["result"]
    assert isinstance(files["files"], list)

    replay = raw.call("session.events.since", {"session_id": session, "seq": 0})["result"]
    assert len(replay["events"]) > 10
    raw.call("session.rename", {"session_id": session, "title": "renamed"})
    raw.call("session.resume", {"session_id": session})
    assert raw.call("session.resume", {"session_id": "no-such"}).get("error")
    assert raw.call("prompt.submit", {"session_id": session, "text": 5}).get("error")
    other = raw.call("session.create")["result"]["session_id"]
    assert raw.call("session.delete", {"session_id": other})["result"] == {"deleted": True}
    raw.call("gateway.shutdown", {"timeout_s": 5})
    raw.child.wait()
    return raw.sent, raw.messages()


def test_every_line_of_a_real_stdio_session_fits_the_schema(
    session_lines: tuple[list[Any], list[Any]],
) -> None:
    sent, received = session_lines
    refused = {m["id"]: m["error"] for m in received if "error" in m}
    for message in sent:  # what the gateway ran is valid; the mistyped prompt is not
        mistyped = message.get("params", {}).get("text") == 5
        if message.get("id") not in refused:
            assert problems(ROOT_CHECK, message) == [], message
        elif mistyped:
            assert refused[message["id"]]["code"] == c.INVALID_PARAMS
            assert problems(ROOT_CHECK, message) != [], message
    for message in received:
        assert problems(ROOT_CHECK, message) == [], message
    assert len(refused) == 2  # the unknown session and the mistyped prompt
    methods = {m["id"]: m["method"] for m in sent if "id" in m}
    answered = set()
    for message in received:
        if "result" in message:
            name = methods[message["id"]]
            check = validator(f"/methods/{name}/result")
            assert problems(check, message["result"]) == [], (name, message)
            answered.add(name)
    assert answered == {m.name for m in c.METHODS}  # every method answered, and checked
    kinds = {m["params"]["type"] for m in received if m.get("method") == "event"}
    for wanted in (
        "session.created",
        "message.start",
        "message.delta",
        "message.complete",
        "approval.request",
        "approval.resolved",
        "tool.start",
        "tool.complete",
        "prompt.queued",
        "prompt.dropped",
        "prompt.steered",
        "child.start",
        "child.complete",
        "turn.state",
        "compression.complete",
        "console.output",
        "console.complete",
        "server.status",
    ):
        assert wanted in kinds, wanted
    for message in received:  # each event's payload also fits events.<type> on its own
        if message.get("method") == "event":
            kind = message["params"]["type"]
            payload = message["params"]["payload"]
            assert problems(validator(f"/events/{kind}"), payload) == [], message


@settings(max_examples=100, deadline=None)
@given(payload=payloads(), seq=st.integers(0, 2**40), session_id=st.text(max_size=12))
def test_every_event_the_gateway_can_send_fits_the_schema(
    payload: Payload, seq: int, session_id: str
) -> None:
    wire = GatewayEvent(type=payload.TYPE, session_id=session_id, seq=seq, payload=payload)
    message = wire.to_wire()
    assert problems(ROOT_CHECK, message) == []
    assert problems(validator(f"/events/{payload.TYPE}"), message["params"]["payload"]) == []
