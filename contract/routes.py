"""``desk serve``'s HTTP routes, their statuses, and the first event of a run stream."""

from __future__ import annotations

from dataclasses import dataclass

from contract.limits import MAX_HTTP_BODY_BYTES


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


@dataclass(frozen=True, slots=True)
class HttpRoute:
    """One HTTP route of ``desk serve``.

    Attributes:
        method: the HTTP method.
        path: the path, with ``{placeholders}``.
        body: the request body (Markdown), "" for none.
        response: the status and body of a success (Markdown).
        summary: what it does (Markdown).
    """

    method: str
    path: str
    body: str
    response: str
    summary: str


ROUTES: tuple[HttpRoute, ...] = (
    HttpRoute(
        "POST",
        "/v1/sessions",
        '`{"title": string}` (optional)',
        '201 `{"session_id", "title", "model"}`',
        "Create a session (`session.create`).",
    ),
    HttpRoute("GET", "/v1/sessions", "", '200 `{"sessions": [SessionInfo]}`', "`session.list`."),
    HttpRoute(
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
    HttpRoute(
        "POST",
        "/v1/sessions/{session_id}/steer",
        '`{"text": string}`',
        '200 `{"turn_id", "steered", "queued", "steer_id"}` (SteerResult)',
        "Steer the session's running turn as the user (`prompt.steer` with surface "
        "`api.steer`): the text reaches it at its next model-call boundary, never cutting a "
        "stream or a tool call; when nothing runs it becomes a normal prompt (`steered` false; "
        "its events are on the session's events route). 400 for empty or oversized text.",
    ),
    HttpRoute(
        "POST",
        "/v1/runs/{run_id}/stop",
        '`{"reason": string}` (optional)',
        '200 `{"run_id", "stopped"}`',
        "Stop a run as the user (`api.stop`); a queued run is removed. `stopped` is false when "
        "the run had already ended.",
    ),
    HttpRoute(
        "GET",
        "/v1/sessions/{session_id}/messages",
        "",
        '200 `{"session_id", "messages": [{"role", "content", ...}]}`',
        "The live session's transcript, in the OpenAI message format.",
    ),
    HttpRoute(
        "GET",
        "/v1/sessions/{session_id}/events?since=N",
        "",
        "200 EventsSinceResult",
        "`session.events.since` over HTTP.",
    ),
    HttpRoute(
        "POST",
        "/v1/chat/completions",
        "OpenAI chat completion request",
        "OpenAI `chat.completion` or a stream of `chat.completion.chunk`",
        "OpenAI-compatible facade: runs the agent on the last user message in a fresh session "
        "(stream and non-stream). The run id is in the `x-desk-run-id` header; a disconnect "
        "stops the run as the system (`api.disconnect`); tool calls that need approval are "
        "denied (nobody can answer).",
    ),
    HttpRoute(
        "GET", "/v1/models", "", "OpenAI model list", "The model desk runs, for OpenAI clients."
    ),
    HttpRoute(
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
"""(status, when) of every HTTP error a route may answer with."""
