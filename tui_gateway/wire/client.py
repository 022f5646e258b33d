"""``RemoteGateway``: the gateway's Python methods, served by a child process over stdio.

``desk --gateway-cmd "desk gateway --stdio"`` runs the desk against a gateway in a child
process: this class starts the command, waits for its ``gateway.ready`` notification, and turns
each method call into a JSON-RPC request (see :mod:`contract`) and each
``event`` notification back into a :class:`~contract.events.GatewayEvent` with its typed
payload, delivered to subscribers exactly as :meth:`tui_gateway.gateway.Gateway.subscribe` does
(a :class:`~contract.subscription.Subscription` per subscriber, on its own thread).

The child and its JSON-RPC plumbing are a :class:`~tui_gateway.wire.child.ChildRpc`; it runs
in a session of its own (``start_new_session``), so a Ctrl+C typed in the terminal reaches the
frontend only; the frontend decides what to stop. :meth:`shutdown` asks the child for
``gateway.shutdown`` (a system stop), closes its stdin and waits (bounded) for it to exit;
:meth:`disconnect` only closes stdin, which the child books as the frontend going away
(``api.disconnect``).
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from types import TracebackType
from typing import IO, Any, TypeVar

import contract as c
from agent.stops import StopRequest, Surface
from contract.errors import GatewayError
from contract.events import (
    GatewayEvent,
)
from contract.methods import console as con
from contract.methods import lifecycle, replay, server, turns, workspace
from contract.methods import sessions as ses
from contract.methods.declare import Method
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
from tui_gateway.wire.child import ChildRpc
from tui_gateway.wire.codec import DecodeError, decode, decode_event, encode
from tui_gateway.wire.remote_events import RemoteEvents

_log = logging.getLogger(__name__)

P = TypeVar("P")
R = TypeVar("R")

EXIT_BOUND_S = 5.0
"""How long :meth:`RemoteGateway.shutdown` waits for the child to exit after its answer."""


class RemoteServer:
    """A remote gateway's model server: ``server.status`` over the wire.

    Args:
        gateway: the remote gateway.
    """

    def __init__(self, gateway: RemoteGateway) -> None:
        self._gateway = gateway

    def status(self) -> ServerStatus:
        """The model server's state as the remote gateway last found it."""
        return self._gateway.server_status()

    def check(self) -> None:
        """Have the remote gateway ask its model server now (in the background)."""
        self._gateway.server_status(check=True)


