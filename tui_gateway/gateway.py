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
from dataclasses import replace
from pathlib import Path

from agent.agent import Agent
from agent.compression.plan import is_summary
from agent.events import TurnResult
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage
from agent.stops import Issuer, StopRequest, Surface
from agent.store import SessionStore
from agent.tools.registry import ToolRegistry, default_tools
from agent.tools.workspace import Workspace
from tui_gateway.approvals import SessionApprovals
from tui_gateway.compression import SessionCompression
from tui_gateway.console import CommandError, Console
from tui_gateway.console.commands import COMMANDS
from tui_gateway.event_hub import EventHub
from tui_gateway.events import (
    GatewayStopping,
    MessageStart,
    Payload,
    PromptDropped,
    PromptQueued,
    SessionCreated,
    SessionEvicted,
    TurnState,
)
from tui_gateway.persistence import Persistence
from tui_gateway.receipts import complete_event
from tui_gateway.saved_sessions import SavedSessions
from tui_gateway.state import Session, Turn
from tui_gateway.subscription import EventCallback, Subscription
from tui_gateway.translate import turn_listener
from tui_gateway.types import (
    AgentFactory,
    AgentSetup,
    ConsoleCommandInfo,
    GatewayConfig,
    GatewayError,
    ShutdownReport,
    SubmitResult,
)
from tui_gateway.workers import TurnWorkers


