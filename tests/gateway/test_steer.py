"""prompt.steer through the gateway: delivered at the running turn's next model-call boundary,
never during a stream or a compression; a prompt when nothing runs; never lost; and "stop and
send".

The demo model's records show each request whole (``outcome == "completed"``) and what the
next one carried, so "never cut" is what the server saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import (
    CompressionComplete,
    CompressionProgressed,
    GatewayEvent,
    MessageDelta,
    MessageStart,
    PromptDropped,
    PromptQueued,
    PromptSteered,
)
from demo_model.server import DemoModelServer
from tests.compression.kit import WINDOW, long_transcript
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig, GatewayError

WORDS = "one two three four five six seven eight nine ten"


def steer_by(text: str = "typed while it ran") -> StopRequest:
    return StopRequest.soft(Surface.DESK_KEY, text)


@pytest.fixture
def gateway_and_log(provider: ProviderConfig) -> Iterator[tuple[Gateway, EventLog]]:
    gateway = Gateway(GatewayConfig(provider=provider))
    log = EventLog()
    gateway.subscribe(log)
    yield gateway, log
    assert gateway.shutdown(timeout_s=10).threads_left == []


def first_delta(log: EventLog, turn_id: str) -> None:
    assert log.wait_for(
        lambda ev: any(
            isinstance(e.payload, MessageDelta) and e.payload.turn_id == turn_id for e in ev
        )
    )


def index_of(events: list[GatewayEvent], kind: type, **match: object) -> int:
    for i, e in enumerate(events):
        if isinstance(e.payload, kind) and all(
            getattr(e.payload, k) == v for k, v in match.items()
        ):
            return i
    raise AssertionError(f"no {kind.__name__} with {match}")


def test_a_steer_reaches_the_turn_after_its_stream_never_during_it(
    gateway_and_log: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gateway, log = gateway_and_log
    demo_server.configure(tokens_per_second=40.0)
    session = gateway.session_create()
    turn = gateway.prompt_submit(session, f"reply with exactly: {WORDS}").turn_id
    first_delta(log, turn)
    result = gateway.prompt_steer(session, "reply with exactly: eleven", steer_by())
    assert result.steered and result.turn_id == turn and not result.queued
    complete = log.complete(turn, timeout=30)
    assert complete.status == "completed" and complete.text == "eleven"
    first, second = demo_server.records.list()
    assert first.outcome == "completed" and first.text == WORDS  # the stream was not cut
    assert second.messages[-1]["content"] == "reply with exactly: eleven"
    events = list(log.events)
    steered = index_of(events, PromptSteered, steer_id=result.steer_id)
    texts = "".join(e.payload.text for e in events[:steered] if isinstance(e.payload, MessageDelta))
    assert texts == WORDS  # every delta of the first stream came before the steer landed
    assert [(m.role, m.content) for m in gateway.history(session)] == [
        ("user", f"reply with exactly: {WORDS}"),
        ("assistant", WORDS),
        ("user", "reply with exactly: eleven"),
        ("assistant", "eleven"),
    ]


def test_a_steer_when_nothing_runs_is_a_normal_prompt(
    gateway_and_log: tuple[Gateway, EventLog],
) -> None:
    gateway, log = gateway_and_log
    session = gateway.session_create()
    result = gateway.prompt_steer(session, "reply with exactly: just a prompt", steer_by())
    assert not result.steered and result.turn_id == result.steer_id
    assert log.complete(result.turn_id).text == "just a prompt"
    assert not log.of_type(PromptSteered)
    starts = [s.turn_id for s in log.of_type(MessageStart)]
    assert starts == [result.turn_id]


def test_bad_steers_are_refused_in_one_line(gateway_and_log: tuple[Gateway, EventLog]) -> None:
    gateway, _log = gateway_and_log
    session = gateway.session_create()
    for text, stop, words in (
        ("  ", steer_by(), "empty"),
        ("x", StopRequest.by_user(Surface.DESK_KEY), "soft interrupt"),
    ):
        with pytest.raises(GatewayError, match=words) as refused:
            gateway.prompt_steer(session, text, stop)
        assert refused.value.code == -32602
    with pytest.raises(GatewayError, match="no session"):
        gateway.prompt_steer("nope", "x", steer_by())


def test_a_steer_the_stopped_turn_never_took_runs_next_as_a_prompt(
    gateway_and_log: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gateway, log = gateway_and_log
    demo_server.configure(tokens_per_second=20.0)
    session = gateway.session_create()
    turn = gateway.prompt_submit(session, "tell me a long story").turn_id
    first_delta(log, turn)
    demo_server.configure(tokens_per_second=400.0)
    steered = gateway.prompt_steer(session, "reply with exactly: after all", steer_by())
    assert steered.steered
    gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
    stopped = log.complete(turn)
    assert stopped.exit_reason == "interrupted_by_user"
    assert stopped.undelivered == (steered.steer_id,)
    assert any(q.turn_id == steered.steer_id for q in log.of_type(PromptQueued))
    assert log.complete(steered.steer_id).text == "after all"  # the person asked for it


def test_stop_and_send_stops_the_turn_and_runs_the_text_next_ahead_of_the_queue(
    gateway_and_log: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gateway, log = gateway_and_log
    demo_server.configure(tokens_per_second=20.0)
    session = gateway.session_create()
    turn = gateway.prompt_submit(session, "tell me a long story").turn_id
    first_delta(log, turn)
    waiting = gateway.prompt_submit(session, "reply with exactly: queued first").turn_id
    demo_server.configure(tokens_per_second=400.0)
    now = gateway.prompt_submit(
        session, "reply with exactly: now", stop=StopRequest.by_user(Surface.DESK_KEY)
    )
    assert now.queued
    assert log.complete(turn).exit_reason == "interrupted_by_user"
    assert log.complete(now.turn_id).text == "now"
    assert log.complete(waiting).text == "queued first"
    starts = [s.turn_id for s in log.of_type(MessageStart)]
    assert starts == [turn, now.turn_id, waiting]


@pytest.fixture
def compressing(
    provider: ProviderConfig, tmp_path: Path
) -> Iterator[tuple[Gateway, EventLog, str]]:
    store = SqliteStore(tmp_path / "desk.db")
    config = GatewayConfig(
        provider=provider, cwd=tmp_path, context_window=WINDOW, compress_threshold=0.5
    )
    gateway = Gateway(config, store=store)
    log = EventLog()
    gateway.subscribe(log)
    row = store.sessions.create_session(title="long", model="demo", messages=long_transcript())
    session = gateway.session_resume(row.id).session_id
    yield gateway, log, session
    assert gateway.shutdown(timeout_s=10).threads_left == []


def summarizing(log: EventLog, turn_id: str) -> None:
    assert log.wait_for(
        lambda ev: any(
            isinstance(e.payload, CompressionProgressed)
            and e.payload.turn_id == turn_id
            and e.payload.phase == "summarize"
            and e.payload.tokens_out > 0
            for e in ev
        ),
        10,
    )


def test_a_steer_during_a_compress_turn_waits_for_the_turn_after_it(
    compressing: tuple[Gateway, EventLog, str], demo_server: DemoModelServer
) -> None:
    gateway, log, session = compressing
    demo_server.configure(tokens_per_second=60.0)
    compress = gateway.session_compress(session).turn_id
    summarizing(log, compress)
    result = gateway.prompt_steer(session, "reply with exactly: after the summary", steer_by())
    assert not result.steered and result.queued  # the turn after the compression gets it
    assert log.wait_for(lambda ev: any(isinstance(e.payload, CompressionComplete) for e in ev), 30)
    (done,) = log.of_type(CompressionComplete)
    assert done.status == "committed", done.message  # never aborted
    assert log.complete(result.turn_id, timeout=30).text == "after the summary"


def test_a_steer_while_a_turn_compresses_first_lands_after_its_first_model_call(
    compressing: tuple[Gateway, EventLog, str], demo_server: DemoModelServer
) -> None:
    gateway, log, session = compressing
    demo_server.configure(tokens_per_second=60.0)
    turn = gateway.prompt_submit(session, "reply with exactly: compressed first").turn_id
    summarizing(log, turn)
    result = gateway.prompt_steer(session, "reply with exactly: then this", steer_by())
    assert result.steered and result.turn_id == turn
    demo_server.configure(tokens_per_second=400.0)
    complete = log.complete(turn, timeout=30)
    assert complete.status == "completed" and complete.text == "then this"
    (done,) = log.of_type(CompressionComplete)
    assert done.status == "committed", done.message
    events = list(log.events)
    assert index_of(events, CompressionComplete) < index_of(events, PromptSteered)
    summary, first_call, second_call = demo_server.records.list()[-3:]
    assert summary.outcome == first_call.outcome == "completed"
    assert first_call.messages[-1]["content"] == "reply with exactly: compressed first"
    assert second_call.messages[-1]["content"] == "reply with exactly: then this"


def test_a_steer_left_by_a_quit_is_dropped_and_saved_as_not_sent(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    store = SqliteStore(tmp_path / "desk.db")
    gateway = Gateway(GatewayConfig(provider=provider), store=store)
    log = EventLog()
    gateway.subscribe(log)
    demo_server.configure(tokens_per_second=20.0)
    session = gateway.session_create()
    turn = gateway.prompt_submit(session, "tell me a long story").turn_id
    first_delta(log, turn)
    steered = gateway.prompt_steer(session, "and a moral", steer_by())
    assert gateway.shutdown(timeout_s=10).threads_left == []
    assert [d.turn_id for d in log.of_type(PromptDropped)] == [steered.steer_id]
    with SqliteStore(tmp_path / "desk.db") as reopened:
        row = reopened.turns.get_turn(steered.steer_id)
        assert row is not None and row.not_sent
        assert row.exit_reason == "interrupted_by_system(gateway.shutdown)"
    store.close()
