"""Compression inside a session's worker: ``/compress`` turns and the automatic trigger.

A compression runs on the session's worker like a turn, so a prompt typed meanwhile is queued
(it never aborts the compression), and the turn's hard stops reach the :class:`Compressor`
first. The transcript in memory changes only when the compressor reports ``committed``; with a
store, that commit is the store's one transaction.

When a prompt turn compresses first: always when its request would not fit the window (by the
session's calibrated count, tool definitions included; the cooldown does not hold that back),
and when the request would fill more than ``threshold`` of the window, unless the cooldown
says wait, or the last compression could not bring the session under the threshold and the
session has not grown by a tenth of the window since (a weak compression is reported once,
not run again on every turn). The compression aims at what lets the request fit, half the
window when it can (:func:`agent.compression.policy.compression_target`). A request the
server's exact count refused is compressed as far as a summary can go before the turn is
refused, even when the estimate says nothing can help, unless the prompt alone cannot fit
(:class:`PromptAlone`): with the system prompt, the compact tool definitions and a minimum reply
it is larger than the window by the server's own count, or, when the server counts nothing, by
more than `FAR_BEYOND` times the window by the estimate. No summary can make room for such a
prompt: the history is left as it was and the turn is refused at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent.compression import CompressionProgress, CompressionStatus, Compressor
from agent.compression.backend import CompressionBackend, MemoryBackend, StoreBackend
from agent.compression.engine import CompressionOutcome
from agent.compression.policy import compression_target
from agent.context.budget import ContextBudget, minimum_reply
from agent.context.shape import well_formed
from agent.context.tool_schemas import ToolSchemas, compact_tools
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage
from agent.store import NOT_SENT_PREFIX, SessionStore, StoreError
from contract.events import CompressionComplete, CompressionProgressed, Payload, StopReceipt
from tui_gateway.sessions.state import Session, Turn
from tui_gateway.turns.context_window import OfferedTools, SessionWindows, no_tools

FORCED_TARGET_SHARE = 16
"""A compression forced by a refusal aims at least at this fraction (1/16) of the window."""

GROWTH_AFTER_WEAK = 0.1
"""Share of the window a session must grow by before a weak compression is tried again."""

FAR_BEYOND = 1.5
"""Without the server's own count, a prompt whose estimate alone (:class:`PromptAlone`) is more
than this many times the window is refused without a summary of the history. Until the server
has counted something the estimate assumes 3 characters a token, and real vocabularies run up
to 4.5 (half again as many characters): past that, no likely error of the estimate makes it fit.
Nearer the window the estimate may be wrong, and a summary as short as can be is tried."""

ALONE_ADVICE = "send a shorter prompt or set a larger context_window"
"""What the person can do about a prompt that cannot fit even without any history."""


@dataclass(frozen=True, slots=True)
class PromptAlone:
    """The smallest request a prompt can go in (the system prompt, the prompt, and the tool
    definitions compact unless ``tools = "full"``), and the least reply it needs.

    Attributes:
        tokens: that request's size (tokens).
        reply: the least room a reply needs (a minimum reply, tokens).
        window: the context window (tokens).
        counted: True when ``tokens`` is the server's own count, False for the estimate.
    """

    tokens: int
    reply: int
    window: int
    counted: bool

    @property
    def fits(self) -> bool:
        """True when the request and the least reply are inside the window."""
        return self.tokens + self.reply <= self.window

    @property
    def beyond(self) -> bool:
        """True when no summary of the history can make room: the server's count does not
        fit, or the estimate is more than `FAR_BEYOND` times the window."""
        if self.counted:
            return not self.fits
        return self.tokens + self.reply > FAR_BEYOND * self.window

    def refusal(self) -> str:
        """The line the refused turn ends with (begins with ``not sent: ``)."""
        about = "" if self.counted else "about "
        return (
            f"{NOT_SENT_PREFIX}the prompt alone needs {about}{self.tokens:,} tokens (with the "
            f"system prompt and the tool definitions) and the reply {self.reply:,}, but the "
            f"context window is {self.window:,}: no summary can make room, the history is "
            f"left as it was; {ALONE_ADVICE}"
        )


class SessionCompression:
    """Runs compressions for the gateway.

    Args:
        windows: the sessions' context windows and budgets.
        store: the store, when there is one.
        publish: sends a payload for a session.
        threshold: share of the window that triggers an automatic compression.
        tools: the tool definitions a request offers now (for the ``context.window`` sent
            before a compression's outcome).
        record: keeps each outcome with the session before it is published (its line is
            shown again when the session is resumed).
    """

    def __init__(
        self,
        windows: SessionWindows,
        store: SessionStore | None,
        publish: Callable[[Session, Payload], None],
        *,
        threshold: float,
        tools: OfferedTools = no_tools,
        record: Callable[[Session, CompressionComplete], None] = lambda _s, _outcome: None,
    ) -> None:
        self.windows = windows
        self._record = record
        self._offered = tools
        self._store = store
        self._publish = publish
        self.threshold = threshold
        self._memory = MemoryBackend()

    def window(self, provider: ProviderConfig) -> int:
        """The context window in tokens (asked of the server once, then cached)."""
        return self.windows.window(provider).tokens

    def backend(self, session: Session) -> CompressionBackend:
        """The store's backend for a saved session, else the in-memory one."""
        if self._store is not None and not session.store_detached:
            return StoreBackend(self._store)
        return self._memory

    def prepare(
        self,
        session: Session,
        turn: Turn,
        provider: ProviderConfig,
        *,
        manual: bool,
        focus: str | None = None,
        tools: Sequence[dict[str, Any]] = (),
        force: bool = False,
    ) -> Compressor | None:
        """A compressor for ``turn`` when one is due (always for ``/compress``), else None.

        Args:
            session: the session.
            turn: the turn that runs it (its prompt is the next request's, for a prompt turn).
            provider: the session's provider settings.
            manual: ``/compress``: always, cooldown or not.
            focus: what the summary should keep in view.
            tools: the tool definitions the next request offers.
            force: the server refused the request as too large: compress if it can help
                (the caller has checked that the prompt alone can fit, :meth:`prompt_alone`).
        """
        budget = self.windows.budget(session, provider)
        with session.lock:
            history = list(session.history)
            weak_after = session.weak_after
        prompt = [ChatMessage("user", turn.prompt)] if turn.kind == "prompt" else []
        extra = budget.count(prompt, tools)
        window = budget.window.tokens
        target = compression_target(window, extra, measured=budget.calibration.measured)
        if not manual:
            size = budget.count(well_formed([*history, *prompt]), tools)
            must = force or not budget.fit_tokens(size).fits
            if must and not force:
                alone = self.prompt_alone(session, turn, provider, tools, ask_server=False)
                if target <= 0 or not alone.fits:
                    return None  # by the estimate the prompt alone does not fit: the server counts
            if must and target <= 0:
                # the server refused it: by the estimate nothing can help, but the estimate is
                # not the server's count; a summary as short as can be is tried before refusing
                # (the turn forces none on a prompt that cannot fit alone: `prompt_alone`)
                target = max(1, window // FORCED_TARGET_SHARE)
            if not must and not self._should(session, budget, size, weak_after):
                return None
            if not any(m.role != "system" for m in history):
                return None  # nothing but the system prompt: nothing to compress, say nothing

        def on_progress(progress: CompressionProgress) -> None:
            self._publish(
                session,
                CompressionProgressed(
                    turn_id=turn.turn_id,
                    phase=progress.phase,
                    tokens_in=progress.tokens_in,
                    tokens_out=progress.tokens_out,
                    budget=progress.budget,
                    elapsed_s=progress.elapsed_s,
                ),
            )

        backend = self.backend(session)
        return Compressor(
            ChatClient(provider),
            backend,
            session.session_id,
            history,
            window_tokens=window,
            context=budget,
            target_tokens=target,
            reserve_tokens=extra,
            listener=on_progress,
            focus=focus,
            manual=manual,
            started_at=turn.started_at,
            owner=backend.store.owner if isinstance(backend, StoreBackend) else None,
        )

    def prompt_alone(
        self,
        session: Session,
        turn: Turn,
        provider: ProviderConfig,
        tools: Sequence[dict[str, Any]],
        *,
        ask_server: bool,
    ) -> PromptAlone:
        """The smallest request ``turn``'s prompt can go in, whatever is done to the history.

        Args:
            session: the session (its system prompt goes in the request).
            turn: a prompt turn.
            provider: the session's provider settings.
            tools: the tool definitions the request offers (whole).
            ask_server: have the server count it (blocks up to a few seconds); its estimate
                when the server counts nothing.
        """
        budget = self.windows.budget(session, provider)
        with session.lock:
            system = [m for m in session.history if m.role == "system"]
        request = well_formed([*system, ChatMessage("user", turn.prompt)])
        sent = tools if budget.tool_schemas is ToolSchemas.FULL else compact_tools(tools)
        window = budget.window.tokens
        reply = minimum_reply(window)
        if ask_server and budget.tokenize_supported is not False:
            counted = self.windows.count_request(provider, request, sent)
            if counted is not None and counted > 0:
                return PromptAlone(counted, reply, window, counted=True)
        return PromptAlone(budget.calibration.count(request, sent), reply, window, counted=False)

    def _should(
        self, session: Session, budget: ContextBudget, size: int, weak_after: int | None
    ) -> bool:
        """An automatic compression that is not needed yet, but due."""
        window = budget.window.tokens
        if size < self.threshold * window:
            return False
        if weak_after is not None and size < weak_after + GROWTH_AFTER_WEAK * window:
            return False  # the last one could not do better: wait for the session to grow
        try:
            cooldown = self.backend(session).cooldown(session.session_id)
        except StoreError:
            return False
        return cooldown.until is None or time.time() >= cooldown.until

    def run(self, session: Session, turn: Turn, compressor: Compressor) -> CompressionStatus:
        """Run ``compressor`` on this (the session's worker) thread and publish its outcome.

        Returns:
            the outcome's status.
        """
        try:
            outcome = compressor.run()
        except Exception as exc:  # the compressor released its lease; the turn goes on
            why = exc.message if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
            self._ended(
                session,
                CompressionComplete(
                    turn_id=turn.turn_id,
                    status=CompressionStatus.FAILED,
                    message=f"compression failed: {why}",
                    before_tokens=0,
                    after_tokens=0,
                ),
            )
            return CompressionStatus.FAILED
        message = outcome.message
        if outcome.status == CompressionStatus.COMMITTED and outcome.history is not None:
            message = self._settle(session, compressor, outcome)
            self.windows.publish_budget(session, compressor.context, self._offered())
        receipt = None
        stop = outcome.stop
        if stop is not None and outcome.status == CompressionStatus.CANCELLED:
            elapsed = (time.monotonic() - stop.requested_at) * 1000.0
            released = outcome.released_at
            receipt = StopReceipt(  # the compression's own figures, not a turn's
                issuer=stop.issuer.value,
                surface=stop.surface.value,
                reason=stop.reason,
                closed_ms=outcome.closed_ms,
                exited_ms=max(0.0, elapsed),
                rolled_back_ms=(
                    max(0.0, (released - stop.requested_at) * 1000.0)
                    if released is not None
                    else None
                ),
            )
        self._ended(
            session,
            CompressionComplete(
                turn_id=turn.turn_id,
                status=outcome.status,
                message=message,
                before_tokens=outcome.before_tokens,
                after_tokens=outcome.after_tokens,
                stop=receipt,
            ),
        )
        return outcome.status

    def _ended(self, session: Session, outcome: CompressionComplete) -> None:
        """Keep the outcome with the session, then publish it."""
        self._record(session, outcome)
        self._publish(session, outcome)

    def _settle(self, session: Session, compressor: Compressor, outcome: CompressionOutcome) -> str:
        """Take in a committed compression; returns the line the person reads about it."""
        window = compressor.window_tokens
        size = outcome.after_tokens + compressor.reserve_tokens
        weak = size >= self.threshold * window
        with session.lock:
            assert outcome.history is not None
            session.history = outcome.history
            session.weak_after = size if weak else None
        percent = round(100 * size / window) if window else 0
        if not outcome.fits:
            return (
                f"{outcome.message}, but the next request still needs {percent} % of the "
                f"{window:,}-token window"
            )
        if weak:
            return f"{outcome.message}; the session is still at {percent} % of the window"
        return outcome.message
