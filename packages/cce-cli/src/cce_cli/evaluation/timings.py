"""What a suite member cost to run: its index time and each backend's query latency.

Why it exists: semble's benchmark reports index time and query latency (p50, p95) per
repository and backend beside the quality numbers, so a ranking change's cost shows
next to its gain. Wall-clock figures differ from run to run, so a suite report carries
them only when asked (`--timings`); its bytes stay deterministic otherwise. This module
owns the figures of one member and the percentile rule (linear interpolation between
the closest ranks, numpy's default), so every rendering states the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs

__all__ = ["MemberTimings", "percentile"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The `q`-th percentile (0-100) of `values` by linear interpolation between the
    closest ranks; None over no value."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@attrs.frozen(slots=True)
class MemberTimings:
    """One member's wall-clock costs: seconds to build (or load from the build cache)
    or open its index, and each backend's per-query search latencies in milliseconds."""

    index_seconds: float
    latencies_ms: Mapping[str, tuple[float, ...]]

    def latency(self, backend: str, q: float) -> float | None:
        return percentile(self.latencies_ms.get(backend, ()), q)
