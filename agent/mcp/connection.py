"""One MCP server's life on the MCP loop: start, list tools, take calls, fail, start again, stop.

A :class:`ServerConnection` is made per configured server and used from any thread: its methods
hand coroutines to the :class:`~agent.mcp.loop.McpLoop` and return concurrent futures. On the
loop, each start is one *life*: a task that opens the transport
(:func:`agent.mcp.transport.open_streams`), runs the SDK's ``ClientSession`` over it, does the
``initialize`` handshake and lists the tools within ``startup_timeout_s``, then holds the
connection open until desk stops it or the connection is lost. A lost connection is:

* the server's stdout reaching its end (it exited or crashed), or an HTTP transport error;
* a line that is not a JSON-RPC message: the server broke the protocol, so it is dropped rather
  than trusted with the next call. (A line the SDK refuses only because it escapes a lone
  surrogate is valid JSON: it is read again with the surrogate as U+FFFD.)
* a message past the server's ``max_result_mb`` whose request cannot be told, or that never
  ends (:mod:`agent.mcp.stdio`). One that ends, and names its request, only ends that call,
  with an error saying it was cut; the connection goes on.

Either way the server is ``failed`` with one line saying why (``exited with code 3:
RuntimeError: boom``, from the guard and the last stderr line), its pending calls end with that
line as an error, and its process group is ended (the SDK closes stdin, then SIGTERM, then
SIGKILL after a grace). **Restart policy**: a server that was ready and then failed is started
again by the next call of one of its tools; a server whose start failed stays failed until
:meth:`ServerConnection.restart` (``/mcp restart NAME``).

A call is the SDK's ``call_tool`` awaited in a task of its own; cancelling it (a stop cancels
the future :meth:`ServerConnection.call` returned) makes the SDK send ``notifications/cancelled``
for the request, without waiting for any answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.mcp.loop import McpLoop
from agent.mcp.status import McpState, McpUnavailable, ServerSpec, ServerStatus

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

    from agent.mcp.results import CallAnswer
    from agent.mcp.transport import StderrTail

_log = logging.getLogger(__name__)

SETTLE_S = 1.0
"""How long a call that lost its connection waits for the server's exit to be known, in seconds."""

_MAX_PAGES = 50


@dataclass(slots=True)
class _Life:
    """One start of a server, on the loop."""

    settled: asyncio.Future[ClientSession]
    task: asyncio.Task[None] | None = None
    scope: Any = None  # the anyio CancelScope that bounds the start and ends the life
    stopping: bool = False
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    lost_reason: str = ""
    stderr: StderrTail | None = None


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def describe(exc: BaseException) -> str:
    """One line for what went wrong: ``cannot run 'x': ...``, ``ConnectError: ...``."""
    leaf = _leaf(exc)
    text = str(leaf)
    name = type(leaf).__name__
    if isinstance(leaf, OSError) and leaf.strerror:
        return _one_line(f"{leaf.strerror}: {leaf.filename}" if leaf.filename else leaf.strerror)
    return _one_line(f"{name}: {text}" if text else name)


