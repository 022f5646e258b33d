"""The gateway contract on the wire: every method, notification, event payload and error code.

This module is the one source of truth: :mod:`tui_gateway.wire.dispatch` serves the methods
declared in :data:`METHODS`, :class:`tui_gateway.wire.client.RemoteGateway` calls them, and
``docs/protocol.md`` is generated from it::

    python -m tui_gateway.wire.contract --markdown > docs/protocol.md

(a test fails when the file and this module drift apart).

Every method's params and result are typed dataclasses, decoded strictly (an unknown or
mistyped member is an invalid-params error, ``-32602``). A stop always states who asks:
``session.interrupt`` and ``console.cancel`` carry ``issuer``, ``surface`` and ``reason``, and
their params are refused when the issuer does not match the surface (``StopRequest`` checks).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import inspect
import json
import sys
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent.stops import USER_SURFACES, Issuer, StopRequest, Surface
from tui_gateway.events import EVENT_TYPES, PROTOCOL_VERSION, MessageDelta, Payload, StopReceipt
from tui_gateway.types import (
    ResumedSession,
    SessionInfo,
    ShutdownReport,
    SubmitResult,
    TranscriptEntry,
)
from tui_gateway.wire.codec import field_types

__all__ = [
    "EVENT_TYPES",
    "METHODS",
    "PROTOCOL_VERSION",
    "Method",
    "markdown",
]

# -- error codes ---------------------------------------------------------------------------------

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
GATEWAY_ERROR = -32000

ERROR_CODES: tuple[tuple[int, str, str], ...] = (
    (PARSE_ERROR, "parse error", "the line is not JSON (or not UTF-8)"),
    (
        INVALID_REQUEST,
        "invalid request",
        'not a JSON-RPC 2.0 request object: no `jsonrpc: "2.0"`, no string `method`, a bad '
        "`id`, params that are not an object or array, an empty batch, or a line longer than "
        "the limit",
    ),
    (METHOD_NOT_FOUND, "method not found", "the method is not in this contract"),
    (
        INVALID_PARAMS,
        "invalid params",
        "params do not fit the method (unknown, missing or mistyped member, positional params, "
        "a stop whose issuer does not match its surface), or they name an unknown session",
    ),
    (INTERNAL_ERROR, "internal error", "a bug in the gateway; the request may not have run"),
    (
        GATEWAY_ERROR,
        "gateway error",
        "the gateway refused the request (shutting down, the store failed, no saved session)",
    ),
)
"""(code, name, when) of every error a method may answer with."""

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest JSON-RPC line the stdio transport reads, in bytes; a longer one is refused whole."""

MAX_HTTP_BODY_BYTES = 1_000_000
"""Largest HTTP request body accepted, in bytes (413 beyond)."""

REPLAY_CAPACITY = 2000
"""Events kept per session for ``session.events.since`` (the oldest are dropped first)."""


# -- stops ---------------------------------------------------------------------------------------


def _stop(issuer: Issuer, surface: Surface, reason: str, hard: bool = True) -> StopRequest:
    if not reason.strip():
        raise ValueError("reason must not be empty: say why the work is stopped")
    return StopRequest(issuer=Issuer(issuer), surface=Surface(surface), reason=reason, hard=hard)


# -- params and results --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionCreateParams:
    """Params of ``session.create``.

    Attributes:
        title: the session's title; empty names it after its first prompt.
    """

    title: str = ""


@dataclass(frozen=True, slots=True)
class SessionCreateResult:
    """Result of ``session.create``.

    Attributes:
        session_id: the new session's id.
    """

    session_id: str


@dataclass(frozen=True, slots=True)
class SessionListParams:
    """Params of ``session.list``.

    Attributes:
        limit: most sessions returned (1..1000).
    """

    limit: int = 50

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= 1000:
            raise ValueError("limit must be 1..1000")


@dataclass(frozen=True, slots=True)
class SessionListResult:
    """Result of ``session.list``.

    Attributes:
        sessions: live and saved sessions, most recently used first.
    """

    sessions: list[SessionInfo]


@dataclass(frozen=True, slots=True)
class SessionResumeParams:
    """Params of ``session.resume``.

    Attributes:
        session_id: the saved session; null resumes the most recent one.
    """

    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class SessionRenameParams:
    """Params of ``session.rename``.

    Attributes:
        session_id: a live or saved session.
        title: the new title (its runs of white space become one space; not empty).
    """

    session_id: str
    title: str


