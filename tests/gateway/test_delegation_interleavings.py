"""Random interleavings of delegations, steers, stops and a quit: one outcome for every turn
and every child agent, in memory and in the store, and nothing left running.

Each example drives a fresh gateway (over a fresh store) against the demo model with a drawn
sequence of actions at drawn moments, then quits. The moments are waits on an event that is
never set (they pick when the next action lands; nothing waits for a thread that way).
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import (
    ChildCompleted,
    ChildStarted,
    MessageComplete,
    PromptDropped,
    PromptSteered,
)
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig, GatewayError

ACTIONS = ("foreground", "background", "both", "steer", "stop", "stop child", "prompt")
PROMPTS = {
    "foreground": "delegate: [demo tps=40] child task",
    "background": "delegate in background: [demo tps=40] background task",
    "both": "delegate in background: [demo tps=40] one\ndelegate: [demo tps=40] two",
    "prompt": "reply with exactly: a plain prompt",
}
PAUSE = threading.Event()  # never set: waiting on it picks a moment


def run(gateway: Gateway, session: str, action: str, turns: set[str], steers: set[str]) -> None:
    """One action; the turns it made go into ``turns``, the steers a turn took in ``steers``."""
    if action in PROMPTS:
        turns.add(gateway.prompt_submit(session, PROMPTS[action]).turn_id)
    elif action == "steer":
        stop = StopRequest.soft(Surface.DESK_KEY, "typed while it ran")
        result = gateway.prompt_steer(session, "reply with exactly: steered", stop)
        (steers if result.steered else turns).add(result.steer_id)
    elif action == "stop":
        gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY))
    else:
        live = [a for a in gateway.session_agents(session) if a.running]
        if live:
            stop = StopRequest.by_user(Surface.DESK_BUTTON)
            gateway.session_interrupt(session, stop, turn_id=live[-1].turn_id)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(ACTIONS), st.floats(0.0, 0.15)), min_size=1, max_size=6
    )
)
def test_every_turn_and_child_has_one_outcome_whatever_the_order(
    steps: list[tuple[str, float]], provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    demo_server.configure(slots=6, tokens_per_second=150.0)
    with TemporaryDirectory() as tmp:
        db = Path(tmp) / "desk.db"
        gateway = Gateway(GatewayConfig(provider=provider, approvals=False), store=SqliteStore(db))
        log = EventLog()
        gateway.subscribe(log)
        session = gateway.session_create()
        turns: set[str] = set()
        steers: set[str] = set()
        for action, pause in steps:
            PAUSE.wait(pause)
            with contextlib.suppress(GatewayError):  # refused (e.g. quitting), not lost
                run(gateway, session, action, turns, steers)
        report = gateway.shutdown(timeout_s=15)
        assert report.threads_left == []
        assert gateway.worker_threads() == []

        ends = [c.turn_id for c in log.of_type(MessageComplete)]
        ends += [d.turn_id for d in log.of_type(PromptDropped)]
        for turn_id in turns:
            assert ends.count(turn_id) == 1, turn_id
        assert len(ends) == len(set(ends))  # never two outcomes for one turn
        delivered = {s.steer_id for s in log.of_type(PromptSteered)}
        for steer_id in steers:  # delivered where it was, or back as a prompt: once, never lost
            assert (steer_id in delivered) != (steer_id in ends), steer_id
        started = [c.turn_id for c in log.of_type(ChildStarted)]
        finished = [c.turn_id for c in log.of_type(ChildCompleted)]
        assert sorted(started) == sorted(finished)  # each child: exactly one outcome
        user_stops = any(a in ("stop", "stop child") for a, _ in steps)
        for child in log.of_type(ChildCompleted):
            if child.exit_reason == "interrupted_by_user":
                assert user_stops  # only a person's stop is booked to the person
        with SqliteStore(db) as store:
            assert store.turns.open_turns() == []
            assert store.queue.queued_prompts() == []
            rows = {r.id: r for r in store.turns.list_turns(session)}
            for child_id in started:
                row = rows[child_id]
                assert row.parent_turn_id is not None and row.exit_reason is not None
