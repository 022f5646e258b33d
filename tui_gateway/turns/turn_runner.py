"""The turn runner: makes turns, queues them, and runs prompt and compress turns on workers.

One worker thread per running turn (:class:`~tui_gateway.turns.workers.TurnWorkers`); when a turn
ends, the next queued one of its session runs on the same worker. The outcome a turn's agent
returns is handed to the booking office (:meth:`~tui_gateway.stops.booking.BookingOffice.settle`),
which books it unless a stop booked one first; the runner then saves it and only then
publishes ``message.complete``. Agents are built by
:class:`~tui_gateway.turns.delegation.Delegation` (which also runs the child agents their
``delegate`` calls start, on the same workers); a turn ended by a hard stop waits (bounded) for its
children before its outcome is published.

Steers the turn took but never delivered (it was stopped or failed first) are the person's
text all the same: they run next as prompts (their steer id becomes the turn id), unless the
stop dropped the session's queue (then they are dropped with it, saved as not sent) or forgot
it (a deletion). A background child's answer that never reached its parent stays a note.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from agent.agent import Agent
from agent.context.shape import withdrawn
from agent.events import TurnResult
from agent.provider.client import ChatClient, ProviderConfig
from agent.provider.types import ChatMessage
from agent.stamps import stamp
from agent.stops import Issuer, StopRequest
from agent.tools.base import Tool
from agent.tools.registry import ToolRegistry
from agent.tools.workspace import Workspace
from agent.usage import TokenUsage
from contract.events import MessageComplete, MessageStart, PromptQueued
from contract.results import QueuedPromptInfo, SubmitResult
from tui_gateway.engine_setup import AgentFactory, AgentSetup, GatewayConfig
from tui_gateway.servers.model_server import CHECK_TIMEOUT_S, ModelServer
from tui_gateway.sessions.checkpoints import Checkpointing
from tui_gateway.sessions.persistence import Persistence
from tui_gateway.sessions.session_table import SessionTable
from tui_gateway.sessions.state import Session, Turn, session_provider
from tui_gateway.stops.booking import BookingOffice, Publish, QueuePolicy, receipt
from tui_gateway.stops.key_stops import take_armed, take_overtaken
from tui_gateway.turns.delegation import Delegation
from tui_gateway.turns.fitted_turns import FittedTurns
from tui_gateway.turns.kinds import TurnKind, TurnStage
from tui_gateway.turns.tool_offer import check_text
from tui_gateway.turns.translate import turn_listener
from tui_gateway.turns.workers import TurnWorkers


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
            changes=setup.changes,
        )

    return build


class TurnRunner:
    """Runs the gateway's turns.

    Args:
        config: the gateway's configuration.
        table: the live sessions.
        persistence: the store's writes.
        fitted: keeps prompt and compress turns inside their session's window.
        booking: books each turn's outcome and the stops that reach it.
        publish: sends a payload for a session.
        agent_factory: builds each turn's agent.
        tools: the tools offered to the model, or None.
        cwd: the directory tool calls run in.
        workspace: where file tools read without asking, and what they never touch.
        extra_tools: more tools to offer with ``tools``, asked for each turn when it is
            submitted (the MCP servers' tools that are ready then).
        server: the model server: where each turn goes (``/server`` moves it), and whether it
            takes a prompt now; None sends to ``config.provider`` whatever it does.
    """

    def __init__(
        self,
        config: GatewayConfig,
        table: SessionTable,
        persistence: Persistence,
        fitted: FittedTurns,
        booking: BookingOffice,
        publish: Publish,
        *,
        agent_factory: AgentFactory,
        tools: ToolRegistry | None,
        cwd: Path,
        workspace: Workspace | None = None,
        extra_tools: Callable[[], Sequence[Tool]] | None = None,
        server: ModelServer | None = None,
    ) -> None:
        self._config = config
        self._server = server
        self._provider: Callable[[], ProviderConfig] = (
            (lambda: server.provider) if server else (lambda: config.provider)
        )
        self._table = table
        self._persistence = persistence
        self._fitted = fitted
        self._booking = booking
        self._publish = publish
        self._workers = TurnWorkers()
        self.checkpoints = Checkpointing(table, persistence, cwd)
        """Each turn's checkpoint, and ``session.undo`` / ``session.diff``."""
        self.delegation = Delegation(
            config,
            persistence,
            booking,
            publish,
            self._workers,
            agent_factory=agent_factory,
            tools=tools,
            cwd=cwd,
            workspace=workspace,
            extra_tools=extra_tools,
            provider=self._provider,
            recorder=self.checkpoints.recorder,
        )
        """Builds every turn's agent and runs the child agents they delegate to."""

    def alive(self) -> list[threading.Thread]:
        """The worker threads that are alive now."""
        return self._workers.alive()

    def join(self, timeout_s: float) -> list[str]:
        """Wait (bounded, seconds) for every worker to exit; names of those still alive."""
        return self._workers.join_all(timeout_s)

    def submit(
        self,
        session_id: str,
        text: str,
        *,
        kind: TurnKind,
        focus: str | None = None,
        turn_id: str | None = None,
        stop: StopRequest | None = None,
        entered_at: float | None = None,
        typed: str = "",
    ) -> SubmitResult:
        """A new turn of ``kind`` in the session: run now, or queued behind the running one.

        Args:
            session_id: the session.
            text: the prompt ("" for a compress turn).
            kind: what it runs.
            focus: a compress turn's focus.
            turn_id: its id (a steer's id when the steer became a prompt); None for a new one.
            stop: "stop and send": hard-stop the turn running now with this stop and run
                this one next, ahead of every queued prompt.
            entered_at: ``time.monotonic()`` when the key that sent it was made, or None: a
                stop key made after it and armed before it arrived stops it at once
                (:mod:`tui_gateway.stops.key_stops`).
            typed: what the person typed (``text`` may be more: the ``@file`` mentions'
                text attached); a new session's title is made from it ("": from ``text``).

        Raises:
            GatewayError: unknown session, shutting down, or the model server cannot take a
                prompt now (``ModelServer.refuse``: unreachable, a refused key, an unlisted model).
        """
        session = self._table.get(session_id)
        if self._server is not None:
            self._server.refuse(self._server.for_session(session).model)
        turn = self._new_turn(session, text, kind, focus, turn_id)
        turn.urgent = stop is not None
        turn.entered_at = entered_at
        turn.typed = typed
        with self._persistence.queue_lock:  # the saved queue keeps the in-memory order
            queued, position, ahead = self._enqueue(session, turn)
            if kind == TurnKind.PROMPT:  # waiting in the queue, or for its worker: saved, shown
                self._persistence.prompt_submitted(session, turn)
        if queued:
            shown = text if kind == TurnKind.PROMPT else _compress_text(turn)
            queued_event = PromptQueued(turn_id=turn.turn_id, text=shown, position=position)
            self._publish(session, queued_event)
        if stop is not None and ahead is not None:
            self._booking.interrupt(session_id, stop, turn_id=ahead.turn_id)
        return SubmitResult(turn_id=turn.turn_id, queued=queued)

    def queued(self, session_id: str) -> list[QueuedPromptInfo]:
        """The prompts waiting in the session's queue, in order.

        Raises:
            GatewayError: unknown session.
        """
        session = self._table.get(session_id)
        with session.lock:
            queue = list(session.queue)
        return [
            QueuedPromptInfo(
                turn_id=turn.turn_id,
                text=turn.prompt if turn.kind == TurnKind.PROMPT else _compress_text(turn),
                position=position,
                editable=turn.kind == TurnKind.PROMPT,
            )
            for position, turn in enumerate(queue, start=1)
        ]

    def edit(self, session_id: str, turn_id: str, text: str) -> bool:
        """Replace the text of a queued prompt, keeping its turn id and its place; a
        ``prompt.queued`` with the new text and its place follows.

        Returns:
            False when it is not a queued prompt any more (it runs, it ended, or it is a
            ``/compress``).

        Raises:
            GatewayError: unknown session, or an empty or oversized text.
        """
        check_text(text, "prompt", self._config.max_prompt_chars)
        session = self._table.get(session_id)
        with self._persistence.queue_lock:  # the saved text follows the order of the edits
            with session.lock:
                queue = list(session.queue)
                turn = next((t for t in queue if t.turn_id == turn_id), None)
                if turn is None or turn.kind != TurnKind.PROMPT:
                    return False
                turn.prompt = text
                position = queue.index(turn) + 1
            self._persistence.prompt_edited(session, turn)
        self._publish(session, PromptQueued(turn_id=turn_id, text=text, position=position))
        return True

    def _new_turn(
        self,
        session: Session,
        text: str,
        kind: TurnKind,
        focus: str | None,
        turn_id: str | None = None,
    ) -> Turn:
        turn_id = turn_id or uuid.uuid4().hex[:12]
        listener = turn_listener(
            turn_id,
            lambda payload: self._publish(session, payload),
            on_text=lambda text: self._persistence.note_text(session, turn_id, text),
            on_tool=lambda event: self._persistence.tool_event(session, turn_id, event),
        )
        agent = self.delegation.build(session, turn_id, listener, depth=0)
        return Turn(
            turn_id=turn_id,
            session_id=session.session_id,
            prompt=text,
            agent=agent,
            kind=kind,
            focus=focus,
        )

    def _enqueue(self, session: Session, turn: Turn) -> tuple[bool, int, Turn | None]:
        """Run ``turn`` now on a worker, or queue it behind the running one (an urgent one
        ahead of every other queued turn but earlier urgent ones). An armed stop key it must
        obey (:func:`tui_gateway.stops.key_stops.take_armed`) is kept on it (``pending_stop``):
        its worker obeys it as it starts, before anything is sent.

        Returns:
            whether it was queued, its place in the queue (1 = next; 0 when it runs), and the
            turn running ahead of it (None when it runs now).

        Raises:
            GatewayError: when the gateway is shutting down.
        """
        position = 0
        with self._table.open_for_work():
            with session.lock:
                session.turns[turn.turn_id] = turn
                if not session.title and turn.kind == TurnKind.PROMPT:
                    session.title = _title_from(turn.typed or turn.prompt)
                    session.title_unsaved = True  # the worker saves it with the turn
                ahead = session.running
                queued = ahead is not None
                if queued and turn.urgent:
                    position = _urgent_place(session) + 1
                    session.queue.insert(position - 1, turn)
                elif queued:
                    session.queue.append(turn)
                    position = len(session.queue)
                else:
                    session.running = turn
                    turn.state = TurnStage.RUNNING
                # A stop key made after its Enter that reached the gateway first: kept on the
                # turn, which obeys it as its worker starts, before it sends anything.
                take_armed(session, turn)
                if turn.urgent:  # a key that overtook it stopped the turn it stops anyway
                    take_overtaken(session, turn)
                session.last_used = time.monotonic()
            if not queued:
                self._workers.start(turn.turn_id, lambda: self._run(session, turn))
        return queued, position, ahead

    def _run(self, session: Session, turn: Turn) -> None:
        with session.lock:  # kept on the turn: a key meanwhile sees it stopping already
            pending = turn.pending_stop
        if pending is not None:  # a stop key made after its Enter: stopped before it sends
            self._booking.interrupt(session.session_id, pending, turn_id=turn.turn_id)
        while True:
            turn.started_at = time.monotonic()
            if turn.kind == TurnKind.COMPRESS:
                self._compress_turn(session, turn)
            else:
                self._prompt_turn(session, turn)
            with session.lock:
                turn.state = TurnStage.DONE
                session.forget_ended_turns()
                following = session.queue.popleft() if session.queue else None
                session.running = following
                pending = None
                if following is not None:
                    following.state = TurnStage.RUNNING
                    pending = following.pending_stop
            if following is not None and pending is not None:  # a stop key made after its Enter
                self._booking.interrupt(session.session_id, pending, turn_id=following.turn_id)
            if turn.kind != TurnKind.COMPRESS:
                assert turn.result is not None
                stamp("turn.agent_returned")
                self._persistence.turn_ended(session, turn, turn.result)  # saved, then shown
                stamp("turn.saved", turn.turn_id)
                with session.lock:
                    total = session.usage
                self._publish(session, complete_event(turn, total))
                stamp("turn.published", turn.turn_id)
            self._booking.turn_saved(turn.turn_id)  # prompts a system stop dropped behind it
            turn.done.set()
            if following is None:
                return
            turn = following  # the next queued prompt runs on this same worker

    def _session_provider(self, session: Session) -> ProviderConfig:
        """The server and the session's model; a turn that starts while the server is still
        asked which model it runs (a prompt typed as desk started) waits for that answer
        first (bounded), so that it runs, and is saved, with the model the server names."""
        provider = session_provider(self._provider(), session)
        if provider.model or self._server is None:
            return provider
        self._server.wait_answer(CHECK_TIMEOUT_S)  # a quit ends the wait at once
        return self._server.for_session(session)

    def _compress_turn(self, session: Session, turn: Turn) -> None:
        provider = self._session_provider(session)
        self._fitted.compress(session, turn, provider, manual=True, force=False)
        turn.worker_exited_at = time.monotonic()

    def _prompt_turn(self, session: Session, turn: Turn) -> None:
        self._publish(session, MessageStart(turn_id=turn.turn_id, prompt=turn.prompt))
        provider = self._session_provider(session)
        if provider.model and not turn.agent.client.config.model:  # built before it was named
            turn.agent.client = ChatClient(provider)
        result = self._fitted.run_prompt(
            session,
            turn,
            provider,
            lambda: self._persistence.turn_started(session, turn, provider.model),
        )
        stamp("turn.returned", turn.turn_id)
        if result.stop is not None:  # the whole tree ends before the outcome is shown
            self.delegation.wait_children(session, turn.turn_id)
        turn.worker_exited_at = time.monotonic()
        if self._server is not None and result.failure is not None:
            # The server went away? Known before the turn is shown as ended: the next prompt
            # is refused and kept in the box, as at start, until the server answers again.
            self._server.turn_failed(result.failure)
        booked = self._booking.settle(session, turn, result)
        stamp("turn.settled", turn.turn_id)
        # A prompt that got no reply (stopped, failed or refused before the model said
        # anything) stays in the transcript and out of the model's history.
        unsent = withdrawn(booked.status, replied=bool(booked.messages))
        with session.lock:
            session.history.append(ChatMessage(role="user", content=turn.prompt, unsent=unsent))
            session.history.extend(booked.messages)
        # What the next request carries now (before message.complete, the turn's last event).
        windows = self._fitted.compression.windows
        windows.publish(session, provider, self._fitted.tools, after_turn=turn.turn_id)
        stamp("turn.window", turn.turn_id)
        self._undelivered(session, turn, result)

    def _undelivered(self, session: Session, turn: Turn, result: TurnResult) -> None:
        """The person's steers the turn never delivered: next as prompts, ahead of the queue
        (behind any "stop and send" prompt), or dropped with the queue (see the module
        docstring)."""
        fate = self._booking.queue_fate(turn.turn_id)
        steers = [s for s in result.undelivered if s.stop.issuer is Issuer.USER]
        if not steers:
            return
        turns = [self._new_turn(session, s.text, TurnKind.PROMPT, None, s.steer_id) for s in steers]
        if fate is not None:
            policy, stop = fate
            self._booking.drop_unsent(
                session, turn, turns, stop, forget=policy is QueuePolicy.FORGET
            )
            return
        with self._persistence.queue_lock:
            with session.lock:
                at = _urgent_place(session)
                for offset, queued in enumerate(turns):
                    session.turns[queued.turn_id] = queued
                    session.queue.insert(at + offset, queued)
            for queued in turns:
                self._persistence.prompt_submitted(session, queued)
        for offset, queued in enumerate(turns):
            event = PromptQueued(
                turn_id=queued.turn_id, text=queued.prompt, position=at + offset + 1
            )
            self._publish(session, event)


def complete_event(turn: Turn, session_usage: TokenUsage | None = None) -> MessageComplete:
    """The ``message.complete`` payload of a finished turn, with its stop receipt, its usage
    and the session's (``session_usage``) as it stands now.

    Raises:
        ValueError: when the turn has no booked outcome yet.
    """
    result = turn.result
    if result is None:
        raise ValueError(f"turn {turn.turn_id} has no outcome yet")
    usage = result.usage
    return MessageComplete(
        turn_id=turn.turn_id,
        status=result.status,
        exit_reason=result.exit_reason,
        text=result.text,
        stop=receipt(turn),
        error=result.error,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        elapsed_s=turn.worker_s,
        undelivered=tuple(s.steer_id for s in result.undelivered),
        usage=result.usage_total,
        session_usage=session_usage,
        cut_at_length=result.finish_reason == "length",
    )


def _urgent_place(session: Session) -> int:
    """How many "stop and send" prompts lead the queue (call with the session's lock)."""
    count = 0
    for queued in session.queue:
        if not queued.urgent:
            break
        count += 1
    return count


def _title_from(text: str, limit: int = 48) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _compress_text(turn: Turn) -> str:
    """How a queued compression reads in the queue: ``/compress [focus]``."""
    return f"/compress {turn.focus or ''}".strip()
