"""``POST /v1/chat/completions``: an OpenAI-compatible facade over desk's agent.

Existing OpenAI clients can drive desk: each request runs the agent (tools included) on the
request's last user message, in a fresh session, and answers as a chat completion, streamed
(``chat.completion.chunk`` server-sent events ending with ``data: [DONE]``) or whole. The rest
of the request's messages, its sampling knobs and its tools are not used: the agent has its own.

Nobody can answer a tool approval through this API, so a tool call that needs one is denied
(the model is told so and goes on).

Outcomes: a completed turn finishes with ``stop`` (``length`` for ``max_iterations``); a stopped
one (``POST /v1/runs/{id}/stop``, the gateway's shutdown, an eviction) with
:data:`STOPPED_FINISH_REASON` (``abort``, as vLLM reports an aborted request) and its partial
text, never ``stop``, so a client can tell a cut reply from a whole one; a failed turn is an HTTP
502 error (non-streaming) or an ``error`` event (streaming); docs/wire.md says why ``abort``.
Every answer also carries ``desk: {run_id, session_id, status, exit_reason}``, and the run id
is in the ``x-desk-run-id`` header, so
``POST /v1/runs/{id}/stop`` can stop it. A client that leaves early stops the run as the system
(``api.disconnect``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from contract import MAX_HTTP_BODY_BYTES
from contract.errors import GatewayError
from contract.events import ApprovalRequest, MessageComplete, MessageDelta, Payload
from tui_gateway.gateway import Gateway
from tui_gateway.turns.approvals import refused
from tui_gateway.wire.http_common import (
    HttpError,
    SendChunk,
    WatchedStream,
    json_object,
    read_json,
    sse,
    wait_disconnect,
)
from tui_gateway.wire.router import Listener
from tui_gateway.wire.runs import Runs

TITLE_CHARS = 48

STOPPED_FINISH_REASON = "abort"
"""The finish reason of a run that a stop cut short. OpenAI's enum has no value for it (``stop``,
``length``, ``tool_calls``, ``content_filter``, ``function_call``); vLLM, the OpenAI-compatible
server that reports aborted requests at all, sends ``abort``, and the official clients pass an
unknown value through. ``desk.exit_reason`` names who stopped the run."""


def last_user_text(messages: Any) -> str:
    """The text of the last ``user`` message (string content or text parts).

    Raises:
        HttpError: 400 when ``messages`` is not a list or has no user message with text.
    """
    if not isinstance(messages, list) or not messages:
        raise HttpError(400, "messages must be a non-empty array")
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "".join(
                str(part.get("text", ""))
                for part in content
                if isinstance(part, dict) and part.get("type") == "text"
            )
        else:
            text = ""
        if text.strip():
            return text
        break
    raise HttpError(400, "messages must end with a user message that has text")


def finish_reason(complete: MessageComplete) -> str:
    """The OpenAI finish reason of a turn's outcome: ``stop`` (completed), ``length``
    (``max_iterations``) or :data:`STOPPED_FINISH_REASON` (interrupted)."""
    if complete.status == "max_iterations":
        return "length"
    if complete.status == "interrupted":
        return STOPPED_FINISH_REASON
    return "stop"


class ChatFacade:
    """The facade's route (``POST /v1/chat/completions``).

    Args:
        gateway: the in-process gateway.
        runs: the runs of the ``desk serve`` it belongs to (shared with its other routes, so
            ``POST /v1/runs/{id}/stop`` stops a facade run too).
        max_body_bytes: largest request body, in bytes.
    """

    def __init__(
        self, gateway: Gateway, runs: Runs, *, max_body_bytes: int = MAX_HTTP_BODY_BYTES
    ) -> None:
        self.gateway = gateway
        self.runs = runs
        self.max_body_bytes = max_body_bytes

    async def chat_completions(self, request: Request) -> Response:
        body = json_object(await read_json(request, self.max_body_bytes))
        prompt = last_user_text(body.get("messages"))
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise HttpError(400, "stream must be a boolean")
        options = body.get("stream_options") or {}
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        model = body.get("model")
        if not isinstance(model, str) or not model:
            model = self.gateway.config.provider.model
        title = " ".join(prompt.split())[:TITLE_CHARS]
        try:
            session_id = await asyncio.to_thread(self.gateway.session_create, title)
        except GatewayError as exc:
            raise HttpError(503, exc.message, "server_error") from None
        listener, run_id, _queued = await self.runs.start(session_id, prompt)
        run = _Run(run_id, session_id, model, int(time.time()))
        if stream:
            return WatchedStream(
                lambda send_chunk: self._stream(listener, run, include_usage, send_chunk),
                on_disconnect=lambda: self.runs.client_gone(session_id, run_id),
                on_close=listener.close,
                headers={"x-desk-run-id": run_id},
            )
        try:
            complete = await self._wait(listener, run, request)
        finally:
            listener.close()
        if complete is None:  # the client left; nobody reads this answer
            return Response(status_code=499)
        headers = {"x-desk-run-id": run_id}
        if complete.status == "failed":
            error = {
                "message": complete.error or "the turn failed",
                "type": "server_error",
                "param": None,
                "code": complete.exit_reason,
            }
            return JSONResponse({"error": error, "desk": run.desk(complete)}, 502, headers)
        return JSONResponse(run.completion(complete), headers=headers)

    def _deny_approval(self, run: _Run, payload: Payload) -> None:
        if isinstance(payload, ApprovalRequest) and payload.turn_id == run.run_id:
            refusal = refused(payload.tool, "the chat-completions API")
            self.gateway.approval_respond(
                run.session_id, payload.request_id, "deny", refusal=refusal
            )

    async def _wait(
        self, listener: Listener, run: _Run, request: Request
    ) -> MessageComplete | None:
        async def outcome() -> MessageComplete | None:
            while (batch := await listener.next_batch()) is not None:
                for event in batch:
                    payload = event.payload
                    self._deny_approval(run, payload)
                    if isinstance(payload, MessageComplete) and payload.turn_id == run.run_id:
                        return payload
            return None

        waiter = asyncio.ensure_future(outcome())
        watch = asyncio.ensure_future(wait_disconnect(request.receive))
        await asyncio.wait({waiter, watch}, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():
            self.runs.client_gone(run.session_id, run.run_id)
        for task in (waiter, watch):
            if task is watch or not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return waiter.result() if waiter.done() and not waiter.cancelled() else None

    async def _stream(
        self, listener: Listener, run: _Run, include_usage: bool, send_chunk: SendChunk
    ) -> bool:
        await send_chunk(sse(None, run.chunk({"role": "assistant", "content": ""})))
        sent = ""
        while (batch := await listener.next_batch()) is not None:
            for event in batch:
                payload = event.payload
                self._deny_approval(run, payload)
                if isinstance(payload, MessageDelta) and payload.turn_id == run.run_id:
                    delta: dict[str, Any] = {}
                    if payload.text:
                        delta["content"] = payload.text
                        sent += payload.text
                    if payload.reasoning:
                        delta["reasoning_content"] = payload.reasoning
                    if delta:
                        await send_chunk(sse(None, run.chunk(delta)))
                elif isinstance(payload, MessageComplete) and payload.turn_id == run.run_id:
                    if payload.status == "failed":
                        error = {
                            "message": payload.error or "the turn failed",
                            "type": "server_error",
                            "code": payload.exit_reason,
                        }
                        await send_chunk(sse(None, {"error": error, "desk": run.desk(payload)}))
                    else:
                        rest = payload.text[len(sent) :] if payload.text.startswith(sent) else ""
                        if rest:  # deltas dropped under backpressure: the canonical tail
                            await send_chunk(sse(None, run.chunk({"content": rest})))
                        final = run.chunk({}, finish_reason(payload))
                        final["desk"] = run.desk(payload)
                        await send_chunk(sse(None, final))
                        if include_usage:
                            await send_chunk(sse(None, run.usage_chunk(payload)))
                    await send_chunk(b"data: [DONE]\n\n")
                    return True
        return False


class _Run:
    """One facade request's identity, and the OpenAI objects built for it."""

    def __init__(self, run_id: str, session_id: str, model: str, created: int) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self.model = model
        self.created = created
        self.id = f"chatcmpl-{run_id}"

    def desk(self, complete: MessageComplete) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "session_id": self.session_id,
            "status": complete.status,
            "exit_reason": complete.exit_reason,
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    def usage_chunk(self, complete: MessageComplete) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": _usage(complete),
        }

    def completion(self, complete: MessageComplete) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": complete.text},
                    "finish_reason": finish_reason(complete),
                    "logprobs": None,
                }
            ],
            "usage": _usage(complete),
            "desk": self.desk(complete),
        }


def _usage(complete: MessageComplete) -> dict[str, int]:
    prompt = complete.prompt_tokens or 0
    completion = complete.completion_tokens or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
