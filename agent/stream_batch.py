"""Joins a fast stream's deltas before they leave the turn, without delaying a slow one.

A model server sends one SSE event per token. At thousands of tokens per second, handing each
one to the listener (and from there to the gateway, its subscribers and the draft checkpoint)
costs more CPU than reading the stream, and that CPU is taken from the UI thread through the
GIL. :class:`DeltaBatcher` passes a delta on at once when the previous one left at least
``interval_s`` ago (so the first token and every token of a slow stream are never held back),
and otherwise holds it, joined with those that follow, until ``interval_s`` after the previous
flush (a timer on the turn's own event loop).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from agent.provider.types import StreamDelta

DEFAULT_INTERVAL_S = 0.01
"""Least time between two deltas passed on, in seconds, while the stream is fast."""


class DeltaBatcher:
    """Batches :class:`StreamDelta` pieces for one model call; runs on the turn's loop thread.

    Args:
        emit: receives each joined delta, in order.
        loop: the turn's running event loop (holds the flush timer).
        interval_s: least time between two emitted deltas while pieces arrive faster, seconds.
        clock: monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        emit: Callable[[StreamDelta], None],
        loop: asyncio.AbstractEventLoop,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._emit = emit
        self._clock = clock
        self._loop = loop
        self._interval_s = interval_s
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._pieces = 0
        self._last_flush = float("-inf")
        self._timer: asyncio.TimerHandle | None = None

    def add(self, delta: StreamDelta) -> None:
        """Take one piece: pass it on now, or hold it for the next flush."""
        if delta.content:
            self._content.append(delta.content)
        if delta.reasoning:
            self._reasoning.append(delta.reasoning)
        self._pieces += delta.pieces
        wait = self._last_flush + self._interval_s - self._clock()
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            self._timer = self._loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Pass on what is held (nothing if nothing is). Call when the model call ends."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._content and not self._reasoning:
            return
        delta = StreamDelta("".join(self._content), "".join(self._reasoning), self._pieces)
        self._content.clear()
        self._reasoning.clear()
        self._pieces = 0
        self._last_flush = self._clock()
        self._emit(delta)
