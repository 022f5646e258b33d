"""A slow or stalled subscriber never blocks a worker, and still gets every event in order."""

from __future__ import annotations

import threading

from agent.provider.client import ProviderConfig
from contract.events import GatewayEvent, MessageComplete, MessageDelta, MessageStart
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

PROMPT = "reply with exactly: " + " ".join(f"w{i}" for i in range(200))


def test_stalled_subscriber_does_not_block_the_turn(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    demo_server.configure(tokens_per_second=0)  # as fast as possible
    gateway = Gateway(GatewayConfig(provider=provider))
    release = threading.Event()
    stalled: list[GatewayEvent] = []

    def slow(event: GatewayEvent) -> None:
        assert release.wait(10)
        stalled.append(event)

    gateway.subscribe(slow)
    fast = EventLog()
    gateway.subscribe(fast)
    session = gateway.session_create()
    turn_id = gateway.prompt_submit(session, PROMPT).turn_id
    done = fast.complete(turn_id)
    for thread in gateway.worker_threads():
        thread.join(5)
    assert gateway.worker_threads() == [], "a stalled subscriber held the worker"
    assert stalled == []

    release.set()
    assert gateway.shutdown(timeout_s=5).threads_left == []  # flushes, then closes
    assert stalled[-1].type == "gateway.stopping"  # the shutdown's own event comes last
    stalled = [e for e in stalled if e.session_id == session]
    types = [e.type for e in stalled]
    assert types[0] == "session.created"
    assert types.index("message.start") < types.index("message.delta")
    assert types[-1] == "message.complete"
    text = "".join(e.payload.text for e in stalled if isinstance(e.payload, MessageDelta))
    assert text == done.text == PROMPT.removeprefix("reply with exactly: ")
    # 200 tokens arrived while it was stalled: they were merged, not queued one by one.
    assert sum(isinstance(e.payload, MessageDelta) for e in stalled) < 10
    seqs = [e.seq for e in stalled]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert isinstance(stalled[1].payload, MessageStart) or stalled[1].type == "turn.state"
    assert isinstance(stalled[-1].payload, MessageComplete)


def test_events_of_one_session_arrive_in_seq_order_whoever_publishes_them(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    # The worker publishes deltas while another thread queues prompts (prompt.queued) and
    # stops (turn.state): a subscriber still sees the session's seq strictly increasing.
    demo_server.configure(tokens_per_second=2000.0)
    gateway = Gateway(GatewayConfig(provider=provider))
    log = EventLog()
    gateway.subscribe(log)
    session = gateway.session_create()
    try:
        first = gateway.prompt_submit(session, PROMPT).turn_id
        start = threading.Barrier(2)

        def queue_prompts() -> None:
            start.wait(5)
            for i in range(40):
                gateway.prompt_submit(session, f"reply with exactly: q{i}")

        other = threading.Thread(target=queue_prompts)
        other.start()
        start.wait(5)
        log.complete(first)
        other.join(10)
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
    seqs = [e.seq for e in log.events if e.session_id == session]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_the_last_deltas_come_with_the_completion_not_after_the_hold(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    # Deltas are joined for a subscriber between two deliveries (here held an hour): the
    # turn's completion takes what is held with it at once, ahead of itself, so the reply's
    # last words never wait for the hold.
    demo_server.configure(tokens_per_second=0)  # as fast as possible
    gateway = Gateway(GatewayConfig(provider=provider, coalesce_s=3600.0))
    log = EventLog()
    gateway.subscribe(log)
    session = gateway.session_create()
    try:
        turn_id = gateway.prompt_submit(session, PROMPT).turn_id
        done = log.complete(turn_id, timeout=30.0)  # a loaded machine; the hold is an hour
    finally:
        assert gateway.shutdown(timeout_s=10).threads_left == []
    words = PROMPT.removeprefix("reply with exactly: ")
    assert done.text == words
    events = [e for e in log.events if e.session_id == session]
    ended = next(i for i, e in enumerate(events) if isinstance(e.payload, MessageComplete))
    before = [e.payload for e in events[:ended] if isinstance(e.payload, MessageDelta)]
    assert "".join(p.text for p in before) == words  # all of it, ahead of the completion
    assert not any(isinstance(e.payload, MessageDelta) for e in events[ended:])
