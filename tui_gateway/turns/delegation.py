"""Child agents: the host of the ``delegate`` tool, one worker per child, and every stop reaches.

Each agent the gateway builds (a session's turn, or a child) is offered the ``delegate`` tool
(:class:`~agent.tools.delegate.DelegateTool`) bound to a :class:`ChildLauncher` of its own. A
call starts a child agent on a worker thread of the gateway's (:class:`Delegation.start`):

- with its own tools (the same ones, ``delegate`` included, one level deeper) and its own
  transcript (a system line and the task), in the same session; its turn is saved under its
  parent's (``parent_turn_id``) with its own exit reason, usage and final reply;
- under a child :class:`~agent.scope.InterruptScope` registered in the parent agent's scope
  (:attr:`agent.agent.Agent.scope`), so a hard stop of the parent reaches it, and its children,
  with the same stop; one that starts after that stop is stopped on entry. Stopping it alone
  (``session.interrupt`` with its id, through the booking office) cancels only its scope: the
  parent gets "the person stopped the child agent" and goes on;
- foreground: the parent waits and the child's answer is the tool result; a stopped parent
  waits (bounded) for the child's worker before the stop goes on, so nothing of the child
  outlives it. Background: the call returns at once; the answer steers the parent when it
  finishes (:mod:`agent.steering`), or stays a note when the parent has ended.

A turn (or child) ended by a hard stop waits, bounded, for every child it started before its
outcome is published: when ``message.complete`` says stopped, the whole tree has stopped.
Depth and width are bounded (``delegate_depth``, ``delegate_width``): a call beyond them gets
a tool error that says which limit and its setting.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.agent import Agent
from agent.events import AgentListener, TurnResult
from agent.outcome import ExitReason, TurnStatus
from agent.provider.client import ProviderConfig
from agent.provider.types import ChatMessage, ToolCall
from agent.scope import InterruptScope
from agent.steering import Steer
from agent.stops import StopRequest, Surface
from agent.tools.base import Tool, ToolResult
from agent.tools.changes import ChangeRecorder
from agent.tools.delegate import DelegateRequest, DelegateTool
from agent.tools.registry import ToolRegistry
from agent.tools.workspace import Workspace
from contract.kinds import ChildDelivery
from contract.results import ChildInfo
from contract.steer_events import ChildStarted
from tui_gateway.engine_setup import AgentFactory, AgentSetup, GatewayConfig
from tui_gateway.sessions.persistence import Persistence
from tui_gateway.sessions.state import ChildOf, Session, Turn, session_provider
from tui_gateway.stops.booking import BookingOffice, Publish
from tui_gateway.turns.child_outcome import completed_event, outcome_text, tool_result_of
from tui_gateway.turns.kinds import TurnKind, TurnStage
from tui_gateway.turns.translate import turn_listener
from tui_gateway.turns.workers import TurnWorkers

CHILD_SYSTEM_PROMPT = (
    "You are a child agent: another agent handed you one task. Work on it with your tools, "
    "then end with a complete answer in your last message; that answer is all the other "
    "agent will see."
)
"""The first message of every child agent's own transcript."""


