"""``desk serve``'s routes: sessions, streamed runs, stops, transcripts, replay, JSON-RPC.

See ``contract.ROUTES`` (and ``docs/protocol.md``) for the table. Every route needs the bearer
token (:class:`~tui_gateway.wire.http_common.BearerAuth`, before routing); bodies are limited
to ``contract.MAX_HTTP_BODY_BYTES`` (413), malformed JSON is a 400, unknown sessions and runs are
404s, and a refused request changes nothing. A run is a turn: its id is the turn id.

Attribution: ``POST /v1/runs/{id}/stop`` is a user stop (``api.stop``); a client that leaves a
run's stream (or the facade's request) before its end is a system stop (``api.disconnect``),
sent from the event loop the moment uvicorn reports ``http.disconnect``. The runs themselves
(start, stop, the run -> session table) are :class:`~tui_gateway.wire.runs.Runs`, shared with
the OpenAI facade.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import contract as c
from agent.stops import StopRequest, Surface
from contract.errors import GatewayError
from contract.events import GatewayEvent, MessageComplete
from tui_gateway.gateway import Gateway
from tui_gateway.wire.codec import encode, event_params
from tui_gateway.wire.dispatch import Dispatcher, RpcError, error_response
from tui_gateway.wire.http_common import (
    BearerAuth,
    HttpError,
    NestedTooDeep,
    SendChunk,
    WatchedStream,
    http_error_handler,
    http_error_of,
    json_object,
    read_json,
    sse,
    starlette_error_handler,
)
from tui_gateway.wire.openai_facade import ChatFacade
from tui_gateway.wire.replay import ReplayRing
from tui_gateway.wire.router import EventRouter
from tui_gateway.wire.runs import Runs


def belongs_to_run(event: GatewayEvent, turn_id: str) -> bool:
    """True for the run's own events and its session's turn-less ones (eviction, store errors)."""
    owner = getattr(event.payload, "turn_id", None)
    if owner is not None:
        return bool(owner == turn_id)
    return not hasattr(event.payload, "command_id")


class DeskApi:
    """The HTTP face of one gateway.

    Args:
        gateway: the in-process gateway.
        token: the bearer token every request must carry.
        max_body_bytes: largest request body, in bytes.
        replay_capacity: events kept per session for the events route.
    """

    def __init__(
        self,
        gateway: Gateway,
        token: str,
        *,
        max_body_bytes: int = c.MAX_HTTP_BODY_BYTES,
        replay_capacity: int = c.REPLAY_CAPACITY,
    ) -> None:
        self.gateway = gateway
        self.max_body_bytes = max_body_bytes
        self.ring = ReplayRing(replay_capacity)
        self.router = EventRouter(gateway, self.ring)
        self.dispatcher = Dispatcher(gateway, self.ring)
        self.runs = Runs(gateway, self.router)
        facade = ChatFacade(gateway, self.runs, max_body_bytes=max_body_bytes)
        routes = [
            Route("/v1/sessions", self.create_session, methods=["POST"]),
            Route("/v1/sessions", self.list_sessions, methods=["GET"]),
            Route("/v1/sessions/{session_id}/runs", self.create_run, methods=["POST"]),
            Route("/v1/sessions/{session_id}/steer", self.steer, methods=["POST"]),
            Route("/v1/sessions/{session_id}/messages", self.messages, methods=["GET"]),
            Route("/v1/sessions/{session_id}/events", self.events, methods=["GET"]),
            Route("/v1/runs/{run_id}/stop", self.stop_run, methods=["POST"]),
            Route("/v1/chat/completions", facade.chat_completions, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/rpc", self.rpc, methods=["POST"]),
        ]
        self.app = Starlette(
            routes=routes,
            middleware=[Middleware(BearerAuth, token=token)],
            exception_handlers={
                HttpError: http_error_handler,
                StarletteHTTPException: starlette_error_handler,
            },
        )

    def close(self) -> None:
        """End every open stream's source (call after the gateway's shutdown)."""
        self.router.close()

    # -- routes ----------------------------------------------------------------------------------

    async def create_session(self, request: Request) -> Response:
        body = await read_json(request, self.max_body_bytes, required=False)
        title = ""
        if body is not None:
            title = _string(json_object(body), "title", default="")
        try:
            session_id = await asyncio.to_thread(self.gateway.session_create, title)
        except GatewayError as exc:
            raise http_error_of(exc) from None
        model = self.gateway.config.provider.model
        return JSONResponse(
            {"session_id": session_id, "title": title, "model": model}, status_code=201
        )

    async def list_sessions(self, request: Request) -> Response:
        try:
            sessions = await asyncio.to_thread(self.gateway.session_list)
        except GatewayError as exc:
            raise http_error_of(exc) from None
        return JSONResponse({"sessions": encode(sessions)})

    async def create_run(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        body = json_object(await read_json(request, self.max_body_bytes))
        prompt = _string(body, "prompt")
        listener, run_id, queued = await self.runs.start(session_id, prompt)
        accepted = c.RunAccepted(run_id=run_id, session_id=session_id, queued=queued)

        async def stream(send_chunk: SendChunk) -> bool:
            await send_chunk(sse("run.accepted", encode(accepted)))
            while (batch := await listener.next_batch()) is not None:
                for event in batch:
                    if not belongs_to_run(event, run_id):
                        continue
                    await send_chunk(sse(event.type, event_params(event), event.seq))
                    if isinstance(event.payload, MessageComplete):
                        return True
            return False

        return WatchedStream(
            stream,
            on_disconnect=lambda: self.runs.client_gone(session_id, run_id),
            on_close=listener.close,
            headers={"x-desk-run-id": run_id},
        )

    async def steer(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        body = json_object(await read_json(request, self.max_body_bytes))
        text = _string(body, "text")
        stop = StopRequest.soft(Surface.API_STEER, "steered through the API")
        try:
            result = await asyncio.to_thread(self.gateway.prompt_steer, session_id, text, stop)
        except GatewayError as exc:
            raise http_error_of(exc) from None
        return JSONResponse(encode(result))

    async def stop_run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        body = await read_json(request, self.max_body_bytes, required=False)
        reason = "stopped through the API"
        if body is not None:
            reason = _string(json_object(body), "reason", default=reason) or reason
        stop = StopRequest.by_user(Surface.API_STOP, reason)
        session_id = self.runs.session_of(run_id)
        if session_id is not None:  # started here: stopped at once, on the loop
            stopped = self.runs.stop(session_id, run_id, stop)
            return JSONResponse({"run_id": run_id, "stopped": stopped})
        # Started by another host of a shared store, or long ago: the store says where.
        session_id = await asyncio.to_thread(self.gateway.turn_session, run_id)
        if session_id is None:
            raise HttpError(404, f"no run {run_id!r}", "not_found_error")
        stopped = await asyncio.to_thread(self.runs.stop, session_id, run_id, stop)
        return JSONResponse({"run_id": run_id, "stopped": stopped})

    async def messages(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        try:
            history = self.gateway.history(session_id)
        except GatewayError:
            raise HttpError(404, f"no session {session_id!r}", "not_found_error") from None
        return JSONResponse({"session_id": session_id, "messages": [m.to_wire() for m in history]})

    async def events(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        since = request.query_params.get("since", "0")
        if not since.isdigit():
            raise HttpError(400, "since must be a sequence number (an integer >= 0)")
        try:
            result = self.dispatcher.call(
                "session.events.since", {"session_id": session_id, "seq": int(since)}
            )
        except RpcError as exc:
            status = 404 if exc.code == c.INVALID_PARAMS else 503
            raise HttpError(status, exc.message) from None
        return JSONResponse(result)

    async def models(self, request: Request) -> Response:
        model = self.gateway.config.provider.model
        entry = {"id": model, "object": "model", "created": 0, "owned_by": "desk"}
        return JSONResponse({"object": "list", "data": [entry]})

    async def rpc(self, request: Request) -> Response:
        try:
            message = await read_json(request, self.max_body_bytes)
        except NestedTooDeep as exc:  # JSON, but no request: JSON-RPC's "invalid request"
            refused = error_response(None, c.INVALID_REQUEST, f"invalid request: {exc.message}")
            return JSONResponse(refused, status_code=400)
        answer = await asyncio.to_thread(self.dispatcher.handle, message)
        if answer is None:
            return Response(status_code=204)
        return JSONResponse(answer)


def _string(body: dict[str, Any], key: str, *, default: str | None = None) -> str:
    value = body.get(key, default)
    if not isinstance(value, str):
        needed = "a string" if default is not None else "a string (required)"
        raise HttpError(400, f"{key} must be {needed}")
    return value