class RemoteGateway:
    """A gateway in a child process, behind the same methods as the in-process one.

    Args:
        command: the child's command line (a string is split like a shell would).
        env: the child's environment (default: this process's).
        cwd: the child's working directory.
        stderr: where the child's stderr goes (default: this process's stderr).
        call_timeout_s: how long a method call waits for its answer, in seconds.
        ready_timeout_s: how long to wait for ``gateway.ready``, in seconds.

    Raises:
        GatewayError: the child could not start, exited, or speaks another protocol version.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: int | IO[Any] | None = None,
        call_timeout_s: float = 30.0,
        ready_timeout_s: float = 30.0,
    ) -> None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.call_timeout_s = call_timeout_s
        self._lock = threading.Lock()
        self._events = RemoteEvents()
        self._ready: Future[c.Ready] = Future()
        self._report: ShutdownReport | None = None
        self._commands: list[ConsoleCommandInfo] | None = None
        self._child = ChildRpc(
            argv,
            on_notification=self._on_notification,
            on_exit=self._on_exit,
            env=env,
            cwd=cwd,
            stderr=stderr,
        )
        try:
            self.ready = self._ready.result(ready_timeout_s)
        except FutureTimeout:
            self._child.end(1.0)
            raise GatewayError(
                f"the gateway did not say it was ready within {ready_timeout_s:g} s"
            ) from None
        except GatewayError:
            self._child.end(1.0)
            raise
        if self.ready.protocol_version != c.PROTOCOL_VERSION:
            self._child.end(1.0)
            raise GatewayError(
                f"the gateway speaks protocol {self.ready.protocol_version}, "
                f"this desk speaks {c.PROTOCOL_VERSION}"
            )

    # -- the child ---------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._child.proc.pid

    @property
    def returncode(self) -> int | None:
        """The child's exit status, once it has exited."""
        return self._child.proc.poll()

    def wait_exit(self, timeout_s: float) -> int | None:
        """Wait (bounded) for the child to exit; returns its status, or None if it still runs."""
        return self._child.wait_exit(timeout_s)

    def disconnect(self) -> None:
        """Close the child's stdin: it stops its work as ``api.disconnect``, shuts down, exits.

        Events it sends meanwhile still reach the subscribers.
        """
        self._child.close_stdin()

    def kill(self) -> None:
        """SIGKILL the child now: what a crash of the gateway looks like.

        A turn it was running ends for the subscribers as ``failed(GatewayExited)``.
        """
        self._child.kill()

    # -- the wire ----------------------------------------------------------------------------------

    def request(self, method: str, params: Any, timeout_s: float | None = None) -> Any:
        """Send a request and wait for its result (raw JSON data).

        Args:
            method: the method's wire name.
            params: a params dataclass (or a dict sent as is).
            timeout_s: the bound (default ``call_timeout_s``).

        Raises:
            GatewayError: the error the gateway answered (with its code), no answer in time, or
                the child exited.
        """
        body = params if isinstance(params, dict) else encode(params)
        bound = self.call_timeout_s if timeout_s is None else timeout_s
        return self._child.request(method, body, bound)

    def _call(
        self, method: Method[P, R], params: P | dict[str, Any], timeout_s: float | None = None
    ) -> R:
        """Send ``method`` with ``params`` and decode its answer as the declared result type."""
        data = self.request(method.name, params, timeout_s)
        try:
            value: R = decode(method.result, data, path="result", strict=False)
        except DecodeError as exc:
            raise GatewayError(f"{method.name}: the gateway answered {exc}") from None
        return value

    def _on_notification(self, method: Any, params: Any) -> None:
        try:
            if method == "event":
                event = decode_event(params)
                if event is not None:
                    self._events.deliver(event)
            elif method == "gateway.ready" and not self._ready.done():
                self._ready.set_result(decode(c.Ready, params, path="params", strict=False))
        except DecodeError as exc:
            _log.warning("the gateway sent a %s notification that does not fit: %s", method, exc)

    def _on_exit(self) -> None:
        self._events.gateway_exited()
        if not self._ready.done():
            self._ready.set_exception(GatewayError("the gateway process has exited"))

    # -- subscribers -------------------------------------------------------------------------------

    def subscribe(self, callback: EventCallback) -> Subscription:
        """Deliver every event from now on to ``callback``, on a delivery thread of its own."""
        return self._events.subscribe(callback)

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering to ``sub`` and end its delivery thread."""
        self._events.unsubscribe(sub)

    @property
    def running_turns(self) -> int:
        """How many turns run now, as the events said."""
        return self._events.running_turns

    # -- the methods -------------------------------------------------------------------------------

    def session_create(self, title: str = "") -> str:
        """``session.create``; returns the session id."""
        return self._call(ses.SESSION_CREATE, ses.SessionCreateParams(title)).session_id

    def session_list(self, limit: int = 50) -> list[SessionInfo]:
        """``session.list``: live and saved sessions, most recently used first."""
        return self._call(ses.SESSION_LIST, ses.SessionListParams(limit)).sessions

    def session_undo(self, session_id: str) -> UndoResult:
        """``session.undo``: put back the files of the session's last turn that changed them."""
        return self._call(ses.SESSION_UNDO, ses.SessionUndoParams(session_id))

    def session_diff(self, session_id: str) -> SessionDiff:
        """``session.diff``: what the session's turns changed in the workspace."""
        return self._call(ses.SESSION_DIFF, ses.SessionDiffParams(session_id))

    def session_resume(self, session_id: str | None = None) -> ResumedSession:
        """``session.resume``: make a saved session live again; returns its transcript."""
        return self._call(ses.SESSION_RESUME, ses.SessionResumeParams(session_id))

    def session_rename(self, session_id: str, title: str) -> None:
        """``session.rename``: rename a live or saved session."""
        self._call(ses.SESSION_RENAME, ses.SessionRenameParams(session_id, title))

    def session_delete(self, session_id: str) -> bool:
        """``session.delete``: delete a session (its running turn is stopped first)."""
        return self._call(ses.SESSION_DELETE, ses.SessionDeleteParams(session_id)).deleted

    def prompt_submit(
        self,
        session_id: str,
        text: str,
        *,
        stop: StopRequest | None = None,
        entered_at: float | None = None,
    ) -> SubmitResult:
        """``prompt.submit``: run or queue a prompt (with ``stop``: stop and send;
        ``entered_at``: when its Enter was made)."""
        wire = _stop_params(stop) if stop is not None else None
        params = turns.PromptSubmitParams(session_id, text, stop=wire, entered_at=entered_at)
        return self._call(turns.PROMPT_SUBMIT, params)

    def prompt_steer(self, session_id: str, text: str, stop: StopRequest) -> SteerResult:
        """``prompt.steer``: text for the running turn at its next boundary.

        Raises:
            GatewayError: ``stop`` is a hard stop (code -32602, nothing sent), or refused.
        """
        params = turns.PromptSteerParams(session_id, text, _stop_params(stop, soft=True))
        return self._call(turns.PROMPT_STEER, params)

    def session_agents(self, session_id: str) -> list[ChildInfo]:
        """``session.agents``: the session's child agents."""
        return self._call(turns.SESSION_AGENTS, turns.SessionAgentsParams(session_id)).agents

    def prompt_remove(self, session_id: str, turn_id: str) -> bool:
        """``prompt.remove``: drop a queued prompt; False when it is not queued any more."""
        params = turns.PromptRemoveParams(session_id, turn_id)
        return self._call(turns.PROMPT_REMOVE, params).removed

    def session_queue(self, session_id: str) -> list[QueuedPromptInfo]:
        """``session.queue``: the prompts waiting in the session's queue, in order."""
        return self._call(turns.SESSION_QUEUE, turns.SessionQueueParams(session_id)).prompts

    def prompt_edit(self, session_id: str, turn_id: str, text: str) -> bool:
        """``prompt.edit``: replace a queued prompt's text in its place; False when it is not
        queued any more."""
        params = turns.PromptEditParams(session_id, turn_id, text)
        return self._call(turns.PROMPT_EDIT, params).edited

    def session_interrupt(
        self,
        session_id: str,
        stop: StopRequest,
        turn_id: str | None = None,
        keyed_at: float | None = None,
    ) -> str | None:
        """``session.interrupt``: hard-stop the running turn as ``stop`` says (a stop key made
        at ``keyed_at``: the gateway's key rule); returns its id.

        Raises:
            GatewayError: ``stop`` is a soft interrupt (the wire carries hard stops only; code
                -32602, nothing sent), or the gateway refused the stop.
        """
        params = turns.SessionInterruptParams(session_id, _stop_params(stop), turn_id, keyed_at)
        return self._call(turns.SESSION_INTERRUPT, params).turn_id

    def frontend_gone(self, surface: Surface = Surface.API_DISCONNECT) -> int:
        """The frontend went away: stop every running turn of the gateway's sessions as the
        system from ``surface`` (``session.interrupt`` for each; the wire has no method of its
        own for it, and the child gateway books ``api.disconnect`` itself when its stdin
        closes). Returns how many turns were stopped.

        Raises:
            ValueError: ``surface`` is a user surface.
            GatewayError: the gateway refused a request.
        """
        stop = StopRequest.by_system(surface, "the frontend went away")
        running = [info.session_id for info in self.session_list(limit=1000) if info.running]
        return sum(self.session_interrupt(sid, stop) is not None for sid in running)

    def session_compress(self, session_id: str, focus: str | None = None) -> SubmitResult:
        """``session.compress``: compress the transcript now (queued behind a running turn)."""
        return self._call(turns.SESSION_COMPRESS, turns.SessionCompressParams(session_id, focus))

    def compression_cancel(self, session_id: str, stop: StopRequest) -> bool:
        """``compression.cancel``: hard-stop the running compression as ``stop`` says.

        Raises:
            GatewayError: ``stop`` is a soft interrupt (code -32602, nothing sent).
        """
        params = turns.CompressionCancelParams(session_id, _stop_params(stop))
        return self._call(turns.COMPRESSION_CANCEL, params).cancelled

    def approval_respond(self, session_id: str, request_id: str, decision: str) -> bool:
        """``approval.respond``: answer a pending approval (``once``, ``always``, ``deny``;
        another word is the gateway's to refuse)."""
        data = {"session_id": session_id, "request_id": request_id, "decision": decision}
        return self._call(turns.APPROVAL_RESPOND, data).accepted

    def console_commands(self) -> list[ConsoleCommandInfo]:
        """``console.commands``: the commands the remote gateway's console runs, by name.

        Asked once; the answer is kept (a gateway's commands do not change while it runs).

        Raises:
            GatewayError: no answer in time, or the child exited.
        """
        with self._lock:
            known = self._commands
        if known is None:
            known = self._call(con.CONSOLE_COMMANDS, con.ConsoleCommandsParams()).commands
            with self._lock:
                self._commands = known
        return list(known)

    def workspace_files(self, query: str = "", limit: int = 50) -> list[str]:
        """``workspace.files``: the remote workspace's files matching ``query``, best first."""
        params = workspace.WorkspaceFilesParams(query, limit)
        return self._call(workspace.WORKSPACE_FILES, params).files

    def server_status(self, check: bool = False) -> ServerStatus:
        """``server.status``: the model server's state (with ``check``: ask it now)."""
        return self._call(server.SERVER_STATUS, server.ServerStatusParams(check))

    @property
    def server(self) -> RemoteServer:
        """The remote gateway's model server (as ``Gateway.server`` is the embedded one's)."""
        return RemoteServer(self)

    def console_run(self, session_id: str, line: str) -> str:
        """``console.run``: run a command line; returns the command id."""
        return self._call(con.CONSOLE_RUN, con.ConsoleRunParams(session_id, line)).command_id

    def console_cancel(self, command_id: str, stop: StopRequest) -> bool:
        """``console.cancel``: cancel a command as ``stop`` says.

        Raises:
            GatewayError: ``stop`` is a soft interrupt (code -32602, nothing sent).
        """
        params = con.ConsoleCancelParams(command_id, _stop_params(stop))
        return self._call(con.CONSOLE_CANCEL, params).cancelled

    def events_since(self, session_id: str, seq: int = 0) -> tuple[list[GatewayEvent], bool]:
        """``session.events.since``: the kept events after ``seq`` and whether some were dropped."""
        params = replay.EventsSinceParams(session_id, seq)
        result = self._call(replay.SESSION_EVENTS_SINCE, params)
        events = []
        for wire in result.events:
            event = decode_event(encode(wire), path="result.events[]")
            if event is not None:
                events.append(event)
        return events, result.truncated

    def shutdown(self, timeout_s: float | None = None) -> ShutdownReport:
        """``gateway.shutdown`` (a system stop of everything), then close stdin and wait (bounded).

        Calling it again returns the first report. When the child has gone already, the report
        says so in ``threads_left``.
        """
        with self._lock:
            if self._report is not None:
                return self._report
        bound = 10.0 if timeout_s is None else timeout_s
        try:
            params = lifecycle.GatewayShutdownParams(timeout_s)
            report = self._call(lifecycle.GATEWAY_SHUTDOWN, params, bound + 5.0)
        except GatewayError as exc:
            report = ShutdownReport(0, 0, [f"no report: {exc.message}"])
        self._child.end(EXIT_BOUND_S)
        with self._lock:
            if self._report is None:
                self._report = report
            report = self._report
        self._events.close()
        return report

    def close(self) -> None:
        """Same as :meth:`shutdown`."""
        self.shutdown()

    def __enter__(self) -> RemoteGateway:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()


def _stop_params(stop: StopRequest, *, soft: bool = False) -> c.StopParams:
    """The ``stop`` object of ``stop``; a soft interrupt where a hard stop goes (or the reverse)
    is refused before anything is sent."""
    try:
        return c.StopParams.of(stop, soft=soft)
    except ValueError as exc:
        raise GatewayError(str(exc), code=c.INVALID_PARAMS) from None
