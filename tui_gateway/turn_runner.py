"""The turn runner: makes turns, queues them, and runs prompt and compress turns on workers.

One worker thread per running turn (:class:`~tui_gateway.workers.TurnWorkers`); when a turn
ends, the next queued one of its session runs on the same worker. The outcome a turn's agent
returns is handed to the booking office (:meth:`~tui_gateway.booking.BookingOffice.settle`),
which books it unless a stop booked one first; the runner then saves it and only then
publishes ``message.complete``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from agent.agent import Agent
from agent.events import TurnResult
from agent.outcome import ExitReason, TurnStatus
from agent.provider.client import ChatClient
from agent.provider.types import ChatMessage
from agent.tools.base import Tool
from agent.tools.registry import ToolRegistry
from agent.tools.workspace import Workspace
from tui_gateway.booking import BookingOffice, Publish, receipt
from tui_gateway.compression import SessionCompression
from tui_gateway.events import MessageComplete, MessageStart, PromptQueued, TurnState
from tui_gateway.kinds import TurnActivity, TurnKind, TurnStage
from tui_gateway.persistence import Persistence
from tui_gateway.session_table import SessionTable
from tui_gateway.state import Session, Turn
from tui_gateway.translate import turn_listener
from tui_gateway.types import AgentFactory, AgentSetup, GatewayConfig, SubmitResult
from tui_gateway.workers import TurnWorkers


def default_agent_factory(config: GatewayConfig) -> AgentFactory:
    """The factory that builds an :class:`Agent` over the session's provider, as configured."""

    def build(setup: AgentSetup) -> Agent:
        return Agent(
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

    return build


class TurnRunner:
    """Runs the gateway's turns.

    Args:
        config: the gateway's configuration.
        table: the live sessions.
        persistence: the store's writes.
        compression: runs compressions inside turns.
        booking: books each turn's outcome and the stops that reach it.
        publish: sends a payload for a session.
        agent_factory: builds each turn's agent.
        tools: the tools offered to the model, or None.
        cwd: the directory tool calls run in.
        workspace: where file tools read without asking, and what they never touch.
        extra_tools: more tools to offer with ``tools``, asked for each turn when it is
            submitted (the MCP servers' tools that are ready then).
    """

    def __init__(
        self,
        config: GatewayConfig,
        table: SessionTable,
        persistence: Persistence,
        compression: SessionCompression,
        booking: BookingOffice,
        publish: Publish,
        *,
        agent_factory: AgentFactory,
        tools: ToolRegistry | None,
        cwd: Path,
        workspace: Workspace | None = None,
        extra_tools: Callable[[], Sequence[Tool]] | None = None,
    ) -> None:
        self._config = config
        self._table = table
        self._persistence = persistence
        self._compression = compression
        self._booking = booking
        self._publish = publish
        self._agent_factory = agent_factory
        self._tools = tools
        self._cwd = cwd
        self._workspace = workspace
        self._extra_tools = extra_tools
        self._workers = TurnWorkers()

    def alive(self) -> list[threading.Thread]:
        """The worker threads that are alive now."""
        return self._workers.alive()

    def join(self, timeout_s: float) -> list[str]:
        """Wait (bounded, seconds) for every worker to exit; names of those still alive."""
        return self._workers.join_all(timeout_s)

    def submit(
        self, session_id: str, text: str, *, kind: TurnKind, focus: str | None = None
    ) -> SubmitResult:
        """A new turn of ``kind`` in the session: run now, or queued behind the running one.

        Raises:
            GatewayError: unknown session, or shutting down.
        """
        session = self._table.get(session_id)
        turn = self._new_turn(session, text, kind, focus)
        with self._persistence.queue_lock:  # the saved queue keeps the in-memory order
            queued, position = self._enqueue(session, turn)
            if kind == TurnKind.PROMPT:  # waiting in the queue, or for its worker: saved, shown
                self._persistence.prompt_submitted(session, turn)
        if queued:
            shown = text if kind == TurnKind.PROMPT else f"/compress {focus or ''}".strip()
            queued_event = PromptQueued(turn_id=turn.turn_id, text=shown, position=position)
            self._publish(session, queued_event)
        return SubmitResult(turn_id=turn.turn_id, queued=queued)

    def _new_turn(self, session: Session, text: str, kind: TurnKind, focus: str | None) -> Turn:
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

        if self._config.approvals and session.approvals is not None:
            approve = session.approvals.approver(turn_id, who_stopped)
        provider = replace(self._config.provider, model=session.model)
        setup = AgentSetup(
            listener, approve, self._turn_tools(), self._cwd, provider, self._workspace
        )
        agent = self._agent_factory(setup)
        agents.append(agent)
        return Turn(
            turn_id=turn_id,
            session_id=session.session_id,
            prompt=text,
            agent=agent,
            kind=kind,
            focus=focus,
        )

    def _turn_tools(self) -> ToolRegistry | None:
        extra = self._extra_tools() if self._extra_tools is not None else ()
        if self._tools is None or not extra:
            return self._tools
        return ToolRegistry([*self._tools, *extra])

    def _enqueue(self, session: Session, turn: Turn) -> tuple[bool, int]:
        """Run ``turn`` now on a worker, or queue it behind the running one.

        Returns:
            whether it was queued, and its place in the queue (1 = next; 0 when it runs).

        Raises:
            GatewayError: when the gateway is shutting down.
        """
        position = 0
        with self._table.open_for_work():
            with session.lock:
                session.turns[turn.turn_id] = turn
                if not session.title and turn.kind == TurnKind.PROMPT:
                    session.title = _title_from(turn.prompt)
                    session.title_unsaved = True  # the worker saves it with the turn
                queued = session.running is not None
                if queued:
                    session.queue.append(turn)
                    position = len(session.queue)
                else:
                    session.running = turn
                    turn.state = TurnStage.RUNNING
                session.last_used = time.monotonic()
            if not queued:
                self._workers.start(turn.turn_id, lambda: self._run(session, turn))
        return queued, position

    def _run(self, session: Session, turn: Turn) -> None:
        while True:
            turn.started_at = time.monotonic()
            if turn.kind == TurnKind.COMPRESS:
                self._compress_turn(session, turn)
            else:
                self._prompt_turn(session, turn)
            with session.lock:
                turn.state = TurnStage.DONE
                following = session.queue.popleft() if session.queue else None
                session.running = following
                if following is not None:
                    following.state = TurnStage.RUNNING
            if turn.kind != TurnKind.COMPRESS:
                assert turn.result is not None
                self._persistence.turn_ended(session, turn, turn.result)  # saved, then shown
                self._publish(session, complete_event(turn))
            self._booking.turn_saved(turn.turn_id)  # prompts a system stop dropped behind it
            turn.done.set()
            if following is None:
                return
            turn = following  # the next queued prompt runs on this same worker

    def _start_compression(self, session: Session, turn: Turn, *, manual: bool) -> bool:
        """Prepare the turn's compression, if one is due; True when it should run."""
        provider = replace(self._config.provider, model=session.model)
        try:
            compressor = self._compression.prepare(
                session, turn, provider, manual=manual, focus=turn.focus
            )
        except Exception as exc:  # never let a compression bug take the turn down
            detail = f"compression skipped: {type(exc).__name__}: {exc}"
            self._publish(session, TurnState(turn.turn_id, TurnActivity.WAITING, detail))
            return False
        if compressor is None:
            return False
        self._booking.compression_started(turn, compressor)
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
            self._publish(session, TurnState(turn.turn_id, TurnActivity.COMPRESSING))
            self._compression.run(session, turn, turn.compressor)
        with session.lock:
            history = list(session.history)
        self._persistence.turn_started(session, turn)
        try:
            result = turn.agent.run_conversation(history, turn.prompt)
        except Exception as exc:  # a bug below must still end the turn with one outcome
            result = TurnResult(
                status=TurnStatus.FAILED,
                exit_reason=ExitReason.failed(type(exc).__name__),
                text="",
                partial=True,
                error=f"internal error: {exc}",
            )
        turn.worker_exited_at = time.monotonic()
        booked = self._booking.settle(session, turn, result)
        with session.lock:
            session.history.append(ChatMessage(role="user", content=turn.prompt))
            session.history.extend(booked.messages)
            usage = booked.usage
            if usage is not None:
                session.last_request_tokens = usage.prompt_tokens + usage.completion_tokens


def complete_event(turn: Turn) -> MessageComplete:
    """The ``message.complete`` payload of a finished turn, with its stop receipt.

    Raises:
        ValueError: when the turn has no booked outcome yet.
    """
    result = turn.result
    if result is None:
        raise ValueError(f"turn {turn.turn_id} has no outcome yet")
    usage = result.usage
    elapsed = 0.0
    if turn.started_at is not None and turn.worker_exited_at is not None:
        elapsed = turn.worker_exited_at - turn.started_at
    return MessageComplete(
        turn_id=turn.turn_id,
        status=result.status,
        exit_reason=result.exit_reason,
        text=result.text,
        stop=receipt(turn),
        error=result.error,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        elapsed_s=elapsed,
    )


def _title_from(text: str, limit: int = 48) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
