"""Params of ``server.status``: the model server's state (its result is the ``server.status``
event's payload)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerStatusParams:
    """Params of ``server.status``.

    Attributes:
        check: ask the model server now (in the background; ``server.status`` events say what
            it answered) and, while it does not answer well, again with a back-off.
    """

    check: bool = False
