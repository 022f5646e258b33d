"""The fitted turn's retry, step by step: what runs between a request that did not fit and the
retry, and what must never run.

Each test runs :class:`tui_gateway.turns.fitted_turns.FittedTurns` with real parts (an agent talking
to the demo model, a real compression) and acts at one exact moment through the turn's own
events, which the turn publishes on its worker thread: a stop that lands after the first
attempt's outcome was fixed, a stop during the forced compression, a steer the first attempt
never took, a compression while the session's writes wait for the database.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from agent.agent import Agent
from agent.compression import Compressor
from agent.events import TurnResult
from agent.provider.client import ChatClient, ProviderConfig
from agent.steering import Steer
from agent.stops import StopRequest, Surface
from contract.events import CompressionComplete, CompressionProgressed, Payload, TurnState
from contract.kinds import TurnActivity
from demo_model import DemoModelServer
from tests.compression.kit import long_transcript
from tests.context.kit import prose
from tui_gateway.sessions.state import Session, Turn
from tui_gateway.turns.compression import SessionCompression
from tui_gateway.turns.context_window import SessionWindows, no_tools
from tui_gateway.turns.fitted_turns import RETRY_NOTE, FittedTurns

PROMPT = "reply with exactly: fitted"
TOO_LARGE = {"fault": "context", "fault_times": 2, "n_ctx": 4000, "tokenizer": "subword"}
"""The server refuses the first attempt as too large, and the agent's own retry after it."""


