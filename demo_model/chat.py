"""``POST /v1/chat/completions``: validation, slot wait, paced generation, disconnect watch.

Every request that passes validation runs as three tasks raced against each other:

- the *generation*: wait for a slot, "process the prompt" (``prompt_delay_s``), send the
  headers, then one chunk per token at ``tokens_per_second`` (non-streaming: generate at the
  same pace, then send one JSON body);
- the *watcher*: awaits the ASGI ``receive()`` until uvicorn reports ``http.disconnect``
  (uvicorn's h11 protocol resumes reading while ``receive()`` is awaited, so a closed socket
  is seen in every phase, before any byte of the response too);
- the *stopper*: waits for the server's shutdown.

Whichever ends first decides: a disconnect cancels the generation at once, which frees the
slot (``finally``), and the record gets ``peer_closed_at`` and outcome ``client_closed``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .admission import (
    Rejection,
    apply_directive,
    apply_overrides,
    check_api_key,
    check_template,
    context_size_rejection,
    plan_generation,
    prompt_size,
)
from .asgi import (
    JSON_TYPE,
    SSE_TYPE,
    Receive,
    Scope,
    Send,
    dumps,
    error_body,
    read_body,
    send_json,
    send_start,
)
from .config import CONTEXT_FAULT, STREAM_FAULTS, SURROGATE_TEXT, DemoConfig, parse_fault
from .records import RecordBook, RequestRecord
from .replies import Step
from .slots import SlotPool
from .wire import DONE, Envelope, delta_for, sse, usage

INTENTIONAL_DROP: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "demo_model_intentional_drop", default=False
)
"""Set in a request's task when the app leaves a response unfinished on purpose (``drop``)."""


@dataclass
class _Exchange:
    """State of one accepted request, shared by its generation and watcher tasks."""

    record: RequestRecord
    config: DemoConfig
    envelope: Envelope
    stream: bool
    include_usage: bool
    steps: list[Step]
    finish_reason: str
    prompt_tokens: int
    fault: str | None
    headers_sent: bool = False
    response_done: bool = False
    drop: bool = False
    slot: int | None = None
    generated: list[Step] = field(default_factory=list)


