"""The wire's size limits: longest stdio line, largest HTTP body, events kept for replay."""

from __future__ import annotations

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest JSON-RPC line the stdio transport reads, in bytes; a longer one is refused whole."""

MAX_HTTP_BODY_BYTES = 1_000_000
"""Largest HTTP request body accepted, in bytes (413 beyond)."""

REPLAY_CAPACITY = 2000
"""Events kept per session for ``session.events.since`` (the oldest are dropped first)."""