def _malformed(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors()[0]
            shown = repr(first.get("input", ""))[:80]
            return f"sent a line that is not a JSON-RPC message: {shown}"
    if isinstance(exc, ValueError):
        return f"sent a line that is not a JSON-RPC message: {_one_line(str(exc), 80)}"
    return f"the connection failed: {describe(exc)}"


class ServerConnection:
    """One MCP server, reached from any thread.

    Args:
        spec: how to reach it.
        loop: the MCP loop every connection of the gateway shares.
        cwd: a stdio server's working directory.
        on_change: called with the new status on every state change (on the loop's thread;
            it must not block).
        grace_s: seconds between SIGTERM and SIGKILL when the guard ends the server's group.
    """

    def __init__(
        self,
        spec: ServerSpec,
        loop: McpLoop,
        *,
        cwd: Path,
        on_change: Callable[[ServerStatus], None],
        grace_s: float = 2.0,
    ) -> None:
        self.spec = spec
        self._loop = loop
        self._cwd = cwd
        self._on_change = on_change
        self._grace_s = grace_s
        transport = "stdio" if spec.command is not None else "http"
        self._lock = threading.Lock()
        self._status = ServerStatus(spec.name, McpState.STOPPED, transport)
        # Touched on the loop only:
        self._life: _Life | None = None
        self._closed = False
        self._restart_on_call = False

    # -- any thread ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The server's name."""
        return self.spec.name

    def status(self) -> ServerStatus:
        """The server as it is now."""
        with self._lock:
            return self._status

    def start(self) -> concurrent.futures.Future[ServerStatus]:
        """Start the server unless it runs or starts already.

        Returns:
            the status once the start settled (ready or failed).
        """
        self._mark_starting()
        return self._loop.submit(self._settle(restart=False))

    def restart(self) -> concurrent.futures.Future[ServerStatus]:
        """Stop the server if it runs, then start it again (``/mcp restart NAME``).

        Returns:
            the status once the new start settled.
        """
        self._mark_starting()
        return self._loop.submit(self._settle(restart=True))

    def settled(self) -> concurrent.futures.Future[ServerStatus]:
        """The status once the current start (if one runs) has settled; starts nothing."""
        return self._loop.submit(self._wait_settled())

    def call(
        self, tool: str, arguments: Mapping[str, Any]
    ) -> concurrent.futures.Future[CallAnswer]:
        """Call one of the server's tools by its server-side name.

        Returns:
            the answer's future; it raises :class:`McpUnavailable` when the server cannot be
            reached or failed meanwhile. ``cancel()`` on it cancels the request (the server is
            sent ``notifications/cancelled``) and returns at once.
        """
        return self._loop.submit(self._call(tool, dict(arguments)))

    def close(self) -> concurrent.futures.Future[None]:
        """Stop the server for good (gateway shutdown); the future is done once it is stopped."""
        return self._loop.submit(self._close())

    def _mark_starting(self) -> None:
        with self._lock:
            if self._status.state not in (McpState.READY, McpState.STARTING):
                self._status = replace(self._status, state=McpState.STARTING, message="")

    def _set(self, **changes: Any) -> None:
        with self._lock:
            self._status = replace(self._status, **changes)
            status = self._status
        try:
            self._on_change(status)
        except Exception:
            _log.exception("the MCP status callback of %r failed", self.name)

    # -- on the loop ---------------------------------------------------------------------------

    async def _settle(self, *, restart: bool) -> ServerStatus:
        if restart and self._life is not None:
            await self._end(self._life)
        life = await self._ensure_life()
        with contextlib.suppress(Exception):
            await asyncio.shield(life.settled)
        return self.status()

    async def _wait_settled(self) -> ServerStatus:
        life = self._life
        if life is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(life.settled)
        return self.status()

    async def _ensure_life(self) -> _Life:
        """The life that runs or starts now; a new one when there is none, or it is ending."""
        life = self._life
        if life is not None and life.task is not None and not life.task.done():
            if not (life.stopping or life.lost.is_set()):
                return life
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(life.task)  # its process is being ended: let it go first
            if self._life is not life:  # another caller started the next one meanwhile
                return await self._ensure_life()
        if self._closed:
            raise McpUnavailable("the desk is shutting down")
        loop = asyncio.get_running_loop()
        life = _Life(settled=loop.create_future())
        self._life = life
        self._set(state=McpState.STARTING, message="", pgid=None)
        life.task = loop.create_task(self._serve(life), name=f"mcp-{self.name}")
        return life

    async def _end(self, life: _Life) -> None:
        """Stop one life and wait until its process is gone (the SDK's bounded shutdown)."""
        life.stopping = True
        if life.scope is not None:
            life.scope.cancel()
        if life.task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(life.task)

    async def _close(self) -> None:
        self._closed = True
        life = self._life
        if life is not None:
            await self._end(life)  # its end sets the state
        elif self.status().state is not McpState.FAILED:
            self._set(state=McpState.STOPPED, pgid=None)

    async def _serve(self, life: _Life) -> None:
        import anyio
        from mcp.client.session import ClientSession

        from agent.mcp.results import remote_tools
        from agent.mcp.transport import StderrTail, open_streams

        reason = ""
        ready = False
        stderr = StderrTail() if self.spec.command is not None else None
        life.stderr = stderr
        try:
            deadline = anyio.current_time() + self.spec.startup_timeout_s
            with anyio.CancelScope(deadline=deadline) as scope:
                life.scope = scope
                if life.stopping:
                    scope.cancel()
                async with contextlib.AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(
                        open_streams(
                            self.spec,
                            cwd=self._cwd,
                            stderr=stderr,
                            grace_s=self._grace_s,
                            quitting=lambda: self._closed,
                        )
                    )
                    inner_send, inner_read = anyio.create_memory_object_stream[Any](0)
                    group = await stack.enter_async_context(anyio.create_task_group())
                    group.start_soon(self._forward, life, read, inner_send)
                    session = await stack.enter_async_context(ClientSession(inner_read, write))
                    await session.initialize()
                    tools = remote_tools(self.name, await _list_tools(session))
                    scope.deadline = math.inf  # started: only a stop or a loss ends it now
                    ready = True
                    self._restart_on_call = True
                    pgid = stderr.group if stderr is not None else None
                    self._set(state=McpState.READY, tools=tools, message="", pgid=pgid)
                    if not life.settled.done():
                        life.settled.set_result(session)
                    await life.lost.wait()
                    group.cancel_scope.cancel()
            if scope.cancelled_caught and not life.stopping and not ready:
                reason = f"did not start within {self.spec.startup_timeout_s:g} s"
        except Exception as exc:
            reason = "" if life.lost.is_set() else describe(exc)
        finally:
            if stderr is not None:
                stderr.close()
        failure = "" if life.stopping else self._failure(life, reason, stderr)
        if not ready:
            self._restart_on_call = False
        if not life.settled.done():
            life.settled.set_exception(McpUnavailable(failure or "stopped"))
        if self._life is life:
            if failure:
                self._set(state=McpState.FAILED, message=failure, pgid=None)
            elif self._closed:
                self._set(state=McpState.STOPPED, pgid=None)

    @staticmethod
    def _failure(life: _Life, reason: str, stderr: StderrTail | None) -> str:
        """One line for why a life ended: what was seen, and what the server said on stderr.

        How the process exited (from the guard) stands for "the connection closed"; a protocol
        break or a start timeout is named first.
        """
        reason = life.lost_reason or reason
        said = stderr.summary() if stderr is not None else ""
        if not reason:
            return said or "the server closed the connection"
        last = stderr.lines[-1] if stderr is not None and stderr.lines else ""
        return f"{reason}: {last}" if last else reason

    async def _forward(self, life: _Life, source: Any, sink: Any) -> None:
        """Pass the server's messages on to the session; note why and when the flow ends."""
        import anyio

        from agent.mcp.stdio import TooLarge
        from agent.mcp.transport import reread

        reason = ""
        try:
            async with sink:
                async for item in source:
                    if isinstance(item, TooLarge):  # its call ends with an error that says so
                        _log.warning("desk: MCP server %r: %s", self.name, item.describe())
                        answer = item.answer()
                        if answer is not None:
                            await sink.send(answer)
                        if item.runaway or answer is None:
                            reason = item.describe()
                            break
                        continue
                    if isinstance(item, Exception):
                        message = reread(item)  # a lone surrogate: read as U+FFFD
                        if message is None:
                            reason = _malformed(item)
                            break
                        item = message
                    await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        except Exception as exc:  # what the reader did not expect ends this server, clearly
            reason = f"desk could not read the server: {describe(exc)}"
            _log.error("desk: MCP server %r: %s", self.name, reason)
        if not life.stopping and not life.lost.is_set():
            life.lost_reason = reason
            life.lost.set()

    async def _call(self, tool: str, arguments: dict[str, Any]) -> CallAnswer:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        from agent.mcp.results import CallAnswer, call_answer
        from agent.mcp.stdio import ANSWER_CUT

        life = self._life
        running = life is not None and life.task is not None and not life.task.done()
        if not running and self.status().state is McpState.FAILED and not self._restart_on_call:
            message = self.status().message
            raise McpUnavailable(f"{message}; /mcp restart {self.name} starts it again")
        life = await self._ensure_life()
        try:
            session = await asyncio.shield(life.settled)
        except McpUnavailable:
            raise
        except Exception as exc:
            raise McpUnavailable(describe(exc)) from None
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code == ANSWER_CUT:
                return CallAnswer(exc.message, is_error=True)
            if exc.code != CONNECTION_CLOSED:
                return CallAnswer(f"the server refused the call: {exc.message}", is_error=True)
            raise McpUnavailable(await self._loss_message(life)) from None
        except Exception as exc:  # the transport broke under the call
            raise McpUnavailable(life.lost_reason or describe(exc)) from None
        return call_answer(result)

    async def _loss_message(self, life: _Life) -> str:
        if life.task is not None:
            await asyncio.wait({life.task}, timeout=SETTLE_S)
        status = self.status()
        if status.state is McpState.FAILED and status.message:
            return status.message
        return life.lost_reason or "the server closed the connection"


async def _list_tools(session: ClientSession) -> list[Any]:
    """Every page of ``tools/list``."""
    from mcp_types import PaginatedRequestParams

    listed = await session.list_tools()
    tools = list(listed.tools)
    pages = 1
    while listed.next_cursor and pages < _MAX_PAGES:
        listed = await session.list_tools(params=PaginatedRequestParams(cursor=listed.next_cursor))
        tools.extend(listed.tools)
        pages += 1
    return tools


__all__ = ["SETTLE_S", "ServerConnection", "describe"]