class ChatCompletions:
    """The chat-completions endpoint.

    Args:
        snapshot: returns a copy of the current config (thread-safe).
        consume_fault: returns the server-wide fault for one request and counts it down.
        records: where each request is recorded.
        pool: the generation slots.
        stopping: set when the server shuts down; running requests then end at once.
    """

    def __init__(
        self,
        *,
        snapshot: Callable[[], DemoConfig],
        consume_fault: Callable[[], str | None],
        records: RecordBook,
        pool: SlotPool,
        stopping: asyncio.Event,
    ) -> None:
        self._snapshot = snapshot
        self._consume_fault = consume_fault
        self._records = records
        self._pool = pool
        self._stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one request (an ASGI app for this one path)."""
        record = self._records.new(str(scope.get("path", "")), time.monotonic())
        body = await read_body(receive)
        if body is None:
            self._finish(record, "client_closed", peer_closed_at=time.monotonic())
            return
        try:
            exchange = self._accept(scope, body, record)
        except Rejection as rejection:
            self._finish(
                record,
                "rejected",
                status=rejection.status,
                error=str(rejection),
                completed_at=time.monotonic(),
            )
            await send_json(send, rejection.status, rejection.body, rejection.headers)
            return
        kind, status = parse_fault(exchange.fault)
        if kind == CONTEXT_FAULT:
            refusal = context_size_rejection(exchange.prompt_tokens, exchange.config.n_ctx)
            self._finish(record, "fault", status=400, completed_at=time.monotonic())
            await send_json(send, refusal.status, refusal.body)
            return
        if kind == "http" and status is not None:
            self._finish(record, "fault", status=status, completed_at=time.monotonic())
            await self._send_http_fault(send, status, exchange.config.retry_after_s)
            return
        await self._run(exchange, receive, send)
        if exchange.drop:
            INTENTIONAL_DROP.set(True)

    # -- validation -------------------------------------------------------------------------

    def _accept(self, scope: Scope, body: bytes, record: RequestRecord) -> _Exchange:
        config = self._snapshot()
        check_api_key(scope, config.api_key)
        try:
            request = json.loads(body)
        except ValueError as exc:
            raise Rejection(400, error_body(f"request body is not valid JSON: {exc}")) from exc
        if not isinstance(request, dict):
            raise Rejection(400, error_body("request body must be a JSON object"))
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Rejection(400, error_body("'messages' must be a non-empty array", code=None))
        if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            raise Rejection(400, error_body("each message must be an object with a 'role'"))
        stream = request.get("stream", False)
        if not isinstance(stream, bool):
            raise Rejection(400, error_body("'stream' must be a boolean"))
        model = request.get("model")
        with self._records.edit():
            record.stream = stream
            record.model = model if isinstance(model, str) else None
            record.messages = messages
            record.request = request
        if model is not None and not isinstance(model, str):
            raise Rejection(400, error_body("'model' must be a string"))
        if config.strict_model and model is not None and model != config.model:
            raise Rejection(
                404,
                error_body(
                    f"The model `{model}` does not exist.",
                    "invalid_request_error",
                    "model_not_found",
                ),
            )
        check_template(config, messages)
        overrides = request.get("demo")
        apply_directive(config, messages)
        if overrides is not None:
            apply_overrides(config, overrides)
        prompt_tokens = prompt_size(config, request, messages)
        with self._records.edit():
            record.prompt_tokens = prompt_tokens
        generation = plan_generation(config, request, messages, prompt_tokens)
        if overrides is None or "fault" not in overrides:
            config.fault = self._consume_fault()  # last: a rejected request consumes none
        options = request.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        with self._records.edit():
            record.fault = config.fault
        return _Exchange(
            record=record,
            config=config,
            envelope=Envelope(
                id=f"chatcmpl-demo-{record.id}",
                created=int(time.time()),
                model=model if isinstance(model, str) and model else config.model,
            ),
            stream=stream,
            include_usage=include_usage,
            steps=generation.steps,
            finish_reason=generation.finish_reason,
            prompt_tokens=prompt_tokens,
            fault=config.fault,
        )

    # -- the race ---------------------------------------------------------------------------
    #
    # Records are brought up to date *before* the bytes that reveal them are written, so a
    # client that has just read the end of a response finds its record finished, its slot
    # free, and its outcome set.

    async def _run(self, exchange: _Exchange, receive: Receive, send: Send) -> None:
        record = exchange.record
        generation = asyncio.create_task(self._generate(exchange, send))
        watcher = asyncio.create_task(self._watch(exchange, receive))
        stopper = asyncio.create_task(self._stopping.wait())
        outcome = "error"
        try:
            pending: set[asyncio.Task[Any]] = {generation, watcher, stopper}
            while True:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                if generation in done:
                    outcome = generation.result()
                    break
                if watcher in done and watcher.result():
                    outcome = "client_closed"
                    break
                if stopper in done:
                    outcome = "server_stopped"
                    break
                # The watcher saw the normal end of the response: wait for the generation.
        except asyncio.CancelledError:  # uvicorn gave up waiting for us at shutdown
            outcome = "server_stopped"
            raise
        finally:
            for task in (generation, watcher, stopper):
                task.cancel()
            await asyncio.gather(generation, watcher, stopper, return_exceptions=True)
            if not record.finished:  # only this loop's thread writes records
                stopped = outcome == "server_stopped" and not exchange.response_done
                status = 503 if stopped and not exchange.headers_sent else None
                self._finish(record, outcome, status=status)
                if stopped:
                    await self._end_for_shutdown(exchange, send)

    async def _watch(self, exchange: _Exchange, receive: Receive) -> bool:
        """Return True when the client went away, False when the response simply ended."""
        while True:
            message = await receive()
            if message["type"] != "http.disconnect":
                continue
            if exchange.response_done:
                return False
            with self._records.edit():
                exchange.record.peer_closed_at = time.monotonic()
            return True

    async def _end_for_shutdown(self, exchange: _Exchange, send: Send) -> None:
        exchange.response_done = True
        if not exchange.headers_sent:
            body = error_body("the server is shutting down", "unavailable_error", 503)
            await send_json(send, 503, body)
        else:
            await _body(send, b"", more=False)

    # -- generation -------------------------------------------------------------------------

    async def _generate(self, exchange: _Exchange, send: Send) -> str:
        exchange.slot = await self._pool.acquire()
        try:
            with self._records.edit():
                exchange.record.slot_id = exchange.slot
                exchange.record.slot_acquired_at = time.monotonic()
            if exchange.config.prompt_delay_s > 0:
                await asyncio.sleep(exchange.config.prompt_delay_s)
            if exchange.stream:
                return await self._stream(exchange, send)
            return await self._complete(exchange, send)
        finally:
            self._release(exchange)

    async def _stream(self, exchange: _Exchange, send: Send) -> str:
        envelope, config = exchange.envelope, exchange.config
        self._mark_headers(exchange)
        await send_start(send, 200, SSE_TYPE, [(b"cache-control", b"no-cache")])
        exchange.headers_sent = True
        fault = exchange.fault if exchange.fault in STREAM_FAULTS else None
        steps = exchange.steps
        fault_at = min(config.fault_after_tokens, len(steps)) if fault else -1
        pacer = _Pacer(config.tokens_per_second)
        for index in range(len(steps) + 1):
            if index == fault_at:
                if fault == "malformed":
                    await _body(send, envelope.broken_chunk())
                elif fault == "early_close":
                    self._settle(exchange, "fault", None)
                    exchange.response_done = True
                    await _body(send, b"", more=False)
                    return "fault"
                elif fault == "drop":
                    self._settle(exchange, "fault", None, completed=False)
                    exchange.drop = True
                    return "fault"
                elif fault == "stall":
                    await asyncio.Event().wait()
                elif fault == "surrogate":
                    await _body(send, envelope.surrogate_chunk(SURROGATE_TEXT))
            if index == len(steps):
                break
            await pacer.wait(index)
            step = steps[index]
            self._count(exchange, step)
            await _body(send, sse(envelope.chunk(delta_for(step, first=index == 0))))
            if config.flush_each_token:
                await asyncio.sleep(0)  # the event leaves before the next token is made
        totals = usage(exchange.prompt_tokens, len(exchange.generated), config.cached_prompt_tokens)
        if fault != "no_finish":
            delta: dict[str, Any] = {} if steps else {"role": "assistant", "content": ""}
            finish_usage = totals if config.usage_on_finish_chunk else None
            finish = envelope.chunk(delta, exchange.finish_reason, finish_usage)
            await _body(send, sse(finish))
        if exchange.include_usage and not config.usage_on_finish_chunk:
            await _body(send, sse(envelope.usage_chunk(totals)))
        outcome = "fault" if fault else "completed"
        self._settle(exchange, outcome, None if fault == "no_finish" else exchange.finish_reason)
        exchange.response_done = True
        await _body(send, DONE, more=False)
        return outcome

    async def _complete(self, exchange: _Exchange, send: Send) -> str:
        config = exchange.config
        fault = exchange.fault if exchange.fault in STREAM_FAULTS else None
        steps = exchange.steps
        pacer = _Pacer(config.tokens_per_second)
        for index, step in enumerate(steps):
            if fault == "stall" and index == config.fault_after_tokens:
                await asyncio.Event().wait()
            await pacer.wait(index)
            self._count(exchange, step)
        if fault == "stall":
            await asyncio.Event().wait()
        finish_reason = None if fault == "no_finish" else exchange.finish_reason
        totals = usage(exchange.prompt_tokens, len(exchange.generated), config.cached_prompt_tokens)
        completion = exchange.envelope.completion(exchange.generated, finish_reason, totals)
        encoded = dumps(completion)
        if fault == "surrogate":
            before = steps[: config.fault_after_tokens]
            at = len("".join(s.text for s in before if s.kind == "content"))
            message = completion["choices"][0]["message"]
            text = message["content"] or ""
            message["content"] = text[:at] + SURROGATE_TEXT + text[at:]
            encoded = json.dumps(completion, separators=(",", ":")).encode("ascii")
        if fault == "malformed":
            encoded = encoded[: len(encoded) // 2]
        length = [(b"content-length", b"%d" % len(encoded))]
        outcome = "fault" if fault else "completed"
        cut = fault in ("early_close", "drop")
        self._mark_headers(exchange)
        self._settle(exchange, outcome, None if cut else finish_reason, completed=not cut)
        await send_start(send, 200, JSON_TYPE, length)
        exchange.headers_sent = True
        if cut:
            await _body(send, encoded[: len(encoded) // 2], more=True)
            exchange.drop = True
            return outcome
        exchange.response_done = True
        await _body(send, encoded, more=False)
        return outcome

    # -- bookkeeping ------------------------------------------------------------------------

    def _mark_headers(self, exchange: _Exchange) -> None:
        with self._records.edit():
            exchange.record.headers_sent_at = time.monotonic()
            exchange.record.status = 200

    def _count(self, exchange: _Exchange, step: Step) -> None:
        exchange.generated.append(step)
        with self._records.edit():
            record = exchange.record
            if record.first_token_at is None:
                record.first_token_at = time.monotonic()
            record.tokens_generated += 1
            if step.kind == "content":
                record.text += step.text

    def _release(self, exchange: _Exchange) -> None:
        """Free the request's slot, once."""
        if exchange.slot is None:
            return
        self._pool.release(exchange.slot)
        exchange.slot = None
        with self._records.edit():
            exchange.record.slot_released_at = time.monotonic()

    def _settle(
        self,
        exchange: _Exchange,
        outcome: str,
        finish_reason: str | None,
        *,
        completed: bool = True,
    ) -> None:
        """Free the slot and finish the record, just before the last bytes are written."""
        self._release(exchange)
        with self._records.edit():
            record = exchange.record
            record.finish_reason = finish_reason
            if completed:
                record.completed_at = time.monotonic()
            record.outcome = outcome

    def _finish(
        self,
        record: RequestRecord,
        outcome: str,
        *,
        status: int | None = None,
        error: str | None = None,
        peer_closed_at: float | None = None,
        completed_at: float | None = None,
    ) -> None:
        with self._records.edit():
            if status is not None:
                record.status = status
            if error is not None:
                record.error = error
            if peer_closed_at is not None:
                record.peer_closed_at = peer_closed_at
            if completed_at is not None:
                record.completed_at = completed_at
            record.outcome = outcome

    @staticmethod
    async def _send_http_fault(send: Send, status: int, retry_after_s: float) -> None:
        kinds = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}
        kind = kinds.get(status, "server_error" if status >= 500 else "invalid_request_error")
        wait = f"{retry_after_s:g}".encode()
        extra = [(b"retry-after", wait)] if status in (429, 503) else []
        body = error_body(f"injected fault: HTTP {status}", kind, status)
        await send_json(send, status, body, extra)


class _Pacer:
    """Spaces tokens ``1 / tokens_per_second`` seconds apart on an absolute schedule."""

    def __init__(self, tokens_per_second: float) -> None:
        self._interval = 1.0 / tokens_per_second if tokens_per_second > 0 else 0.0
        self._start: float | None = None

    async def wait(self, index: int) -> None:
        loop = asyncio.get_running_loop()
        if self._start is None:
            self._start = loop.time()
        delay = self._start + index * self._interval - loop.time()
        await asyncio.sleep(delay if delay > 0 else 0)


async def _body(send: Send, data: bytes, *, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})
