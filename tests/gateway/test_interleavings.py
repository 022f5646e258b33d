"""Random interleavings of submit, stop, console, eviction and quit over several sessions.

Whatever the order, every turn ends with exactly one outcome (or is dropped unrun), stops are
booked to the party that made them, a stop of one session never touches another, and nothing
is left running after the quit.
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from contract.events import MessageComplete, PromptDropped, SessionEvicted
from demo_model.server import DemoModelServer
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig, GatewayError

SESSIONS = 3
ops = st.lists(
    st.one_of(
        st.tuples(st.just("submit"), st.integers(0, SESSIONS - 1)),
        st.tuples(st.just("stop"), st.integers(0, SESSIONS - 1)),
        st.tuples(st.just("console"), st.integers(0, SESSIONS - 1)),
        st.tuples(st.just("evict"), st.just(0)),
        st.tuples(st.just("settle"), st.integers(0, SESSIONS - 1)),
    ),
    min_size=1,
    max_size=14,
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=ops)
def test_interleavings_keep_outcomes_attribution_and_isolation(
    script: list[tuple[str, int]],
    provider: ProviderConfig,
    demo_server: DemoModelServer,
    tmp_path: Path,
) -> None:
    demo_server.configure(tokens_per_second=300.0, max_tokens=20, slots=4)
    (tmp_path / "f.md").write_text("some words to digest")
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path, max_sessions=SESSIONS))
    log = EventLog()
    gateway.subscribe(log)
    sessions = [gateway.session_create(f"s{i}") for i in range(SESSIONS)]
    turns: dict[str, str] = {}  # turn -> session
    user_stopped: set[str] = set()  # sessions the person stopped at least once
    evicted: list[str] = []
    try:
        run_script(script, gateway, log, sessions, turns, user_stopped, evicted)
    finally:
        report = gateway.shutdown(timeout_s=10)
    assert report.threads_left == []
    assert not [t for t in threading.enumerate() if t.name.startswith("desk-")]
    evicted_events = {e.session_id for e in log.events if isinstance(e.payload, SessionEvicted)}
    assert evicted_events == set(evicted)
    check_outcomes(log, turns, user_stopped, evicted)


def run_script(
    script: list[tuple[str, int]],
    gateway: Gateway,
    log: EventLog,
    sessions: list[str],
    turns: dict[str, str],
    user_stopped: set[str],
    evicted: list[str],
) -> None:
    for op, index in script:
        live = [s for s in sessions if s not in evicted]
        session = sessions[index] if sessions[index] in live else (live[0] if live else None)
        if op == "evict":
            sessions.append(gateway.session_create("newcomer"))  # evicts the LRU one
            live_now = gateway.live_sessions()
            evicted.extend(s for s in sessions if s not in live_now and s not in evicted)
        elif session is None:
            continue
        elif op == "submit":
            turns[gateway.prompt_submit(session, f"prompt {len(turns)}").turn_id] = session
        elif op == "stop":
            if gateway.session_interrupt(session, StopRequest.by_user(Surface.DESK_KEY)):
                user_stopped.add(session)
        elif op == "console":
            with contextlib.suppress(GatewayError):  # a session evicted a moment ago
                gateway.console_run(session, "digest f.md")
        elif op == "settle" and turns:
            last = next((t for t, s in reversed(turns.items()) if s == session), None)
            if last is not None:
                log.wait_for(
                    lambda ev, t=last: any(
                        isinstance(e.payload, (MessageComplete, PromptDropped))
                        and e.payload.turn_id == t
                        for e in ev
                    ),
                    10,
                )


def check_outcomes(
    log: EventLog, turns: dict[str, str], user_stopped: set[str], evicted: list[str]
) -> None:
    outcomes: dict[str, list[str]] = defaultdict(list)
    for event in log.events:
        payload = event.payload
        if isinstance(payload, MessageComplete):
            outcomes[payload.turn_id].append(payload.exit_reason)
        elif isinstance(payload, PromptDropped):
            outcomes[payload.turn_id].append("dropped")
    for turn, session in turns.items():
        assert len(outcomes[turn]) == 1, f"turn {turn} ended {outcomes[turn]}"
        (reason,) = outcomes[turn]
        if reason == "interrupted_by_user":
            assert session in user_stopped, "a stop of another session reached this one"
        elif reason == "interrupted_by_system(session.evicted)":
            assert session in evicted
        else:
            assert reason in (
                "completed",
                "dropped",
                "interrupted_by_system(gateway.shutdown)",
            ), reason
