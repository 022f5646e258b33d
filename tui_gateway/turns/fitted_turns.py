"""Turns kept inside their session's context window.

A prompt turn gets the session's :class:`agent.context.budget.ContextBudget` (every request of
the turn is checked against the window before it is sent), compresses first when it is due
(:class:`tui_gateway.turns.compression.SessionCompression`), and, when its first request still could
not fit (desk's count said so, or the server refused it as too large with its own count), is
compressed with the corrected count and run once more (unless the prompt alone cannot fit the
window, :meth:`~tui_gateway.turns.compression.SessionCompression.prompt_alone`: then the history
is left as it was and the turn refused at once; or unless a stop came meanwhile, even one
that arrived after the first attempt's outcome was fixed: then nothing more is sent; steers the
first attempt never delivered are kept for the turn's end). A stop of the turn while the server
counts the prompt alone ends that count at once (its connection closed) and the turn, booked
to the stop; after a stop no count is asked. A turn whose request could not fit in the end
sent nothing the model answered: its prompt stays in the transcript marked as not sent (later
requests leave it out, so the session stays usable), and its error says so with the figures
and what the person can do.

A compression cancelled alone (``compression.cancel``: the compression panel's Cancel) leaves
the prompt turn running: its request is sent when it fits without the compression, and
otherwise the turn ends, nothing sent, with a line saying the compression was cancelled (no
compression is forced on it after that). A stop of the turn (``session.interrupt``) stops the
compression and the turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.compression import CompressionStatus, Compressor
from agent.events import TurnResult
from agent.outcome import ExitReason, TurnStatus
from agent.provider.client import ProviderConfig
from agent.provider.errors import ContextOverflow, RequestTooLarge
from agent.store import NOT_SENT_PREFIX
from contract.events import Payload, TurnState
from contract.kinds import TurnActivity
from tui_gateway.sessions.state import Session, Turn
from tui_gateway.turns.compression import SessionCompression
from tui_gateway.turns.context_window import OfferedTools

ADVICE = "send a shorter prompt, start a new session (/new), or set a larger context_window"
"""What the person can do about a prompt that does not fit."""

RETRY_NOTE = "the request did not fit the window: compressing, then trying once more"
"""What a turn says while it compresses after its request did not fit."""

CANCELLED_ADVICE = "compression cancelled, and the prompt does not fit the window without it"
"""Why a prompt whose compression the person cancelled was not sent."""


def did_not_fit(result: TurnResult) -> bool:
    """True when the turn ended because its request could not fit the window."""
    return isinstance(result.failure, RequestTooLarge | ContextOverflow)


def not_sent_error(result: TurnResult) -> str:
    """The one line a turn that could not fit ends with, figures first."""
    failure = result.failure
    if isinstance(failure, RequestTooLarge):
        return failure.message
    if isinstance(failure, ContextOverflow):
        if failure.prompt_tokens is not None and failure.window is not None:
            figures = (
                f"the model server counted {failure.prompt_tokens:,} tokens for its "
                f"{failure.window:,}-token window"
            )
        elif failure.window is not None:
            figures = f"the model server's {failure.window:,}-token window is too small for it"
        else:
            figures = "the model server said it does not fit its context window"
        return f"{NOT_SENT_PREFIX}{figures}; {ADVICE}"
    return result.error or result.exit_reason


class FittedTurns:
    """Runs prompt and ``/compress`` turns inside their session's window.

    Args:
        compression: the gateway's compressions (and, through it, the sessions' windows).
        publish: sends a payload for a session; never blocks.
        tools: the tool definitions a request offers now.
        compression_started: told each compressor before it runs, so stops reach it (the
            booking office's :meth:`~tui_gateway.stops.booking.BookingOffice.compression_started`).
        saving_waits: True while a session's writes wait for the database; no automatic
            compression starts then (the saved transcript is behind the one in memory).
    """

    def __init__(
        self,
        compression: SessionCompression,
        publish: Callable[[Session, Payload], None],
        tools: OfferedTools,
        compression_started: Callable[[Turn, Compressor], None],
        saving_waits: Callable[[Session], bool] = lambda _session: False,
    ) -> None:
        self.compression = compression
        self._publish = publish
        self._offered = tools
        self._compression_started = compression_started
        self._saving_waits = saving_waits

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool definitions a request offers now."""
        return self._offered()

    def start_compression(
        self,
        session: Session,
        turn: Turn,
        provider: ProviderConfig,
        *,
        manual: bool,
        force: bool = False,
    ) -> bool:
        """Prepare the turn's compression, if one is due; True when it should run."""
        if not manual and self._saving_waits(session):
            return False  # the saved transcript is behind the one in memory: not now
        try:
            compressor = self.compression.prepare(
                session,
                turn,
                provider,
                manual=manual,
                focus=turn.focus,
                tools=self.tools,
                force=force,
            )
        except Exception as exc:  # never let a compression bug take the turn down
            detail = f"compression skipped: {type(exc).__name__}: {exc}"
            self._publish(session, TurnState(turn.turn_id, TurnActivity.WAITING, detail))
            return False
        if compressor is None:
            return False
        self._compression_started(turn, compressor)
        return True

    def compress(
        self, session: Session, turn: Turn, provider: ProviderConfig, *, manual: bool, force: bool
    ) -> CompressionStatus | None:
        """Compress for ``turn`` when one is due (``/compress``: always).

        Returns:
            the compression's outcome, or None when none ran.
        """
        if not self.start_compression(session, turn, provider, manual=manual, force=force):
            return None
        assert turn.compressor is not None
        if not manual:
            self._publish(session, TurnState(turn.turn_id, TurnActivity.COMPRESSING))
        return self.compression.run(session, turn, turn.compressor)

    def run_prompt(
        self,
        session: Session,
        turn: Turn,
        provider: ProviderConfig,
        on_started: Callable[[], None],
    ) -> TurnResult:
        """Run a prompt turn: compress first when due, fit, and retry once if it did not fit.

        Args:
            session: the session.
            turn: the turn (its agent runs it).
            provider: the session's provider settings.
            on_started: called once, right before the turn's first model request is made.

        Returns:
            the turn's outcome (``error`` says "not sent: ..." when it could not fit).
        """
        turn.agent.context = self.compression.windows.first_turn(session, provider, self.tools)
        status = self.compress(session, turn, provider, manual=False, force=False)
        # the panel's Cancel stopped the compression alone: the turn goes on if it fits
        skipped = status == CompressionStatus.CANCELLED and turn.agent.stop_request is None
        on_started()
        result = self._attempt(session, turn)
        if did_not_fit(result) and not result.messages and not skipped:
            turn.agent.carry_over()  # a late stop is the retry's; one from now on ends it too
            late = turn.agent.stop_request is not None
            with turn.agent.scope:  # a stop of the turn ends the server's count in flight
                alone = self.compression.prompt_alone(
                    session, turn, provider, self.tools, ask_server=not late
                )
            if not late and turn.agent.stop_request is not None:
                # stopped while the server counted: the turn ends as stopped, nothing sent
                return self._retry(session, turn, result)
            if alone.beyond:  # no summary can make room: the history is left as it was
                result.error = alone.refusal()
                return result
            self._publish(session, TurnState(turn.turn_id, TurnActivity.WAITING, RETRY_NOTE))
            if turn.agent.stop_request is None:  # stopped: no compression, no retry
                self.compress(session, turn, provider, manual=False, force=True)
                result = self._retry(session, turn, result)
        if did_not_fit(result) and not result.messages:
            result.error = not_sent_error(result)
            if skipped:
                result.error = result.error.replace(
                    NOT_SENT_PREFIX, f"{NOT_SENT_PREFIX}{CANCELLED_ADVICE}; ", 1
                )
        return result

    def _retry(self, session: Session, turn: Turn, first: TurnResult) -> TurnResult:
        """The turn's second attempt (it ends on entry when a stop came since the first);
        the steers the first never took are kept, first."""
        result = self._attempt(session, turn)
        result.undelivered[:0] = first.undelivered
        return result

    def _attempt(self, session: Session, turn: Turn) -> TurnResult:
        with session.lock:
            history = list(session.history)
        try:
            return turn.agent.run_conversation(history, turn.prompt)
        except Exception as exc:  # a bug below must still end the turn with one outcome
            return TurnResult(
                status=TurnStatus.FAILED,
                exit_reason=ExitReason.failed(type(exc).__name__),
                text="",
                partial=True,
                error=f"internal error: {exc}",
            )
