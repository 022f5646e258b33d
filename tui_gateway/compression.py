"""Compression inside a session's worker: ``/compress`` turns and the automatic trigger.

A compression runs on the session's worker like a turn, so a prompt typed meanwhile is queued
(it never aborts the compression), and the turn's hard stops reach the :class:`Compressor`
first. The transcript in memory changes only when the compressor reports ``committed``; with a
store, that commit is the store's one transaction.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from agent.compression import CompressionProgress, CompressionStatus, Compressor, should_compress
from agent.compression.backend import CompressionBackend, MemoryBackend, StoreBackend
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage
from agent.provider.window import probe_context_window
from agent.store import SessionStore, StoreError
from agent.tokens import estimate_tokens
from tui_gateway.events import CompressionComplete, CompressionProgressed, Payload, StopReceipt
from tui_gateway.state import Session, Turn

DEFAULT_WINDOW = 8192
"""Context window assumed when neither the server nor the configuration says (tokens)."""


class SessionCompression:
    """Runs compressions for the gateway.

    Args:
        provider: the gateway's provider settings (the model comes from each session).
        store: the store, when there is one.
        publish: sends a payload for a session.
        window_tokens: the configured context window, or None to ask the server.
        threshold: share of the window that triggers an automatic compression.
    """

    def __init__(
        self,
        provider: ProviderConfig,
        store: SessionStore | None,
        publish: Callable[[Session, Payload], None],
        *,
        window_tokens: int | None,
        threshold: float,
    ) -> None:
        self._provider = provider
        self._store = store
        self._publish = publish
        self._configured_window = window_tokens
        self._window: int | None = window_tokens
        self._window_lock = threading.Lock()
        self.threshold = threshold
        self._memory = MemoryBackend()

    def window(self, provider: ProviderConfig) -> int:
        """The context window in tokens (asked of the server once, then cached)."""
        with self._window_lock:
            if self._window is None:
                self._window = probe_context_window(provider) or DEFAULT_WINDOW
            return self._window

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
    ) -> Compressor | None:
        """A compressor for ``turn`` when one is due (always for ``/compress``), else None.

        Automatic: the next request's size (the server's last reported prompt and reply
        tokens plus an estimate of the new prompt, or an estimate of the whole transcript)
        crosses ``threshold`` x window, and the cooldown allows it.
        """
        with session.lock:
            history = list(session.history)
            last = session.last_request_tokens
        backend = self.backend(session)
        window = self.window(provider)
        if not manual:
            size = (
                last + estimate_tokens(ChatMessage("user", turn.prompt))
                if last
                else sum(estimate_tokens(m) for m in history) + len(turn.prompt) // 4
            )
            try:
                cooldown = backend.cooldown(session.session_id)
            except StoreError:
                return None
            if not should_compress(
                size,
                window,
                threshold=self.threshold,
                cooldown_until=cooldown.until,
                now=time.time(),
            ):
                return None

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

        return Compressor(
            ChatClient(provider),
            backend,
            session.session_id,
            history,
            window_tokens=window,
            listener=on_progress,
            focus=focus,
            manual=manual,
            owner=backend.store.owner if isinstance(backend, StoreBackend) else None,
        )

    def run(self, session: Session, turn: Turn, compressor: Compressor) -> CompressionStatus:
        """Run ``compressor`` on this (the session's worker) thread and publish its outcome.

        Returns:
            the outcome's status.
        """
        try:
            outcome = compressor.run()
        except Exception as exc:  # the compressor released its lease; the turn goes on
            why = exc.message if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
            self._publish(
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
        if outcome.status == CompressionStatus.COMMITTED and outcome.history is not None:
            with session.lock:
                session.history = outcome.history
                session.last_request_tokens = 0
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
        self._publish(
            session,
            CompressionComplete(
                turn_id=turn.turn_id,
                status=outcome.status,
                message=outcome.message,
                before_tokens=outcome.before_tokens,
                after_tokens=outcome.after_tokens,
                stop=receipt,
            ),
        )
        return outcome.status
