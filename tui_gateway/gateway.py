"""The gateway: the contract's methods, in front of the collaborators that do the work.

Method names follow the contract (DESIGN.md section 4): ``session.create`` is
:meth:`Gateway.session_create`, ``prompt.submit`` is :meth:`Gateway.prompt_submit`,
``session.interrupt`` is :meth:`Gateway.session_interrupt`, ``gateway.shutdown`` is
:meth:`Gateway.shutdown`. Each method hands its work to one collaborator (all made by
:func:`~tui_gateway.gateway_parts.build_parts`):

- :class:`~tui_gateway.sessions.session_table.SessionTable`: the live sessions, and which to evict;
- :class:`~tui_gateway.turns.turn_runner.TurnRunner`: makes turns, runs them, keeps checkpoints;
- :class:`~tui_gateway.stops.booking.BookingOffice`: every stop, the queue's fate, outcomes;
- :class:`~tui_gateway.sessions.saved_sessions.SavedSessions`: list, resume, rename, delete;
- :class:`~tui_gateway.sessions.persistence.Persistence` and
  :class:`~tui_gateway.turns.compression.SessionCompression`: the store's writes, compressions;
- :class:`~tui_gateway.console.Console`: console commands;
- :class:`~tui_gateway.servers.mcp_servers.McpServers` (``Gateway.mcp``): the MCP servers;
- :class:`~tui_gateway.servers.model_server.ModelServer` (``Gateway.server``): the model server;
- :class:`~tui_gateway.events.event_hub.EventHub`: events to subscribers (never blocking a worker);
- :class:`~tui_gateway.stops.shutdown.Shutdown`: the one shutdown.

Every text a frontend hands a method (a prompt, a title, a command line) passes
:func:`agent.valid_text.valid_text` first: a lone surrogate is U+FFFD from here on.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

from agent.context.budget import ContextBudget
from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage
from agent.steering import Steer
from agent.stops import StopRequest, Surface
from agent.store import SessionStore, StoredReplay
from agent.usage import TokenUsage
from agent.valid_text import valid_text
from contract.errors import GatewayError
from contract.events import SessionCreated
from contract.results import (
    ChildInfo,
    ConsoleCommandInfo,
    QueuedPromptInfo,
    ResumedSession,
    SessionInfo,
    ShutdownReport,
    SteerResult,
    SubmitResult,
)
from contract.subscription import EventCallback, Subscription
from tui_gateway.console import CommandError
from tui_gateway.console.commands import command_infos
from tui_gateway.engine_setup import AgentFactory, AgentSetup, GatewayConfig
from tui_gateway.gateway_parts import build_parts
from tui_gateway.sessions.project import first_messages, instruction_files
from tui_gateway.sessions.state import Session, Turn
from tui_gateway.turns.approvals import SessionApprovals
from tui_gateway.turns.kinds import TurnKind
from tui_gateway.turns.tool_offer import check_text


class Gateway:
    """Sessions, turns and stops behind the gateway contract. Thread-safe.

    Args:
        config: provider and limits.
        agent_factory: builds the agent of each turn from its :class:`AgentSetup`; the default
            builds an :class:`~agent.agent.Agent` over ``config.provider``.
        store: where sessions and turns are saved; None keeps them in memory only. The gateway
            closes it at shutdown.
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        agent_factory: AgentFactory | None = None,
        store: SessionStore | None = None,
    ) -> None:
        self.config = config
        parts = build_parts(self, config, agent_factory, store)
        self._cwd = parts.cwd
        self._events = parts.events
        self.server = parts.server
        """The model server: where it is, whether it answers (``server.status``)."""
        self.mcp = parts.mcp
        self._table = parts.table
        self._persistence = parts.persistence
        self._windows = parts.windows
        self.console = parts.console
        self._booking = parts.booking
        self._files = parts.files
        self._runner = parts.runner
        self.session_undo = self._runner.checkpoints.undo  # session.undo (sessions.checkpoints)
        self.session_diff = self._runner.checkpoints.diff  # session.diff
        self._saved = parts.saved
        self._offered = parts.offered
        self._shutdown = parts.shutdown
        self.mcp.start()

    # -- subscribers ---------------------------------------------------------------------------

    def subscribe(self, callback: EventCallback) -> Subscription:
        """Deliver every event from now on to ``callback``, on a delivery thread of its own
        (first each MCP server's latest ``mcp.server`` event: a frontend learns their state)."""
        return self._events.subscribe(callback)

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering to ``sub`` and end its delivery thread."""
        self._events.unsubscribe(sub)

    def stored_events(self, session_id: str, seq: int) -> StoredReplay | None:
        """The events a shared store kept of the session after ``seq`` (any host's), or None."""
        return self._events.stored_since(session_id, seq)

    # -- sessions ------------------------------------------------------------------------------

    def session_create(self, title: str = "") -> str:
        """``session.create``: a new empty session; returns its id.

        Raises:
            GatewayError: when the gateway is shutting down.
        """
        title = valid_text(title)  # text from a frontend is made valid once, here
        session = Session(uuid.uuid4().hex[:12], title=title, model=self.server.provider.model)
        session.approvals = SessionApprovals(lambda p: self._events.publish(session, p))
        session.history.extend(first_messages(self.config, self._cwd))
        session, victim = self._table.add(session)
        self._persistence.session_created(session, str(self._cwd))
        self._events.publish(session, SessionCreated(title=title, model=session.model))
        self._windows.announce(session, self.server.for_session(session), self._offered())
        if victim is not None:
            self._booking.evict(victim)
        return session.session_id

    def session_instructions(self, session_id: str) -> list[str]:
        """The session's ``AGENTS.md`` files (:func:`~.sessions.project.instruction_files`)."""
        return instruction_files(self._table.get(session_id))

    def session_usage(self, session_id: str) -> TokenUsage:
        """The session's model requests summed (:mod:`agent.usage`; GatewayError: unknown)."""
        session = self._table.get(session_id)
        with session.lock:
            return session.usage

    def session_list(self, limit: int = 50) -> list[SessionInfo]:
        """``session.list``: live and saved sessions, most recently used first.

        Raises:
            GatewayError: when the store cannot be read.
        """
        return self._saved.list_sessions(limit)

    def session_resume(self, session_id: str | None = None) -> ResumedSession:
        """``session.resume``: make a saved session live again (the most recent when no id).

        Raises:
            GatewayError: no such session, no store, or the store cannot be read.
        """
        return self._saved.resume(session_id)

    def session_rename(self, session_id: str, title: str) -> None:
        """Rename a live or saved session (GatewayError: empty title, or no such session)."""
        self._saved.rename(session_id, valid_text(title))

    def session_delete(self, session_id: str) -> bool:
        """Delete a session for good: its running turn is stopped first (a user stop,
        ``session.delete``) and its queued prompts are forgotten.

        Returns:
            False when there was no such session.
        """
        return self._saved.delete(session_id)

    def session_release(self, session_id: str) -> bool:
        """Let an idle live session go: it leaves this gateway and its claim is given back
        (written before this returns, up to the store's patience), so another gateway may
        open it (a schedule's session moves to the host that runs its next firing).

        Returns:
            True when the session is not live here now; False when a turn runs or waits in it.
        """
        return self._saved.release(session_id)

    @property
    def store(self) -> SessionStore | None:
        """The store sessions are saved in (None: memory only); the gateway closes it."""
        return self._persistence.store

    def turn_session(self, turn_id: str) -> str | None:
        """The session of a turn run here or saved in the store (possibly by another host)."""
        return self._saved.turn_session(turn_id)

    def archived_messages(self, session_id: str) -> list[tuple[str, str]]:
        """``(role, content)`` of the messages compressions archived in the session, oldest
        first; [] without a store. Raises GatewayError when the store cannot be read."""
        return self._saved.archived(session_id)

    # Queries of a live session; each raises GatewayError (-32602) for an unknown session.

    def history(self, session_id: str) -> list[ChatMessage]:
        """A copy of the session's transcript as sent to the model."""
        session = self._table.get(session_id)
        with session.lock:
            return list(session.history)

    def turn(self, session_id: str, turn_id: str) -> Turn:
        """The turn record (its ``result`` is the booked outcome once ``state`` is ``done``)."""
        session = self._table.get(session_id)
        with session.lock:
            return session.turns[turn_id]

    def live_sessions(self) -> list[str]:
        """Ids of the sessions the gateway holds now (evicted ones are gone)."""
        return self._table.ids()

    def session_summaries(self) -> list[str]:
        """One line per live session: id, title, model, turns, and whether a turn runs."""
        return self._table.summaries()

    def session_set_model(self, session_id: str, model: str) -> None:
        """Use ``model`` for the session's next turns, saved with it (GatewayError: one it
        does not list); its ``context.window`` follows once that window is known."""
        session = self._table.get(session_id)
        self._persistence.model_set(session, self.server.set_model(session, valid_text(model)))
        self._windows.announce(session, self.server.for_session(session), self._offered())

    def provider_for(self, session_id: str) -> ProviderConfig:
        """The provider settings the session's turns use."""
        return self.server.for_session(self._table.get(session_id))

    def context_budget(self, session_id: str) -> ContextBudget:
        """The session's context window and calibrated count (learns the window if needed).

        Raises:
            GatewayError: unknown session.
        """
        return self._windows.budget(self._table.get(session_id), self.provider_for(session_id))

    def session_cwd(self, session_id: str) -> Path:
        """The directory the session's tools and commands work in."""
        self._table.get(session_id)
        return self._cwd

    @property
    def running_turns(self) -> int:
        """How many turns are running now, over all sessions."""
        return self._table.running_turns()

    def worker_threads(self) -> list[threading.Thread]:
        """The gateway's worker threads that are alive now."""
        return self._runner.alive()

    # -- turns ---------------------------------------------------------------------------------

    def prompt_submit(
        self,
        session_id: str,
        text: str,
        *,
        stop: StopRequest | None = None,
        entered_at: float | None = None,
    ) -> SubmitResult:
        """``prompt.submit``: run ``text`` as the next turn, or queue it behind the running one.

        Args:
            session_id: the session.
            text: the prompt.
            stop: "stop and send": hard-stop the running turn with this stop (queued prompts
                are kept) and run ``text`` next, ahead of them; None queues it as usual.
            entered_at: ``time.monotonic()`` when the key that sent it (an Enter) was made,
                or None: a stop key made after it stops its turn even when the stop reached
                the gateway first (:mod:`tui_gateway.stops.key_stops`).

        Returns:
            the turn id and whether it was queued.

        The files its ``@path`` mentions name are attached (:mod:`agent.context.mentions`).

        Raises:
            GatewayError: unknown session, empty or oversized prompt, a soft ``stop``, shutting
                down, a model server that cannot take it now (``ModelServer.refuse``), or a
                mentioned file that is denied, unreadable or not text.
        """
        text = valid_text(text)
        check_text(text, "prompt", self.config.max_prompt_chars)
        if stop is not None and not stop.hard:
            raise GatewayError("stop and send takes a hard stop", code=-32602)
        sent = self._files.attach(text)  # the @file mentions' text, or a refusal
        return self._runner.submit(
            session_id, sent, kind=TurnKind.PROMPT, stop=stop, entered_at=entered_at, typed=text
        )

    def workspace_files(self, query: str = "", limit: int = 50) -> list[str]:
        """``workspace.files``: the workspace's files matching ``query``, best first."""
        return self._files.matching(query, max(1, min(limit, 500)))

    def prompt_steer(self, session_id: str, text: str, stop: StopRequest) -> SteerResult:
        """``prompt.steer``: give the running turn ``text`` at its next model-call boundary.

        It never cuts a stream, a tool call or a compression. When nothing runs, or a
        ``/compress`` runs, or the turn has taken its last boundary, the text becomes a
        normal prompt (queued behind what runs). A turn that ends before delivering it (a
        stop, a failure) runs it next as a prompt.

        Args:
            session_id: the session.
            text: what to add (not empty).
            stop: the soft interrupt: who steers, from where, why (``hard`` False).

        Raises:
            GatewayError: unknown session, empty or oversized text, a hard ``stop``, shutting
                down, or (as a prompt) a model server that cannot take it now.
        """
        text = valid_text(text)
        check_text(text, "steer", self.config.max_prompt_chars)
        try:
            steer = Steer(stop, text)
        except ValueError as exc:
            raise GatewayError(str(exc), code=-32602) from exc
        taker = self._booking.steer(session_id, steer)
        if taker is not None:
            return SteerResult(taker.turn_id, True, False, steer.steer_id)
        sent = self._runner.submit(session_id, text, kind=TurnKind.PROMPT, turn_id=steer.steer_id)
        return SteerResult(sent.turn_id, False, sent.queued, steer.steer_id)

    def session_agents(self, session_id: str) -> list[ChildInfo]:
        """``session.agents``: the session's child agents, live and ended, oldest first.

        Raises:
            GatewayError: unknown session.
        """
        return self._runner.delegation.children(self._table.get(session_id))

    def session_compress(self, session_id: str, focus: str | None = None) -> SubmitResult:
        """``session.compress``: compress the transcript now (``/compress [focus]``).

        It runs on the session's worker like a turn (queued behind a running one), ignores
        the cooldown, and reports ``compression.progress`` and one ``compression.complete``.

        Raises:
            GatewayError: unknown session, shutting down, or the model server is unusable.
        """
        focus = valid_text(focus) if focus is not None else None
        return self._runner.submit(session_id, "", kind=TurnKind.COMPRESS, focus=focus)

    def prompt_remove(self, session_id: str, turn_id: str) -> bool:
        """``prompt.remove``: forget a queued prompt before it runs (never saved), or a prompt
        saved as not sent (it is offered again no more); False if it is neither (it runs, or
        it ended)."""
        if self._booking.remove_prompt(session_id, turn_id):
            return True
        return self._persistence.unsent_dismissed(self._table.get(session_id), turn_id)

    def session_queue(self, session_id: str) -> list[QueuedPromptInfo]:
        """``session.queue``: the session's queued prompts, in order (GatewayError: unknown)."""
        return self._runner.queued(session_id)

    def prompt_edit(self, session_id: str, turn_id: str, text: str) -> bool:
        """``prompt.edit``: a queued prompt's new text, in its place; False when it is not
        queued any more (GatewayError: unknown session, empty or oversized text)."""
        return self._runner.edit(session_id, turn_id, valid_text(text))

    def approval_respond(
        self, session_id: str, request_id: str, decision: str, *, refusal: str = ""
    ) -> bool:
        """``approval.respond``: answer a pending tool approval.

        Args:
            session_id: the session.
            request_id: from the ``approval.request`` event.
            decision: ``once``, ``always`` (this tool, for the rest of the session) or ``deny``.
            refusal: with ``deny`` from a frontend that asked no one (``desk run`` without
                ``--yes``, the OpenAI facade): what the model is told instead of "the person
                declined".

        Returns:
            False when the prompt is no longer pending (answered, or its turn was stopped).

        Raises:
            GatewayError: unknown session or decision.
        """
        approvals = self._table.get(session_id).approvals
        return approvals is not None and approvals.respond(request_id, decision, refusal)

    # -- stops (all booked by the booking office) ----------------------------------------------

    def session_interrupt(
        self,
        session_id: str,
        stop: StopRequest,
        turn_id: str | None = None,
        keyed_at: float | None = None,
    ) -> str | None:
        """``session.interrupt``: hard-stop the session's running turn with ``stop``.

        Queued prompts stay queued: the person asked for them, and the next one starts as soon
        as the stopped turn has closed its connection. Every child agent of the turn is
        stopped with it (same issuer and surface). Without ``turn_id``, when no turn runs, the
        child agents that outlived their turn (in the background) are stopped.

        Args:
            session_id: the session.
            stop: who stops and why (its issuer is booked as given); it must be hard.
            turn_id: stop only this turn; when another turn runs now, nothing happens. A child
                agent's id stops that child alone (its parent goes on).
            keyed_at: a person's stop key: ``time.monotonic()`` when it was made. Without
                ``turn_id`` the gateway applies the key rule (:mod:`tui_gateway.stops.key_stops`):
                it stops what runs unless that was entered after the key, and when nothing
                runs it keeps the stop for the submit of a prompt entered before the key.

        Returns:
            the id of the turn the stop was sent to (the first such child's), or None when
            nothing ran (with ``keyed_at``: nothing yet, or only a later prompt's turn).

        Raises:
            GatewayError: unknown session; a soft stop (code -32602: a soft interrupt is a
                steer, :meth:`prompt_steer`).
        """
        return self._booking.interrupt(session_id, stop, turn_id, keyed_at)

    def compression_cancel(self, session_id: str, stop: StopRequest) -> bool:
        """``compression.cancel``: hard-stop the session's running compression with ``stop``.

        Before commit admission everything is rolled back; after it, the commit completes
        and the stop ends the rest of the turn.

        Returns:
            False when no compression runs in the session.

        Raises:
            GatewayError: unknown session, or a soft stop (code -32602).
        """
        return self._booking.cancel_compression(session_id, stop)

    def console_cancel(self, command_id: str, stop: StopRequest) -> bool:
        """``console.cancel``: drop a queued command, or hard-stop a running one with ``stop``.

        Returns False when the command had already finished; GatewayError (-32602) for a soft
        stop.
        """
        return self._booking.cancel_command(command_id, stop)

    def frontend_gone(self, surface: Surface = Surface.API_DISCONNECT) -> int:
        """The frontend went away: stop its running turns and console commands (a system stop
        from ``surface``: ``api.disconnect``, ``acp.disconnect``); queued prompts are dropped
        and saved as not sent. Returns how many turns and commands were stopped."""
        return self._booking.frontend_gone(surface)

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        """``gateway.shutdown``: a system stop of everything, then a bounded wait for every
        worker (see :mod:`tui_gateway.stops.shutdown`); calling it again returns the first report.

        Args:
            timeout_s: the bound in seconds (default ``config.shutdown_timeout_s``).

        Returns:
            what was stopped and whether any worker outlived the bound.
        """
        self.server.close()
        self._windows.close()  # a count of the server's in flight ends now: the quit waits for none
        report = self._shutdown.run(timeout_s)
        self.server.join()  # no thread of the gateway outlives its shutdown
        return report

    # -- console -------------------------------------------------------------------------------

    def console_run(self, session_id: str, line: str) -> str:
        """``console.run``: run a command line on a console worker under a fresh scope.

        Output arrives as ``console.output`` events and the outcome as one
        ``console.complete{status: ok | error | cancelled | timeout}``.

        Returns:
            the command id.

        Raises:
            GatewayError: unknown session, empty line, or shutting down.
        """
        self._table.get(session_id)
        try:
            return self.console.run(session_id, valid_text(line)).command_id
        except CommandError as exc:
            raise GatewayError(exc.message, code=-32602) from exc

    def console_commands(self) -> list[ConsoleCommandInfo]:
        """``console.commands``: the commands :meth:`console_run` takes, by name."""
        return command_infos()


__all__ = [
    "AgentSetup",
    "Gateway",
    "GatewayConfig",
    "GatewayError",
    "ShutdownReport",
    "SteerResult",
    "SubmitResult",
]
