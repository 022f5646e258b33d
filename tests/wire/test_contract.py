"""The contract: its method list, its typed codec, and docs/protocol.md generated from it."""

from __future__ import annotations

import dataclasses
import enum
import subprocess
import sys
import typing

import pytest
from hypothesis import given
from hypothesis import strategies as st

import contract as c
from agent.stops import Issuer, StopRequest, Surface
from contract.events import EVENT_TYPES, GatewayEvent, Payload
from tests.wire.kit import ROOT, child_env, payloads
from tui_gateway.wire.codec import DecodeError, decode, decode_event, encode
from tui_gateway.wire.contract_docs import MARKDOWN_COMMAND, markdown

DOC = ROOT / "docs" / "protocol.md"

EXPECTED_METHODS = {  # DESIGN.md section 4, the brief, and what desk's port calls
    "session.rename",
    "session.delete",
    "session.undo",
    "session.diff",
    "session.compress",
    "compression.cancel",
    "session.create",
    "session.list",
    "session.resume",
    "prompt.submit",
    "prompt.steer",
    "session.agents",
    "prompt.remove",
    "prompt.edit",
    "session.queue",
    "session.interrupt",
    "approval.respond",
    "console.commands",
    "console.run",
    "console.cancel",
    "server.status",
    "workspace.files",
    "session.events.since",
    "gateway.shutdown",
}


def test_docs_protocol_md_is_generated_from_the_contract() -> None:
    assert DOC.exists(), "docs/protocol.md is missing: run the generator"
    assert DOC.read_text(encoding="utf-8") == markdown(), (
        f"docs/protocol.md and the contract drifted apart; regenerate it with `{MARKDOWN_COMMAND}`"
    )


def test_the_generator_command_prints_the_same_text() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tui_gateway.wire.contract_docs", "--markdown"],
        capture_output=True,
        check=True,
        cwd=ROOT,
        env=child_env(),
        timeout=60,
    )
    assert out.stdout.decode("utf-8") == markdown()
    assert out.stderr == b""  # no runpy warning
    assert MARKDOWN_COMMAND in markdown()


def test_every_method_event_and_surface_is_documented() -> None:
    text = markdown()
    assert {m.name for m in c.METHODS} == EXPECTED_METHODS
    for method in c.METHODS:
        assert f"### `{method.name}`" in text
    for payload in EVENT_TYPES:
        assert f"### `{payload.TYPE}`" in text
        for f in dataclasses.fields(payload):
            assert f"`{f.name}`" in text
    for surface in Surface:
        assert f"`{surface.value}`" in text
    assert f"Protocol version: **{c.PROTOCOL_VERSION}**" in text


STOP = {"issuer": "user", "surface": "api.stop", "reason": "stop"}
STOP_PARAMS = [  # (params class, its other required members)
    (c.SessionInterruptParams, {"session_id": "s"}),
    (c.CompressionCancelParams, {"session_id": "s"}),
    (c.ConsoleCancelParams, {"command_id": "x"}),
]


@pytest.mark.parametrize(("cls", "others"), STOP_PARAMS, ids=lambda x: getattr(x, "__name__", ""))
def test_a_stop_is_one_object_with_a_matching_issuer_and_surface(
    cls: type, others: dict[str, str]
) -> None:
    params = decode(cls, {**others, "stop": STOP}, path="params")
    stop = params.stop.request()
    assert (stop.issuer, stop.surface, stop.reason) == (Issuer.USER, Surface.API_STOP, "stop")
    assert stop.hard and stop.exit_reason() == "interrupted_by_user"
    refused = {
        "user surface booked as the system": {**STOP, "issuer": "system"},
        "system surface booked as the user": {**STOP, "surface": "api.disconnect"},
        "unknown surface": {**STOP, "surface": "somewhere"},
        "empty reason": {**STOP, "reason": " "},
        "no default issuer": {k: v for k, v in STOP.items() if k != "issuer"},
        "no soft stop on the wire": {**STOP, "hard": False},
    }
    for why, bad in refused.items():
        with pytest.raises(DecodeError, match=r"params\.stop"):
            decode(cls, {**others, "stop": bad}, path="params")
            pytest.fail(why)
    with pytest.raises(DecodeError, match="params.issuer"):  # the flat form of protocol 1
        decode(cls, {**others, **STOP}, path="params")
    with pytest.raises(DecodeError, match="params.stop"):
        decode(cls, others, path="params")