@dataclass(frozen=True, slots=True)
class SessionRenameResult:
    """Result of ``session.rename``.

    Attributes:
        renamed: always true (a refusal is an error).
    """

    renamed: bool


@dataclass(frozen=True, slots=True)
class SessionDeleteParams:
    """Params of ``session.delete``.

    Attributes:
        session_id: a live or saved session.
    """

    session_id: str


@dataclass(frozen=True, slots=True)
class SessionDeleteResult:
    """Result of ``session.delete``.

    Attributes:
        deleted: false when there was no such session.
    """

    deleted: bool


@dataclass(frozen=True, slots=True)
class PromptSubmitParams:
    """Params of ``prompt.submit``.

    Attributes:
        session_id: the session.
        text: the prompt (not empty; at most the gateway's ``max_prompt_chars``).
    """

    session_id: str
    text: str


@dataclass(frozen=True, slots=True)
class PromptRemoveParams:
    """Params of ``prompt.remove``.

    Attributes:
        session_id: the session.
        turn_id: the queued prompt's turn id (from ``prompt.submit``).
    """

    session_id: str
    turn_id: str


@dataclass(frozen=True, slots=True)
class PromptRemoveResult:
    """Result of ``prompt.remove``.

    Attributes:
        removed: false when the prompt was not queued any more (it runs, or it ended).
    """

    removed: bool


@dataclass(frozen=True, slots=True)
class SessionInterruptParams:
    """Params of ``session.interrupt``: who stops the running turn, from where, and why.

    Attributes:
        session_id: the session.
        issuer: ``user`` or ``system``; it must match the surface (see Stop surfaces).
        surface: where the stop comes from.
        reason: short human text, shown in the stop receipt (not empty).
        turn_id: stop only this turn; when another turn runs, nothing happens.
        hard: true for a hard cancel; false for a soft interrupt, which never aborts anything.
    """

    session_id: str
    issuer: Issuer
    surface: Surface
    reason: str
    turn_id: str | None = None
    hard: bool = True

    def __post_init__(self) -> None:
        self.stop()

    def stop(self) -> StopRequest:
        """The :class:`StopRequest` these params state.

        Raises:
            ValueError: the issuer does not match the surface, or the reason is empty.
        """
        return _stop(self.issuer, self.surface, self.reason, self.hard)


@dataclass(frozen=True, slots=True)
class SessionInterruptResult:
    """Result of ``session.interrupt``.

    Attributes:
        turn_id: the turn the stop was sent to, or null when nothing ran.
    """

    turn_id: str | None


@dataclass(frozen=True, slots=True)
class SessionCompressParams:
    """Params of ``session.compress``.

    Attributes:
        session_id: the session.
        focus: what the summary should keep in view (``/compress FOCUS``), or null.
    """

    session_id: str
    focus: str | None = None


@dataclass(frozen=True, slots=True)
class CompressionCancelParams:
    """Params of ``compression.cancel``: who cancels the running compression, and why.

    Attributes:
        session_id: the session.
        issuer: ``user`` or ``system``; it must match the surface.
        surface: where the cancel comes from.
        reason: short human text (not empty).
    """

    session_id: str
    issuer: Issuer
    surface: Surface
    reason: str

    def __post_init__(self) -> None:
        self.stop()

    def stop(self) -> StopRequest:
        """The :class:`StopRequest` these params state.

        Raises:
            ValueError: the issuer does not match the surface, or the reason is empty.
        """
        return _stop(self.issuer, self.surface, self.reason)


@dataclass(frozen=True, slots=True)
class CompressionCancelResult:
    """Result of ``compression.cancel``.

    Attributes:
        cancelled: false when no compression was running before its commit.
    """

    cancelled: bool


@dataclass(frozen=True, slots=True)
class ApprovalRespondParams:
    """Params of ``approval.respond``.

    Attributes:
        session_id: the session.
        request_id: from the ``approval.request`` event.
        decision: ``once``, ``always`` (this tool, for the rest of the session) or ``deny``.
    """

    session_id: str
    request_id: str
    decision: Literal["once", "always", "deny"]


