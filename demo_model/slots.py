"""A FIFO-fair pool of numbered generation slots, sized live from the config."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable


class SlotPool:
    """Numbered slots handed out in arrival order, like llama.cpp's slots.

    The capacity is read through ``capacity()`` at every decision, so a config change takes
    effect at the next `acquire`, `release` or `wake`. Shrinking never takes a slot away from
    a request that holds it. Use from the event loop's thread only.

    Args:
        capacity: returns the current number of slots (values below 1 count as 1).
    """

    def __init__(self, capacity: Callable[[], int]) -> None:
        self._capacity = capacity
        self._busy: set[int] = set()
        self._waiters: deque[asyncio.Future[int]] = deque()

    @property
    def waiting(self) -> int:
        """Number of requests queued for a slot."""
        return sum(1 for waiter in self._waiters if not waiter.done())

    async def acquire(self) -> int:
        """Wait for a free slot, first come first served, and take it.

        Returns:
            The slot id (0-based).

        Raises:
            asyncio.CancelledError: the wait was cancelled; the caller holds no slot then.
        """
        if not self._waiters:
            slot = self._free_slot()
            if slot is not None:
                self._busy.add(slot)
                return slot
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(waiter.result())  # granted just as we were cancelled
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
                self.wake()
            raise

    def release(self, slot: int) -> None:
        """Free a slot and hand free slots to the waiters at the head of the queue."""
        self._busy.discard(slot)
        self.wake()

    def wake(self) -> None:
        """Grant free slots to waiters in FIFO order (call after the capacity grew)."""
        while self._waiters:
            slot = self._free_slot()
            if slot is None:
                return
            waiter = self._waiters.popleft()
            if waiter.done():
                continue
            self._busy.add(slot)
            waiter.set_result(slot)

    def snapshot(self) -> list[tuple[int, bool]]:
        """Return ``(slot id, is busy)`` for every slot, including busy ones above capacity."""
        count = max([self._current_capacity()] + [slot + 1 for slot in self._busy])
        return [(slot, slot in self._busy) for slot in range(count)]

    def _current_capacity(self) -> int:
        return max(1, self._capacity())

    def _free_slot(self) -> int | None:
        capacity = self._current_capacity()
        if len(self._busy) >= capacity:
            return None
        return next(slot for slot in range(capacity) if slot not in self._busy)
