"""The agent: runs one turn against the model server and stops for real when told to.

How a hard stop travels (see DESIGN.md, flow 2, and ``docs/stop-path.md``):
:meth:`Agent.interrupt` may be called from any thread. It books the first hard stop under a
lock, shuts the turn's provider connection down at once
(:meth:`agent.provider.connection.ProviderConnection.shut_down`, the one place a socket is
closed) and, when a turn is running, schedules ``_cancel_on_loop`` on the turn's own event loop
with ``call_soon_threadsafe``. That callback runs on the loop thread, so it can check without a
race whether the turn is still inside its cancellable section; if it is, it cancels the turn
task, and the ``CancelledError`` surfaces at the await the turn is blocked on (connect, response
headers, stream read, retry sleep, a tool, an approval). A stop that arrives before the turn
started is kept and ends the turn on entry; one that arrives after the turn's outcome is fixed
is recorded as late and changes nothing.

Each turn has an :class:`~agent.scope.InterruptScope` (:attr:`Agent.scope`) where the child
agents of its ``delegate`` calls register: the stop reaches them on the stopping thread first.
A soft interrupt is a steer, delivered at the next model-call boundary (:mod:`agent.steering`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.context.budget import ContextBudget
from agent.context.request import FitPolicy
from agent.events import AgentListener, SteerDelivered, TurnResult, TurnTimings
from agent.model_call import ModelCall, ModelCallSettings
from agent.provider.client import ChatClient
from agent.provider.connection import ProviderConnection
from agent.provider.errors import ProviderError
from agent.provider.types import ChatMessage, Completion, Usage
from agent.scope import InterruptScope, current_scope
from agent.stamps import stamp
from agent.steering import Steer, SteerInbox
from agent.stops import StopRequest, Surface, require_hard
from agent.stream_batch import DEFAULT_INTERVAL_S
from agent.tokens import MESSAGE_OVERHEAD_TOKENS, request_size, tokens_in_chars
from agent.tools.changes import ChangeRecorder
from agent.tools.process import ProcessLedger
from agent.tools.registry import ToolRegistry
from agent.tools.runner import Approver, ToolBatch
from agent.tools.workspace import Workspace
from agent.turn_results import ended, interrupted, reply_messages
from agent.turn_tools import tool_batch, tool_completed
from agent.usage import UsageTally, reply_tokens

_IDLE, _RUNNING, _DONE = "idle", "running", "done"


def _ignore(_event: object) -> None:
    return None


class Agent:
    """Runs turns of a conversation against one model server.

    Args:
        client: the provider client (configuration only; safe to share).
        listener: called on the turn's worker thread with every :data:`AgentEvent`; it must not
            block (the gateway's listener only appends to a queue).
        stream: stream replies (True) or ask for one non-streamed body (False).
        max_retries: how many times a 429 or 503 is retried after its ``Retry-After``.
        max_retry_wait_s: longest wait honoured for one retry, in seconds.
        inactivity_timeout_s: a turn that receives nothing from the model server for this many
            seconds is stopped as a system stop (surface ``inactivity``); None never. Every
            streamed chunk counts as something (text, reasoning, a piece of a tool call's
            arguments, usage); time spent running tools does not count.
        tools: the tools offered to the model; None offers none.
        cwd: the directory tool calls run in (default: the process's working directory).
        approve: asked before a call whose tool needs approval, or whose path lies outside the
            workspace; None runs every call (the deny list still holds).
        workspace: the file tools' boundary; None: one at ``cwd`` with the default deny list.
        max_iterations: most model calls in one turn; the turn ends as ``max_iterations(n)``.
        max_tokens: most tokens of each reply (None: the server decides).
        delta_interval_s: least time between two ``TextDelta`` events while the stream is
            faster, in seconds (pieces arriving sooner are joined; see
            :class:`agent.stream_batch.DeltaBatcher`); 0 passes on every piece as it arrives.
        context: the session's context budget: every request is built well formed and checked
            against the window before it is sent (:mod:`agent.context.request`), and the
            server's counts calibrate it; None sends requests as built from the transcript,
            unchecked.
        changes: records what files hold before a tool call changes them (the turn's
            checkpoint, see :mod:`agent.tools.changes`); None records nothing.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        listener: AgentListener | None = None,
        stream: bool = True,
        max_retries: int = 2,
        max_retry_wait_s: float = 30.0,
        inactivity_timeout_s: float | None = 300.0,
        tools: ToolRegistry | None = None,
        cwd: Path | None = None,
        approve: Approver | None = None,
        max_iterations: int = 25,
        max_tokens: int | None = None,
        delta_interval_s: float = DEFAULT_INTERVAL_S,
        workspace: Workspace | None = None,
        context: ContextBudget | None = None,
        changes: ChangeRecorder | None = None,
    ) -> None:
        self.client = client
        self.context = context
        self.delta_interval_s = delta_interval_s
        self.listener: AgentListener = listener or _ignore
        self.stream = stream
        self.max_retries = max_retries
        self.max_retry_wait_s = max_retry_wait_s
        self.inactivity_timeout_s = inactivity_timeout_s
        self._last_activity = 0.0
        self._watch_paused = False
        self.tools = tools
        self.cwd = cwd if cwd is not None else Path.cwd()
        self.approve = approve
        self.workspace = workspace
        self.changes = changes
        self.max_iterations = max_iterations
        self.max_tokens = max_tokens
        self.fit_policy = FitPolicy()
        """When the server counts a request, and the least room its reply needs (a turn's)."""
        self._lock = threading.Lock()
        self._state = _IDLE
        self._stop: StopRequest | None = None
        self._late: list[StopRequest] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancellable = False
        self._connection: ProviderConnection | None = None
        self._scope = InterruptScope("agent")
        self._inbox = SteerInbox()

    # -- stopping ------------------------------------------------------------------------------

    def interrupt(self, stop: StopRequest) -> None:
        """Ask the agent to stop; safe from any thread, at any moment.

        A hard stop before the turn started ends it on entry; during the turn it cancels the
        turn's I/O at once (the provider socket is shut down); after the outcome is fixed it is
        recorded as late and changes nothing. Only the first hard stop is booked.

        Args:
            stop: who stops, from where, and why.

        It also cancels the turn's :attr:`scope` on this thread: every child agent, same stop.

        Raises:
            ValueError: for a soft stop (``hard=False``): a soft interrupt is a steer and
                carries text (:meth:`steer`); a stop is never silently ignored.
        """
        require_hard(stop)
        stamp("agent.interrupt")
        with self._lock:
            if self._stop is not None or self._state == _DONE:
                self._late.append(stop)
                return
            self._stop = stop
            loop = self._loop
            connection = self._connection
            scope = self._scope
        if connection is not None:
            # Close the provider connection from this thread, now: the turn's loop may be
            # waiting for the GIL behind a busy UI. The cancel below then unwinds the turn.
            connection.shut_down()
        scope.cancel(stop)  # every child agent of the turn, with the same stop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the turn already ended
                loop.call_soon_threadsafe(self._cancel_on_loop)

    @property
    def stop_request(self) -> StopRequest | None:
        """The first hard stop booked against the current (or last) turn, if any."""
        with self._lock:
            return self._stop

    def carry_over(self) -> None:
        """Ready the agent to run its turn once more (a retry) without losing a stop.

        A hard stop that arrived after the last outcome was fixed (recorded as late) is kept
        as the next run's stop, so the retry ends on entry instead of forgetting it; one that
        arrives from now on is booked against the retry as usual. Call it between two runs
        of the same turn, never while one runs.
        """
        with self._lock:
            if self._state != _DONE:
                return
            if self._stop is None and self._late:
                self._stop = self._late[0]
            self._late = []
            self._inbox = SteerInbox()  # the last run closed its inbox; a steer may come still
            self._state = _IDLE

    @property
    def scope(self) -> InterruptScope:
        """The scope of the current (or next) turn: child agents register here, and a hard
        stop of the turn cancels it (a child registering after that is stopped on entry)."""
        with self._lock:
            return self._scope

    def steer(self, steer: Steer) -> bool:
        """Give the turn more input at its next model-call boundary (see :mod:`agent.steering`);
        safe from any thread, before the turn too (it then waits for the first call's end).

        Returns:
            False when the turn cannot take it any more (it ended, took its last boundary, or
            a hard stop is on its way): the caller runs it as a prompt instead.
        """
        with self._lock:
            if self._stop is not None:
                return False
            inbox = self._inbox
        return inbox.offer(steer)

    def _boundary(
        self, added: list[ChatMessage], before: list[ChatMessage], *, room: bool, final: bool
    ) -> bool:
        """Deliver the steers held (after ``before``, the reply so far); True if any."""
        steers = [] if self.stop_request is not None else self._inbox.take(room=room, final=final)
        if steers:
            added.extend(before)
        for steer in steers:
            added.append(steer.message())
            self.listener(SteerDelivered.of(steer))
        return bool(steers)

    def _closed_at(self) -> float | None:
        """When the stopped turn's connection closed: the moment the stopping thread shut its
        socket down (the server saw the close then), else now (the cancel closed it); None
        when no request was open (stopped while the request was being built)."""
        with self._lock:
            connection = self._connection
        if connection is None:
            return None
        return time.monotonic() if connection.shut_at is None else connection.shut_at

    def _set_connection(self, connection: ProviderConnection | None) -> None:
        with self._lock:
            self._connection = connection
            stopped = self._stop is not None
        if stopped and connection is not None:  # a stop came while it opened
            connection.shut_down()

    def _cancel_on_loop(self) -> None:
        # Runs on the turn's loop thread: no race with the turn's own state changes.
        stamp("agent.cancel_on_loop")
        if self._cancellable and self._task is not None:
            self._task.cancel()

    # -- running -------------------------------------------------------------------------------

    def run_conversation(
        self, history: Sequence[ChatMessage], user_message: str | None = None
    ) -> TurnResult:
        """Run one turn synchronously on the calling thread (it gets its own event loop).

        Args:
            history: the transcript so far, system prompt included.
            user_message: the new prompt, appended as a user message; None to continue
                ``history`` as it is.

        Returns:
            the turn's one terminal outcome.

        Raises:
            RuntimeError: when called on a thread that already runs an event loop, or while
                this agent already runs a turn.
        """
        return asyncio.run(self.arun_conversation(history, user_message))

    async def arun_conversation(
        self, history: Sequence[ChatMessage], user_message: str | None = None
    ) -> TurnResult:
        """The coroutine behind :meth:`run_conversation`; same arguments and result."""
        timings = TurnTimings(started_at=time.monotonic())
        with self._lock:
            if self._state == _RUNNING:
                raise RuntimeError("this agent is already running a turn")
            if self._state == _DONE:
                self._stop, self._late = None, []
                self._inbox, self._scope = SteerInbox(), InterruptScope("agent")
            self._state = _RUNNING
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
        # Outside the lock: a scope that is already cancelled interrupts us right here.
        scope = current_scope()
        registration = scope.register(self) if scope is not None else None
        pending = self.stop_request
        messages = list(history)
        if user_message is not None:
            messages.append(ChatMessage(role="user", content=user_message))
        result: TurnResult
        try:
            if pending is not None:  # stopped before it ran: no connection was ever open
                timings.stop_requested_at = pending.requested_at
                result = interrupted(pending, Completion(), [])
            else:
                result = await self._run(messages, timings)
        finally:
            if registration is not None:
                registration.unregister()
            with self._lock:
                self._state = _DONE
                self._loop = None
                self._task = None
                result_late = list(self._late)
            undelivered = self._inbox.close()
        timings.ended_at = time.monotonic()
        stamp("agent.done")
        result.late_stops = result_late
        result.undelivered = undelivered
        result.timings = timings
        return result

    async def _run(self, messages: list[ChatMessage], timings: TurnTimings) -> TurnResult:
        error: ProviderError | None = None
        added: list[ChatMessage] = []  # what this turn adds after the user message
        reply = Completion()
        batch: ToolBatch | None = None
        ledger = ProcessLedger()
        iterations = 0
        out_of_iterations = False
        tally = UsageTally(self._estimate_prompt, self._estimate_reply)
        self._cancellable = True
        self._last_activity = time.monotonic()
        watchdog = None
        if self.inactivity_timeout_s is not None:
            watchdog = asyncio.create_task(self._watch_inactivity(self.inactivity_timeout_s))
        try:
            async with self.client.session() as conn:
                self._set_connection(conn)
                while True:
                    if self.stop_request is not None:  # its cancel is on its way: no request
                        raise asyncio.CancelledError
                    if iterations >= self.max_iterations:
                        out_of_iterations = True
                        break
                    iterations += 1
                    reply = Completion()
                    sent = messages + added  # made well formed as it is sent
                    tally.sent(sent)
                    reply = await self._call_model(conn, sent, reply, timings, iterations, tally)
                    tally.answered(reply)
                    room = iterations < self.max_iterations
                    if not reply.tool_calls or self.tools is None:
                        before = reply_messages(reply)
                        if self._boundary(added, before, room=room, final=True):
                            continue
                        break
                    added.append(
                        ChatMessage("assistant", reply.content, tool_calls=tuple(reply.tool_calls))
                    )
                    batch = tool_batch(
                        self.tools,
                        reply.tool_calls,
                        self.listener,
                        cwd=self.cwd,
                        ledger=ledger,
                        approve=self.approve,
                        workspace=self.workspace,
                        changes=self.changes,
                        stops=self.scope,
                        window=self.context.window.tokens if self.context is not None else None,
                    )
                    self._watch_paused = True  # a tool may run long without the provider
                    outcomes = await batch.run()
                    if self.stop_request is not None:  # a call answered it (a delegate, its
                        raise asyncio.CancelledError  # child's stop): the stop's receipt, now
                    self._watch_paused = False
                    self._last_activity = time.monotonic()
                    added.extend(outcome.message() for outcome in outcomes)
                    batch = None
                    self._boundary(added, [], room=room, final=False)
                # The reply is whole: from here on a stop is late. Closing the client below
                # must not turn a finished turn into an interrupted one.
                self._cancellable = False
        except asyncio.CancelledError:
            stamp("agent.stop_caught")
            self._cancellable = False
            stop = self.stop_request
            if stop is None:
                raise  # cancelled from outside the agent: not ours to book
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            timings.stop_requested_at = stop.requested_at
            stopped_tool = None
            if batch is None:
                timings.connection_closed_at = self._closed_at()
            else:  # no request was open: the receipt is the tool's, not a connection's
                stopped_tool = batch.stopped_tool(stop)
                stopped = batch.stopped(stop)
                for outcome in stopped[len(batch.outcomes) :]:
                    self.listener(tool_completed(outcome.call, outcome.result))
                added.extend(outcome.message() for outcome in stopped)
                reply = Completion()
            tally.answered(reply)  # the request open at the stop, if one was
            counted = (tally.total, ledger.children_ended, iterations)
            result = interrupted(stop, reply, added, *counted)
            result.stopped_tool = stopped_tool
            return result
        except ProviderError as exc:
            stop = self.stop_request
            if stop is not None:  # the stop shut the socket down before the cancel landed
                self._cancellable = False
                timings.connection_closed_at = self._closed_at()
                timings.stop_requested_at = stop.requested_at
                tally.answered(reply)
                counted = (tally.total, ledger.children_ended, iterations)
                return interrupted(stop, reply, added, *counted)
            tally.answered(reply, refused=not (reply.content or reply.reasoning))
            error = exc
        finally:
            self._cancellable = False
            self._watch_paused = False
            self._set_connection(None)
            if watchdog is not None:
                watchdog.cancel()
        timings.connection_closed_at = time.monotonic()
        with self._lock:
            self._state = _DONE  # the outcome is fixed: any stop from now on is late
            if self._stop is not None:  # it came after the last await: too late to matter
                self._late.insert(0, self._stop)
                self._stop = None
        return ended(
            reply,
            added,
            error=error,
            out_of_iterations=out_of_iterations,
            max_iterations=self.max_iterations,
            usage_total=tally.total,
            children_ended=ledger.children_ended,
            iterations=iterations,
        )

    async def _call_model(
        self,
        conn: ProviderConnection,
        messages: list[ChatMessage],
        reply: Completion,
        timings: TurnTimings,
        iteration: int,
        tally: UsageTally,
    ) -> Completion:
        def touch() -> None:
            self._last_activity = time.monotonic()

        call = ModelCall(
            ModelCallSettings(
                client=self.client,
                stream=self.stream,
                max_retries=self.max_retries,
                max_retry_wait_s=self.max_retry_wait_s,
                delta_interval_s=self.delta_interval_s,
                max_tokens=self.max_tokens,
                context=self.context,
                tools=self.tools.schemas() if self.tools is not None else (),
                policy=self.fit_policy,
            ),
            listener=self.listener,
            on_activity=touch,
            tally=tally,
        )
        return await call.run(conn, messages, reply, timings, iteration)

    def _estimate_prompt(self, messages: list[ChatMessage]) -> int:
        """Desk's count of a request's prompt (for a request the server reported nothing for)."""
        tools = self.tools.schemas() if self.tools is not None else ()
        if self.context is not None:
            return self.context.count(messages, tools)
        size = request_size(messages, tools)
        return tokens_in_chars(size.chars) + size.messages * MESSAGE_OVERHEAD_TOKENS

    def _estimate_reply(self, reply: Completion) -> int:
        """Desk's count of a reply the server reported nothing for (:func:`reply_tokens`, at
        the session's calibrated characters per token)."""
        ratio = self.context.calibration.chars_per_token if self.context is not None else None
        return reply_tokens(reply, ratio)

    async def _watch_inactivity(self, limit_s: float) -> None:
        """Stop the turn as ``inactivity`` once nothing arrived for ``limit_s`` seconds."""
        while True:
            idle = time.monotonic() - self._last_activity
            if idle >= limit_s and not self._watch_paused:
                reason = f"no reply from the model server for {limit_s:g} s"
                self.interrupt(StopRequest.by_system(Surface.INACTIVITY, reason))
                return
            await asyncio.sleep(max(limit_s - idle, 0.05))


__all__ = ["Agent", "TurnResult", "Usage"]