@dataclass(frozen=True, slots=True)
class ApprovalRespondResult:
    """Result of ``approval.respond``.

    Attributes:
        accepted: false when the prompt is no longer pending (answered, or its turn stopped).
    """

    accepted: bool


@dataclass(frozen=True, slots=True)
class ConsoleRunParams:
    """Params of ``console.run``.

    Attributes:
        session_id: the session the command line is typed in.
        line: the command line (``/help`` lists the commands).
    """

    session_id: str
    line: str


@dataclass(frozen=True, slots=True)
class ConsoleRunResult:
    """Result of ``console.run``.

    Attributes:
        command_id: the command's id; its output and outcome arrive as events.
    """

    command_id: str


@dataclass(frozen=True, slots=True)
class ConsoleCancelParams:
    """Params of ``console.cancel``: who cancels the command, from where, and why.

    Attributes:
        command_id: the command.
        issuer: ``user`` or ``system``; it must match the surface.
        surface: where the cancel comes from (a person's is ``console.cancel``).
        reason: short human text (not empty).
    """

    command_id: str
    issuer: Issuer
    surface: Surface
    reason: str

    def __post_init__(self) -> None:
        self.stop()

    def stop(self) -> StopRequest:
        """The :class:`StopRequest` these params state.

        Raises:
            ValueError: the issuer does not match the surface, or the reason is empty.
        """
        return _stop(self.issuer, self.surface, self.reason)


@dataclass(frozen=True, slots=True)
class ConsoleCancelResult:
    """Result of ``console.cancel``.

    Attributes:
        cancelled: false when the command had already finished.
    """

    cancelled: bool


@dataclass(frozen=True, slots=True)
class EventsSinceParams:
    """Params of ``session.events.since``.

    Attributes:
        session_id: the session ("" for gateway-wide events).
        seq: return the events after this sequence number (0: all that are kept).
    """

    session_id: str
    seq: int = 0

    def __post_init__(self) -> None:
        if self.seq < 0:
            raise ValueError("seq must be >= 0")


@dataclass(frozen=True, slots=True)
class WireEvent:
    """An event as it travels: the ``params`` of an ``event`` notification.

    Attributes:
        type: the payload's event type (see Events).
        session_id: the session ("" for gateway-wide events).
        seq: per-session monotonic sequence number; a gap means coalesced or dropped deltas.
        payload: the event's payload, with its ``version``.
    """

    type: str
    session_id: str
    seq: int
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EventsSinceResult:
    """Result of ``session.events.since``.

    Attributes:
        session_id: the session.
        events: the kept events after ``seq``, oldest first.
        truncated: true when events after ``seq`` were dropped from the ring (too old).
        last_seq: the newest sequence number kept (``seq`` when nothing is kept).
    """

    session_id: str
    events: list[WireEvent]
    truncated: bool
    last_seq: int


@dataclass(frozen=True, slots=True)
class GatewayShutdownParams:
    """Params of ``gateway.shutdown``.

    Attributes:
        timeout_s: how long to wait for the workers, in seconds (null: the gateway's bound).
    """

    timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.timeout_s is not None and not 0 <= self.timeout_s <= 600:
            raise ValueError("timeout_s must be 0..600 seconds")


@dataclass(frozen=True, slots=True)
class Ready:
    """Params of the ``gateway.ready`` notification, the first line a stdio gateway writes.

    Attributes:
        protocol_version: this contract's version; a client refuses a version it does not speak.
        model: the model new sessions talk to.
        base_url: the model server's OpenAI base URL.
        demo: true when the gateway runs the built-in demo model.
        replay_capacity: events kept per session for ``session.events.since``.
        pid: the gateway's process id.
    """

    protocol_version: int
    model: str
    base_url: str
    demo: bool
    replay_capacity: int
    pid: int


@dataclass(frozen=True, slots=True)
class RunAccepted:
    """The first server-sent event of an HTTP run stream (``event: run.accepted``).

    Attributes:
        run_id: the run (the turn id); ``POST /v1/runs/{run_id}/stop`` stops it.
        session_id: the session.
        queued: true when it waits behind a running turn.
    """

    run_id: str
    session_id: str
    queued: bool


