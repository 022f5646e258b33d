"""The part of the gateway contract desk uses, as a Protocol, so tests can inject any gateway.

:class:`tui_gateway.gateway.Gateway` satisfies it; so may a scripted fake.
"""

from __future__ import annotations

from typing import Protocol

from agent.stops import StopRequest
from tui_gateway.gateway import ShutdownReport, SubmitResult
from tui_gateway.subscription import EventCallback, Subscription


class DeskGateway(Protocol):
    """Gateway methods called by desk (see DESIGN.md section 4 for their contract)."""

    def subscribe(self, callback: EventCallback) -> Subscription:
        """Deliver every event from now on to ``callback`` on a thread of the gateway's."""
        ...

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering to ``sub``."""
        ...

    def session_create(self, title: str = "") -> str:
        """Create a session; returns its id."""
        ...

    def prompt_submit(self, session_id: str, text: str) -> SubmitResult:
        """Run or queue a prompt; raises ``GatewayError`` for a refused prompt."""
        ...

    def session_interrupt(
        self, session_id: str, stop: StopRequest, turn_id: str | None = None
    ) -> str | None:
        """Hard-stop the running turn; returns its id, or None when nothing ran."""
        ...

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        """Stop everything as the system and wait (bounded) for every worker."""
        ...

    @property
    def running_turns(self) -> int:
        """How many turns run now."""
        ...
