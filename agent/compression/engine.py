"""One compression attempt, end to end, with a real Cancel.

:meth:`Compressor.run` goes through the phases on the calling (worker) thread. The summary is
written by an ordinary :class:`agent.agent.Agent`, so a hard stop closes its socket exactly as it
does for a turn. :meth:`Compressor.interrupt` may be called from any thread at any moment; the
:class:`CommitFence` decides whether the stop wins (before admission: everything is rolled back,
the lease released once, the cooldown untouched) or the commit does (after admission: the
commit completes, and the stop applies to whatever follows).

Nothing in memory changes before the commit: the caller replaces its transcript with
``outcome.history`` only when ``outcome.status == "committed"``.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agent.agent import Agent
from agent.compression.backend import Commit, CompressionBackend
from agent.compression.fence import CommitFence, FenceState
from agent.compression.plan import plan_compression
from agent.compression.policy import CooldownLadder
from agent.compression.status import CompressionPhase, CompressionStatus
from agent.compression.template import summary_message, summary_request
from agent.events import AgentEvent, TextDelta
from agent.outcome import TurnStatus
from agent.provider.client import ChatClient
from agent.provider.types import ChatMessage
from agent.stops import StopRequest, require_hard
from agent.store import Cooldown, StoreError
from agent.tokens import estimate_tokens

PHASES = tuple(CompressionPhase)
"""The phases in order."""


@dataclass(frozen=True, slots=True)
class CompressionProgress:
    """Progress of an attempt.

    Attributes:
        phase: ``lease``, ``prepare``, ``summarize``, ``commit`` or ``done``.
        tokens_in: estimated tokens being summarised.
        tokens_out: summary tokens received so far.
        budget: most tokens the summary may have.
        elapsed_s: seconds since the attempt began.
    """

    phase: CompressionPhase
    tokens_in: int = 0
    tokens_out: int = 0
    budget: int = 0
    elapsed_s: float = 0.0


@dataclass(slots=True)
class CompressionOutcome:
    """How an attempt ended.

    Attributes:
        status: ``committed``, ``cancelled``, ``failed``, ``refused`` (the summary was empty
            or not shorter than its input), ``busy`` (another compression holds the lease) or
            ``nothing`` (nothing to summarise).
        message: one line for the person.
        before_tokens: estimated tokens of the transcript before.
        after_tokens: estimated tokens after (equal to before unless committed).
        history: the new transcript, when committed.
        stop: the stop that cancelled it, or that arrived after admission.
        generation: the attempt's id.
    """

    status: CompressionStatus
    message: str
    before_tokens: int
    after_tokens: int
    history: list[ChatMessage] | None = None
    stop: StopRequest | None = None
    generation: int | None = None
    timings: dict[str, float] = field(default_factory=dict)


ProgressListener = Callable[[CompressionProgress], None]


class Compressor:
    """Runs one compression of one session's transcript.

    Args:
        client: the provider client for the summary call.
        backend: leases, attempts, cooldowns (store or memory).
        session_id: the session.
        history: the active transcript now (not modified).
        window_tokens: the model's context window, in tokens.
        listener: receives progress; must not block.
        focus: what the summary should keep in view (``/compress FOCUS``).
        manual: True for ``/compress``: ignores the cooldown (a failure still arms it).
        lease_ttl_s: lease lifetime in seconds, renewed while the summary streams.
        clock: unix seconds now.
    """

    def __init__(
        self,
        client: ChatClient,
        backend: CompressionBackend,
        session_id: str,
        history: Sequence[ChatMessage],
        *,
        window_tokens: int,
        listener: ProgressListener | None = None,
        focus: str | None = None,
        manual: bool = False,
        lease_ttl_s: float = 120.0,
        ladder: CooldownLadder | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.session_id = session_id
        self.history = list(history)
        self.window_tokens = window_tokens
        self.focus = focus
        self.manual = manual
        self.lease_ttl_s = lease_ttl_s
        self.fence = CommitFence()
        self._backend = backend
        self._listener = listener or (lambda _p: None)
        self._ladder = ladder or CooldownLadder()
        self._clock = clock
        self._holder = f"desk-{uuid.uuid4().hex[:12]}"
        self._started = time.monotonic()
        self._tokens_out = 0
        self._last_renew = 0.0
        self._budget = 0
        self._tokens_in = 0
        # Created now, so a stop that arrives before the summary call still reaches it.
        self._agent = Agent(client, listener=self._on_event, inactivity_timeout_s=None)

    def interrupt(self, stop: StopRequest) -> None:
        """A hard stop from any thread: before admission it cancels and rolls back; after
        admission the commit completes first.

        Raises:
            ValueError: for a soft stop (``hard=False``): a soft interrupt never aborts a
                compression (a steer waits for the turn after it), and none is silently
                ignored.
        """
        require_hard(stop)
        if self.fence.cancel(stop):
            self._agent.interrupt(stop)

    def _progress(self, phase: CompressionPhase) -> None:
        self._listener(
            CompressionProgress(
                phase=phase,
                tokens_in=self._tokens_in,
                tokens_out=self._tokens_out,
                budget=self._budget,
                elapsed_s=time.monotonic() - self._started,
            )
        )

    def _on_event(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta) and event.text:
            self._tokens_out += event.pieces
            now = time.monotonic()
            if now - self._last_renew > self.lease_ttl_s / 4:
                self._last_renew = now
                with contextlib.suppress(StoreError):  # the commit checks the lease anyway
                    self._backend.renew(self.session_id, self._holder, self.lease_ttl_s)
            self._progress(CompressionPhase.SUMMARIZE)

    def _outcome(
        self, status: CompressionStatus, message: str, **more: object
    ) -> CompressionOutcome:
        before = sum(estimate_tokens(m) for m in self.history)
        out = CompressionOutcome(status, message, before, before, stop=self.fence.stop)
        for key, value in more.items():
            setattr(out, key, value)
        return out

    def _abandon(
        self, attempt: int, outcome: CompressionStatus, error: str | None, fail: bool
    ) -> None:
        cooldown = None
        if fail:
            now_cd = self._backend.cooldown(self.session_id)
            until, step = self._ladder.next(now_cd.step, self._clock())
            cooldown = Cooldown(until=until, step=step)
        self._backend.abandon(self.session_id, attempt, self._holder, outcome, error, cooldown)

    def run(self) -> CompressionOutcome:
        """Run the attempt on this thread.

        Returns:
            the outcome; ``history`` is set only when committed.

        Raises:
            agent.store.StoreError: when the store fails outside the commit (the transcript
                is unchanged).
        """
        if self.fence.stop is not None:
            return self._outcome(
                CompressionStatus.CANCELLED, "compression cancelled before it started"
            )
        self._progress(CompressionPhase.LEASE)
        if not self._backend.acquire(self.session_id, self._holder, self.lease_ttl_s):
            return self._outcome(
                CompressionStatus.BUSY,
                "another compression of this session is running; try again later",
            )
        self._last_renew = time.monotonic()
        attempt = self._backend.begin(self.session_id, self._holder)
        try:
            return self._run_attempt(attempt)
        except BaseException:
            # Whatever went wrong, the lease is released once and nothing is committed.
            if self.fence.state in (FenceState.OPEN, FenceState.CANCELLED):
                self._abandon(attempt, CompressionStatus.FAILED, "internal error", fail=False)
            raise

    def _run_attempt(self, attempt: int) -> CompressionOutcome:
        self._progress(CompressionPhase.PREPARE)
        plan = plan_compression(self.history, window_tokens=self.window_tokens)
        if plan.empty:
            self._abandon(attempt, CompressionStatus.NOTHING, None, fail=False)
            return self._outcome(
                CompressionStatus.NOTHING, "nothing to compress yet", generation=attempt
            )
        self._tokens_in = plan.tokens_in
        self._budget = max(256, min(2048, plan.tokens_in // 3))
        self._agent.max_tokens = self._budget
        middle = self.history[plan.head_end : plan.tail_start]
        if self.fence.stop is not None:
            return self._cancelled(attempt)
        self._progress(CompressionPhase.SUMMARIZE)
        result = self._agent.run_conversation(summary_request(middle, focus=self.focus))
        if result.status == TurnStatus.INTERRUPTED or self.fence.state == FenceState.CANCELLED:
            return self._cancelled(attempt)
        if result.status != TurnStatus.COMPLETED:
            error = result.error or result.exit_reason
            self._abandon(attempt, CompressionStatus.FAILED, error, fail=True)
            return self._outcome(
                CompressionStatus.FAILED, f"compression failed: {error}", generation=attempt
            )
        summary = summary_message(result.text)
        tokens_out = estimate_tokens(summary)
        if not result.text.strip() or tokens_out >= plan.tokens_in:
            why = "empty" if not result.text.strip() else "not shorter than what it replaces"
            self._abandon(attempt, CompressionStatus.REFUSED, f"summary {why}", fail=True)
            return self._outcome(
                CompressionStatus.REFUSED, f"compression refused: the summary was {why}"
            )
        self._progress(CompressionPhase.COMMIT)
        if not self.fence.admit():
            return self._cancelled(attempt)
        commit = Commit(
            start=plan.head_end,
            end=plan.tail_start,
            summary=summary,
            tokens_in=plan.tokens_in,
            tokens_out=tokens_out,
            history_len=len(self.history),
        )
        try:
            ok = self._backend.commit(self.session_id, attempt, self._holder, commit)
        except StoreError:
            self.fence.settle(False)
            self._abandon(
                attempt, CompressionStatus.FAILED, "the store failed during the commit", fail=True
            )
            raise
        self.fence.settle(ok)
        if not ok:
            self._abandon(
                attempt, CompressionStatus.FAILED, "lost the lease or a newer attempt", fail=True
            )
            return self._outcome(
                CompressionStatus.FAILED,
                "compression lost its lease to another one; nothing changed",
            )
        history = self.history[: plan.head_end] + [summary] + self.history[plan.tail_start :]
        self._progress(CompressionPhase.DONE)
        after = sum(estimate_tokens(m) for m in history)
        return self._outcome(
            CompressionStatus.COMMITTED,
            f"compressed {plan.tail_start - plan.head_end} messages into a summary",
            after_tokens=after,
            history=history,
            generation=attempt,
        )

    def _cancelled(self, attempt: int) -> CompressionOutcome:
        self._abandon(attempt, CompressionStatus.CANCELLED, None, fail=False)
        return self._outcome(
            CompressionStatus.CANCELLED, "compression cancelled", generation=attempt
        )
