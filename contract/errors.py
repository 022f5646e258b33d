"""The contract's errors: JSON-RPC 2.0's codes, one for a request the gateway refuses, and the
exception a gateway raises with one of them."""

from __future__ import annotations

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


class GatewayError(Exception):
    """A request the gateway refuses, with a one-line ``message`` and a JSON-RPC ``code``."""

    def __init__(self, message: str, code: int = GATEWAY_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