# -- methods -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Method:
    """One JSON-RPC method of the contract.

    Attributes:
        name: the wire name.
        params: the params dataclass.
        result: the result dataclass.
        summary: what it does, in a sentence or two.
        blocking: it may wait (bounded) on workers or the store; a stdio gateway runs it off its
            reader thread, so a stop sent meanwhile is never delayed behind it.
    """

    name: str
    params: type[Any]
    result: type[Any]
    summary: str
    blocking: bool = False


METHODS: tuple[Method, ...] = (
    Method(
        "session.create",
        SessionCreateParams,
        SessionCreateResult,
        "Create an empty live session. When the gateway holds too many, the least recently "
        "used one is evicted (its running turn is stopped as `session.evicted` first).",
        blocking=True,
    ),
    Method(
        "session.list",
        SessionListParams,
        SessionListResult,
        "Live and saved sessions, most recently used first.",
        blocking=True,
    ),
    Method(
        "session.resume",
        SessionResumeParams,
        ResumedSession,
        "Make a saved session live again and return its transcript (archived messages left out).",
        blocking=True,
    ),
    Method(
        "session.rename",
        SessionRenameParams,
        SessionRenameResult,
        "Rename a live or saved session.",
        blocking=True,
    ),
    Method(
        "session.delete",
        SessionDeleteParams,
        SessionDeleteResult,
        "Delete a session for good; its running turn is stopped first (the person asked: "
        "`interrupted_by_user`) and waited for (bounded).",
        blocking=True,
    ),
    Method(
        "prompt.submit",
        PromptSubmitParams,
        SubmitResult,
        "Run the prompt as the session's next turn, or queue it behind the running one (a "
        "`prompt.queued` event says so). Its events follow as notifications.",
    ),
    Method(
        "prompt.remove",
        PromptRemoveParams,
        PromptRemoveResult,
        "Remove a queued prompt before it runs (a `prompt.dropped` event follows).",
    ),
    Method(
        "session.interrupt",
        SessionInterruptParams,
        SessionInterruptResult,
        "Stop the session's running turn, booked to the stated issuer and surface. Queued "
        "prompts stay queued. The turn ends with one `message.complete` whose `exit_reason` is "
        "`interrupted_by_user` for a user surface, `interrupted_by_system(<surface>)` otherwise.",
    ),
    Method(
        "session.compress",
        SessionCompressParams,
        SubmitResult,
        "Compress the transcript now (`/compress`): runs on the session's worker like a turn "
        "(queued behind a running one), ignores the cooldown, reports `compression.progress` "
        "and ends with one `compression.complete` (no `message.complete`).",
    ),
    Method(
        "compression.cancel",
        CompressionCancelParams,
        CompressionCancelResult,
        "Hard-stop the session's running compression, booked to the stated issuer. Before "
        "commit admission everything is rolled back; after it, the commit completes and the "
        "stop ends the rest of the turn.",
    ),
    Method(
        "approval.respond",
        ApprovalRespondParams,
        ApprovalRespondResult,
        "Answer a pending tool approval (`approval.request`).",
    ),
    Method(
        "console.run",
        ConsoleRunParams,
        ConsoleRunResult,
        "Run a console command line on a console worker; output arrives as `console.output` "
        "events and the outcome as one `console.complete`.",
    ),
    Method(
        "console.cancel",
        ConsoleCancelParams,
        ConsoleCancelResult,
        "Drop a queued command, or hard-stop a running one, booked to the stated issuer.",
    ),
    Method(
        "session.events.since",
        EventsSinceParams,
        EventsSinceResult,
        f"Replay the session's events after `seq` from a bounded ring ({REPLAY_CAPACITY:,} "
        "events per session by default); `truncated` says when older ones were dropped. A client "
        "that saw a gap in `seq` can fetch what it missed.",
    ),
    Method(
        "gateway.shutdown",
        GatewayShutdownParams,
        ShutdownReport,
        "A system stop of everything (`gateway.shutdown`): queued prompts dropped, running turns "
        "and console commands hard-stopped, then a bounded wait for every worker. A stdio gateway "
        "exits after answering.",
        blocking=True,
    ),
)
"""Every method of the contract."""

METHODS_BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}


@dataclass(frozen=True, slots=True)
class Notification:
    """A notification the gateway sends (never answered)."""

    name: str
    params: type[Any]
    summary: str


