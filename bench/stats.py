"""Summary statistics the benchmarks print."""

from __future__ import annotations

import statistics


def percentiles(values: list[float]) -> dict[str, float]:
    """n, p50/p95/p99/max and mean of ``values`` (nearest-rank percentiles), rounded to 0.01."""
    if not values:
        return {"n": 0}
    ordered = sorted(values)

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]

    return {
        "n": len(ordered),
        "p50": round(rank(50), 2),
        "p95": round(rank(95), 2),
        "p99": round(rank(99), 2),
        "max": round(ordered[-1], 2),
        "mean": round(statistics.fmean(ordered), 2),
    }
