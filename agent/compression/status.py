"""A compression's phases and outcomes, as closed types (their values are the wire's words)."""

from __future__ import annotations

from enum import StrEnum


class CompressionPhase(StrEnum):
    """Where an attempt is (DESIGN.md, flow 4), in the order it goes through them."""

    LEASE = "lease"
    PREPARE = "prepare"
    SUMMARIZE = "summarize"
    COMMIT = "commit"
    DONE = "done"


class CompressionStatus(StrEnum):
    """How an attempt ended.

    ``refused``: the summary was empty or not shorter than its input; ``busy``: another
    compression holds the session's lease; ``nothing``: there was nothing to summarise.
    """

    COMMITTED = "committed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    REFUSED = "refused"
    BUSY = "busy"
    NOTHING = "nothing"


__all__ = ["CompressionPhase", "CompressionStatus"]
