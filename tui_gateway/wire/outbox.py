"""A never-blocking queue of outgoing events (and other lines) for one slow consumer.

The gateway's delivery thread puts events in; a writer (a thread writing a pipe, or an asyncio
task writing an HTTP response) takes them out in batches. Putting never waits for the writer:

- a delta (``message.delta``, ``tool.output``, ``console.output``) joins the last queued item of
  its session when that item is a delta it can merge with (same turn, call or command): a
  stalled client costs one growing item per stream, not one per token;
- otherwise a reply delta (``message.delta``) is queued, unless ``max_deltas`` of them already
  wait: then it is dropped (counted in :attr:`Outbox.dropped`; ``message.complete`` carries the
  canonical text and the replay ring still has it). Other deltas (tool and console output,
  compression progress) have no canonical copy and are never dropped, only merged;
- control events and other items are always queued, and everything keeps its order within a
  session (a merged delta stays at its session's last position).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from contract.events import GatewayEvent, MessageDelta

T = TypeVar("T")


class Outbox(Generic[T]):
    """Pending items for one consumer: gateway events and other items of type ``T``.

    Args:
        max_deltas: most reply-delta items waiting at once (merged ones count once).
        on_ready: called (outside the lock) when the box goes from empty to non-empty or is
            closed; an asyncio consumer uses it to wake its task with ``call_soon_threadsafe``.
            It must not block.
    """

    def __init__(self, max_deltas: int = 256, on_ready: Callable[[], None] | None = None) -> None:
        self.max_deltas = max_deltas
        self._on_ready = on_ready
        self._cond = threading.Condition()
        self._items: list[GatewayEvent | T] = []
        self._last: dict[str, int] = {}
        self._deltas = 0
        self._closed = False
        self.merged = 0
        """Deltas that joined a queued one."""
        self.dropped = 0
        """Deltas dropped because ``max_deltas`` were waiting."""

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def put_event(self, event: GatewayEvent) -> None:
        """Queue a gateway event (merging or dropping a delta as the module says). Never blocks."""
        with self._cond:
            if self._closed:
                return
            if not event.control:
                index = self._last.get(event.session_id)
                if index is not None:
                    last = self._items[index]
                    if isinstance(last, GatewayEvent):
                        joined = last.payload.merged(event.payload)
                        if joined is not None:
                            self._items[index] = dataclasses.replace(event, payload=joined)
                            self.merged += 1
                            return
                if isinstance(event.payload, MessageDelta):
                    if self._deltas >= self.max_deltas:
                        self.dropped += 1
                        return
                    self._deltas += 1
            self._last[event.session_id] = len(self._items)
            wake = self._append(event)
        if wake:
            self._wake()

    def put(self, item: T) -> None:
        """Queue another item (a response line); always kept. Never blocks."""
        with self._cond:
            if self._closed:
                return
            wake = self._append(item)
        if wake:
            self._wake()

    def _append(self, item: GatewayEvent | T) -> bool:
        # Called with the lock held; True when the box was empty.
        was_empty = not self._items
        self._items.append(item)
        self._cond.notify()
        return was_empty

    def _wake(self) -> None:
        if self._on_ready is not None:
            self._on_ready()

    def take(self) -> list[GatewayEvent | T]:
        """Everything queued now, oldest first (possibly nothing). Never blocks."""
        with self._cond:
            items, self._items = self._items, []
            self._last.clear()
            self._deltas = 0
            return items

    def wait_take(self, timeout_s: float | None = None) -> list[GatewayEvent | T] | None:
        """Wait until something is queued, then take it all.

        Returns:
            the items; an empty list on timeout; None once closed and empty.
        """
        with self._cond:
            self._cond.wait_for(lambda: self._items or self._closed, timeout_s)
            if not self._items:
                return None if self._closed else []
            items, self._items = self._items, []
            self._last.clear()
            self._deltas = 0
            return items

    def close(self) -> None:
        """Refuse new items; the consumer still takes what is queued, then sees the end."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._wake()
