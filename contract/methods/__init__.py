"""Every method of the contract, declared once by group, and the notifications.

A group module holds its methods' params, results and declarations (:class:`Method`):
:mod:`~.sessions`, :mod:`~.turns`, :mod:`~.console`, :mod:`~.server`, :mod:`~.workspace`,
:mod:`~.replay`, :mod:`~.lifecycle`; :mod:`~.stop` is the ``stop`` object several of them
carry. This face gathers the groups' declarations into :data:`METHODS`.
"""

from __future__ import annotations

from typing import Any

from contract.methods import console, lifecycle, replay, server, sessions, turns, workspace
from contract.methods.declare import Method, Notification
from contract.methods.lifecycle import Ready
from contract.methods.replay import WireEvent

METHODS: tuple[Method[Any, Any], ...] = (
    *sessions.METHODS,
    *turns.METHODS,
    *console.METHODS,
    *server.METHODS,
    *workspace.METHODS,
    *replay.METHODS,
    *lifecycle.METHODS,
)
"""Every method of the contract."""

METHODS_BY_NAME: dict[str, Method[Any, Any]] = {m.name: m for m in METHODS}
"""Wire name -> method."""

NOTIFICATIONS: tuple[Notification, ...] = (
    Notification(
        "gateway.ready",
        Ready,
        "Sent once, first, by a stdio gateway when it is ready for requests.",
    ),
    Notification(
        "event",
        WireEvent,
        "One gateway event (see Events), in order per session. Delta events (`message.delta`, "
        "`tool.output`, `console.output`, `compression.progress`) may be coalesced (about every "
        "30 ms); when the client reads too slowly, `message.delta` may also be dropped "
        "(`message.complete` carries the canonical text; `session.events.since` replays what "
        "was dropped). Every other event is a control event, never coalesced or dropped.",
    ),
)
"""Every notification the gateway sends."""

__all__ = ["METHODS", "METHODS_BY_NAME", "NOTIFICATIONS", "Method", "Notification"]
