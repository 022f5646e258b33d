"""Context compression: replace the middle of a transcript with a model-written summary.

Phases, each reported with counts: ``lease`` (one compression per session, across processes),
``prepare`` (pick head / middle / tail; a tool call and its results are never split),
``summarize`` (one streamed model call), ``commit`` (one transaction), ``done``. A hard stop
before commit admission rolls everything back; one after admission waits for the commit.
"""

from agent.compression.engine import CompressionOutcome, CompressionProgress, Compressor
from agent.compression.fence import CommitFence, FenceState
from agent.compression.plan import CompressionPlan, plan_compression
from agent.compression.policy import CooldownLadder, should_compress
from agent.compression.status import CompressionPhase, CompressionStatus

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