def test_a_stop_request_goes_on_the_wire_and_back_unchanged() -> None:
    stop = StopRequest.by_system(Surface.CONSOLE_TIMEOUT, "took too long")
    wire = encode(c.StopParams.of(stop))
    assert wire == {"issuer": "system", "surface": "console.timeout", "reason": "took too long"}
    assert decode(c.StopParams, wire).request() == stop
    soft = StopRequest(Issuer.USER, Surface.DESK_KEY, "typed while it ran", hard=False)
    with pytest.raises(ValueError, match="soft interrupt"):
        c.StopParams.of(soft)


def test_params_are_decoded_strictly() -> None:
    with pytest.raises(DecodeError, match="params.txt"):
        decode(c.PromptSubmitParams, {"session_id": "s", "txt": "x"}, path="params")
    with pytest.raises(DecodeError, match="params.text"):
        decode(c.PromptSubmitParams, {"session_id": "s", "text": 3}, path="params")
    with pytest.raises(DecodeError):
        decode(c.SessionListParams, {"limit": True})
    with pytest.raises(DecodeError):
        decode(c.ApprovalRespondParams, {"session_id": "s", "request_id": "r", "decision": "ok"})
    assert decode(c.GatewayShutdownParams, {"timeout_s": 2}).timeout_s == 2.0


@pytest.mark.parametrize("method", c.METHODS, ids=lambda m: m.name)
def test_every_method_has_typed_params_and_result(method: c.Method) -> None:
    assert dataclasses.is_dataclass(method.params)
    assert dataclasses.is_dataclass(method.result)
    assert method.params.__doc__ and method.result.__doc__


@given(payload=payloads(), seq=st.integers(0, 2**40), session_id=st.text(max_size=12))
def test_every_event_payload_survives_the_wire(payload: Payload, seq: int, session_id: str) -> None:
    event = GatewayEvent(type=payload.TYPE, session_id=session_id, seq=seq, payload=payload)
    wire = event.to_wire()
    assert wire["params"]["payload"]["version"] == c.PROTOCOL_VERSION
    back = decode_event(wire["params"])
    assert back == event
    assert back is not None and back.payload == payload


def test_an_event_of_a_newer_gateway_is_read_or_skipped() -> None:
    params = {
        "type": "message.delta",
        "session_id": "s",
        "seq": 3,
        "payload": {"turn_id": "t", "text": "hi", "reasoning": "", "colour": "red", "version": 9},
    }
    event = decode_event(params)
    assert event is not None and event.payload.merged(event.payload) is not None
    assert decode_event({**params, "type": "something.new"}) is None


@pytest.mark.parametrize("cls", [m.result for m in c.METHODS] + [c.Ready, c.RunAccepted])
def test_results_round_trip(cls: type) -> None:
    hints = {f.name: f for f in dataclasses.fields(cls)}
    types = typing.get_type_hints(cls)
    sample = {
        name: _enum_sample(types[name])
        if isinstance(types[name], type) and issubclass(types[name], enum.Enum)
        else _sample(f.type if isinstance(f.type, str) else str(f.type))
        for name, f in hints.items()
    }
    value = decode(cls, sample)
    assert decode(cls, encode(value)) == value


def _enum_sample(tp: type[enum.Enum]) -> object:
    return next(iter(tp)).value


def _sample(annotation: str) -> object:
    if annotation.startswith(("list", "tuple")):
        return []
    if annotation.startswith("dict"):
        return {}
    if annotation.startswith("str"):
        return "x"
    if annotation.startswith("int"):
        return 1
    if annotation.startswith("float"):
        return 1.5
    if annotation.startswith("bool"):
        return True
    return None
