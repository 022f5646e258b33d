"""The gateway as a frontend sees it: the contract's port, a Protocol.

The in-process :class:`tui_gateway.gateway.Gateway` satisfies it, so does the remote client
(:class:`tui_gateway.wire.client.RemoteGateway`), and so may a scripted fake a test injects.
Every method declaration's call (:mod:`contract.methods`) is written against it.
"""

from __future__ import annotations

from typing import Protocol

from agent.stops import StopRequest, Surface
from contract.results import (
    ChildInfo,
    ConsoleCommandInfo,
    QueuedPromptInfo,
    ResumedSession,
    SessionDiff,
    SessionInfo,
    ShutdownReport,
    SteerResult,
    SubmitResult,
    UndoResult,
)
from contract.server_events import ServerStatus
from contract.subscription import EventCallback, Subscription


class ModelServerPort(Protocol):
    """The model server as desk asks about it (``tui_gateway.servers.model_server.ModelServer``)."""

    def status(self) -> ServerStatus:
        """Its state as last found (``server.status`` events follow every change)."""
        ...

    def check(self) -> None:
        """Ask it now, in the background (and again with a back-off while it answers badly)."""
        ...


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

    def prompt_submit(
        self,
        session_id: str,
        text: str,
        *,
        stop: StopRequest | None = None,
        entered_at: float | None = None,
    ) -> SubmitResult:
        """Run or queue a prompt (with ``stop``: stop the running turn and run it next;
        ``entered_at``: ``time.monotonic()`` of the Enter that sent it); raises
        ``GatewayError`` for a refused prompt."""
        ...

    def prompt_steer(self, session_id: str, text: str, stop: StopRequest) -> SteerResult:
        """Give the running turn ``text`` at its next model-call boundary (a soft ``stop``);
        with nothing running it becomes a prompt."""
        ...

    def session_agents(self, session_id: str) -> list[ChildInfo]:
        """The session's child agents, live and ended."""
        ...

    def session_interrupt(
        self,
        session_id: str,
        stop: StopRequest,
        turn_id: str | None = None,
        keyed_at: float | None = None,
    ) -> str | None:
        """Hard-stop the running turn; returns its id, or None when nothing ran. A stop key
        gives ``keyed_at`` (``time.monotonic()`` when it was made): the gateway stops what
        runs now or the prompt entered before the key (``tui_gateway.stops.key_stops``)."""
        ...

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        """Stop everything as the system and wait (bounded) for every worker."""
        ...

    def frontend_gone(self, surface: Surface = Surface.API_DISCONNECT) -> int:
        """The frontend went away: stop every running turn as the system from ``surface``
        (``web.disconnect`` for a closed browser tab); returns how many were stopped."""
        ...

    @property
    def running_turns(self) -> int:
        """How many turns run now."""
        ...

    def session_compress(self, session_id: str, focus: str | None = None) -> SubmitResult:
        """Compress the transcript now (a turn that emits only ``compression.*`` events)."""
        ...

    def compression_cancel(self, session_id: str, stop: StopRequest) -> bool:
        """Hard-stop the running compression; False when none runs."""
        ...

    # -- tools, console, queue and saved sessions (see desk.controllers) -----------------------

    def approval_respond(self, session_id: str, request_id: str, decision: str) -> bool:
        """Answer a pending tool approval (``once``, ``always`` or ``deny``)."""
        ...

    def prompt_remove(self, session_id: str, turn_id: str) -> bool:
        """Remove a queued prompt; False when it is not queued any more."""
        ...

    def prompt_edit(self, session_id: str, turn_id: str, text: str) -> bool:
        """Replace a queued prompt's text in its place; False when it is not queued any more."""
        ...

    def session_queue(self, session_id: str) -> list[QueuedPromptInfo]:
        """The prompts waiting in the session's queue, in order."""
        ...

    def console_run(self, session_id: str, line: str) -> str:
        """Run a console command line; returns its command id."""
        ...

    def console_commands(self) -> list[ConsoleCommandInfo]:
        """The commands ``console_run`` takes (``console.commands``)."""
        ...

    def console_cancel(self, command_id: str, stop: StopRequest) -> bool:
        """Cancel a queued or running console command; False when it had finished."""
        ...

    def workspace_files(self, query: str = "", limit: int = 50) -> list[str]:
        """The workspace's files matching ``query`` (an ``@`` mention), best first."""
        ...

    def session_list(self, limit: int = 50) -> list[SessionInfo]:
        """Live and saved sessions, most recently used first."""
        ...

    def session_resume(self, session_id: str | None = None) -> ResumedSession:
        """Make a saved session live again (the most recent with no id)."""
        ...

    def session_rename(self, session_id: str, title: str) -> None:
        """Rename a session."""
        ...

    def session_delete(self, session_id: str) -> bool:
        """Delete a session for good (its running turn is stopped first)."""
        ...

    def session_undo(self, session_id: str) -> UndoResult:
        """Put back the files of the session's last turn that changed them (``/undo``)."""
        ...

    def session_diff(self, session_id: str) -> SessionDiff:
        """What the session's turns changed in the workspace (``/diff``)."""
        ...

    # -- the model server (see desk.controllers.server) ----------------------------------------

    @property
    def server(self) -> ModelServerPort:
        """The gateway's model server."""
        ...
