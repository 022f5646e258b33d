"""The gateway: creates sessions, runs turns on its own workers, books stops, shuts down.

Method names follow the contract (DESIGN.md section 4): ``session.create`` is
:meth:`Gateway.session_create`, ``prompt.submit`` is :meth:`Gateway.prompt_submit`,
``session.interrupt`` is :meth:`Gateway.session_interrupt`, ``gateway.shutdown`` is
:meth:`Gateway.shutdown`. Events reach subscribers through :class:`Subscription` objects, so a
slow subscriber never blocks a worker.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent.agent import Agent
from agent.events import AgentListener, TurnResult
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage
from agent.stops import StopRequest, Surface
from agent.tools.registry import ToolRegistry, default_tools
from agent.tools.runner import Approver
from tui_gateway.approvals import SessionApprovals
from tui_gateway.console import CommandError, Console
from tui_gateway.events import (
    GatewayEvent,
    GatewayStopping,
    MessageComplete,
    MessageStart,
    Payload,
    PromptDropped,
    PromptQueued,
    SessionCreated,
    StopReceipt,
    TurnState,
)
from tui_gateway.state import Session, Turn
from tui_gateway.subscription import EventCallback, Subscription
from tui_gateway.translate import turn_listener
from tui_gateway.workers import TurnWorkers


@dataclass(frozen=True, slots=True)
class AgentSetup:
    """What the gateway hands the agent factory for one turn.

    Attributes:
        listener: receives the turn's agent events (never blocks).
        approve: asks the person before a tool call that needs approval.
        tools: the tools offered, or None.
        cwd: the directory tool calls run in.
        provider: the session's provider settings (its model may differ from the gateway's).
    """

    listener: AgentListener
    approve: Approver | None
    tools: ToolRegistry | None
    cwd: Path
    provider: ProviderConfig


AgentFactory = Callable[[AgentSetup], Agent]


class GatewayError(Exception):
    """A request the gateway refuses, with a one-line ``message`` and a JSON-RPC ``code``."""

    def __init__(self, message: str, code: int = -32000) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """How the gateway runs turns.

    Attributes:
        provider: where the model server is.
        system_prompt: first message of every new session, or None.
        stream: stream replies (the default) or request whole bodies.
        shutdown_timeout_s: how long shutdown waits for workers, in seconds.
        coalesce_s: seconds between delta deliveries to a subscriber.
        max_prompt_chars: longest prompt accepted, in characters.
        inactivity_timeout_s: a turn that receives nothing from the model server for this many
            seconds is stopped as ``inactivity`` (a system stop); None never.
        tools: offer the model the built-in tools (shell, read_file, write_file, list_dir).
        approvals: ask the person before ``shell`` and ``write_file`` calls.
        cwd: the directory tool calls run in (default: the process's working directory).
        max_iterations: most model calls in one turn.
        console_workers: console commands running at once.
        console_timeout_s: a console command running longer is stopped as ``console.timeout``.
    """

    provider: ProviderConfig
    system_prompt: str | None = None
    stream: bool = True
    shutdown_timeout_s: float = 10.0
    coalesce_s: float = 0.03
    max_prompt_chars: int = 1_000_000
    inactivity_timeout_s: float | None = 300.0
    tools: bool = True
    approvals: bool = True
    cwd: Path | None = None
    max_iterations: int = 25
    console_workers: int = 2
    console_timeout_s: float = 60.0


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """What ``prompt.submit`` did: the new ``turn_id``, and whether it waits in the queue."""

    turn_id: str
    queued: bool


@dataclass(frozen=True, slots=True)
class ShutdownReport:
    """What ``gateway.shutdown`` did.

    Attributes:
        turns_stopped: running turns hard-stopped as ``gateway.shutdown``.
        prompts_dropped: queued prompts that will never run.
        threads_left: names of worker threads still alive at the deadline (empty on success).
        elapsed_s: seconds the shutdown took.
    """

    turns_stopped: int
    prompts_dropped: int
    threads_left: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0


class Gateway:
    """Sessions, turns and stops behind the gateway contract. Thread-safe.

    Args:
        config: provider and limits.
        agent_factory: builds the agent of each turn from its :class:`AgentSetup`; the default
            builds an :class:`Agent` over ``config.provider``.
    """

    def __init__(self, config: GatewayConfig, *, agent_factory: AgentFactory | None = None) -> None:
        self.config = config
        self._tools = ToolRegistry(default_tools()) if config.tools else None
        self._cwd = config.cwd if config.cwd is not None else Path.cwd()
        self._agent_factory: AgentFactory = agent_factory or (
            lambda setup: Agent(
                ChatClient(setup.provider),
                listener=setup.listener,
                stream=config.stream,
                inactivity_timeout_s=config.inactivity_timeout_s,
                tools=setup.tools,
                cwd=setup.cwd,
                approve=setup.approve,
                max_iterations=config.max_iterations,
            )
        )
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._subscriptions: list[Subscription] = []
        self._workers = TurnWorkers()
        self._closing = False
        self._gateway_seq = 0
        self._shutdown_report: ShutdownReport | None = None
        self.console = Console(
            self,
            self._publish_to,
            max_workers=config.console_workers,
            timeout_s=config.console_timeout_s,
        )

    # -- subscribers ---------------------------------------------------------------------------

    def subscribe(self, callback: EventCallback) -> Subscription:
        """Deliver every event from now on to ``callback``, on a delivery thread of its own."""
        sub = Subscription(callback, coalesce_s=self.config.coalesce_s)
        with self._lock:
            self._subscriptions.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering to ``sub`` and end its delivery thread."""
        with self._lock:
            if sub in self._subscriptions:
                self._subscriptions.remove(sub)
        sub.close()

    def _publish(self, session: Session | None, payload: Payload) -> None:
        if session is None:
            with self._lock:
                self._gateway_seq += 1
                seq = self._gateway_seq
            session_id = ""
        else:
            with session.lock:
                session.seq += 1
                seq = session.seq
            session_id = session.session_id
        event = GatewayEvent(type=payload.TYPE, session_id=session_id, seq=seq, payload=payload)
        with self._lock:
            subs = list(self._subscriptions)
        for sub in subs:
            sub.publish(event)

    def _publish_to(self, session_id: str, payload: Payload) -> None:
        with self._lock:
            session = self._sessions.get(session_id)
        self._publish(session, payload)

    # -- sessions ------------------------------------------------------------------------------

    def session_create(self, title: str = "") -> str:
        """``session.create``: a new empty session.

        Returns:
            the session id.

        Raises:
            GatewayError: when the gateway is shutting down.
        """
        session = Session(
            session_id=uuid.uuid4().hex[:12], title=title, model=self.config.provider.model
        )
        session.approvals = SessionApprovals(lambda payload: self._publish(session, payload))
        if self.config.system_prompt:
            session.history.append(ChatMessage(role="system", content=self.config.system_prompt))
        with self._lock:
            if self._closing:
                raise GatewayError("the gateway is shutting down")
            self._sessions[session.session_id] = session
        self._publish(session, SessionCreated(title=title, model=session.model))
        return session.session_id

    def _session(self, session_id: str) -> Session:
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise GatewayError(f"no session {session_id!r}", code=-32602)
        return session

    def history(self, session_id: str) -> list[ChatMessage]:
        """A copy of the session's transcript as sent to the model."""
        session = self._session(session_id)
        with session.lock:
            return list(session.history)

    def turn(self, session_id: str, turn_id: str) -> Turn:
        """The turn record (its ``result`` is the booked outcome once ``state`` is ``done``)."""
        session = self._session(session_id)
        with session.lock:
            return session.turns[turn_id]

    def session_summaries(self) -> list[str]:
        """One line per live session: id, title, model, turns, and whether a turn runs."""
        with self._lock:
            sessions = list(self._sessions.values())
        lines = []
        for s in sessions:
            with s.lock:
                state = "running" if s.running is not None else "idle"
                turns = len(s.turns)
            lines.append(
                f"{s.session_id}  {s.title or '(untitled)'}  [{s.model}]  {turns} turns, {state}"
            )
        return lines

    def session_set_model(self, session_id: str, model: str) -> None:
        """Use ``model`` for the session's next turns (the running one keeps its model).

        Raises:
            GatewayError: unknown session.
        """
        session = self._session(session_id)
        with session.lock:
            session.model = model

    def provider_for(self, session_id: str) -> ProviderConfig:
        """The provider settings the session's turns use."""
        session = self._session(session_id)
        with session.lock:
            return replace(self.config.provider, model=session.model)

    def session_cwd(self, session_id: str) -> Path:
        """The directory the session's tools and commands work in."""
        self._session(session_id)
        return self._cwd

    @property
    def running_turns(self) -> int:
        """How many turns are running now, over all sessions."""
        with self._lock:
            sessions = list(self._sessions.values())
        return sum(1 for s in sessions if s.running is not None)

    def worker_threads(self) -> list[threading.Thread]:
        """The gateway's worker threads that are alive now."""
        return self._workers.alive()

    # -- prompts -------------------------------------------------------------------------------

    def prompt_submit(self, session_id: str, text: str) -> SubmitResult:
        """``prompt.submit``: run ``text`` as the next turn, or queue it behind the running one.

        Returns:
            the turn id and whether it was queued.

        Raises:
            GatewayError: unknown session, empty or oversized prompt, or shutting down.
        """
        if not text.strip():
            raise GatewayError("the prompt is empty", code=-32602)
        if len(text) > self.config.max_prompt_chars:
            raise GatewayError(
                f"the prompt is {len(text):,} characters; the limit is "
                f"{self.config.max_prompt_chars:,}",
                code=-32602,
            )
        session = self._session(session_id)
        turn_id = uuid.uuid4().hex[:12]
        listener = turn_listener(turn_id, lambda payload: self._publish(session, payload))
        approve = None
        if self.config.approvals and session.approvals is not None:
            approve = session.approvals.approver(turn_id)
        provider = replace(self.config.provider, model=session.model)
        setup = AgentSetup(listener, approve, self._tools, self._cwd, provider)
        agent = self._agent_factory(setup)
        turn = Turn(turn_id=turn_id, session_id=session_id, prompt=text, agent=agent)
        with self._lock:
            if self._closing:
                raise GatewayError("the gateway is shutting down")
            with session.lock:
                session.turns[turn_id] = turn
                if not session.title:
                    session.title = _title_from(text)
                queued = session.running is not None
                if queued:
                    session.queue.append(turn)
                    position = len(session.queue)
                else:
                    session.running = turn
                    turn.state = "running"
            if not queued:
                self._workers.start(turn_id, lambda: self._run_turn(session, turn))
        if queued:
            self._publish(session, PromptQueued(turn_id=turn_id, text=text, position=position))
        return SubmitResult(turn_id=turn_id, queued=queued)

    def prompt_remove(self, session_id: str, turn_id: str) -> bool:
        """Remove a queued prompt before it runs; returns False if it is not queued any more."""
        session = self._session(session_id)
        with session.lock:
            turn = next((t for t in session.queue if t.turn_id == turn_id), None)
            if turn is None:
                return False
            session.queue.remove(turn)
            turn.state = "done"
        self._publish(session, PromptDropped(turn_id=turn_id, text=turn.prompt, reason="removed"))
        return True

    def approval_respond(self, session_id: str, request_id: str, decision: str) -> bool:
        """``approval.respond``: answer a pending tool approval.

        Args:
            session_id: the session.
            request_id: from the ``approval.request`` event.
            decision: ``once``, ``always`` (this tool, for the rest of the session) or ``deny``.

        Returns:
            False when the prompt is no longer pending (answered, or its turn was stopped).

        Raises:
            GatewayError: unknown session or decision.
        """
        session = self._session(session_id)
        if session.approvals is None:
            return False
        try:
            return session.approvals.respond(request_id, decision)
        except ValueError as exc:
            raise GatewayError(str(exc), code=-32602) from exc

    # -- running turns -------------------------------------------------------------------------

    def _run_turn(self, session: Session, turn: Turn) -> None:
        while True:
            turn.started_at = time.monotonic()
            with session.lock:
                history = list(session.history)
            self._publish(session, MessageStart(turn_id=turn.turn_id, prompt=turn.prompt))
            try:
                result = turn.agent.run_conversation(history, turn.prompt)
            except Exception as exc:  # a bug below must still end the turn with one outcome
                result = TurnResult(
                    status="failed",
                    exit_reason=f"failed({type(exc).__name__})",
                    text="",
                    partial=True,
                    error=f"internal error: {exc}",
                )
            turn.worker_exited_at = time.monotonic()
            with session.lock:
                if turn.result is None:  # booked exactly once
                    turn.result = result
                session.history.append(ChatMessage(role="user", content=turn.prompt))
                session.history.extend(turn.result.messages)
                turn.state = "done"
                following = session.queue.popleft() if session.queue else None
                session.running = following
                if following is not None:
                    following.state = "running"
            self._publish(session, self._complete_event(turn))
            if following is None:
                return
            turn = following  # the next queued prompt runs on this same worker

    def _complete_event(self, turn: Turn) -> MessageComplete:
        result = turn.result
        assert result is not None
        receipt = None
        if result.stop is not None:
            stop = result.stop
            timings = result.timings
            closed_ms = timings.stop_to_closed_ms if timings is not None else None
            exited_ms = None
            if turn.worker_exited_at is not None:
                exited_ms = max(0.0, (turn.worker_exited_at - stop.requested_at) * 1000.0)
            receipt = StopReceipt(
                issuer=stop.issuer.value,
                surface=stop.surface.value,
                reason=stop.reason,
                closed_ms=closed_ms,
                exited_ms=exited_ms,
                children_ended=result.children_ended,
            )
        usage = result.usage
        elapsed = 0.0
        if turn.started_at is not None and turn.worker_exited_at is not None:
            elapsed = turn.worker_exited_at - turn.started_at
        return MessageComplete(
            turn_id=turn.turn_id,
            status=result.status,
            exit_reason=result.exit_reason,
            text=result.text,
            stop=receipt,
            error=result.error,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            elapsed_s=elapsed,
        )

    # -- stops ---------------------------------------------------------------------------------

    def session_interrupt(
        self, session_id: str, stop: StopRequest, turn_id: str | None = None
    ) -> str | None:
        """``session.interrupt``: hard-stop the session's running turn with ``stop``.

        Queued prompts stay queued: the person asked for them, and the next one starts as soon
        as the stopped turn has closed its connection.

        Args:
            session_id: the session.
            stop: who stops and why (its issuer is booked as given).
            turn_id: stop only this turn; when another turn runs now, nothing happens.

        Returns:
            the id of the turn the stop was sent to, or None when nothing ran.

        Raises:
            GatewayError: unknown session.
        """
        session = self._session(session_id)
        with session.lock:
            turn = session.running
        if turn is None or (turn_id is not None and turn.turn_id != turn_id):
            return None
        turn.agent.interrupt(stop)
        if stop.hard:
            state = TurnState(turn_id=turn.turn_id, state="stopping", detail=stop.reason)
            self._publish(session, state)
        return turn.turn_id

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
        self._session(session_id)
        try:
            return self.console.run(session_id, line).command_id
        except CommandError as exc:
            raise GatewayError(exc.message, code=-32602) from exc

    def console_cancel(self, command_id: str, stop: StopRequest) -> bool:
        """``console.cancel``: drop a queued command, or hard-stop a running one with ``stop``.

        Returns:
            False when the command had already finished.
        """
        return self.console.cancel(command_id, stop)

    def frontend_gone(self) -> int:
        """The frontend went away: cancel its console commands as a system stop.

        Returns:
            how many commands were cancelled.
        """
        stop = StopRequest.by_system(Surface.API_DISCONNECT, "the frontend went away")
        return self.console.cancel_all(stop)

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        """``gateway.shutdown``: a system stop of everything, then wait for every worker.

        Queued prompts are dropped; every running turn is hard-stopped as
        ``interrupted_by_system(gateway.shutdown)``; then the call waits (bounded) until every
        worker thread has exited, and closes the subscriptions after their last event.
        Calling it again returns the first report.

        Args:
            timeout_s: the bound in seconds (default ``config.shutdown_timeout_s``).

        Returns:
            what was stopped and whether any worker outlived the bound.
        """
        bound = self.config.shutdown_timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        with self._lock:
            if self._closing:
                report = self._shutdown_report
                if report is not None:
                    return report
            self._closing = True
            sessions = list(self._sessions.values())
        stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "the desk is quitting")
        running: list[tuple[Session, Turn]] = []
        dropped = 0
        for session in sessions:
            with session.lock:
                queued = list(session.queue)
                session.queue.clear()
                if session.running is not None:
                    running.append((session, session.running))
            for turn in queued:
                turn.state = "done"
                dropped += 1
                self._publish(
                    session,
                    PromptDropped(turn_id=turn.turn_id, text=turn.prompt, reason=stop.reason),
                )
        self._publish(None, GatewayStopping(turns=len(running), timeout_s=bound))
        for session, turn in running:
            self.session_interrupt(session.session_id, stop, turn_id=turn.turn_id)
        deadline = time.monotonic() + bound
        left = self.console.shutdown(stop, bound)
        left += self._workers.join_all(max(0.0, deadline - time.monotonic()))
        with self._lock:
            subs = list(self._subscriptions)
        for sub in subs:
            sub.close()
        report = ShutdownReport(
            turns_stopped=len(running),
            prompts_dropped=dropped,
            threads_left=left,
            elapsed_s=time.monotonic() - started,
        )
        with self._lock:
            self._shutdown_report = report
        return report


def _title_from(text: str, limit: int = 48) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