NOTIFICATIONS: tuple[Notification, ...] = (
    Notification(
        "gateway.ready",
        Ready,
        "Sent once, first, by a stdio gateway when it is ready for requests.",
    ),
    Notification(
        "event",
        WireEvent,
        "One gateway event (see Events), in order per session. Delta events (`message.delta`, "
        "`tool.output`, `console.output`, `compression.progress`) may be coalesced (about every "
        "30 ms); when the client reads too slowly, `message.delta` may also be dropped "
        "(`message.complete` carries the canonical text; `session.events.since` replays what "
        "was dropped). Every other event is a control event, never coalesced or dropped.",
    ),
)


@dataclass(frozen=True, slots=True)
class Route:
    """One HTTP route of ``desk serve``."""

    method: str
    path: str
    body: str
    response: str
    summary: str


ROUTES: tuple[Route, ...] = (
    Route(
        "POST",
        "/v1/sessions",
        '`{"title": string}` (optional)',
        '201 `{"session_id", "title", "model"}`',
        "Create a session (`session.create`).",
    ),
    Route("GET", "/v1/sessions", "", '200 `{"sessions": [SessionInfo]}`', "`session.list`."),
    Route(
        "POST",
        "/v1/sessions/{session_id}/runs",
        '`{"prompt": string}`',
        "200 `text/event-stream`",
        "Submit a prompt and stream that run's events until its `message.complete`: first "
        "`event: run.accepted` (RunAccepted), then one SSE event per gateway event (`event:` "
        "its type, `id:` its seq, `data:` a WireEvent). The run id is also in the "
        "`x-desk-run-id` header. A client that disconnects before the end stops the run as the "
        "system (`api.disconnect`). An `approval.request` is answered with `approval.respond` "
        "over `/v1/rpc`.",
    ),
    Route(
        "POST",
        "/v1/runs/{run_id}/stop",
        '`{"reason": string}` (optional)',
        '200 `{"run_id", "stopped"}`',
        "Stop a run as the user (`api.stop`); a queued run is removed. `stopped` is false when "
        "the run had already ended.",
    ),
    Route(
        "GET",
        "/v1/sessions/{session_id}/messages",
        "",
        '200 `{"session_id", "messages": [{"role", "content", ...}]}`',
        "The live session's transcript, in the OpenAI message format.",
    ),
    Route(
        "GET",
        "/v1/sessions/{session_id}/events?since=N",
        "",
        "200 EventsSinceResult",
        "`session.events.since` over HTTP.",
    ),
    Route(
        "POST",
        "/v1/chat/completions",
        "OpenAI chat completion request",
        "OpenAI `chat.completion` or a stream of `chat.completion.chunk`",
        "OpenAI-compatible facade: runs the agent on the last user message in a fresh session "
        "(stream and non-stream). The run id is in the `x-desk-run-id` header; a disconnect "
        "stops the run as the system (`api.disconnect`); tool calls that need approval are "
        "denied (nobody can answer).",
    ),
    Route("GET", "/v1/models", "", "OpenAI model list", "The model desk runs, for OpenAI clients."),
    Route(
        "POST",
        "/v1/rpc",
        "one JSON-RPC 2.0 request (or batch)",
        "the JSON-RPC response",
        "Any method of this contract over HTTP (no notifications: use the streams).",
    ),
)
"""The routes of ``desk serve``; every one needs ``Authorization: Bearer <token>``."""

HTTP_STATUSES: tuple[tuple[int, str], ...] = (
    (400, "malformed JSON, or a body that does not fit the route"),
    (401, "missing or wrong bearer token (every route)"),
    (404, "unknown route, session or run"),
    (413, f"body larger than {MAX_HTTP_BODY_BYTES:,} bytes"),
    (503, "the gateway is shutting down"),
)


# -- markdown ------------------------------------------------------------------------------------


