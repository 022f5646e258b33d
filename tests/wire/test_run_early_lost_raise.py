"""A SIGTERM or a Ctrl+C whose raise Python dropped while ``desk run`` started (raised in a
weakref callback or a ``__del__``, where Python reports it and goes on) is not lost: the next
phase acts on it, and the run ends as the system's stop (the person's, for Ctrl+C) with one
``turn.completed``."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.wire import run_early
from tui_gateway.wire.headless import run_turn

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="signals: main thread"
)


@pytest.fixture(autouse=True)
def handlers_put_back() -> Iterator[None]:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, *run_early.SYSTEM_SIGNALS)}
    yield
    run_early.disarm()
    for sig, handler in before.items():
        signal.signal(sig, handler)


def lose_a_raise(signum: int) -> None:
    """SIGTERM's handler runs, and its raise is dropped (as Python drops it in a callback)."""
    with contextlib.suppress(run_early.SystemSignal):  # as Python drops it in a callback
        run_early.on_signal(signum, None)


def test_a_lost_raise_is_raised_again_by_the_next_arm() -> None:
    run_early.arm()
    lose_a_raise(signal.SIGTERM)
    assert run_early.pending() == signal.SIGTERM
    with pytest.raises(run_early.SystemSignal) as raised:
        run_early.arm()
    assert raised.value.signum == signal.SIGTERM


def test_a_signal_held_before_arm_is_raised_by_it() -> None:
    run_early.hold()
    run_early.on_signal(signal.SIGHUP, None)  # kept, nothing raised
    with pytest.raises(run_early.SystemSignal) as raised:
        run_early.arm()
    assert raised.value.signum == signal.SIGHUP


def test_the_run_acts_on_a_lost_raise_when_it_takes_the_signals_over(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp_path))
    run_early.arm()
    lose_a_raise(signal.SIGTERM)
    out, err = io.StringIO(), io.StringIO()
    code = run_turn(gateway, "write a long story", json=True, out=out, err=err)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert code == 143
    assert [x["type"] for x in lines].count("turn.completed") == 1
    last = lines[-1]
    assert last["type"] == "turn.completed"
    assert last["payload"]["exit_reason"] == "interrupted_by_system(gateway.shutdown)"
    assert run_early.pending() is None


def test_a_ctrl_c_held_before_arm_is_raised_by_it_as_the_person_s_stop() -> None:
    run_early.hold()
    run_early.on_signal(signal.SIGINT, None)  # kept, nothing raised
    with pytest.raises(KeyboardInterrupt) as raised:
        run_early.arm()
    assert not isinstance(raised.value, run_early.SystemSignal)
    assert (
        run_early.stopped_before_start(False, io.StringIO(), io.StringIO(), by=raised.value) == 130
    )


def test_a_ctrl_c_whose_raise_was_lost_stops_the_run_as_the_person(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    gateway = Gateway(GatewayConfig(provider=provider, approvals=False, cwd=tmp_path))
    run_early.arm()
    with contextlib.suppress(KeyboardInterrupt):  # as Python drops it in a callback
        run_early.on_signal(signal.SIGINT, None)
    assert run_early.pending() == signal.SIGINT
    out, err = io.StringIO(), io.StringIO()
    code = run_turn(gateway, "write a long story", json=True, out=out, err=err)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert code == 130
    assert [x["type"] for x in lines].count("turn.completed") == 1
    assert lines[-1]["payload"]["exit_reason"] == "interrupted_by_user"
    assert run_early.pending() is None
