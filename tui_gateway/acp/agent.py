"""desk as an ACP agent: the protocol's methods over the in-process gateway.

One :class:`DeskAgent` serves one client (an editor) over the official SDK's connection. Every
method is a gateway call made off the event loop (``asyncio.to_thread``); the gateway's events
come back on its delivery thread and are handed to the loop, where :class:`~.pump.Pump` sends
them in order: a prompt's answer goes after the last chunk of its reply.

Stops: ``session/cancel`` is the person's stop from the editor (``acp.cancel``): the session's
running turn, whatever it does (streaming, a tool, a compression, waiting for a permission),
and its child agents stop as every stop does; the pending prompt is answered
``stopReason: "cancelled"``. A cancel that comes while the prompt is being submitted reaches
the turn as soon as it exists. The client going away is the system's stop (``acp.disconnect``),
made by :mod:`tui_gateway.acp.main`.

Approvals: a call that asks on the desk asks the client (``session/request_permission``, allow
once / allow always / reject) unless the session's mode says otherwise (:data:`MODES`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError
from acp import schema as s
from acp.helpers import update_agent_message_text, update_agent_thought_text
from acp.interfaces import Client
from acp.meta import PROTOCOL_VERSION

from agent.outcome import TurnStatus
from agent.stops import StopRequest, Surface
from contract.errors import GatewayError
from contract.events import (
    ApprovalRequest,
    ApprovalResolved,
    CompressionComplete,
    CompressionProgressed,
    ContextWindowKnown,
    GatewayEvent,
    MessageComplete,
    MessageDelta,
    ToolComplete,
    ToolStart,
)
from tui_gateway.acp.pump import Pump
from tui_gateway.acp.updates import prompt_text, replay, stop_reason, tool_finished, tool_started
from tui_gateway.gateway import Gateway
from tui_gateway.settings.mcp_settings import McpServerSettings

MODES: tuple[tuple[str, str, str], ...] = (
    ("ask", "Ask", "Ask before shell, write_file, MCP tools and paths outside the workspace"),
    ("allow", "Allow all", "Allow every tool call without asking"),
    ("read-only", "Read only", "Deny every call that would ask (reading the workspace works)"),
)
"""``session/set_mode``'s modes (id, name, description): the approval policy."""

CONTEXT_NOTIFICATION = "desk/context"
"""Extension notification (sent as ``_desk/context``): the context window and how full it is."""

COMPRESSION_NOTIFICATION = "desk/compression"
"""Extension notification (sent as ``_desk/compression``): a compression's progress and end."""

_OPTIONS = [
    s.PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
    s.PermissionOption(option_id="always", name="Allow always (this session)", kind="allow_always"),
    s.PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
]

GatewayOpener = Callable[[Path, tuple[McpServerSettings, ...]], Gateway]
"""Builds the gateway for the first session: the client's directory and MCP servers."""


@dataclass
class _Session:
    """What the ACP side keeps of one session (touched on the event loop only)."""

    session_id: str
    mode: str = "ask"
    prompting: bool = False
    cancelled: bool = False
    waiters: dict[str, asyncio.Future[MessageComplete]] = field(default_factory=dict)
    completes: dict[str, MessageComplete] = field(default_factory=dict)
    calls: dict[str, ToolStart] = field(default_factory=dict)
    asking: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def outcome(self, turn_id: str) -> asyncio.Future[MessageComplete]:
        """A future of the turn's outcome (already done when it came first)."""
        future: asyncio.Future[MessageComplete] = asyncio.get_running_loop().create_future()
        known = self.completes.pop(turn_id, None)
        if known is not None:
            future.set_result(known)
        else:
            self.waiters[turn_id] = future
        return future


