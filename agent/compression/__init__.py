"""Context compression: replace the middle of a transcript with a model-written summary.

Phases, each reported with counts: ``lease`` (one compression per session, across processes),
``prepare`` (pick head / middle / tail; a tool call and its results are never split),
``summarize`` (one streamed model call), ``commit`` (one transaction), ``done``. A hard stop
before commit admission rolls everything back; one after admission waits for the commit.
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "CommitFence": "agent.compression.fence",
        "CompressionOutcome": "agent.compression.engine",
        "CompressionPhase": "agent.compression.status",
        "CompressionPlan": "agent.compression.plan",
        "CompressionProgress": "agent.compression.engine",
        "CompressionStatus": "agent.compression.status",
        "Compressor": "agent.compression.engine",
        "CooldownLadder": "agent.compression.policy",
        "FenceState": "agent.compression.fence",
        "plan_compression": "agent.compression.plan",
        "should_compress": "agent.compression.policy",
    },
)