class DelegateRefused(Exception):
    """A ``delegate`` call beyond a limit; ``message`` (one line) is the tool error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(slots=True)
class ChildLauncher:
    """The :class:`~agent.tools.delegate.Delegator` of one agent (a turn's, or a child's).

    Attributes:
        delegation: runs the children.
        session: the session they run in.
        turn_id: the turn (or child) of the agent whose calls start children.
        depth: that agent's depth (0 for a session's turn).
        agent: that agent, once built.
    """

    delegation: Delegation
    session: Session
    turn_id: str
    depth: int
    agent: Agent | None = None

    async def delegate(self, request: DelegateRequest) -> ToolResult:
        """Start a child for ``request``; see the module docstring.

        Raises:
            asyncio.CancelledError: the parent was hard-stopped (after the child exited, or
                the bound passed).
        """
        assert self.agent is not None, "the launcher's agent was never set"
        try:
            child = self.delegation.start(
                self.session, self.agent, self.turn_id, self.depth + 1, request
            )
        except DelegateRefused as exc:
            return ToolResult.error(exc.message)
        if request.background:
            return ToolResult(
                content=f"started background child agent {child.turn_id}; its answer "
                "arrives as a message at your next step if you are still working then (once "
                "you have answered, it stays with the person)"
            )
        return await self.delegation.wait(child, self.agent)


class Delegation:
    """Builds every agent of the gateway's turns and runs child agents. Thread-safe.

    Args:
        config: limits, provider, approvals, shutdown bound.
        persistence: the store's writes.
        booking: books each child's outcome once.
        publish: sends a payload for a session.
        workers: the gateway's worker threads (children's included, so a shutdown waits for
            them).
        agent_factory: builds each agent from its setup.
        tools: the tools offered besides ``delegate``, or None for none at all.
        cwd: where tool calls run.
        workspace: the file tools' boundary.
        extra_tools: the tools offered now besides those (the MCP servers'), asked for each
            agent as it is built.
        provider: the model server now, read for each agent (default ``config.provider``).
        recorder: the checkpoint recorder of a session's root turn (a child agent records
            into its root turn's), or None for none.
    """

    def __init__(
        self,
        config: GatewayConfig,
        persistence: Persistence,
        booking: BookingOffice,
        publish: Publish,
        workers: TurnWorkers,
        *,
        agent_factory: AgentFactory,
        tools: ToolRegistry | None,
        cwd: Path,
        workspace: Workspace | None,
        extra_tools: Callable[[], Sequence[Tool]] | None = None,
        provider: Callable[[], ProviderConfig] | None = None,
        recorder: Callable[[Session, str], ChangeRecorder | None] | None = None,
    ) -> None:
        self._config = config
        self._provider = provider or (lambda: config.provider)
        self._persistence = persistence
        self._booking = booking
        self._publish = publish
        self._workers = workers
        self._factory = agent_factory
        self._tools = tools
        self._cwd = cwd
        self._workspace = workspace
        self._extra_tools = extra_tools
        self._recorder = recorder
        self._roots: dict[str, str] = {}  # a child agent's turn -> its root turn

    # -- building agents -----------------------------------------------------------------------

    def build(
        self, session: Session, turn_id: str, listener: AgentListener, *, depth: int
    ) -> Agent:
        """The agent of a session's turn (``depth`` 0) or of a child, with its tools (the
        ``delegate`` tool included unless delegation is off) and its approvals."""
        launcher = ChildLauncher(self, session, turn_id, depth)

        def who_stopped() -> str:
            stop = launcher.agent.stop_request if launcher.agent is not None else None
            return stop.describe() if stop is not None else "stopped"

        approve = None
        if self._config.approvals and session.approvals is not None:
            persistence = self._persistence

            def on_wait(call: ToolCall, waiting: bool) -> None:
                persistence.approval_wait(session, turn_id, call.id, waiting)

            approve = session.approvals.approver(turn_id, who_stopped, self._cwd, on_wait)
        tools = None
        if self._tools is not None:
            extra = self._extra_tools() if self._extra_tools is not None else ()
            tools = ToolRegistry([*self._tools, *extra])
            if self._config.delegate_depth > 0:
                tools.add(DelegateTool(launcher))
        provider = session_provider(self._provider(), session)
        changes = None
        if self._recorder is not None:
            changes = self._recorder(session, self._roots.get(turn_id, turn_id))
        setup = AgentSetup(listener, approve, tools, self._cwd, provider, self._workspace, changes)
        launcher.agent = self._factory(setup)
        with session.lock:
            budget = session.context
        if budget is not None and depth > 0:  # a child's requests fit the window too
            launcher.agent.context = budget.sharing()
        return launcher.agent

    # -- children ------------------------------------------------------------------------------

    def start(
        self,
        session: Session,
        parent: Agent,
        parent_turn_id: str,
        depth: int,
        request: DelegateRequest,
    ) -> Turn:
        """Start a child agent at ``depth`` for ``parent``'s call; returns its turn.

        Raises:
            DelegateRefused: beyond the depth or width limit.
        """
        limit = self._config.delegate_depth
        if depth > limit:
            raise DelegateRefused(
                f"delegate refused: child agents nest at most {limit} deep and this agent is "
                f"at depth {depth - 1} (setting delegate_depth); do the task yourself"
            )
        child_id = uuid.uuid4().hex[:12]
        self._roots[child_id] = self._roots.get(parent_turn_id, parent_turn_id)
        scope = InterruptScope(f"child:{child_id}")
        listener = turn_listener(
            child_id,
            lambda payload: self._publish(session, payload),
            on_text=lambda text: self._persistence.note_text(session, child_id, text),
            on_tool=lambda event: self._persistence.tool_event(session, child_id, event),
        )
        agent = self.build(session, child_id, listener, depth=depth)
        width = self._config.delegate_width
        with session.lock:
            running = [
                c
                for c in session.live_children()
                if c.child is not None and c.child.parent_turn_id == parent_turn_id
            ]
            if len(running) >= width:
                raise DelegateRefused(
                    f"delegate refused: {len(running)} child agents of this agent run already, "
                    f"the most at once is {width} (setting delegate_width); wait for one to "
                    "finish or do the task yourself"
                )
            # In the parent's scope from now on; a parent stopped already stops it on entry.
            registration = parent.scope.register(scope)
            link = ChildOf(
                parent_turn_id,
                parent,
                scope,
                registration,
                request.background,
                depth,
                request.call_id,
            )
            child = Turn(
                turn_id=child_id,
                session_id=session.session_id,
                prompt=request.task,
                agent=agent,
                state=TurnStage.RUNNING,
                kind=TurnKind.CHILD,
                child=link,
            )
            child.started_at = time.monotonic()
            session.turns[child_id] = child
            session.children[child_id] = child
        started = ChildStarted(
            child_id, parent_turn_id, request.call_id, request.task, request.background, depth
        )
        self._publish(session, started)
        self._workers.start(child_id, lambda: self._run(session, child))
        return child

    async def wait(self, child: Turn, parent: Agent) -> ToolResult:
        """Wait on the parent's loop for a foreground child; its answer as the tool result.

        Raises:
            asyncio.CancelledError: the parent was stopped: raised once the child's worker has
                exited (its stop came through the parent's scope), or the bound passed.
        """
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            def resolve() -> None:
                if not finished.done():
                    finished.set_result(None)

            with contextlib.suppress(RuntimeError):  # the parent's loop closed: nobody waits
                loop.call_soon_threadsafe(resolve)

        child.when_done(wake)
        try:
            await finished
        except asyncio.CancelledError:
            stop = parent.stop_request
            if stop is not None and child.child is not None:
                child.child.scope.cancel(stop)  # it came through the scope; never miss it
            await asyncio.wait({finished}, timeout=self._config.shutdown_timeout_s)
            raise
        assert child.result is not None
        return tool_result_of(child, child.result)

    def wait_children(self, session: Session, turn_id: str) -> None:
        """After a hard stop of ``turn_id``: wait (bounded) until every child it started has
        ended (each of them waits for its own the same way)."""
        deadline = time.monotonic() + self._config.shutdown_timeout_s
        with session.lock:
            mine = [
                c
                for c in session.live_children()
                if c.child is not None and c.child.parent_turn_id == turn_id
            ]
        for child in mine:
            child.done.wait(max(0.0, deadline - time.monotonic()))

    def children(self, session: Session) -> list[ChildInfo]:
        """The session's child agents, live and ended, in the order they started."""
        now = time.monotonic()
        infos: list[ChildInfo] = []
        with session.lock:
            kids = list(session.children.values())
        for kid in kids:
            link = kid.child
            assert link is not None
            result = kid.result
            end = kid.worker_exited_at if kid.worker_exited_at is not None else now
            infos.append(
                ChildInfo(
                    turn_id=kid.turn_id,
                    parent_turn_id=link.parent_turn_id,
                    task=kid.prompt,
                    background=link.background,
                    depth=link.depth,
                    running=not kid.done.is_set(),
                    status=result.status if result is not None else "",
                    exit_reason=result.exit_reason if result is not None else "",
                    elapsed_s=max(0.0, end - (kid.started_at or end)),
                )
            )
        return infos

    def _run(self, session: Session, child: Turn) -> None:
        link = child.child
        assert link is not None
        self._persistence.child_started(session, child)
        system = ChatMessage(role="system", content=CHILD_SYSTEM_PROMPT)
        try:
            with link.scope:  # the agent registers here: cancelled already, it ends on entry
                result = child.agent.run_conversation([system], child.prompt)
        except Exception as exc:  # a bug below must still end the child with one outcome
            result = TurnResult(
                status=TurnStatus.FAILED,
                exit_reason=ExitReason.failed(type(exc).__name__),
                text="",
                partial=True,
                error=f"internal error: {exc}",
            )
        if result.stop is not None:
            self.wait_children(session, child.turn_id)
        child.worker_exited_at = time.monotonic()
        link.registration.unregister()
        booked = self._booking.settle(session, child, result)
        self._persistence.child_ended(session, child, booked)
        delivery = self._deliver(child, booked)
        with session.lock:
            link.delivery = delivery
            child.state = TurnStage.DONE
            total = session.usage  # the child's requests added (by settle)
        self._publish(session, completed_event(child, delivery, total))
        child.finish()

    def _deliver(self, child: Turn, result: TurnResult) -> ChildDelivery:
        """A background child's answer to its parent: a steer while the parent runs, else a
        note (the child's own card and row)."""
        link = child.child
        assert link is not None
        if not link.background:
            return ChildDelivery.TOOL_RESULT
        reason = f"the answer of background child agent {child.turn_id}"
        text = f"Task: {child.prompt}\n\n{outcome_text(result)}"
        steer = Steer(StopRequest.soft(Surface.DELEGATE_RESULT, reason), text, child.turn_id)
        return ChildDelivery.STEER if link.parent.steer(steer) else ChildDelivery.NOTE


__all__ = [
    "CHILD_SYSTEM_PROMPT",
    "ChildLauncher",
    "DelegateRefused",
    "Delegation",
]
