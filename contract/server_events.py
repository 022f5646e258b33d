"""The gateway's model-server event: whether the server answers (``server.status``).

A gateway-wide event (its ``session_id`` is ""), kept as the latest of its kind: a subscriber
that comes later gets it first, as with ``mcp.server``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from contract.envelope import Payload


class ServerState(StrEnum):
    """What the model server's last check found."""

    CHECKING = "checking"
    """Not asked yet, or the first answer has not come."""
    READY = "ready"
    """It answered (``models`` lists what ``GET /models`` named, maybe nothing)."""
    UNREACHABLE = "unreachable"
    """No HTTP answer (refused, timed out, a name that does not resolve): asked again later."""
    REFUSED = "refused"
    """It answered 401 or 403: the API key is missing or wrong."""


@dataclass(frozen=True, slots=True)
class ServerStatus(Payload):
    """The model server's state, as the gateway last found it.

    Attributes:
        state: ``checking``, ``ready``, ``unreachable`` or ``refused``.
        base_url: the server (its base URL, ending in ``/v1``).
        model: the model new sessions use ("" until the server names one).
        models: the model ids ``GET /models`` listed, in the server's order (empty when it
            lists none or could not be asked).
        message: for ``unreachable`` and ``refused``, one line saying why
            (``connection refused``, ``401``); "" otherwise.
        retry_s: for ``unreachable`` and ``refused``, seconds until it is asked again.
        attempts: how many times this server was asked since it was chosen.
    """

    TYPE: ClassVar[str] = "server.status"
    state: ServerState
    base_url: str
    model: str = ""
    models: list[str] = field(default_factory=list)
    message: str = ""
    retry_s: float | None = None
    attempts: int = 0

    @property
    def usable(self) -> bool:
        """True when a prompt can be sent (it answered, or it was not asked yet)."""
        return self.state in (ServerState.READY, ServerState.CHECKING)

    def lists(self, model: str) -> bool:
        """True when ``model`` can be used: the server lists it, or lists nothing (some
        servers do not answer ``GET /models``; llama.cpp names its one model)."""
        return not self.models or model in self.models

    @property
    def problem(self) -> str:
        """One line saying why prompts cannot be sent now ("" when they can)."""
        if self.state == ServerState.UNREACHABLE:
            return f"cannot reach the model server at {self.base_url}: {self.message}"
        if self.state == ServerState.REFUSED:
            return (
                f"the model server at {self.base_url} refused the API key ({self.message}): "
                "set OPENAI_API_KEY or api_key in config.toml, or pass --api-key"
            )
        return ""

    def model_problem(self, model: str) -> str:
        """One line saying why ``model`` cannot be used on this server ("" when it can)."""
        if self.state != ServerState.READY or self.lists(model):
            return ""
        if not model:
            return f"no model chosen; the server at {self.base_url} lists {self.listing()}"
        return (
            f"the model server at {self.base_url} does not list model {model!r}; "
            f"it lists {self.listing()}"
        )

    def listing(self, limit: int = 8) -> str:
        """The listed models, comma separated (``a, b and 3 more``)."""
        shown = ", ".join(self.models[:limit])
        more = len(self.models) - limit
        return f"{shown} and {more} more" if more > 0 else shown or "no models"


__all__ = ["ServerState", "ServerStatus"]
