"""``desk gateway --stdio`` in a child process, driven by RemoteGateway and by raw lines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import Issuer, StopRequest, Surface
from contract.errors import GatewayError
from contract.events import (
    ChildCompleted,
    ChildStarted,
    CompressionComplete,
    GatewayEvent,
    MessageComplete,
    MessageDelta,
    PromptSteered,
    SessionCreated,
)
from contract.results import ConsoleCommandInfo
from demo_model.server import DemoModelServer
from tests.support import EventLog, cut_short
from tests.wire.kit import (
    ROOT,
    RawStdio,
    child_env,
    gateway_cmd,
    slow_reply,
)
from tui_gateway.engine_setup import GatewayConfig
from tui_gateway.gateway import Gateway
from tui_gateway.wire.client import RemoteGateway

STORY = "tell me a story about a lighthouse"


@pytest.fixture
def remote(provider: ProviderConfig) -> Iterator[RemoteGateway]:
    gateway = RemoteGateway(gateway_cmd(provider), env=child_env(), cwd=ROOT)
    try:
        yield gateway
    finally:
        gateway.shutdown()


def first_delta_of(turn_id: str) -> object:
    def seen(events: list[GatewayEvent]) -> bool:
        return any(
            isinstance(e.payload, MessageDelta) and e.payload.turn_id == turn_id for e in events
        )

    return seen


def test_a_streamed_turn(remote: RemoteGateway) -> None:
    log = EventLog()
    remote.subscribe(log)
    assert remote.ready.model == "demo" and remote.ready.pid == remote.pid
    session = remote.session_create("wire")
    submitted = remote.prompt_submit(session, "reply with exactly: one two three four")
    complete = log.complete(submitted.turn_id)
    assert complete.status == "completed" and complete.exit_reason == "completed"
    assert complete.text == "one two three four"
    assert log.text_of(submitted.turn_id) == complete.text
    seqs = [e.seq for e in log.events if e.session_id == session]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert isinstance(log.events[0].payload, SessionCreated)
    assert remote.running_turns == 0
    [info] = remote.session_list()
    assert info.session_id == session and info.title == "wire" and not info.running


def test_a_user_stop_over_the_wire(remote: RemoteGateway, demo_server: DemoModelServer) -> None:
    slow_reply(demo_server)
    log = EventLog()
    remote.subscribe(log)
    session = remote.session_create()
    turn = remote.prompt_submit(session, STORY).turn_id
    assert log.wait_for(first_delta_of(turn))  # type: ignore[arg-type]
    assert remote.running_turns == 1
    stop = StopRequest.by_user(Surface.DESK_KEY, "pressed Esc")
    assert remote.session_interrupt(session, stop) == turn
    cut_short(demo_server)
    complete = log.complete(turn)
    assert complete.status == "interrupted"
    assert complete.exit_reason == "interrupted_by_user"
    assert complete.stop is not None and complete.stop.surface == "desk.key"
    assert complete.stop.issuer == "user" and complete.stop.reason == "pressed Esc"


def test_a_stop_key_over_the_wire_stops_the_prompt_entered_before_it(
    remote: RemoteGateway, demo_server: DemoModelServer
) -> None:
    """The key's and the Enter's times cross the wire: a stop key that reached the gateway
    before the submit of the Enter typed before it still stops that prompt."""
    slow_reply(demo_server)
    log = EventLog()
    remote.subscribe(log)
    session = remote.session_create()
    stop = StopRequest.by_user(Surface.DESK_KEY, "pressed Esc")
    assert remote.session_interrupt(session, stop, keyed_at=100.002) is None  # kept
    turn = remote.prompt_submit(session, STORY, entered_at=100.0).turn_id
    complete = log.complete(turn, timeout=20.0)
    assert complete.exit_reason == "interrupted_by_user"
    assert complete.stop is not None and complete.stop.reason == "pressed Esc"


def test_eof_on_stdin_is_a_system_stop(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    slow_reply(demo_server)
    remote = RemoteGateway(gateway_cmd(provider), env=child_env(), cwd=ROOT)
    try:
        log = EventLog()
        remote.subscribe(log)
        session = remote.session_create()
        turn = remote.prompt_submit(session, STORY).turn_id
        queued = remote.prompt_submit(session, "reply with exactly: later")
        assert queued.queued
        assert log.wait_for(first_delta_of(turn))  # type: ignore[arg-type]
        remote.disconnect()  # the frontend went away
        cut_short(demo_server)
        complete = log.complete(turn)
        assert complete.exit_reason == "interrupted_by_system(api.disconnect)"
        assert complete.stop is not None and complete.stop.issuer == "system"
        assert remote.wait_exit(15.0) == 0
        dropped = [
            e.type for e in log.events if getattr(e.payload, "turn_id", "") == queued.turn_id
        ]
        assert dropped == ["prompt.queued", "prompt.dropped"]  # never ran for nobody
        with pytest.raises(GatewayError):
            remote.session_create()
    finally:
        remote.shutdown()
    assert len(demo_server.records.list()) == 1


def test_shutdown_is_a_system_stop_and_the_child_exits(
    remote: RemoteGateway, demo_server: DemoModelServer
) -> None:
    slow_reply(demo_server)
    log = EventLog()
    remote.subscribe(log)
    session = remote.session_create()
    turn = remote.prompt_submit(session, STORY).turn_id
    assert log.wait_for(first_delta_of(turn))  # type: ignore[arg-type]
    report = remote.shutdown()
    assert report.turns_stopped == 1 and report.threads_left == []
    assert remote.returncode == 0
    [complete] = [p for p in log.of_type(MessageComplete) if p.turn_id == turn]
    assert complete.exit_reason == "interrupted_by_system(gateway.shutdown)"
    assert remote.shutdown() is report


def test_an_unknown_session_is_an_invalid_params_error(remote: RemoteGateway) -> None:
    with pytest.raises(GatewayError) as caught:
        remote.prompt_submit("nope", "hello")
    assert caught.value.code == -32602
    with pytest.raises(GatewayError) as caught:
        remote.events_since("nope", 0)
    assert caught.value.code == -32602


def test_replay_after_seq_with_truncation(provider: ProviderConfig) -> None:
    with RemoteGateway(gateway_cmd(provider, "--replay-events", "4"), env=child_env()) as remote:
        assert remote.ready.replay_capacity == 4
        log = EventLog()
        remote.subscribe(log)
        session = remote.session_create()
        for words in ("alpha beta", "gamma delta"):
            turn = remote.prompt_submit(session, f"reply with exactly: {words}").turn_id
            log.complete(turn)
        events, truncated = remote.events_since(session, 0)
        assert truncated
        assert len(events) == 4
        assert [e.seq for e in events] == sorted({e.seq for e in events})
        assert isinstance(events[-1].payload, MessageComplete)
        assert events[-1].payload.text == "gamma delta"
        # The ring and the live stream each join deltas as they are delivered (by the time
        # between them), so their deltas may differ; every other event is the same one.
        first, last = events[0].seq, events[-1].seq
        live = [e for e in log.events if e.session_id == session and first <= e.seq <= last]
        assert [(e.seq, e.type) for e in events if not isinstance(e.payload, MessageDelta)] == [
            (e.seq, e.type) for e in live if not isinstance(e.payload, MessageDelta)
        ]
        recent, truncated = remote.events_since(session, events[1].seq)
        assert not truncated
        assert [e.seq for e in recent] == [e.seq for e in events[2:]]
        assert remote.events_since(session, events[-1].seq) == ([], False)


# -- raw JSON-RPC ------------------------------------------------------------------------------


def _code(message: object) -> object:
    return message.get("error", {}).get("code") if isinstance(message, dict) else None


def _id(message: object) -> object:
    return message.get("id") if isinstance(message, dict) else None


@pytest.fixture
def raw(provider: ProviderConfig) -> Iterator[RawStdio]:
    child = RawStdio(gateway_cmd(provider))
    try:
        yield child
    finally:
        child.child.kill()


def test_bad_requests_get_standard_errors_and_change_nothing(
    raw: RawStdio, demo_server: DemoModelServer
) -> None:
    session = raw.call("session.create", {"title": "keep"})["result"]["session_id"]
    before = raw.call("session.list")["result"]

    raw.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
    parse = raw.wait_message(lambda m: _code(m) == -32700)
    assert parse is not None and parse["id"] is None
    raw.send_raw(b"\xff\xfe not utf-8\n")
    assert raw.wait_message(lambda m: _code(m) == -32700 and "utf-8" in m["error"]["message"])

    invalid = {"id": 2, "method": "session.list"}  # no "jsonrpc": "2.0"
    raw.send(invalid)
    answer = raw.wait_message(lambda m: _id(m) == 2)
    assert answer is not None and answer["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "id": 3, "method": 7})
    answer = raw.wait_message(lambda m: _id(m) == 3)
    assert answer is not None and answer["error"]["code"] == -32600
    raw.send([])
    assert raw.wait_message(lambda m: _code(m) == -32600 and "empty batch" in str(m))

    assert raw.call("session.explode", {"session_id": session})["error"]["code"] == -32601
    stop = {"issuer": "user", "surface": "desk.key", "reason": "x"}
    bad_params = [
        ("prompt.submit", {"session_id": session}),  # missing text
        ("prompt.submit", {"session_id": session, "text": 5}),
        ("prompt.submit", {"session_id": session, "text": "hi", "model": "x"}),
        ("prompt.submit", [session, "hi"]),  # by position
        ("prompt.submit", {"session_id": "unknown", "text": "hi"}),
        ("prompt.submit", {"session_id": session, "text": "   "}),
        (
            "session.interrupt",
            {"session_id": session, "stop": {**stop, "surface": "api.disconnect"}},
        ),
        ("session.interrupt", {"session_id": session, "stop": {**stop, "issuer": "system"}}),
        ("session.interrupt", {"session_id": session, "stop": {"surface": "desk.key"}}),
        ("session.interrupt", {"session_id": session, "stop": {**stop, "hard": False}}),
        ("session.interrupt", {"session_id": session, **stop}),  # flat, as in protocol 1
        ("compression.cancel", {"session_id": session, "stop": {**stop, "reason": " "}}),
        ("console.cancel", {"command_id": "c", "stop": {**stop, "surface": "console.timeout"}}),
        ("console.run", {"session_id": session, "line": ""}),
        ("session.events.since", {"session_id": session, "seq": -1}),
    ]
    for method, params in bad_params:
        answer = raw.call(method, params)
        assert answer.get("error", {}).get("code") == -32602, (method, params, answer)

    raw.send({"jsonrpc": "2.0", "method": "prompt.submit", "params": {"session_id": session}})
    raw.send({"jsonrpc": "2.0", "method": "no.such.method"})  # notifications: never answered
    after = raw.call("session.list")["result"]
    assert after == before
    types = {m["params"]["type"] for m in raw.messages() if m.get("method") == "event"}
    assert types == {"session.created"}  # nothing ran, nothing was queued or stopped
    assert demo_server.records.list() == []
    assert all("id" in m or "method" in m for m in raw.messages())
    assert raw.close() == 0


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "-5"])
def test_a_shutdown_timeout_that_is_not_a_finite_bound_is_invalid_params(
    raw: RawStdio, value: str
) -> None:
    line = '{"jsonrpc": "2.0", "id": 7, "method": "gateway.shutdown", "params": '
    raw.send_raw(f'{line}{{"timeout_s": {value}}}}}\n'.encode())
    answer = raw.wait_message(lambda m: _id(m) == 7)
    assert answer is not None and answer["error"]["code"] == -32602, answer
    assert "timeout_s" in answer["error"]["message"]
    # The gateway did not shut down: it still answers, and a NaN elsewhere is refused too.
    assert "result" in raw.call("session.list")
    answer = raw.call("session.create", {"title": float("nan")})
    assert answer["error"]["code"] == -32602
    assert raw.close() == 0


def test_a_batch_is_answered_and_a_stop_is_acted_on(raw: RawStdio) -> None:
    session = raw.call("session.create")["result"]["session_id"]
    raw.send(
        [
            {"jsonrpc": "2.0", "id": "a", "method": "session.list"},
            {"jsonrpc": "2.0", "method": "session.list"},
            {"jsonrpc": "2.0", "id": "b", "method": "nope"},
        ]
    )
    answers = raw.wait_message(lambda m: isinstance(m, list))  # type: ignore[arg-type]
    assert isinstance(answers, list)  # one JSON array, notifications left out
    assert [a["id"] for a in answers] == ["a", "b"]
    assert answers[1]["error"]["code"] == -32601
    stop = {"issuer": "user", "surface": "desk.button", "reason": "stop"}
    params = {"session_id": session, "stop": stop}
    assert raw.call("session.interrupt", params)["result"] == {"turn_id": None}


def test_compression_over_the_wire(remote: RemoteGateway) -> None:
    log = EventLog()
    remote.subscribe(log)
    session = remote.session_create()
    log.complete(remote.prompt_submit(session, "reply with exactly: something to keep").turn_id)
    turn = remote.session_compress(session, focus="the plan").turn_id

    def completed(events: list[GatewayEvent]) -> bool:
        return any(
            isinstance(e.payload, CompressionComplete) and e.payload.turn_id == turn for e in events
        )

    assert log.wait_for(completed, 10.0)
    [outcome] = log.of_type(CompressionComplete)
    assert outcome.status in ("committed", "nothing", "refused")
    stop = StopRequest.by_user(Surface.DESK_KEY, "no compression")
    assert remote.compression_cancel(session, stop) is False


def test_a_gateway_that_dies_mid_turn_still_ends_the_turn(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    slow_reply(demo_server)
    remote = RemoteGateway(gateway_cmd(provider), env=child_env(), cwd=ROOT)
    try:
        log = EventLog()
        remote.subscribe(log)
        session = remote.session_create()
        turn = remote.prompt_submit(session, STORY).turn_id
        assert log.wait_for(first_delta_of(turn))  # type: ignore[arg-type]
        remote.kill()
        complete = log.complete(turn)
        assert complete.status == "failed" and complete.exit_reason == "failed(GatewayExited)"
        assert remote.running_turns == 0
        with pytest.raises(GatewayError):
            remote.session_list()
    finally:
        remote.shutdown()


def test_saved_session_methods_over_the_wire(provider: ProviderConfig, tmp_path: Path) -> None:
    db = str(tmp_path / "desk.db")
    with RemoteGateway(gateway_cmd(provider, "--db", db), env=child_env()) as remote:
        log = EventLog()
        remote.subscribe(log)
        session = remote.session_create()
        log.complete(remote.prompt_submit(session, "reply with exactly: kept").turn_id)
        remote.session_rename(session, "  a   new   name ")
        [info] = remote.session_list()
        assert info.title == "a new name"
        resumed = remote.session_resume(session)
        assert [(e.role, e.content) for e in resumed.transcript][-1] == ("assistant", "kept")
        assert remote.session_delete(session) is True
        assert remote.session_list() == []
        with pytest.raises(GatewayError) as caught:
            remote.session_rename(session, "   ")
        assert caught.value.code == -32602


def test_remote_gateway_offers_what_desk_calls() -> None:
    ports = pytest.importorskip("contract.ports")
    wanted = [
        name
        for name in dir(ports.DeskGateway)
        if not name.startswith("_") and name not in dir(object)
    ]
    assert wanted
    missing = [name for name in wanted if not hasattr(RemoteGateway, name)]
    assert missing == []


def test_a_remote_gateway_lists_the_remote_console_commands(
    remote: RemoteGateway, provider: ProviderConfig
) -> None:
    local = Gateway(GatewayConfig(provider=provider))
    try:
        expected = local.console_commands()
    finally:
        local.shutdown()
    commands = remote.console_commands()
    assert commands == expected and {"help", "sessions", "stop"} <= {x.name for x in commands}
    assert all(isinstance(x, ConsoleCommandInfo) for x in commands)
    assert remote.console_commands() == commands  # asked once, kept


def test_a_soft_interrupt_is_refused_before_it_reaches_the_wire(remote: RemoteGateway) -> None:
    session = remote.session_create()
    soft = StopRequest(Issuer.USER, Surface.DESK_KEY, "typed while it ran", hard=False)
    for call in (
        lambda: remote.session_interrupt(session, soft),
        lambda: remote.compression_cancel(session, soft),
        lambda: remote.console_cancel("c", soft),
    ):
        with pytest.raises(GatewayError) as caught:
            call()
        assert caught.value.code == -32602 and "soft interrupt" in caught.value.message


def test_steer_stop_and_send_and_child_agents_over_the_wire(
    remote: RemoteGateway, demo_server: DemoModelServer
) -> None:
    log = EventLog()
    remote.subscribe(log)
    session = remote.session_create()
    demo_server.configure(slots=3, tokens_per_second=40.0)
    turn = remote.prompt_submit(session, "reply with exactly: one two three four five").turn_id
    assert log.wait_for(first_delta_of(turn))  # type: ignore[arg-type]
    typed = StopRequest.soft(Surface.DESK_KEY, "typed while it ran")
    steered = remote.prompt_steer(session, "reply with exactly: six", typed)
    assert steered.steered and steered.turn_id == turn
    assert log.complete(turn).text == "six"
    (landed,) = log.of_type(PromptSteered)
    assert (landed.turn_id, landed.steer_id) == (turn, steered.steer_id)
    with pytest.raises(GatewayError) as caught:  # a hard stop is no steer: refused here
        remote.prompt_steer(session, "x", StopRequest.by_user(Surface.DESK_KEY))
    assert caught.value.code == -32602

    parent = remote.prompt_submit(session, "delegate: [demo tps=5] a slow child").turn_id
    assert log.wait_for(lambda _e: bool(log.of_type(ChildStarted)), 10)
    (child,) = log.of_type(ChildStarted)
    [info] = remote.session_agents(session)
    assert info.turn_id == child.turn_id and info.running
    now = remote.prompt_submit(
        session, "reply with exactly: now", stop=StopRequest.by_user(Surface.DESK_KEY)
    )
    assert log.complete(parent).exit_reason == "interrupted_by_user"
    assert log.wait_for(lambda _e: bool(log.of_type(ChildCompleted)), 10)
    assert log.of_type(ChildCompleted)[0].exit_reason == "interrupted_by_user"
    assert log.complete(now.turn_id).text == "now"