def _doc_parts(cls: type[Any]) -> tuple[str, dict[str, str]]:
    """The summary paragraph and the ``Attributes:`` descriptions of a class docstring."""
    doc = inspect.getdoc(cls) or ""
    if cls.__doc__ is None or (
        dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "(")
    ):
        return "", {}
    lines = doc.splitlines()
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        stripped = line.strip()
        if stripped.endswith(":") and stripped[:-1] in _SECTIONS:
            break
        if stripped:
            paragraphs[-1].append(stripped)
        elif paragraphs[-1]:
            paragraphs.append([])
    summary = "\n\n".join(" ".join(p) for p in paragraphs if p)
    attrs: dict[str, str] = {}
    current: str | None = None
    inside = False
    for line in lines:
        stripped = line.strip()
        if stripped == "Attributes:":
            inside = True
            continue
        if not inside:
            continue
        if stripped.endswith(":") and stripped[:-1] in _SECTIONS:
            break
        if not stripped:
            current = None
            continue
        indent = len(line) - len(line.lstrip())
        name, sep, text = stripped.partition(":")
        if indent <= 4 and sep and name.isidentifier():
            current = name
            attrs[name] = text.strip()
        elif current is not None:
            attrs[current] += " " + stripped
    return summary, attrs


_SECTIONS = {"Attributes", "Args", "Returns", "Raises", "Yields", "Example", "Examples"}


def _type_text(tp: Any) -> str:
    if tp is Any:
        return "any"
    if tp is type(None) or tp is None:
        return "null"
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return " or ".join(_type_text(a) for a in typing.get_args(tp))
    if origin is Literal:
        return " or ".join(f"`{json.dumps(a)}`" for a in typing.get_args(tp))
    if origin in (list, tuple):
        return f"array of {_type_text(typing.get_args(tp)[0])}"
    if origin is dict:
        return "object"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if tp in names:
        return names[tp]
    if tp is Surface:
        return "string (a [stop surface](#stop-surfaces))"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return " or ".join(f"`{json.dumps(m.value)}`" for m in tp)
    if isinstance(tp, type):
        return f"[{tp.__name__}](#{tp.__name__.lower()})"
    return str(tp)  # pragma: no cover


