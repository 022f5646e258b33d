"""The OpenAI-compatible chat client: one async request per call, closed for real on cancel.

Cancellation is the point of this module. Every request runs as a coroutine; a hard stop
cancels the task that awaits it (``loop.call_soon_threadsafe(task.cancel)`` from any thread).
The ``CancelledError`` is raised at whatever the request awaits (connecting, waiting for the
response headers, reading the stream or a non-streamed body). The sockets themselves are
closed in one place, :mod:`agent.provider.connection`: the turn's connection is shut down from
the stopping thread, and its client is closed when :meth:`ChatClient.session` exits, so no
socket outlives the turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from agent.provider.config import ProviderConfig as ProviderConfig
from agent.provider.connection import ProviderConnection, open_connection
from agent.provider.errors import (
    AuthError,
    BadRequest,
    ConnectFailed,
    EarlyClose,
    MalformedChunk,
    ModelNotFound,
    ProviderError,
    RateLimited,
    ServerError,
)
from agent.provider.overflow import context_overflow
from agent.provider.sse import LineTooLong, data_lines
from agent.provider.types import ChatMessage, Completion, StreamDelta, ToolCall, Usage
from agent.valid_text import loads

if TYPE_CHECKING:
    import httpx  # imported where it is used: not before desk's first frame

DeltaCallback = Callable[[StreamDelta], None]
ActivityCallback = Callable[[], None]
"""Told each time a chunk arrives, whatever it carries (text, a piece of a tool call, usage)."""


class ChatClient:
    """Sends chat-completion requests, streaming or not, and maps failures to typed errors.

    One ``ChatClient`` may be shared by many turns and threads: it holds configuration only.
    Each turn opens its own connection with :meth:`session`, on its own event loop.
    """

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config

    def session(self) -> AbstractAsyncContextManager[ProviderConnection]:
        """The connection of one turn (:func:`agent.provider.connection.open_connection`),
        closed, sockets included, on exit.

        Use it as ``async with client.session() as conn:`` and pass ``conn`` to
        :meth:`stream` or :meth:`complete`.
        """
        return open_connection(self.config)

    def _body(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]],
        stream: bool,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [m.to_wire() for m in messages],
            "stream": stream,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if stream:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = list(tools)
        return body

    async def stream(
        self,
        conn: ProviderConnection,
        messages: Sequence[ChatMessage],
        on_delta: DeltaCallback,
        *,
        tools: Sequence[dict[str, Any]] = (),
        partial: Completion | None = None,
        max_tokens: int | None = None,
        on_chunk: ActivityCallback | None = None,
    ) -> Completion:
        """Stream one completion, calling ``on_delta`` for every content or reasoning piece.

        Args:
            conn: the turn's connection from :meth:`session`; it knows the response's socket
                while the body streams, so a stopping thread can shut it down at once.
            messages: the conversation so far.
            on_delta: called on this thread for each non-empty delta, in order.
            tools: OpenAI tool schemas offered to the model.
            partial: filled in as the stream arrives, so a caller that is cancelled still
                holds what came before the stop.
            max_tokens: most tokens the reply may have; None leaves it to the server.
            on_chunk: called on this thread for every chunk that arrives, before it is applied
                (a tool call streams no text, yet the server is busy sending it).

        Returns:
            the completed reply (content, reasoning, tool calls in index order, usage).

        A server that ignores ``max_tokens`` (one replaying a recording does) is cut off
        once it sent more pieces than that (each piece is at least one token; a little slack
        for a piece of content and reasoning from one token), as ``finish_reason`` ``length``.

        Raises:
            ProviderError: a subclass for each failure (see :mod:`agent.provider.errors`);
                :class:`EarlyClose` when the stream ends without a ``finish_reason``;
                :class:`MalformedChunk` for a chunk that is not JSON of a chat-completion
                chunk's shape, or a line longer than :data:`agent.provider.sse.MAX_LINE_BYTES`.
            asyncio.CancelledError: when the awaiting task is cancelled; the socket is closed.
        """
        import httpx

        out = partial if partial is not None else Completion()
        out.max_tokens = max_tokens
        calls: dict[int, dict[str, str]] = {}
        # Pieces are joined once when the stream ends (normally, by error or by cancellation):
        # `out.content += piece` per token would copy the whole reply each time.
        text = _Pieces(out.content, out.reasoning)
        body = self._body(messages, tools, stream=True, max_tokens=max_tokens)
        cap = None if max_tokens is None else max_tokens + len(text.content) + CAP_SLACK_PIECES
        try:
            async with conn.http.stream(
                "POST", self.config.completions_url, json=body, extensions={"trace": conn.trace}
            ) as response:
                conn.attach(response)
                if response.status_code >= 400:
                    await response.aread()
                    raise _status_error(response, self.config.model)
                saw_done = False
                async for data in data_lines(response.aiter_bytes()):
                    if data == "[DONE]":
                        saw_done = True
                        break
                    if on_chunk is not None:
                        on_chunk()
                    _apply_chunk(_parse_chunk(data), data, out, text, calls, on_delta)
                    if cap is not None and len(text.content) + len(text.reasoning) > cap:
                        out.finish_reason = "length"  # cut where the server should have
                        break  # leaving the response closes the connection: its slot frees
        except LineTooLong as exc:
            raise MalformedChunk(
                f"model server sent a line longer than {exc.limit // (1024 * 1024)} MiB "
                "without ending it; the reply was stopped there"
            ) from None
        except httpx.TimeoutException as exc:
            raise ConnectFailed(f"model server timed out: {_describe(exc)}") from exc
        except httpx.RemoteProtocolError as exc:
            raise EarlyClose(f"model server closed the stream early: {_describe(exc)}") from exc
        except httpx.TransportError as exc:
            raise _transport_error(exc, self.config.base_url) from exc
        finally:
            out.content, out.reasoning = text.joined()
            conn.detach()
        out.tool_calls = _assemble_calls(calls)
        if out.finish_reason is None:
            ended = "after [DONE]" if saw_done else "without [DONE]"
            raise EarlyClose(f"model server ended the stream {ended} and without a finish reason")
        return out

    async def complete(
        self,
        conn: ProviderConnection,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] = (),
        max_tokens: int | None = None,
    ) -> Completion:
        """One non-streaming completion (``max_tokens`` as for :meth:`stream`).

        Returns:
            the reply.

        Raises:
            ProviderError: as for :meth:`stream`; :class:`MalformedChunk` for a body that is not
                a chat completion.
            asyncio.CancelledError: when the awaiting task is cancelled; the socket is closed.
        """
        import httpx

        body = self._body(messages, tools, stream=False, max_tokens=max_tokens)
        try:
            response = await conn.http.post(
                self.config.completions_url, json=body, extensions={"trace": conn.trace}
            )
        except httpx.TimeoutException as exc:
            raise ConnectFailed(f"model server timed out: {_describe(exc)}") from exc
        except httpx.RemoteProtocolError as exc:
            raise EarlyClose(f"model server closed the connection early: {_describe(exc)}") from exc
        except httpx.TransportError as exc:
            raise _transport_error(exc, self.config.base_url) from exc
        finally:
            conn.detach()
        if response.status_code >= 400:
            raise _status_error(response, self.config.model)
        try:
            data = loads(response.content)
            choice = data["choices"][0]
            message = choice["message"]
            calls = [
                ToolCall(
                    id=str(c.get("id") or f"call_{i}"),
                    name=str(c["function"]["name"]),
                    arguments=str(c["function"].get("arguments") or ""),
                )
                for i, c in enumerate(message.get("tool_calls") or [])
            ]
            return Completion(
                content=str(message.get("content") or ""),
                reasoning=str(message.get("reasoning_content") or ""),
                tool_calls=calls,
                finish_reason=str(choice.get("finish_reason") or "stop"),
                usage=Usage.from_wire(data.get("usage"), data.get("timings")),
            )
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            text = _clip(response.text)
            raise MalformedChunk(f"model server sent a malformed reply: {text}") from exc


def _malformed(why: str, data: str) -> MalformedChunk:
    return MalformedChunk(f"model server sent a malformed chunk ({why}): {_clip(data)}")


def _parse_chunk(data: str) -> dict[str, Any]:
    try:
        chunk = loads(data)
    except ValueError as exc:
        raise _malformed("not JSON", data) from exc
    if not isinstance(chunk, dict):
        raise _malformed(f"{_kind(chunk)}, not an object", data)
    if "error" in chunk:
        message = f"model server failed mid-stream: {_error_text(chunk)}"
        overflow = context_overflow(400, chunk, data, message)  # llama.cpp's error event
        raise overflow if overflow is not None else ServerError(message)
    return chunk


CAP_SLACK_PIECES = 8
"""Pieces a stream may send past its ``max_tokens`` before it is cut (see :meth:`stream`)."""


class _Pieces:
    """The content and reasoning pieces of one stream, joined only on demand."""

    __slots__ = ("content", "reasoning")

    def __init__(self, content: str, reasoning: str) -> None:
        self.content = [content] if content else []
        self.reasoning = [reasoning] if reasoning else []

    def joined(self) -> tuple[str, str]:
        return "".join(self.content), "".join(self.reasoning)


def _apply_chunk(
    chunk: dict[str, Any],
    data: str,
    out: Completion,
    text: _Pieces,
    calls: dict[int, dict[str, str]],
    on_delta: DeltaCallback,
) -> None:
    """Add one chunk to the reply; :class:`MalformedChunk` (quoting ``data``) for any part of
    an unexpected shape, so nothing of the wrong type reaches the reply."""
    try:
        usage = Usage.from_wire(chunk.get("usage"), chunk.get("timings"))
    except (TypeError, ValueError, OverflowError):
        raise _malformed("usage is not token counts", data) from None
    if usage is not None:
        out.usage = usage
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        raise _malformed(f"choices is {_kind(choices)}, not an array", data)
    for n, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise _malformed(f"choices[{n}] is {_kind(choice)}, not an object", data)
        delta = choice.get("delta")
        if delta is None:
            delta = {}
        elif not isinstance(delta, dict):
            raise _malformed(f"choices[{n}].delta is {_kind(delta)}, not an object", data)
        content = _text_field(delta, "content", n, data)
        reasoning = _text_field(delta, "reasoning_content", n, data) or _text_field(
            delta, "reasoning", n, data
        )
        pieces = delta.get("tool_calls")
        if content or reasoning or pieces:
            out.pieces += 1
        if content or reasoning:
            if content:
                text.content.append(content)
            if reasoning:
                text.reasoning.append(reasoning)
            on_delta(StreamDelta(content=content, reasoning=reasoning))
        if pieces is not None:
            _apply_tool_calls(pieces, calls, n, data)
        finish = choice.get("finish_reason")
        if finish is not None and not isinstance(finish, str):
            raise _malformed(f"choices[{n}].finish_reason is {_kind(finish)}", data)
        if finish:
            out.finish_reason = finish


def _apply_tool_calls(pieces: Any, calls: dict[int, dict[str, str]], n: int, data: str) -> None:
    where = f"choices[{n}].delta.tool_calls"
    if not isinstance(pieces, list):
        raise _malformed(f"{where} is {_kind(pieces)}, not an array", data)
    for k, piece in enumerate(pieces):
        if not isinstance(piece, dict):
            raise _malformed(f"{where}[{k}] is {_kind(piece)}, not an object", data)
        index = piece.get("index", 0)
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise _malformed(f"{where}[{k}].index is not a call number", data)
        function = piece.get("function")
        if function is None:
            function = {}
        elif not isinstance(function, dict):
            raise _malformed(f"{where}[{k}].function is {_kind(function)}, not an object", data)
        call_id = piece.get("id")
        name, arguments = function.get("name"), function.get("arguments")
        for field, value in (
            ("id", call_id),
            ("function.name", name),
            ("function.arguments", arguments),
        ):
            if value is not None and not isinstance(value, str):
                raise _malformed(f"{where}[{k}].{field} is {_kind(value)}, not a string", data)
        slot = calls.setdefault(index, {"id": "", "name": "", "args": ""})
        slot["id"] = slot["id"] or call_id or ""
        slot["name"] += name or ""
        slot["args"] += arguments or ""


def _text_field(delta: dict[str, Any], name: str, n: int, data: str) -> str:
    value = delta.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _malformed(f"choices[{n}].delta.{name} is {_kind(value)}, not a string", data)
    return value


def _kind(value: Any) -> str:
    """The JSON kind of a decoded value, as a message names it (``a number``, ``null``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _assemble_calls(calls: dict[int, dict[str, str]]) -> list[ToolCall]:
    return [
        ToolCall(id=slot["id"] or f"call_{index}", name=slot["name"], arguments=slot["args"])
        for index, slot in sorted(calls.items())
    ]


def _status_error(response: httpx.Response, model: str) -> ProviderError:
    status = response.status_code
    data = _json_or_none(response)
    detail = _error_text(data) or _clip(response.text) or response.reason_phrase
    message = f"model server rejected the request ({status}): {detail}"
    overflow = context_overflow(status, data, response.text, message)
    if overflow is not None:
        return overflow
    if status in (401, 403):
        return AuthError(f"model server refused the API key ({status}): {detail}", status=status)
    if status == 404 and ("model" in detail.lower()):
        return ModelNotFound(f"model server has no model {model!r}: {detail}", status=status)
    if status == 429:
        retry_after = _retry_after(response.headers.get("retry-after"))
        wait = f", retry after {retry_after:g} s" if retry_after is not None else ""
        message = f"model server is rate limiting (429){wait}: {detail}"
        return RateLimited(message, retry_after=retry_after)
    if status >= 500:
        retry_after = _retry_after(response.headers.get("retry-after")) if status == 503 else None
        message = f"model server failed ({status}): {detail}"
        return ServerError(message, status=status, retry_after=retry_after)
    return BadRequest(message, status=status)


def _transport_error(exc: httpx.TransportError, base_url: str) -> ProviderError:
    import httpx

    if isinstance(exc, httpx.ConnectError):
        return ConnectFailed(f"cannot reach the model server at {base_url}: {_describe(exc)}")
    return ProviderError(f"connection to the model server failed: {_describe(exc)}")


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date; treat as unknown rather than guess the clock


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return loads(response.content)
    except ValueError:
        return None


def _error_text(data: Any) -> str:
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            return _clip(str(error.get("message") or error.get("code") or ""))
        if isinstance(error, str):
            return _clip(error)
    return ""


def _describe(exc: BaseException) -> str:
    seen: BaseException | None = exc
    for _ in range(8):  # the OSError hides a few causes deep (httpx -> httpcore -> anyio)
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError) or getattr(seen, "errno", None) == 111:
            return "connection refused"
        if isinstance(seen, ExceptionGroup):
            seen = seen.exceptions[0]
            continue
        seen = seen.__cause__ or seen.__context__
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    return _clip(text)


def _clip(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
