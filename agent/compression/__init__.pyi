"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from agent.compression.engine import (
    CompressionOutcome,
    CompressionProgress,
    Compressor,
)
from agent.compression.fence import (
    CommitFence,
    FenceState,
)
from agent.compression.plan import (
    CompressionPlan,
    plan_compression,
)
from agent.compression.policy import (
    CooldownLadder,
    should_compress,
)
from agent.compression.status import (
    CompressionPhase,
    CompressionStatus,
)

__all__ = [
    "CommitFence",
    "CompressionOutcome",
    "CompressionPhase",
    "CompressionPlan",
    "CompressionProgress",
    "CompressionStatus",
    "Compressor",
    "CooldownLadder",
    "FenceState",
    "plan_compression",
    "should_compress",
]
