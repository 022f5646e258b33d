"""JSON-RPC 2.0 requests -> gateway method calls -> responses, for any transport.

:class:`Dispatcher` takes one parsed JSON value (a request, a notification or a batch), checks
it against :mod:`contract` and calls the in-process gateway: each method through its
declaration's :attr:`~contract.methods.declare.Method.call` (one loop builds the table; only
``session.events.since``, served from the transport's replay ring, is written here). Every refusal
happens before the gateway is called, so a refused request changes nothing. Errors use the
standard codes (see ``contract.ERROR_CODES``); a :class:`contract.errors.GatewayError` keeps
its own code.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Any

import contract as c
from contract.errors import GatewayError
from contract.methods.lifecycle import GATEWAY_SHUTDOWN
from contract.methods.replay import SESSION_EVENTS_SINCE
from tui_gateway.gateway import Gateway
from tui_gateway.wire.codec import (
    DecodeError,
    JsonTooDeep,
    decode,
    encode,
    event_params,
    loads,
)
from tui_gateway.wire.replay import ReplayRing

_log = logging.getLogger(__name__)

Handler = Callable[[Any], Any]


class RpcError(Exception):
    """A JSON-RPC error to answer with: ``code`` and a one-line ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def error_response(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response object."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def parse_line(line: bytes | str) -> tuple[Any, dict[str, Any] | None]:
    """Parse one line of JSON.

    Returns:
        (the value, None), or (None, a parse-error response) when it is not JSON.
    """
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
        return loads(text), None  # NaN is read, then refused as invalid params by decode
    except JsonTooDeep as exc:  # JSON, but no request
        return None, error_response(None, c.INVALID_REQUEST, f"invalid request: {exc}")
    except (UnicodeDecodeError, ValueError) as exc:
        return None, error_response(None, c.PARSE_ERROR, f"parse error: {exc}")


class Dispatcher:
    """Serves the contract's methods for one in-process gateway.

    Args:
        gateway: the gateway.
        ring: the replay ring behind ``session.events.since`` (None: the method answers -32000).
        on_shutdown: called after a ``gateway.shutdown`` request has shut the gateway down
            (before its response is sent).
    """

    def __init__(
        self,
        gateway: Gateway,
        ring: ReplayRing | None = None,
        *,
        on_shutdown: Callable[[], None] | None = None,
    ) -> None:
        self.gateway = gateway
        self.ring = ring
        self._on_shutdown = on_shutdown
        self._handlers: dict[str, Handler] = {
            m.name: functools.partial(m.call, gateway) for m in c.METHODS if m.call is not None
        }
        self._handlers[SESSION_EVENTS_SINCE.name] = (
            self._events_since
        )  # the transport's replay ring
        missing = set(c.METHODS_BY_NAME) ^ set(self._handlers)
        if missing:  # pragma: no cover - caught by the contract tests
            raise RuntimeError(f"contract and dispatcher disagree on {sorted(missing)}")

    # -- entry points -----------------------------------------------------------------------------

    def is_blocking(self, message: Any) -> bool:
        """True when ``message`` (a request or batch) calls a method that may wait."""
        items = message if isinstance(message, list) else [message]
        for item in items:
            if isinstance(item, dict):
                method = c.METHODS_BY_NAME.get(str(item.get("method")))
                if method is not None and method.blocking:
                    return True
        return False

    def handle(self, message: Any) -> dict[str, Any] | list[dict[str, Any]] | None:
        """Answer one parsed JSON-RPC message.

        Returns:
            the response (a list for a batch), or None when nothing is to be answered
            (notifications only).
        """
        if isinstance(message, list):
            if not message:
                return error_response(None, c.INVALID_REQUEST, "invalid request: empty batch")
            answers = [self.handle_one(item) for item in message]
            kept = [a for a in answers if a is not None]
            return kept or None
        return self.handle_one(message)

    def handle_one(self, message: Any) -> dict[str, Any] | None:
        """Answer one request object (None for a notification)."""
        if not isinstance(message, dict):
            return error_response(None, c.INVALID_REQUEST, "invalid request: not an object")
        has_id = "id" in message
        request_id = message.get("id")
        if has_id and (
            isinstance(request_id, bool) or not isinstance(request_id, str | int | type(None))
        ):
            return error_response(
                None, c.INVALID_REQUEST, "invalid request: id must be a string, integer or null"
            )
        try:
            result = self._call(message)
        except RpcError as exc:
            return error_response(request_id, exc.code, exc.message) if has_id else None
        except RecursionError:  # params nested too deeply to check (the parser took them)
            message_text = "invalid request: nested too deeply"
            return error_response(request_id, c.INVALID_REQUEST, message_text) if has_id else None
        if not has_id:
            return None
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """Call a method with by-name params; returns the encoded result.

        Raises:
            RpcError: any refusal, with its code.
        """
        return self._call({"jsonrpc": "2.0", "method": method, "params": params})

    def _call(self, message: dict[str, Any]) -> Any:
        if message.get("jsonrpc") != "2.0":
            raise RpcError(c.INVALID_REQUEST, 'invalid request: jsonrpc must be "2.0"')
        name = message.get("method")
        if not isinstance(name, str):
            raise RpcError(c.INVALID_REQUEST, "invalid request: method must be a string")
        extra = set(message) - {"jsonrpc", "method", "params", "id"}
        if extra:
            raise RpcError(
                c.INVALID_REQUEST, f"invalid request: unknown member {sorted(extra)[0]!r}"
            )
        raw = message.get("params", {})
        if not isinstance(raw, dict | list):
            raise RpcError(c.INVALID_REQUEST, "invalid request: params must be an object or array")
        method = c.METHODS_BY_NAME.get(name)
        if method is None:
            raise RpcError(c.METHOD_NOT_FOUND, f"method not found: {name!r}")
        if isinstance(raw, list):
            raise RpcError(c.INVALID_PARAMS, "invalid params: pass params by name (an object)")
        try:
            params = decode(method.params, raw, path="params")
        except DecodeError as exc:
            raise RpcError(c.INVALID_PARAMS, f"invalid params: {exc}") from None
        try:
            result = self._handlers[name](params)
            if name == GATEWAY_SHUTDOWN.name and self._on_shutdown is not None:
                self._on_shutdown()
        except GatewayError as exc:
            raise RpcError(exc.code, exc.message) from None
        except RpcError:
            raise
        except Exception as exc:  # a gateway bug: answer, log, and keep serving
            _log.exception("%s failed", name)
            raise RpcError(
                c.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}"
            ) from None
        return encode(result)

    # -- served here ----------------------------------------------------------------------------

    def _events_since(self, p: c.EventsSinceParams) -> c.EventsSinceResult:
        if self.ring is None:
            raise RpcError(c.GATEWAY_ERROR, "this gateway keeps no replay ring")
        replay = self.ring.since(p.session_id, p.seq)
        if not replay.known and p.session_id:  # published by another host of a shared store?
            stored = self.gateway.stored_events(p.session_id, p.seq)
            if stored is not None and stored.known:
                return c.EventsSinceResult(
                    session_id=p.session_id,
                    events=[c.WireEvent(**json.loads(e.params)) for e in stored.events],
                    truncated=stored.truncated,
                    last_seq=stored.last_seq,
                )
        if not replay.known and p.session_id and p.session_id not in self.gateway.live_sessions():
            raise RpcError(c.INVALID_PARAMS, f"no session {p.session_id!r}")
        events = [c.WireEvent(**event_params(e)) for e in replay.events]
        return c.EventsSinceResult(
            session_id=p.session_id,
            events=events,
            truncated=replay.truncated,
            last_seq=replay.last_seq,
        )
