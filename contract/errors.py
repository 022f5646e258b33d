"""The contract's errors: what a gateway refuses, with a JSON-RPC code."""

from __future__ import annotations


class GatewayError(Exception):
    """A request the gateway refuses, with a one-line ``message`` and a JSON-RPC ``code``."""

    def __init__(self, message: str, code: int = -32000) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