def _default_text(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    if isinstance(value, enum.Enum):
        value = value.value
    return f"`{json.dumps(value)}`"


def _md(text: str) -> str:
    """Docstring text as Markdown (reST ``literals`` become `code`)."""
    return text.replace("``", "`")


def _cell(text: str) -> str:
    return _md(text).replace("|", "\\|").replace("\n", " ")


def _fields_table(cls: type[Any], *, defaults: bool) -> list[str]:
    hints = field_types(cls)
    _summary, attrs = _doc_parts(cls)
    fields = dataclasses.fields(cls)
    if not fields:
        return ["(no members)", ""]
    head = "| member | type | default | meaning |" if defaults else "| member | type | meaning |"
    rule = "|---|---|---|---|" if defaults else "|---|---|---|"
    out = [head, rule]
    for f in fields:
        cells = [f"`{f.name}`", _type_text(hints[f.name])]
        if defaults:
            cells.append(_default_text(f))
        cells.append(_cell(attrs.get(f.name, "")))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return out


def _payload_section(cls: type[Payload]) -> list[str]:
    summary, _attrs = _doc_parts(cls)
    kind = "control"
    if not cls.CONTROL:
        kind = "delta (may be coalesced"
        kind += ", or dropped under backpressure)" if cls is MessageDelta else ")"
    out = [
        f"### `{cls.TYPE}`",
        "",
        _md(summary),
        "",
        f"Kind: {kind}. Payload `{cls.__name__}`:",
        "",
    ]
    out += _fields_table(cls, defaults=False)
    return out


def _shared_types() -> list[type[Any]]:
    return [
        SessionInfo,
        ResumedSession,
        TranscriptEntry,
        SubmitResult,
        ShutdownReport,
        StopReceipt,
        WireEvent,
        Ready,
        RunAccepted,
    ]


def markdown() -> str:
    """The protocol reference (``docs/protocol.md``) generated from this module."""
    out: list[str] = [
        "# The desk gateway protocol",
        "",
        "<!-- GENERATED by `python -m tui_gateway.wire.contract --markdown > docs/protocol.md`;"
        " do not edit by hand: a test fails when this file and the contract drift apart. -->",
        "",
        f"Protocol version: **{PROTOCOL_VERSION}** (every event payload carries it as `version`).",
        "",
        "## Transports",
        "",
        "- **stdio** (`desk gateway --stdio`): newline-delimited JSON-RPC 2.0 on stdin/stdout, one "
        "UTF-8 JSON value per line (at most "
        f"{MAX_LINE_BYTES:,} bytes). The gateway first writes a `gateway.ready` notification. "
        "Requests may be pipelined; responses carry the request's `id` and may come back out of "
        "order for blocking methods, which run off the reader thread. Requests without an `id` "
        "are notifications: run, never answered. Batches (arrays) are accepted. End of file on "
        "stdin means the frontend went away: its running turns and commands are stopped as the "
        "system (`api.disconnect`), the gateway shuts down and exits 0. A client that stops "
        "reading never blocks a worker: deltas queued for it are merged, then reply deltas are "
        "dropped; control events and responses are always kept, in order.",
        "- **HTTP** (`desk serve`): see HTTP routes below. Events are server-sent events whose "
        "`data` is a WireEvent.",
        "- **in-process**: `tui_gateway.gateway.Gateway` has one Python method per JSON-RPC method "
        "(`session.create` is `session_create`...) and delivers `GatewayEvent`s to "
        "`subscribe(callback)`; `tui_gateway.wire.client.RemoteGateway` offers the same methods "
        "over a child process's stdio.",
        "",
        "## Errors",
        "",
        'An error response is `{"jsonrpc": "2.0", "id": <id or null>, "error": {"code", '
        '"message"}}`. A refused request changes nothing.',
        "",
        "| code | name | when |",
        "|---|---|---|",
    ]
    for code, name, when in ERROR_CODES:
        out.append(f"| {code} | {name} | {_cell(when)} |")
    out += ["", "## Methods", ""]
    for method in METHODS:
        out += [f"### `{method.name}`", "", method.summary, ""]
        if method.blocking:
            out += ["Blocking: may wait (bounded); served off the stdio reader thread.", ""]
        out += [f"Params `{method.params.__name__}`:", ""]
        out += _fields_table(method.params, defaults=True)
        out += [f"Result `{method.result.__name__}`:", ""]
        out += _fields_table(method.result, defaults=False)
    out += ["## Notifications", ""]
    for note in NOTIFICATIONS:
        out += [
            f"### `{note.name}`",
            "",
            note.summary,
            "",
            f'`{{"jsonrpc": "2.0", "method": "{note.name}", "params": {note.params.__name__}}}`',
            "",
        ]
    out += [
        "## Events",
        "",
        "Each event is the `params` of an `event` notification: "
        '`{"type", "session_id", "seq", "payload"}`. `seq` is monotonic per session ("" is the '
        "gateway's own sequence). Every payload also carries `version`.",
        "",
    ]
    for cls in EVENT_TYPES:
        out += _payload_section(cls)
    out += ["## Types", ""]
    for cls in _shared_types():
        summary, _ = _doc_parts(cls)
        out += [f"### {cls.__name__}", "", _md(summary), ""]
        out += _fields_table(cls, defaults=False)
    out += [
        "## Stop surfaces",
        "",
        "A stop states its issuer and surface; the pair must match (a mismatch is `-32602`). A "
        "turn is booked `interrupted_by_user` only when its first hard stop came from a user "
        "surface.",
        "",
        "| surface | issuer |",
        "|---|---|",
    ]
    for surface in Surface:
        issuer = Issuer.USER if surface in USER_SURFACES else Issuer.SYSTEM
        out.append(f"| `{surface.value}` | `{issuer.value}` |")
    out += [
        "",
        "## HTTP routes",
        "",
        "`desk serve` binds 127.0.0.1 unless told otherwise. Every route needs "
        "`Authorization: Bearer <token>`; the token is made on first start, printed once and kept "
        "in `$XDG_CONFIG_HOME/desk/token` (mode 0600). A refused request changes nothing.",
        "",
        "| method | path | body | response | what |",
        "|---|---|---|---|---|",
    ]
    for route in ROUTES:
        cells = [route.method, f"`{route.path}`", route.body, route.response, route.summary]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    out += ["", "| status | when |", "|---|---|"]
    for status, when in HTTP_STATUSES:
        out.append(f"| {status} | {_cell(when)} |")
    out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tui_gateway.wire.contract --markdown``: print the protocol reference."""
    parser = argparse.ArgumentParser(prog="python -m tui_gateway.wire.contract")
    parser.add_argument("--markdown", action="store_true", help="print docs/protocol.md")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.print_help()
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