@dataclass
class Run:
    """One fitted prompt turn, with a hook on every event it publishes (on its worker)."""

    provider: ProviderConfig
    threshold: float = 100.0
    saving_waits: bool = False
    counts: bool = True  # the session's windows have the server count a request
    events: list[Payload] = field(default_factory=list)
    hooks: list[Callable[[Payload], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.session = Session(
            session_id="s1", title="fitted", model="demo", history=long_transcript(3)
        )
        self.turn = Turn(
            turn_id="t1",
            session_id="s1",
            prompt=PROMPT,
            agent=Agent(ChatClient(self.provider), inactivity_timeout_s=None),
        )
        windows = SessionWindows(4000, self._publish, **({} if self.counts else {"count": None}))
        compression = SessionCompression(windows, None, self._publish, threshold=self.threshold)
        self.fitted = FittedTurns(
            compression,
            self._publish,
            no_tools,
            self._compression_started,
            saving_waits=lambda _session: self.saving_waits,
        )

    def _publish(self, _session: Session, payload: Payload) -> None:
        self.events.append(payload)
        for hook in self.hooks:
            hook(payload)

    def _compression_started(self, turn: Turn, compressor: Compressor) -> None:
        # as the booking office does: stops reach it from now on, an earlier one at once
        turn.compressor = compressor
        pending = turn.agent.stop_request
        if pending is not None:
            compressor.interrupt(pending)

    def stop(self, stop: StopRequest) -> None:
        """Stop the turn as ``session.interrupt`` does: its compression, then its agent."""
        if self.turn.compressor is not None:
            self.turn.compressor.interrupt(stop)
        self.turn.agent.interrupt(stop)

    def __call__(self, on_started: Callable[[], None] = lambda: None) -> TurnResult:
        return self.fitted.run_prompt(self.session, self.turn, self.provider, on_started)

    def compressions(self) -> list[CompressionComplete]:
        return [e for e in self.events if isinstance(e, CompressionComplete)]

    def retry_announced(self) -> bool:
        return any(isinstance(e, TurnState) and e.detail == RETRY_NOTE for e in self.events)


def _asked(server: DemoModelServer) -> list[tuple[int | None, bool]]:
    """(status, carried the prompt) of every chat request the server saw, in order."""
    return [
        (r.status, any(m.get("content") == PROMPT for m in r.messages))
        for r in server.records.list()
    ]


def test_a_refused_request_is_compressed_by_force_then_retried(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    run = Run(provider)  # no automatic compression: only the refusal can force one
    demo_server.configure(**TOO_LARGE)
    result = run()
    assert (result.status, result.text) == ("completed", "fitted"), result.error
    assert run.retry_announced()
    assert [c.status for c in run.compressions()] == ["committed"]
    # refused twice, summarised (the prompt not in it), then sent once more and answered
    assert _asked(demo_server) == [(400, True), (400, True), (200, False), (200, True)]


def test_a_stop_after_the_refusal_sends_nothing_more(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    run = Run(provider)
    stop = StopRequest.by_user(Surface.DESK_KEY)

    def stop_once_refused(payload: Payload) -> None:
        if isinstance(payload, TurnState) and payload.detail == RETRY_NOTE:
            run.stop(stop)  # the first attempt's outcome is fixed: this stop comes late

    run.hooks.append(stop_once_refused)
    demo_server.configure(**TOO_LARGE)
    result = run()
    assert result.status == "failed" and result.error is not None
    assert result.error.startswith("not sent: ")
    assert run.compressions() == []  # no compression after the stop
    assert not any(isinstance(e, CompressionProgressed) for e in run.events)
    assert _asked(demo_server) == [(400, True), (400, True)]  # and no retry


def test_a_stop_during_the_forced_compression_ends_the_retry_on_entry(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    run = Run(provider)
    stop = StopRequest.by_user(Surface.DESK_KEY)

    def stop_when_it_compresses(payload: Payload) -> None:
        if isinstance(payload, TurnState) and payload.state == TurnActivity.COMPRESSING:
            run.stop(stop)  # between the refusal and the retry, while it compresses

    run.hooks.append(stop_when_it_compresses)
    demo_server.configure(**TOO_LARGE)
    result = run()
    assert (result.status, result.exit_reason) == ("interrupted", "interrupted_by_user")
    assert result.stop is stop
    assert [c.status for c in run.compressions()] == ["cancelled"]
    assert not any(prompt for status, prompt in _asked(demo_server) if status == 200)


def test_steers_the_first_attempt_never_took_survive_the_retry(
    provider: ProviderConfig, demo_server: DemoModelServer
) -> None:
    run = Run(provider)
    steer = Steer(StopRequest.soft(Surface.DESK_KEY, "steer"), "and keep it short")
    demo_server.configure(**TOO_LARGE)
    result = run(on_started=lambda: run.turn.agent.steer(steer) or None)
    assert result.status == "completed", result.error
    assert [s.steer_id for s in result.undelivered] == [steer.steer_id]


@pytest.mark.parametrize("waits", [True, False])
def test_no_automatic_compression_while_the_session_s_writes_wait(
    provider: ProviderConfig, demo_server: DemoModelServer, waits: bool
) -> None:
    run = Run(provider, threshold=0.0, saving_waits=waits)  # a compression is always due
    result = run()
    assert (result.status, result.text) == ("completed", "fitted"), result.error
    if waits:  # the saved transcript is behind the one in memory: not now
        assert run.compressions() == []
        assert _asked(demo_server) == [(200, True)]
    else:
        assert [c.status for c in run.compressions()] == ["committed"]


@pytest.mark.parametrize(("chars", "summarised"), [(30_000, False), (16_000, True)])
def test_without_the_server_s_count_a_margin_decides_whether_a_summary_is_tried(
    provider: ProviderConfig, demo_server: DemoModelServer, chars: int, summarised: bool
) -> None:
    # the windows count nothing: the prompt alone is judged by the estimate, which may be
    # wrong near the window (a summary is tried) but not at twice the window (history kept)
    demo_server.configure(n_ctx=4000, tokenizer="subword")
    run = Run(provider, counts=False)
    run.turn.prompt = prose(chars)
    history = list(run.session.history)
    result = run()
    assert result.status == "failed" and result.error is not None
    assert result.error.startswith("not sent: ")
    if summarised:  # 1.3 windows by the estimate: it might be wrong, a summary is tried
        assert [c.status for c in run.compressions()] == ["committed"]
        assert result.error.startswith("not sent: the prompt needs ")
    else:  # 2.3 windows by the estimate: no summary can make room, the history is kept
        assert run.compressions() == []
        assert run.session.history == history
        assert result.error.startswith("not sent: the prompt alone needs about ")
    assert not any(prompt for _status, prompt in _asked(demo_server))
