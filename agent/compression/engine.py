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
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agent.agent import Agent
from agent.compression.backend import Commit, CompressionBackend
from agent.compression.fence import CommitFence, FenceState
from agent.compression.fitting import NotFitted, RequestBuilder, fitted_call
from agent.compression.manual import manual_plan, nothing_reason
from agent.compression.plan import SUMMARY_MARKER, CompressionPlan, plan_compression
from agent.compression.policy import CooldownLadder
from agent.compression.rounds import RoundsResult, run_rounds
from agent.compression.status import CompressionPhase, CompressionStatus
from agent.context.budget import ContextBudget, headroom, reply_reserve
from agent.context.request import FitPolicy
from agent.context.shape import well_formed
from agent.events import AgentEvent, TextDelta, TurnResult
from agent.outcome import TurnStatus
from agent.provider.client import ChatClient
from agent.provider.types import ChatMessage
from agent.provider.window import ContextWindow, WindowSource
from agent.stops import StopRequest, require_hard
from agent.store import Cooldown, StoreError
from agent.store.liveness import lease_holder

PHASES = tuple(CompressionPhase)
"""The phases in order."""

STORED_PHASES = {
    CompressionPhase.PREPARE: "prepare",
    CompressionPhase.SUMMARIZE: "summarize",
    CompressionPhase.COMMIT: "commit",
}
"""The attempt row's phase for each progress phase (it starts as ``acquire lease``)."""


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
        before_tokens: estimated tokens of the transcript before (the session's calibrated
            count).
        after_tokens: estimated tokens after (equal to before unless committed).
        fits: False when, committed or not, the next request (the transcript plus
            ``reserve_tokens``) still cannot fit the window by the calibrated count.
        history: the new transcript, when committed.
        stop: the stop that cancelled it, or that arrived after admission.
        generation: the attempt's id.
        closed_ms: for a cancel during the summary, milliseconds from the stop to the summary
            request's connection being closed.
        released_at: for a cancel, ``time.monotonic()`` once the attempt was rolled back and
            its lease released.
    """

    status: CompressionStatus
    message: str
    before_tokens: int
    after_tokens: int
    fits: bool = True
    history: list[ChatMessage] | None = None
    stop: StopRequest | None = None
    generation: int | None = None
    timings: dict[str, float] = field(default_factory=dict)
    closed_ms: float | None = None
    released_at: float | None = None


ProgressListener = Callable[[CompressionProgress], None]


class Compressor:
    """Runs one compression of one session's transcript.

    Args:
        client: the provider client for the summary call.
        backend: leases, attempts, cooldowns (store or memory).
        session_id: the session.
        history: the active transcript now (not modified).
        window_tokens: the model's context window, in tokens (used when ``context`` is None).
        context: the session's context budget: its window and calibrated count decide the
            plan and check every summary call before it is sent.
        target_tokens: the transcript's size to reach so the next request fits (tokens); None
            plans the usual compression only (see `plan_compression`).
        reserve_tokens: what the next request adds to the transcript (its prompt and tool
            definitions, tokens), for the check of the result.
        listener: receives progress; must not block.
        focus: what the summary should keep in view (``/compress FOCUS``).
        manual: True for ``/compress``: ignores the cooldown (a failure still arms it), and
            summarises more than the usual plan when that finds nothing, keeping the last
            exchange whole (:mod:`agent.compression.manual`).
        lease_ttl_s: lease lifetime in seconds, renewed while the summary streams.
        started_at: ``time.monotonic()`` the progress's ``elapsed_s`` counts from (the turn's
            start, so a frontend's panel and status bar agree); now when None.
        clock: unix seconds now.
        owner: the owner string of this process in the store (``store.owner``), named in the
            lease holder so that a desk started after a crash takes the lease over at once;
            None (no store) for a holder that names no process.
    """

    def __init__(
        self,
        client: ChatClient,
        backend: CompressionBackend,
        session_id: str,
        history: Sequence[ChatMessage],
        *,
        window_tokens: int,
        context: ContextBudget | None = None,
        target_tokens: int | None = None,
        reserve_tokens: int = 0,
        listener: ProgressListener | None = None,
        focus: str | None = None,
        manual: bool = False,
        lease_ttl_s: float = 120.0,
        started_at: float | None = None,
        ladder: CooldownLadder | None = None,
        clock: Callable[[], float] = time.time,
        owner: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.history = list(history)
        self.context = context or ContextBudget(
            ContextWindow(window_tokens, WindowSource.CONFIGURED)
        )
        self.window_tokens = self.context.window.tokens
        self.target_tokens = target_tokens
        self.reserve_tokens = reserve_tokens
        self.focus = focus
        self.manual = manual
        self.lease_ttl_s = lease_ttl_s
        self.fence = CommitFence()
        self._backend = backend
        self._listener = listener or (lambda _p: None)
        self._ladder = ladder or CooldownLadder()
        self._clock = clock
        attempt = uuid.uuid4().hex[:12]
        self._holder = lease_holder(owner, attempt) if owner else f"desk-{attempt}"
        self._started = started_at if started_at is not None else time.monotonic()
        self._tokens_out = 0
        self._last_renew = 0.0
        self._budget = 0
        self._tokens_in = 0
        self._attempt: int | None = None
        self._client = client
        self._agent_lock = threading.Lock()
        self._calls = 0
        self._abandoned = False
        # Created now, so a stop that arrives before the summary call still reaches it.
        self._agent = self._new_agent()

    def _new_agent(self) -> Agent:
        return Agent(
            self._client, listener=self._on_event, inactivity_timeout_s=None, context=self.context
        )

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
            with self._agent_lock:
                agent = self._agent
            agent.interrupt(stop)

    def _summarise(self, request: list[ChatMessage], budget: int) -> TurnResult:
        """One summary call, on an agent of its own (each call after the first gets a new one:
        an agent's finished turn forgets its stop, and a stop must never be forgotten). The
        server counts the request where it can, and it is not sent when the summary would
        not have ``budget`` tokens of room (:mod:`agent.compression.fitting`)."""
        with self._agent_lock:
            if self._calls:
                self._agent = self._new_agent()
            self._calls += 1
            agent = self._agent
        stop = self.fence.stop
        if stop is not None:
            agent.interrupt(stop)  # the fence was cancelled while the agent was replaced
        agent.max_tokens = budget
        agent.fit_policy = FitPolicy(count_share=0.0, reply_at_least=budget)
        return agent.run_conversation(request)

    def _progress(self, phase: CompressionPhase) -> None:
        stored = STORED_PHASES.get(phase)
        if stored is not None and self._attempt is not None:
            with contextlib.suppress(StoreError):  # the phase row is a report, not a decision
                self._backend.phase(self._attempt, stored)
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

    def _size(self, history: Sequence[ChatMessage]) -> int:
        """The transcript's tokens as the next request carries it (see `well_formed`)."""
        return self.context.calibration.count(well_formed(history))

    def _fits(self, tokens: int) -> bool:
        prompt = tokens + self.reserve_tokens
        spare = headroom(prompt, measured=self.context.calibration.measured)
        return prompt + spare + reply_reserve(self.window_tokens) <= self.window_tokens

    def _outcome(
        self, status: CompressionStatus, message: str, **more: object
    ) -> CompressionOutcome:
        before = self._size(self.history)
        out = CompressionOutcome(
            status, message, before, before, fits=self._fits(before), stop=self.fence.stop
        )
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
        self._abandoned = True
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
        self._attempt = attempt
        try:
            return self._run_attempt(attempt)
        except BaseException:
            # Whatever went wrong, the lease is released once and nothing is committed: a
            # commit that was admitted but raised did not happen (its transaction rolled back).
            if self.fence.state == FenceState.ADMITTED:
                self.fence.settle(False)
            if self.fence.state != FenceState.COMMITTED and not self._abandoned:
                with contextlib.suppress(StoreError):  # the error being raised says more
                    self._abandon(attempt, CompressionStatus.FAILED, "internal error", fail=False)
            raise

    def _run_attempt(self, attempt: int) -> CompressionOutcome:
        self._progress(CompressionPhase.PREPARE)
        plan = plan_compression(
            self.history,
            window_tokens=self.window_tokens,
            calibration=self.context.calibration,
            target_tokens=self.target_tokens,
        )
        usual = plan
        if plan.empty and self.manual:  # asked for: more than the usual plan when it can
            plan = manual_plan(
                self.history,
                usual,
                size_tokens=self._size(self.history),
                window_tokens=self.window_tokens,
                calibration=self.context.calibration,
                target_tokens=self.target_tokens,
            )
        if plan.empty:
            self._abandon(attempt, CompressionStatus.NOTHING, None, fail=False)
            why = nothing_reason(self.history, usual)
            return self._outcome(CompressionStatus.NOTHING, why, generation=attempt)
        ended: list[CompressionOutcome] = []

        def summarise(build: RequestBuilder, budget: int) -> str | None:
            if self.fence.stop is not None:
                ended.append(self._cancelled(attempt))
                return None
            self._progress(CompressionPhase.SUMMARIZE)
            result = fitted_call(
                build,
                budget,
                self.context,
                lambda request: self._summarise(request, budget),
                stopped=lambda: self.fence.stop is not None,
            )
            if result is None or (isinstance(result, NotFitted) and self.fence.stop is not None):
                ended.append(self._cancelled(attempt))
                return None
            if isinstance(result, NotFitted):
                self._abandon(attempt, CompressionStatus.FAILED, result.message, fail=True)
                message = f"compression failed: {result.message}"
                ended.append(self._outcome(CompressionStatus.FAILED, message, generation=attempt))
                return None
            outcome = self._unfinished(attempt, result)
            if outcome is not None:
                ended.append(outcome)
                return None
            return result.text

        self._tokens_in, self._budget = plan.tokens_in, 0

        def on_plan(round_plan: CompressionPlan) -> None:  # the progress bar's budget grows
            self._budget += round_plan.budget + round_plan.single_budget * len(round_plan.singles)

        done = run_rounds(
            self.history,
            plan,
            window_tokens=self.window_tokens,
            calibration=self.context.calibration,
            target_tokens=self.target_tokens,
            summarise=summarise,
            focus=self.focus,
            on_plan=on_plan,
        )
        if done is None:
            return ended[0] if ended else self._cancelled(attempt)
        if self.fence.stop is not None:
            return self._cancelled(attempt)
        return self._commit(attempt, done)

    def _unfinished(self, attempt: int, result: TurnResult) -> CompressionOutcome | None:
        """The outcome when a summary call did not complete (stopped or failed), else None."""
        if result.status == TurnStatus.INTERRUPTED or self.fence.state == FenceState.CANCELLED:
            closed = result.timings.stop_to_closed_ms if result.timings is not None else None
            return self._cancelled(attempt, closed_ms=closed)
        if result.status != TurnStatus.COMPLETED:
            error = result.error or result.exit_reason
            self._abandon(attempt, CompressionStatus.FAILED, error, fail=True)
            return self._outcome(
                CompressionStatus.FAILED, f"compression failed: {error}", generation=attempt
            )
        return None

    def _commit(self, attempt: int, done: RoundsResult) -> CompressionOutcome:
        summary = done.summary
        tokens_out = self.context.calibration.message_tokens(summary)
        empty = summary.content.strip() == SUMMARY_MARKER
        if empty or tokens_out >= done.tokens_in:
            why = "empty" if empty else "not shorter than what it replaces"
            self._abandon(attempt, CompressionStatus.REFUSED, f"summary {why}", fail=True)
            return self._outcome(
                CompressionStatus.REFUSED, f"compression refused: the summary was {why}"
            )
        self._progress(CompressionPhase.COMMIT)
        if not self.fence.admit():
            return self._cancelled(attempt)
        commit = Commit(
            start=done.start,
            end=done.end,
            summary=summary,
            tokens_in=done.tokens_in,
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
        history = self.history[: done.start] + [summary] + self.history[done.end :]
        self._progress(CompressionPhase.DONE)
        after = self._size(history)
        return self._outcome(
            CompressionStatus.COMMITTED,
            f"compressed {_messages(done.end - done.start)} into a summary",
            after_tokens=after,
            fits=self._fits(after),
            history=history,
            generation=attempt,
        )

    def _cancelled(self, attempt: int, *, closed_ms: float | None = None) -> CompressionOutcome:
        self._abandon(attempt, CompressionStatus.CANCELLED, None, fail=False)
        return self._outcome(
            CompressionStatus.CANCELLED,
            "compression cancelled",
            generation=attempt,
            closed_ms=closed_ms,
            released_at=time.monotonic(),
        )


def _messages(count: int) -> str:
    return "1 message" if count == 1 else f"{count:,} messages"
