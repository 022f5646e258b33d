"""The key rule at the gateway: a stop key stops what the session runs now, or the prompt
entered before it whose submit is still in flight, whichever call arrives first; never a
prompt entered after it, and never a turn that already ended while another runs."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.stops import StopRequest, Surface
from agent.store import SqliteStore
from contract.events import MessageStart
from demo_model.server import DemoModelServer
from desk.stop_key import key_stop
from tests.support import EventLog
from tui_gateway.gateway import Gateway, GatewayConfig

T0 = 1_000.0
"""A made-up ``time.monotonic()`` reading: the keys' stamps only need their order."""


@pytest.fixture
def gateway(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> Iterator[tuple[Gateway, EventLog]]:
    demo_server.configure(tokens_per_second=40.0, max_tokens=400, slots=8)
    gateway = Gateway(GatewayConfig(provider=provider, cwd=tmp_path))
    log = EventLog()
    gateway.subscribe(log)
    try:
        yield gateway, log
    finally:
        report = gateway.shutdown(timeout_s=10)
        assert report.threads_left == []


def race(rng: random.Random, spins: int, *calls: Callable[[], object]) -> None:
    """Run ``calls`` on threads of their own, released together by one barrier, each after
    a random spin of up to ``spins`` loops; returns once all have returned (10 s each)."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], object], spin: int) -> None:
        barrier.wait()
        for _ in range(spin):
            pass
        call()

    threads = [threading.Thread(target=run, args=(c, rng.randrange(spins))) for c in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)


def stop_of(gateway: Gateway, session: str, turn_id: str) -> StopRequest | None:
    """The hard stop the turn's agent got, if any."""
    return gateway.turn(session, turn_id).agent.stop_request


def test_a_stop_key_that_reaches_the_gateway_first_stops_the_prompt_entered_before_it(
    gateway: tuple[Gateway, EventLog],
) -> None:
    gw, log = gateway
    session = gw.session_create()
    key = key_stop(T0 + 0.002)
    assert gw.session_interrupt(session, key, keyed_at=T0 + 0.002) is None  # nothing runs yet
    sent = gw.prompt_submit(session, "hello", entered_at=T0)
    done = log.complete(sent.turn_id, timeout=10)
    assert done.status == "interrupted"
    assert done.exit_reason == "interrupted_by_user"
    assert done.stop is not None and done.stop.surface == Surface.DESK_KEY


def test_a_prompt_a_stop_key_reached_the_gateway_before_sends_no_request(
    provider: ProviderConfig, demo_server: DemoModelServer, tmp_path: Path
) -> None:
    # Saved as the desk saves (the submit waits for its prompt's write): the turn's worker,
    # started before that write, sent the request while the submit waited, then was stopped.
    demo_server.configure(tokens_per_second=40.0, max_tokens=400, slots=8)
    gw = Gateway(
        GatewayConfig(provider=provider, cwd=tmp_path), store=SqliteStore(tmp_path / "d.db")
    )
    log = EventLog()
    gw.subscribe(log)
    try:
        session = gw.session_create()
        before = len(demo_server.records.list())
        for n in range(5):
            key = key_stop(T0 + n + 0.002)
            assert gw.session_interrupt(session, key, keyed_at=T0 + n + 0.002) is None
            sent = gw.prompt_submit(session, f"hello {n}", entered_at=T0 + n)
            assert log.complete(sent.turn_id, timeout=10).exit_reason == "interrupted_by_user"
        assert len(demo_server.records.list()) == before  # the model server never heard of them
    finally:
        assert gw.shutdown(timeout_s=10).threads_left == []


def test_a_stop_key_after_the_submit_stops_that_turn(gateway: tuple[Gateway, EventLog]) -> None:
    gw, log = gateway
    session = gw.session_create()
    sent = gw.prompt_submit(session, "hello", entered_at=T0)
    assert gw.session_interrupt(session, key_stop(T0 + 1), keyed_at=T0 + 1) == sent.turn_id
    assert log.complete(sent.turn_id, timeout=10).exit_reason == "interrupted_by_user"


def test_a_stop_key_made_before_the_enter_never_stops_its_prompt(
    gateway: tuple[Gateway, EventLog],
) -> None:
    gw, _log = gateway
    session = gw.session_create()
    assert gw.session_interrupt(session, key_stop(T0), keyed_at=T0) is None  # armed
    sent = gw.prompt_submit(session, "hello", entered_at=T0 + 0.001)  # a later Enter
    assert stop_of(gw, session, sent.turn_id) is None
    # Arriving late, after the later prompt started, the same key still leaves it alone.
    assert gw.session_interrupt(session, key_stop(T0), keyed_at=T0) is None
    assert stop_of(gw, session, sent.turn_id) is None


def test_a_stop_key_stops_the_turn_that_runs_now_while_the_screen_shows_the_last_one(
    gateway: tuple[Gateway, EventLog], demo_server: DemoModelServer
) -> None:
    gw, log = gateway
    session = gw.session_create()
    demo_server.configure(tokens_per_second=2000.0, max_tokens=3)
    first = gw.prompt_submit(session, "one", entered_at=T0)
    log.complete(first.turn_id, timeout=10)  # ended on its own: a screen may still show it
    demo_server.configure(tokens_per_second=40.0, max_tokens=400)
    second = gw.prompt_submit(session, "two", entered_at=T0 + 1)
    # The key named nothing: the gateway stops what runs, not the turn a screen last drew.
    assert gw.session_interrupt(session, key_stop(T0 + 2), keyed_at=T0 + 2) == second.turn_id
    assert log.complete(second.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    assert log.complete(first.turn_id).exit_reason == "completed"


def test_two_prompts_entered_before_the_key_stop_the_first_and_keep_the_second(
    gateway: tuple[Gateway, EventLog],
) -> None:
    gw, log = gateway
    session = gw.session_create()
    assert gw.session_interrupt(session, key_stop(T0 + 2), keyed_at=T0 + 2) is None
    first = gw.prompt_submit(session, "one", entered_at=T0)
    second = gw.prompt_submit(session, "two", entered_at=T0 + 1)  # queued, or run once one ended
    assert log.complete(first.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    assert log.wait_for(
        lambda events: any(
            isinstance(e.payload, MessageStart) and e.payload.turn_id == second.turn_id
            for e in events
        ),
        timeout=10,
    )
    assert stop_of(gw, session, second.turn_id) is None  # kept, as after any stop of a turn
    gw.session_interrupt(session, StopRequest.by_user(Surface.DESK_BUTTON))


def test_a_submit_no_key_sent_leaves_an_armed_stop_for_the_keyed_one(
    gateway: tuple[Gateway, EventLog],
) -> None:
    gw, log = gateway
    session = gw.session_create()
    assert gw.session_interrupt(session, key_stop(T0 + 1), keyed_at=T0 + 1) is None
    other = gw.prompt_submit(session, "from another frontend")  # no key: not this key's
    assert stop_of(gw, session, other.turn_id) is None
    gw.session_interrupt(session, StopRequest.by_user(Surface.API_STOP), turn_id=other.turn_id)
    log.complete(other.turn_id, timeout=10)


@pytest.mark.parametrize("seed", range(30))
def test_submit_and_stop_key_in_any_order_obey_the_order_of_the_keys(
    gateway: tuple[Gateway, EventLog], seed: int
) -> None:
    """Enter and the stop key race from two threads released by one barrier; whichever call
    reaches the gateway first, the prompt is stopped exactly when its Enter came first."""
    gw, log = gateway
    rng = random.Random(seed)
    session = gw.session_create()
    enter_first = rng.random() < 0.7
    entered_at, keyed_at = (T0, T0 + 0.001) if enter_first else (T0 + 0.001, T0)
    sent: list[str] = []
    stopped: list[str | None] = []
    race(
        rng,
        2000,
        lambda: sent.append(gw.prompt_submit(session, "race", entered_at=entered_at).turn_id),
        lambda: stopped.append(
            gw.session_interrupt(session, key_stop(keyed_at), keyed_at=keyed_at)
        ),
    )
    (turn_id,) = sent
    if enter_first:
        assert stopped[0] in (None, turn_id)  # None: it arrived first and armed the stop
        assert log.complete(turn_id, timeout=10).exit_reason == "interrupted_by_user"
    else:
        assert stopped == [None]
        assert stop_of(gw, session, turn_id) is None
        gw.session_interrupt(session, StopRequest.by_user(Surface.DESK_BUTTON))


def test_enter_esc_pairs_read_in_one_burst_stop_one_prompt_each(
    gateway: tuple[Gateway, EventLog],
) -> None:
    """``one⏎ Esc two⏎ Esc three⏎`` read at once: both stop keys reach the gateway before any
    submit; each stops the prompt entered just before it (``two`` waits in the queue for
    ``one`` to close, and is stopped as it starts), and ``three`` runs."""
    gw, log = gateway
    session = gw.session_create()
    for keyed in (T0 + 0.001, T0 + 0.003):
        assert gw.session_interrupt(session, key_stop(keyed), keyed_at=keyed) is None
    one = gw.prompt_submit(session, "one", entered_at=T0)
    two = gw.prompt_submit(session, "two", entered_at=T0 + 0.002)
    three = gw.prompt_submit(session, "reply with exactly: three", entered_at=T0 + 0.004)
    for sent in (one, two):
        assert log.complete(sent.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    assert log.complete(three.turn_id, timeout=20).status == "completed"


def test_a_second_key_while_the_first_turn_stops_stops_the_prompt_entered_before_it(
    gateway: tuple[Gateway, EventLog],
) -> None:
    # one⏎ Esc two⏎ Esc three⏎, all reaching the gateway before ``one`` closed (read while the
    # desk started): the first key stops one, the second two, and three runs.
    gw, log = gateway
    session = gw.session_create()
    one = gw.prompt_submit(session, "one", entered_at=T0)
    two = gw.prompt_submit(session, "two", entered_at=T0 + 2)
    three = gw.prompt_submit(session, "reply with exactly: three", entered_at=T0 + 4)
    stopped = gw.session_interrupt(session, key_stop(T0 + 1), keyed_at=T0 + 1)
    assert stopped == one.turn_id
    assert gw.session_interrupt(session, key_stop(T0 + 3), keyed_at=T0 + 3) is None  # two's
    assert log.complete(one.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    assert log.complete(two.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    done = log.complete(three.turn_id, timeout=30)
    assert (done.status, done.text) == ("completed", "three")


@pytest.mark.parametrize("key_first", [True, False])
def test_a_stop_key_after_stop_and_send_stops_the_new_prompt_in_either_order(
    gateway: tuple[Gateway, EventLog], key_first: bool
) -> None:
    # one⏎ (runs), then "two" Ctrl+S (stops one, sends two), then Esc: the Esc is for two,
    # whether it reaches the gateway before the Ctrl+S's submit (it stops one first: the
    # terminal's input thread sends it at once, the submit goes through the UI) or after it.
    gw, log = gateway
    session = gw.session_create()
    one = gw.prompt_submit(session, "one", entered_at=T0)
    ctrl_s = StopRequest.by_user(Surface.DESK_KEY, "stop and send")
    if key_first:
        assert gw.session_interrupt(session, key_stop(T0 + 2), keyed_at=T0 + 2) == one.turn_id
    two = gw.prompt_submit(session, "two", stop=ctrl_s, entered_at=T0 + 1)
    if not key_first:
        assert gw.session_interrupt(session, key_stop(T0 + 2), keyed_at=T0 + 2) is None
    assert log.complete(one.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    done = log.complete(two.turn_id, timeout=10)
    assert (done.exit_reason, done.text) == ("interrupted_by_user", "")


def test_a_stop_key_made_before_stop_and_send_leaves_the_new_prompt_alone(
    gateway: tuple[Gateway, EventLog],
) -> None:
    # Esc, then "two" Ctrl+S a moment later: the Esc stopped one; two is the person's next
    # prompt and runs (its submit came after the key, and so did its key).
    gw, log = gateway
    session = gw.session_create()
    one = gw.prompt_submit(session, "one", entered_at=T0)
    assert gw.session_interrupt(session, key_stop(T0 + 1), keyed_at=T0 + 1) == one.turn_id
    ctrl_s = StopRequest.by_user(Surface.DESK_KEY, "stop and send")
    two = gw.prompt_submit(session, "reply with exactly: two", stop=ctrl_s, entered_at=T0 + 2)
    done = log.complete(two.turn_id, timeout=30)
    assert (done.status, done.text) == ("completed", "two")


@pytest.mark.parametrize("seed", range(12))
def test_stop_and_send_and_a_later_stop_key_race_and_the_new_prompt_is_stopped(
    gateway: tuple[Gateway, EventLog], seed: int
) -> None:
    """The Ctrl+S submit and the Esc after it race from two threads released by one barrier:
    whichever arrives first, both turns end as the person's stops and the new one sends no
    text."""
    gw, log = gateway
    rng = random.Random(seed)
    session = gw.session_create()
    one = gw.prompt_submit(session, "one", entered_at=T0)
    ctrl_s = StopRequest.by_user(Surface.DESK_KEY, "stop and send")
    sent: list[str] = []
    race(
        rng,
        3000,
        lambda: sent.append(
            gw.prompt_submit(session, "two", stop=ctrl_s, entered_at=T0 + 1).turn_id
        ),
        lambda: gw.session_interrupt(session, key_stop(T0 + 2), keyed_at=T0 + 2),
    )
    (two,) = sent
    assert log.complete(one.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    assert log.complete(two, timeout=10).exit_reason == "interrupted_by_user"


@pytest.mark.parametrize("first_key_armed", [True, False])
def test_a_key_that_overtakes_the_prompt_typed_before_it_stops_that_prompt(
    gateway: tuple[Gateway, EventLog], first_key_armed: bool
) -> None:
    # one⏎ Esc two⏎ Esc three⏎ read in five reads: a key goes to the gateway from the input
    # thread at once, a prompt through the UI, so the second Esc arrived while one was
    # stopping and before two was submitted; it was spent on one again and two ran whole.
    gw, log = gateway
    session = gw.session_create()
    if first_key_armed:  # the first Esc overtook one's submit too
        assert gw.session_interrupt(session, key_stop(T0 + 1), keyed_at=T0 + 1) is None
        one = gw.prompt_submit(session, "one", entered_at=T0)
    else:
        one = gw.prompt_submit(session, "one", entered_at=T0)
        assert gw.session_interrupt(session, key_stop(T0 + 1), keyed_at=T0 + 1) == one.turn_id
    assert gw.session_interrupt(session, key_stop(T0 + 3), keyed_at=T0 + 3) is None  # two's
    two = gw.prompt_submit(session, "two", entered_at=T0 + 2)
    three = gw.prompt_submit(session, "reply with exactly: three", entered_at=T0 + 4)
    assert log.complete(one.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    assert log.complete(two.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    done = log.complete(three.turn_id, timeout=30)
    assert (done.status, done.text) == ("completed", "three")


def test_a_key_after_ctrl_s_that_overtook_both_submits_stops_what_ctrl_s_sent(
    gateway: tuple[Gateway, EventLog],
) -> None:
    # alpha⏎ beta Ctrl+S Esc read at once: the Esc reaches the gateway before either prompt
    # (armed), alpha's submit takes it, and Ctrl+S stops alpha anyway: the Esc was for beta.
    gw, log = gateway
    session = gw.session_create()
    assert gw.session_interrupt(session, key_stop(T0 + 2), keyed_at=T0 + 2) is None
    alpha = gw.prompt_submit(session, "alpha", entered_at=T0)
    ctrl_s = StopRequest.by_user(Surface.DESK_KEY, "stop and send")
    beta = gw.prompt_submit(session, "beta", stop=ctrl_s, entered_at=T0 + 1)
    assert log.complete(alpha.turn_id, timeout=10).exit_reason == "interrupted_by_user"
    done = log.complete(beta.turn_id, timeout=10)
    assert (done.exit_reason, done.text) == ("interrupted_by_user", "")
