"""The pace at which a stream's deltas reach the UI: as often as the UI can paint them, no more.

A streamed reply reaches the app as coalesced deltas (every ``coalesce_s``, 30 ms); each one
re-renders the reply's live tail and paints a frame, about 13 ms of the UI thread's CPU on a
2-core machine. When the model server computes on the same cores, a frame takes several times
that in wall time, yet deltas kept coming every 30 ms: the UI painted all the time, and the
turn's own thread (reading the stream, in the same interpreter) fell behind the server, so the
reply's end reached the screen up to a second late.

:class:`StreamPace` measures each delta's round trip (posted by the bridge -> the frame that
shows it went out, Textual's ``call_after_refresh``) and asks the delivery thread to wait
:data:`ROUND_TRIPS` round trips between two deliveries (at most :data:`MAX_GAP_S`), and, while
a delivered delta is not painted yet, for that frame. On a quiet machine that is the pace of
before; on a busy one the UI takes a bounded share of the CPU and the stream keeps up. Control
events (a turn's end, a stop) never wait: the subscription delivers them at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

ROUND_TRIPS = 1.5
"""Least time between two deliveries of deltas, in round trips of the last one."""

MAX_GAP_S = 0.25
"""Longest wait between two deliveries of deltas, in seconds (a stream still moves 4 times a
second however slow the frames)."""

IN_FLIGHT_STEP_S = 0.005
"""While a delta is delivered but not painted: how much longer to wait before asking again."""


class StreamPace:
    """Round trips of the deltas posted to the UI, and the gap they call for.

    Thread-safe: :meth:`posted` and :meth:`gap` run on the delivery thread, :meth:`painted`
    on the UI thread.

    Args:
        clock: monotonic seconds (injectable for tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._in_flight_since: float | None = None
        self.round_trip_s = 0.0
        """The last measured round trip, in seconds (0 before the first)."""

    def posted(self) -> None:
        """A delta was posted to the UI (the earliest one not painted yet starts the clock)."""
        with self._lock:
            if self._in_flight_since is None:
                self._in_flight_since = self._clock()

    def painted(self) -> None:
        """A frame went out after the posted deltas were handled: their round trip ends."""
        with self._lock:
            since, self._in_flight_since = self._in_flight_since, None
            if since is not None:
                self.round_trip_s = self._clock() - since

    def gap(self) -> float:
        """Seconds to keep between the last delivery of deltas and the next one: ``0`` to
        ``MAX_GAP_S``; longer while the last delivered delta waits for its frame."""
        with self._lock:
            since = self._in_flight_since
            gap = ROUND_TRIPS * self.round_trip_s
            if since is not None:
                gap = max(gap, self._clock() - since + IN_FLIGHT_STEP_S)
        return min(gap, MAX_GAP_S)


__all__ = ["MAX_GAP_S", "ROUND_TRIPS", "StreamPace"]
