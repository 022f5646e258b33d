"""Gateway events -> asyncio tasks, per session, without ever blocking the gateway.

One :class:`EventRouter` subscribes to the gateway once. Each HTTP stream registers a
:class:`Listener` for its session (before it submits its prompt, so it misses nothing); the
router's callback, on the gateway's delivery thread, only puts the event in the listener's
:class:`~tui_gateway.wire.outbox.Outbox` and, when that was empty, schedules a wake-up on the
listener's loop with ``call_soon_threadsafe``. A slow HTTP client therefore never blocks the
delivery thread, let alone a worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

from contract.events import GatewayEvent
from contract.subscription import Subscription
from tui_gateway.gateway import Gateway
from tui_gateway.wire.outbox import Outbox
from tui_gateway.wire.replay import ReplayRing


class Listener:
    """One asyncio task's view of one session's events. Create with :meth:`EventRouter.listen`.

    Args:
        router: the router it is registered with.
        session_id: the session.
        loop: the loop of the task that reads it.
        max_deltas: deltas kept waiting before new ones are dropped.
    """

    def __init__(
        self,
        router: EventRouter,
        session_id: str,
        loop: asyncio.AbstractEventLoop,
        max_deltas: int,
    ) -> None:
        self.session_id = session_id
        self._router = router
        self._loop = loop
        self._wake = asyncio.Event()
        self.outbox: Outbox[None] = Outbox(max_deltas=max_deltas, on_ready=self._notify)

    def _notify(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody reads any more
            self._loop.call_soon_threadsafe(self._wake.set)

    async def next_batch(self) -> list[GatewayEvent] | None:
        """Wait for events; returns them oldest first, or None once the listener is closed."""
        while True:
            items = [e for e in self.outbox.take() if isinstance(e, GatewayEvent)]
            if items:
                return items
            if self.outbox.closed:
                return None
            self._wake.clear()
            await self._wake.wait()

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        self._router.forget(self)
        self.outbox.close()


class EventRouter:
    """Routes a gateway's events to the listeners of their session.

    Args:
        gateway: the gateway to subscribe to.
        ring: also keeps every event here, for replay (optional).
        max_deltas: per listener, see :class:`~tui_gateway.wire.outbox.Outbox`.
    """

    def __init__(
        self, gateway: Gateway, ring: ReplayRing | None = None, max_deltas: int = 256
    ) -> None:
        self.ring = ring
        self._max_deltas = max_deltas
        self._lock = threading.Lock()
        self._listeners: dict[str, set[Listener]] = {}
        self._closed = False
        self._gateway = gateway
        self.dropped = 0
        """Deltas dropped under backpressure by listeners that have closed."""
        self._subscription: Subscription = gateway.subscribe(self._on_event)

    def listen(self, session_id: str) -> Listener:
        """A new listener for ``session_id``'s events from now on (call on the reading loop)."""
        listener = Listener(self, session_id, asyncio.get_running_loop(), self._max_deltas)
        with self._lock:
            if self._closed:
                listener.outbox.close()
            else:
                self._listeners.setdefault(session_id, set()).add(listener)
        return listener

    def forget(self, listener: Listener) -> None:
        """Unregister ``listener`` (idempotent)."""
        with self._lock:
            group = self._listeners.get(listener.session_id)
            if group is not None and listener in group:
                self.dropped += listener.outbox.dropped
                group.discard(listener)
                if not group:
                    del self._listeners[listener.session_id]

    def _on_event(self, event: GatewayEvent) -> None:
        if self.ring is not None:
            self.ring.add(event)
        with self._lock:
            group = list(self._listeners.get(event.session_id, ()))
        for listener in group:
            listener.outbox.put_event(event)

    def close(self) -> None:
        """Unsubscribe (after the last event is delivered) and end every listener."""
        self._gateway.unsubscribe(self._subscription)
        with self._lock:
            self._closed = True
            groups, self._listeners = list(self._listeners.values()), {}
        for group in groups:
            for listener in group:
                listener.outbox.close()
