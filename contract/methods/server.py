"""``server.status``, the model server's state: its params and declaration (its result is the
``server.status`` event's payload)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contract.methods.declare import Method
from contract.ports import DeskGateway
from contract.server_events import ServerStatus


@dataclass(frozen=True, slots=True)
class ServerStatusParams:
    """Params of ``server.status``.

    Attributes:
        check: ask the model server now (in the background; ``server.status`` events say what
            it answered) and, while it does not answer well, again with a back-off.
    """

    check: bool = False


# -- the methods: name, params, result, what it does, and the call into the gateway --


def _server_status(gateway: DeskGateway, p: ServerStatusParams) -> ServerStatus:
    if p.check:
        gateway.server.check()
    return gateway.server.status()


SERVER_STATUS = Method(
    "server.status",
    ServerStatusParams,
    ServerStatus,
    "The model server's state as last found: `ready` (with the models it lists), "
    "`unreachable` or `refused` (with why, in one line), or `checking`. With `check` the "
    "gateway asks it now, and again with a back-off while it does not answer well; every "
    "change is a `server.status` event. While it is `unreachable` or `refused`, or does "
    "not list a session's model, `prompt.submit` is refused with that line.",
    _server_status,
)

METHODS: tuple[Method[Any, Any], ...] = (SERVER_STATUS,)
"""This group's methods, in the order the reference lists them."""