class DeskAgent:
    """The ACP agent (the SDK's ``Agent`` protocol) over one gateway.

    Args:
        open_gateway: builds the gateway when the first session is made or loaded.
        loop: the event loop the connection runs on.
    """

    def __init__(self, open_gateway: GatewayOpener, loop: asyncio.AbstractEventLoop) -> None:
        self._open_gateway = open_gateway
        self._loop = loop
        self._gateway: Gateway | None = None
        self._cwd = Path.cwd()
        self._conn: Client | None = None
        self._pump = Pump()
        self._sessions: dict[str, _Session] = {}
        self._gateway_lock = asyncio.Lock()
        self._prompts = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def gateway(self) -> Gateway | None:
        """The gateway, once a session was made or loaded."""
        return self._gateway

    @property
    def pump(self) -> Pump:
        """What sends updates to the client, in order."""
        return self._pump

    async def idle(self) -> None:
        """Return once no prompt is being answered (each answer is queued to be written)."""
        await self._idle.wait()

    def on_connect(self, conn: Client) -> None:
        """The SDK hands over the client side of the connection."""
        self._conn = conn

    # -- the protocol --------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: s.ClientCapabilities | None = None,
        client_info: s.Implementation | None = None,
        **_kwargs: Any,
    ) -> s.InitializeResponse:
        """``initialize``: load session, text and embedded-context prompts, stdio and HTTP MCP
        servers from the client."""
        return s.InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=s.AgentCapabilities(
                load_session=True,
                prompt_capabilities=s.PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=s.McpCapabilities(http=True, sse=False),
            ),
            agent_info=s.Implementation(name="desk", title="desk", version=_version()),
        )

    async def authenticate(self, method_id: str, **_kwargs: Any) -> None:
        """``authenticate``: nothing to do (the model server's key is in desk's settings)."""
        return None

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_kwargs: Any
    ) -> s.NewSessionResponse:
        """``session/new``: a new desk session (saved in desk's database)."""
        gateway = await self._ready(cwd, mcp_servers)
        session_id = await asyncio.to_thread(gateway.session_create)
        self._sessions[session_id] = _Session(session_id)
        return s.NewSessionResponse(session_id=session_id, modes=_modes("ask"))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_kwargs: Any
    ) -> s.LoadSessionResponse:
        """``session/load``: resume a saved desk session; its history is sent again as
        ``session/update``s before the answer."""
        gateway = await self._ready(cwd, mcp_servers)
        try:
            resumed = await asyncio.to_thread(gateway.session_resume, session_id)
        except GatewayError as exc:
            data = {"sessionId": session_id, "message": exc.message}
            raise RequestError.invalid_params(data) from None
        state = self._sessions.setdefault(session_id, _Session(session_id))
        for update in replay(resumed.transcript, self._cwd):
            self._pump.put(self._update(session_id, update))
        await self._pump.flushed()
        return s.LoadSessionResponse(modes=_modes(state.mode))

    async def set_session_mode(self, session_id: str, mode_id: str, **_kwargs: Any) -> None:
        """``session/set_mode``: the session's approval policy (:data:`MODES`)."""
        if mode_id not in {m[0] for m in MODES}:
            raise RequestError.invalid_params({"modeId": mode_id})
        self._state(session_id).mode = mode_id

    async def prompt(self, session_id: str, prompt: list[Any], **_kwargs: Any) -> s.PromptResponse:
        """``session/prompt``: run the prompt as a turn; answered when it ends.

        Raises:
            RequestError: unknown session, an empty prompt, a prompt the gateway refuses, or
                a turn that failed (its one line in ``data.message``).
        """
        state = self._state(session_id)
        gateway = self._gateway
        assert gateway is not None
        text = prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params({"prompt": "the prompt has no text"})
        state.prompting, state.cancelled = True, False
        self._prompts += 1
        self._idle.clear()
        try:
            try:
                sent = await asyncio.to_thread(gateway.prompt_submit, session_id, text)
            except GatewayError as exc:
                raise RequestError.internal_error({"message": exc.message}) from None
            outcome = state.outcome(sent.turn_id)
            if state.cancelled:  # the cancel came while the prompt was being submitted
                await self._stop(session_id, sent.turn_id)
            complete = await outcome
        finally:
            state.prompting = False
            self._prompts -= 1
            if self._prompts == 0:
                self._idle.set()
        if complete.status == TurnStatus.FAILED:
            message = complete.error or complete.exit_reason
            raise RequestError.internal_error(
                {"message": message, "exitReason": complete.exit_reason}
            )
        meta = {"desk": {"exitReason": complete.exit_reason, "turnId": complete.turn_id}}
        return s.PromptResponse(stop_reason=stop_reason(complete), field_meta=meta)

    async def cancel(self, session_id: str, **_kwargs: Any) -> None:
        """``session/cancel``: the person's stop of what the session runs (``acp.cancel``)."""
        state = self._sessions.get(session_id)
        if state is None:
            return
        if state.prompting:
            state.cancelled = True
        await self._stop(session_id, None)

    # -- inside --------------------------------------------------------------------------------

    def _state(self, session_id: str) -> _Session:
        state = self._sessions.get(session_id)
        if state is None or self._gateway is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "message": "no such session"}
            )
        return state

    async def _ready(self, cwd: str, mcp_servers: list[Any] | None) -> Gateway:
        async with self._gateway_lock:
            servers = tuple(_mcp_settings(mcp_servers or []))
            if self._gateway is None:
                self._cwd = Path(cwd)
                gateway = await asyncio.to_thread(self._open_gateway, self._cwd, servers)
                gateway.subscribe(self._from_gateway)
                # The first prompt is offered the tools of every server that could start.
                await asyncio.to_thread(gateway.mcp.wait_started)
                self._gateway = gateway
            elif servers:
                names = ", ".join(m.name for m in servers)
                _say(f"desk acp: MCP servers of a later session are not started ({names})")
            return self._gateway

    async def _stop(self, session_id: str, turn_id: str | None) -> None:
        gateway = self._gateway
        if gateway is None:
            return
        stop = StopRequest.by_user(Surface.ACP_CANCEL, "cancelled in the editor")
        with contextlib.suppress(GatewayError):  # the session is gone: nothing to stop
            await asyncio.to_thread(gateway.session_interrupt, session_id, stop, turn_id)

    def _from_gateway(self, event: GatewayEvent) -> None:
        """On the gateway's delivery thread: hand the event to the loop."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: the client is gone
            self._loop.call_soon_threadsafe(self._on_event, event)

    def _on_event(self, event: GatewayEvent) -> None:
        state = self._sessions.get(event.session_id)
        if state is None:
            return
        sid, payload = state.session_id, event.payload
        if isinstance(payload, MessageDelta):
            if payload.reasoning:
                self._pump.put(self._update(sid, update_agent_thought_text(payload.reasoning)))
            if payload.text:
                self._pump.put(self._update(sid, update_agent_message_text(payload.text)))
        elif isinstance(payload, ToolStart):
            state.calls[payload.call_id] = payload
            self._pump.put(self._update(sid, tool_started(payload, self._cwd)))
        elif isinstance(payload, ToolComplete):
            state.calls.pop(payload.call_id, None)
            self._pump.put(self._update(sid, tool_finished(payload)))
        elif isinstance(payload, ApprovalRequest):
            self._pump.put(lambda: self._approval(state, payload))
        elif isinstance(payload, ApprovalResolved):
            asking = state.asking.pop(payload.request_id, None)
            if asking is not None and not asking.done():
                asking.cancel()  # answered by a stop: the client's question is moot
        elif isinstance(payload, MessageComplete):
            self._pump.put(lambda: _settle(state, payload))
        elif isinstance(payload, ContextWindowKnown):
            params = {"sessionId": sid, **payload.to_wire()}
            self._pump.put(self._ext(CONTEXT_NOTIFICATION, params))
        elif isinstance(payload, CompressionProgressed | CompressionComplete):
            params = {"sessionId": sid, "event": payload.TYPE, **payload.to_wire()}
            self._pump.put(self._ext(COMPRESSION_NOTIFICATION, params))

    def _update(self, session_id: str, update: Any) -> Callable[[], Any]:
        async def send() -> None:
            if self._conn is not None:
                await self._conn.session_update(session_id=session_id, update=update)

        return send

    def _ext(self, method: str, params: dict[str, Any]) -> Callable[[], Any]:
        async def send() -> None:
            if self._conn is not None:
                await self._conn.ext_notification(method, params)

        return send

    async def _approval(self, state: _Session, request: ApprovalRequest) -> None:
        """After the updates before it: answer by the mode, or ask the client (not awaited)."""
        decision = {"allow": "once", "read-only": "deny"}.get(state.mode)
        if decision is not None:
            await self._respond(state.session_id, request.request_id, decision)
            return
        task = asyncio.ensure_future(self._ask(state, request))
        state.asking[request.request_id] = task

    async def _ask(self, state: _Session, request: ApprovalRequest) -> None:
        call = next(
            (c for c in reversed(state.calls.values()) if c.name == request.tool),
            ToolStart(request.turn_id, request.request_id, request.tool, request.arguments),
        )
        shown = tool_started(call, self._cwd)
        tool_call = s.ToolCallUpdate(
            tool_call_id=call.call_id,
            title=shown.title if not request.reason else f"{shown.title} ({request.reason})",
            kind=shown.kind,
            status="pending",
            content=shown.content,
            locations=shown.locations,
            raw_input=shown.raw_input,
        )
        decision = "deny"
        try:
            assert self._conn is not None
            answer = await self._conn.request_permission(
                session_id=state.session_id, tool_call=tool_call, options=_OPTIONS
            )
            outcome = answer.outcome
            if isinstance(outcome, s.AllowedOutcome) and outcome.option_id in ("once", "always"):
                decision = outcome.option_id
        except asyncio.CancelledError:
            return  # a stop answered it
        except Exception as exc:  # the client failed or went away: nobody allowed it
            _say(f"desk acp: the permission request failed ({type(exc).__name__}): denied")
        finally:
            state.asking.pop(request.request_id, None)
        await self._respond(state.session_id, request.request_id, decision)

    async def _respond(self, session_id: str, request_id: str, decision: str) -> None:
        gateway = self._gateway
        if gateway is not None:
            await asyncio.to_thread(gateway.approval_respond, session_id, request_id, decision)


async def _settle(state: _Session, complete: MessageComplete) -> None:
    waiter = state.waiters.pop(complete.turn_id, None)
    if waiter is None:
        state.completes[complete.turn_id] = complete
    elif not waiter.done():
        waiter.set_result(complete)


def _modes(current: str) -> s.SessionModeState:
    return s.SessionModeState(
        current_mode_id=current,
        available_modes=[s.SessionMode(id=i, name=n, description=d) for i, n, d in MODES],
    )


def _mcp_settings(servers: list[Any]) -> list[McpServerSettings]:
    """The client's MCP servers as desk's settings (stdio and HTTP; others are skipped)."""
    out = []
    for server in servers:
        if isinstance(server, s.McpServerStdio):
            env = {v.name: v.value for v in server.env}
            out.append(McpServerSettings(server.name, server.command, tuple(server.args), env=env))
        elif isinstance(server, s.HttpMcpServer):
            headers = {h.name: h.value for h in server.headers}
            out.append(McpServerSettings(server.name, url=server.url, headers=headers))
    return out


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("agent-desk")
    except Exception:  # not installed as a package (a checkout on PYTHONPATH)
        return "0"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
