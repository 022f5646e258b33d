"""InterruptScope: a host-owned cancel handle that reaches every agent turn started under it.

A host (the console worker, the gateway's shutdown path, a test) opens a scope and runs work
inside it::

    with InterruptScope() as scope:
        run_command()           # somewhere deep inside, an Agent runs a turn
    ...
    scope.cancel(StopRequest.by_system(Surface.CONSOLE_TIMEOUT, "took longer than 60 s"))

The scope is bound with a :class:`contextvars.ContextVar`, so it is visible to everything that
runs in the same context: the calling code, threads started with ``contextvars.copy_context()``
and asyncio tasks (which copy the context when they are created, ``asyncio.run`` included). An
agent calls :func:`current_scope` when its turn begins and, when there is a scope, registers with
it for the length of the turn. :meth:`InterruptScope.cancel` then hard-stops every registered
agent, from any thread.

Ordering guarantee (DESIGN.md, section 5: "a cancel that arrives before the agent registered with
its scope still cancels it on entry"): registration and cancellation serialise on one lock, so
when ``register`` and ``cancel`` race, exactly one of them interrupts the agent: either the
cancel's snapshot of the members contains it, or ``register`` sees the cancel and interrupts it
on entry. An agent is never interrupted twice by one scope and never missed.

Nesting: entering a scope while another one is current registers the inner scope as a member of
the outer one, so cancelling the outer scope cancels the inner scope and every agent in it. An
inner cancel never reaches the outer scope or its siblings.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from agent.stops import StopRequest, require_hard

_log = logging.getLogger(__name__)


class Interruptible(Protocol):
    """Anything a scope can stop: an :class:`agent.agent.Agent`, an inner scope, a test fake."""

    def interrupt(self, stop: StopRequest) -> None:
        """Hard-stop this member; called from any thread, possibly more than once overall."""
        ...


@dataclass(frozen=True, slots=True)
class _Frame:
    """One entry of a scope into one context: the scope and what was current before it."""

    scope: InterruptScope
    outer: _Frame | None
    link: Registration | None


_CURRENT: contextvars.ContextVar[_Frame | None] = contextvars.ContextVar(
    "desk_interrupt_scope", default=None
)


def current_scope() -> InterruptScope | None:
    """The innermost scope bound in the calling context, or None outside every scope."""
    frame = _CURRENT.get()
    return None if frame is None else frame.scope


class Registration:
    """The handle :meth:`InterruptScope.register` returns; ends one membership.

    Use it as a context manager (``with scope.register(agent): ...``) or call :meth:`unregister`
    in a ``finally``. Unregistering twice is harmless.
    """

    __slots__ = ("_key", "_scope")

    def __init__(self, scope: InterruptScope | None, key: int) -> None:
        self._scope = scope
        self._key = key

    def unregister(self) -> None:
        """Remove the member from its scope; later cancels no longer reach it. Idempotent."""
        scope, self._scope = self._scope, None
        if scope is not None:
            scope._drop(self._key)

    @property
    def active(self) -> bool:
        """True while the member is registered (False after unregister or when never added)."""
        scope = self._scope
        return scope is not None and scope._has(self._key)

    def __enter__(self) -> Registration:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.unregister()


class InterruptScope:
    """A cancel handle owned by a host; every agent turn started under it can be hard-stopped.

    Thread-safe: ``register``, ``cancel`` and unregistering may be called from any thread at
    any moment. A scope cancels at most once; the first stop is kept and later ``cancel`` calls
    change nothing.

    Use ``with scope:`` (any number of times, from any thread or task) to make it the current
    scope of that context. Entering links it to the scope that was current there, if any, so
    that an outer cancel reaches it; leaving unbinds it and removes that link. Work that must stay
    cancellable by the outer scope should therefore finish inside the ``with`` block.
    """

    def __init__(self, name: str = "") -> None:
        """Create an open (not cancelled) scope.

        Args:
            name: a label for logs and ``repr`` (e.g. ``"console:42"``); optional.
        """
        self.name = name
        self._lock = threading.Lock()
        self._members: dict[int, Interruptible] = {}
        self._keys = itertools.count(1)
        self._stop: StopRequest | None = None
        self._cancelled = threading.Event()

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else "open"
        return f"InterruptScope({self.name!r}, {state}, members={len(self._members)})"

    # -- state ---------------------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called (directly or through an outer scope)."""
        return self._cancelled.is_set()

    @property
    def stop(self) -> StopRequest | None:
        """The first stop this scope was cancelled with, or None while it is open."""
        with self._lock:
            return self._stop

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the scope is cancelled.

        Args:
            timeout_s: longest wait in seconds; None waits without a bound.

        Returns:
            True when the scope is cancelled, False when the timeout passed first.
        """
        return self._cancelled.wait(timeout_s)

    # -- membership ----------------------------------------------------------------------------

    def register(self, member: Interruptible) -> Registration:
        """Add ``member`` (an agent about to run a turn, or an inner scope).

        When the scope is already cancelled the member is not added: ``member.interrupt(stop)``
        is called at once, on the calling thread, with the scope's first stop, and the returned
        handle is inactive.

        Args:
            member: any object with ``interrupt(stop: StopRequest) -> None``.

        Returns:
            a :class:`Registration`; unregister it (or leave its ``with`` block) when the turn
            ends, so the scope does not keep the member alive.

        Raises:
            Exception: whatever ``member.interrupt`` raises on the cancelled-on-entry path (the
                caller owns that member, so its failure is the caller's to see).
        """
        with self._lock:
            stop = self._stop
            if stop is None:
                key = next(self._keys)
                self._members[key] = member
                return Registration(self, key)
        member.interrupt(stop)
        return Registration(None, 0)

    def _drop(self, key: int) -> None:
        with self._lock:
            self._members.pop(key, None)

    def _has(self, key: int) -> bool:
        with self._lock:
            return key in self._members

    @property
    def member_count(self) -> int:
        """How many members are registered right now (0 after a cancel)."""
        with self._lock:
            return len(self._members)

    # -- cancelling ----------------------------------------------------------------------------

    def cancel(self, stop: StopRequest) -> bool:
        """Hard-stop every registered member, and every member that registers later.

        Safe from any thread. Each member's ``interrupt(stop)`` is called on the calling thread,
        outside the scope's lock, once. A member that raises is logged and does not keep the
        others from being stopped.

        Args:
            stop: the hard stop to deliver, booked unchanged (its issuer decides the exit reason).

        Returns:
            True for the first cancel; False when the scope was already cancelled (the first
            stop stands and nothing is delivered again).

        Raises:
            ValueError: for a soft stop (``stop.hard`` is False): a scope only hard-cancels.
        """
        require_hard(stop)
        with self._lock:
            if self._stop is not None:
                return False
            self._stop = stop
            members = list(self._members.values())
            self._members.clear()
            self._cancelled.set()
        for member in members:
            try:
                member.interrupt(stop)
            except Exception:
                _log.exception("interrupting %r from %r failed", member, self)
        return True

    def interrupt(self, stop: StopRequest) -> None:
        """Same as :meth:`cancel`; lets a scope be a member of an outer scope."""
        self.cancel(stop)

    # -- binding to a context ------------------------------------------------------------------

    def __enter__(self) -> InterruptScope:
        outer = _CURRENT.get()
        link = outer.scope.register(self) if outer is not None else None
        _CURRENT.set(_Frame(self, outer, link))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        frame = _CURRENT.get()
        if frame is None or frame.scope is not self:
            raise RuntimeError(f"{self!r} left in a context where it is not the current scope")
        _CURRENT.set(frame.outer)
        if frame.link is not None:
            frame.link.unregister()


__all__ = ["InterruptScope", "Interruptible", "Registration", "current_scope"]