class Gateway(SavedSessions):
    """Sessions, turns and stops behind the gateway contract. Thread-safe.

    Args:
        config: provider and limits.
        agent_factory: builds the agent of each turn from its :class:`AgentSetup`; the default
            builds an :class:`Agent` over ``config.provider``.
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
        self._tools = ToolRegistry(default_tools()) if config.tools else None
        self._cwd = config.cwd if config.cwd is not None else Path.cwd()
        self._workspace = Workspace.at(self._cwd, config.denied_paths)
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
                workspace=setup.workspace,
            )
        )
        self._lock = threading.Lock()
        self._events = EventHub(config.coalesce_s)
        self._sessions: dict[str, Session] = {}
        self._workers = TurnWorkers()
        self._closing = False
        self._shutdown_report: ShutdownReport | None = None
        self._shutdown_done = threading.Event()
        # Prompts a system stop dropped from a queue, saved as not sent once the turn that was
        # running ahead of them (the key) is saved: turn id -> (its session, dropped prompts).
        # Added under the session's lock while that turn is its running one, so before the
        # worker moves on and pops the entry (dict.pop is atomic: one caller gets it).
        self._unsent: dict[str, tuple[Session, list[tuple[Turn, StopRequest]]]] = {}
        self._persistence = Persistence(store, self._publish)
        self._compression = SessionCompression(
            config.provider,
            store,
            self._publish,
            window_tokens=config.context_window,
            threshold=config.compress_threshold,
        )
        self.console = Console(
            self,
            self._publish_to,
            max_workers=config.console_workers,
            timeout_s=config.console_timeout_s,
        )

    # -- subscribers ---------------------------------------------------------------------------

    def subscribe(self, callback: EventCallback) -> Subscription:
        """Deliver every event from now on to ``callback``, on a delivery thread of its own."""
        return self._events.subscribe(callback)

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering to ``sub`` and end its delivery thread."""
        self._events.unsubscribe(sub)

    def _publish(self, session: Session | None, payload: Payload) -> None:
        self._events.publish(session, payload)

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
            victim = self._eviction_victim(keep=session)
        self._persistence.session_created(session, str(self._cwd))
        self._publish(session, SessionCreated(title=title, model=session.model))
        if victim is not None:
            self._evict(victim)
        return session.session_id

    def _eviction_victim(self, keep: Session) -> Session | None:
        # Called with the gateway lock held: the least recently used session, idle ones first.
        if len(self._sessions) <= self.config.max_sessions:
            return None
        others = [s for s in self._sessions.values() if s is not keep]
        return min(others, key=lambda s: (s.running is not None, s.last_used))

    def _stop_session(self, session: Session, stop: StopRequest) -> tuple[Turn | None, int]:
        """Drop the session's queued prompts and hard-stop its running turn with ``stop``.

        Prompts dropped by a user stop (the person deleting the session) are forgotten; those
        dropped by a system stop are saved as turns that never ran, once the running turn is
        saved, so they follow its reply (:meth:`_save_unsent`).

        Returns:
            the turn that was running (or None) and how many queued prompts were dropped.
        """
        by_user = stop.issuer is Issuer.USER
        with session.lock:
            queued = list(session.queue)
            session.queue.clear()
            running = session.running
            for turn in queued:
                turn.state = "done"
            prompts = [t for t in queued if t.kind == "prompt"]
            if prompts and not by_user and running is not None:  # saved once it is saved
                _session, later = self._unsent.setdefault(running.turn_id, (session, []))
                later.extend((turn, stop) for turn in prompts)
        if prompts and by_user:
            self._persistence.prompts_removed(session, prompts)
        elif prompts and running is None:  # never the case: a queue waits for a running turn
            self._save_unsent(session, [(turn, stop) for turn in prompts])
        for turn in queued:
            dropped = PromptDropped(turn_id=turn.turn_id, text=turn.prompt, reason=stop.reason)
            self._publish(session, dropped)
        if running is not None:
            self.session_interrupt(session.session_id, stop, turn_id=running.turn_id)
        return running, len(queued)

    def _save_unsent(self, session: Session, dropped: list[tuple[Turn, StopRequest]]) -> None:
        """Keep prompts a system stop dropped in the transcript and the store, as not sent.

        They join the in-memory history as the store has them: user messages of turns that
        never ran, in queue order.
        """
        if not dropped:
            return
        with session.lock:
            session.history.extend(ChatMessage(role="user", content=t.prompt) for t, _ in dropped)
        self._persistence.prompts_unsent(session, dropped)

    def _save_unsent_after(self, turn_id: str) -> None:
        """Save the prompts dropped behind the turn ``turn_id``, once that turn is saved."""
        entry = self._unsent.pop(turn_id, None)
        if entry is not None:
            self._save_unsent(*entry)

    def _evict(self, session: Session) -> None:
        """Hard-stop the session's work as ``session.evicted``, wait for it, then drop it."""
        stop = StopRequest.by_system(Surface.SESSION_EVICTED, "too many live sessions")
        running, _dropped = self._stop_session(session, stop)
        if running is not None:
            running.done.wait(self.config.shutdown_timeout_s)
        self._publish(session, SessionEvicted(reason=stop.reason))
        with self._lock:
            self._sessions.pop(session.session_id, None)

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

    def live_sessions(self) -> list[str]:
        """Ids of the sessions the gateway holds now (evicted ones are gone)."""
        with self._lock:
            return list(self._sessions)

    def session_summaries(self) -> list[str]:
        """One line per live session: id, title, model, turns, and whether a turn runs.

        Turns are counted from the session's history (its prompts), so a resumed session counts
        the turns it had before this process too.
        """
        with self._lock:
            sessions = list(self._sessions.values())
        lines = []
        for s in sessions:
            with s.lock:
                state = "running" if s.running is not None else "idle"
                turns = sum(1 for m in s.history if m.role == "user" and not is_summary(m))
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
        return self._submit(session_id, text, kind="prompt")

    def _submit(
        self, session_id: str, text: str, *, kind: str, focus: str | None = None
    ) -> SubmitResult:
        session = self._session(session_id)
        turn_id = uuid.uuid4().hex[:12]
        listener = turn_listener(
            turn_id,
            lambda payload: self._publish(session, payload),
            on_text=lambda text: self._persistence.note_text(turn_id, text),
        )
        approve = None
        agents: list[Agent] = []  # filled below: the approver names who stopped the turn

        def who_stopped() -> str:
            stop = agents[0].stop_request if agents else None
            return stop.describe() if stop is not None else "stopped"

        if self.config.approvals and session.approvals is not None:
            approve = session.approvals.approver(turn_id, who_stopped)
        provider = replace(self.config.provider, model=session.model)
        setup = AgentSetup(listener, approve, self._tools, self._cwd, provider, self._workspace)
        agent = self._agent_factory(setup)
        agents.append(agent)
        turn = Turn(
            turn_id=turn_id, session_id=session_id, prompt=text, agent=agent, kind=kind, focus=focus
        )
        with self._persistence.queue_lock:  # the saved queue keeps the in-memory order
            queued, position = self._enqueue(session, turn)
            if kind == "prompt":  # waiting in the queue, or for its worker: saved, then shown
                self._persistence.prompt_submitted(session, turn)
        if queued:
            shown = text if kind == "prompt" else f"/compress {focus or ''}".strip()
            self._publish(session, PromptQueued(turn_id=turn_id, text=shown, position=position))
        return SubmitResult(turn_id=turn_id, queued=queued)

    def _enqueue(self, session: Session, turn: Turn) -> tuple[bool, int]:
        """Run ``turn`` now on a worker, or queue it behind the running one.

        Returns:
            whether it was queued, and its place in the queue (1 = next; 0 when it runs).

        Raises:
            GatewayError: when the gateway is shutting down.
        """
        turn_id, text, kind = turn.turn_id, turn.prompt, turn.kind
        position = 0
        with self._lock:
            if self._closing:
                raise GatewayError("the gateway is shutting down")
            with session.lock:
                session.turns[turn_id] = turn
                if not session.title and kind == "prompt":
                    session.title = _title_from(text)
                    session.title_unsaved = True  # the worker saves it with the turn
                queued = session.running is not None
                if queued:
                    session.queue.append(turn)
                    position = len(session.queue)
                else:
                    session.running = turn
                    turn.state = "running"
                session.last_used = time.monotonic()
            if not queued:
                self._workers.start(turn_id, lambda: self._run_turn(session, turn))
        return queued, position

    def session_compress(self, session_id: str, focus: str | None = None) -> SubmitResult:
        """``session.compress``: compress the transcript now (``/compress [focus]``).

        It runs on the session's worker like a turn (queued behind a running one), ignores
        the cooldown, and reports ``compression.progress`` and one ``compression.complete``.

        Raises:
            GatewayError: unknown session, or shutting down.
        """
        return self._submit(session_id, "", kind="compress", focus=focus)

    def compression_cancel(self, session_id: str, stop: StopRequest) -> bool:
        """``compression.cancel``: hard-stop the session's running compression with ``stop``.

        Before commit admission everything is rolled back; after it, the commit completes
        and the stop ends the rest of the turn.

        Returns:
            False when no compression runs in the session.
        """
        session = self._session(session_id)
        with session.lock:
            turn = session.running
        if turn is None or turn.compressor is None or turn.compressor.fence.state != "open":
            return False
        return self.session_interrupt(session_id, stop, turn_id=turn.turn_id) is not None

    def prompt_remove(self, session_id: str, turn_id: str) -> bool:
        """Remove a queued prompt before it runs; returns False if it is not queued any more."""
        session = self._session(session_id)
        with session.lock:
            turn = next((t for t in session.queue if t.turn_id == turn_id), None)
            if turn is None:
                return False
            session.queue.remove(turn)
            turn.state = "done"
        if turn.kind == "prompt":
            self._persistence.prompts_removed(session, [turn])  # forgotten, not saved
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
            if turn.kind == "compress":
                self._compress_turn(session, turn)
            else:
                self._prompt_turn(session, turn)
            with session.lock:
                turn.state = "done"
                following = session.queue.popleft() if session.queue else None
                session.running = following
                if following is not None:
                    following.state = "running"
            if turn.kind != "compress":
                assert turn.result is not None
                self._persistence.turn_ended(session, turn, turn.result)  # saved, then shown
                self._publish(session, complete_event(turn))
            self._save_unsent_after(turn.turn_id)  # prompts a system stop dropped behind it
            turn.done.set()
            if following is None:
                return
            turn = following  # the next queued prompt runs on this same worker

    def _start_compression(self, session: Session, turn: Turn, *, manual: bool) -> bool:
        """Prepare the turn's compression, if one is due; True when it should run."""
        provider = replace(self.config.provider, model=session.model)
        try:
            compressor = self._compression.prepare(
                session, turn, provider, manual=manual, focus=turn.focus
            )
        except Exception as exc:  # never let a compression bug take the turn down
            detail = f"compression skipped: {type(exc).__name__}: {exc}"
            self._publish(session, TurnState(turn_id=turn.turn_id, state="waiting", detail=detail))
            return False
        if compressor is None:
            return False
        turn.compressor = compressor
        pending = turn.agent.stop_request  # a stop that came before the compressor existed
        if pending is not None:
            compressor.interrupt(pending)
        return True

    def _compress_turn(self, session: Session, turn: Turn) -> None:
        if self._start_compression(session, turn, manual=True):
            assert turn.compressor is not None
            self._compression.run(session, turn, turn.compressor)
        turn.worker_exited_at = time.monotonic()

    def _prompt_turn(self, session: Session, turn: Turn) -> None:
        self._publish(session, MessageStart(turn_id=turn.turn_id, prompt=turn.prompt))
        if self._start_compression(session, turn, manual=False):
            assert turn.compressor is not None
            self._publish(session, TurnState(turn_id=turn.turn_id, state="compressing"))
            self._compression.run(session, turn, turn.compressor)
        with session.lock:
            history = list(session.history)
        self._persistence.turn_started(session, turn)
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
            usage = turn.result.usage
            if usage is not None:
                session.last_request_tokens = usage.prompt_tokens + usage.completion_tokens

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
        if turn.compressor is not None:
            turn.compressor.interrupt(stop)  # before commit admission this rolls it back
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

    def console_commands(self) -> list[ConsoleCommandInfo]:
        """``console.commands``: the commands :meth:`console_run` takes, by name."""
        return [
            ConsoleCommandInfo(name=name, usage=usage, summary=what)
            for name, (_fn, usage, what) in sorted(COMMANDS.items())
        ]

    def console_cancel(self, command_id: str, stop: StopRequest) -> bool:
        """``console.cancel``: drop a queued command, or hard-stop a running one with ``stop``.

        Returns:
            False when the command had already finished.
        """
        return self.console.cancel(command_id, stop)

    def frontend_gone(self) -> int:
        """The frontend went away: stop its running turns and console commands (system stop).

        Nobody is left to watch them, so nothing goes on running for nobody. Queued prompts
        stay queued only until the turn ahead of them ends; they are dropped too.

        Returns:
            how many turns and commands were stopped.
        """
        stop = StopRequest.by_system(Surface.API_DISCONNECT, "the frontend went away")
        with self._lock:
            sessions = list(self._sessions.values())
        stopped = sum(self._stop_session(s, stop)[0] is not None for s in sessions)
        return stopped + self.console.cancel_all(stop)

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        """``gateway.shutdown``: a system stop of everything, then wait for every worker.

        Queued prompts are dropped (and saved as not sent); every running turn is hard-stopped as
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
            first = not self._closing
            self._closing = True
            sessions = list(self._sessions.values())
        if not first:  # another thread shuts down: wait for its report
            self._shutdown_done.wait(bound + 1.0)
            return self._shutdown_report or ShutdownReport(0, 0, ["shutdown still running"])
        stop = StopRequest.by_system(Surface.GATEWAY_SHUTDOWN, "the desk is quitting")
        self._publish(None, GatewayStopping(turns=self.running_turns, timeout_s=bound))
        stopped, dropped = 0, 0
        for session in sessions:
            running, count = self._stop_session(session, stop)
            stopped += running is not None
            dropped += count
        deadline = time.monotonic() + bound
        left = self.console.shutdown(stop, bound)
        left += self._workers.join_all(max(0.0, deadline - time.monotonic()))
        for session in sessions:  # a worker that outlived the bound: its turn is closed anyway
            with session.lock:
                stuck = session.running
            if stuck is not None and not stuck.done.is_set():
                self._persistence.turn_abandoned(session, stuck, stop)
        for turn_id in list(self._unsent):  # behind a stuck worker: saved after its close
            self._save_unsent_after(turn_id)
        self._persistence.close()
        self._events.close()
        report = ShutdownReport(
            turns_stopped=stopped,
            prompts_dropped=dropped,
            threads_left=left,
            elapsed_s=time.monotonic() - started,
        )
        with self._lock:
            self._shutdown_report = report
        self._shutdown_done.set()
        return report


def _title_from(text: str, limit: int = 48) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


__all__ = [
    "AgentSetup",
    "Gateway",
    "GatewayConfig",
    "GatewayError",
    "ShutdownReport",
    "SubmitResult",
]
