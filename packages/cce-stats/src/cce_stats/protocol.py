"""The result type and protocol every paired test shares.

Why it exists: the harness, the comparison renderers and the gate hold a paired
test's outcome without knowing which test produced it; this module owns that
shape (`PairedTestResult`) and the `PairedTest` protocol the tests implement. The
registry of tests lives in `cce_stats.paired` (docs/statistics.md#paired-tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["PairedTest", "PairedTestResult"]


@dataclass(frozen=True, slots=True)
class PairedTestResult:
    """Outcome of one paired test on per-query deltas (B minus A).

    `test` is the registry name of the test that produced it. `statistic` is the
    test's own statistic (t for the t-test, W+ or z for the signed-rank test) or
    None when the test has none or it is undefined; `p` is two-sided, None when
    undefined (too few deltas); `ci95` is None when the test gives no interval.
    """

    test: str
    n: int
    mean_delta: float
    statistic: float | None
    p: float | None
    ci95: tuple[float, float] | None
    fallback_p: float | None = None
    """Set only where `p` is a convention rather than evidence: the p that decides instead.

    The t-test's constant deltas are the one case (docs/statistics.md#constant-deltas):
    the reference reports p = 0.0 for two queries that both lost 0.2, but with zero
    variance t says nothing, so the exact sign-flip p (2^(1 - n), here 0.5) is set here.
    """

    @property
    def decision_p(self) -> float | None:
        """The p a decision (a gate, a "significantly worse" label) compares with alpha.

        `fallback_p` when it is set, otherwise `p`. Reports print `p`, which keeps the
        reference's bytes; anything that acts on the p reads this instead.
        """
        return self.p if self.fallback_p is None else self.fallback_p


class PairedTest(Protocol):
    """A two-sided test of "the mean delta is zero" over paired per-query deltas."""

    @property
    def name(self) -> str:
        """Registry and command-line name, e.g. "t"."""
        ...

    @property
    def label(self) -> str:
        """Human heading, e.g. "paired t-test"."""
        ...

    @property
    def statistic_name(self) -> str:
        """Column label of `PairedTestResult.statistic`, e.g. "t"."""
        ...

    def run(self, deltas: Sequence[float]) -> PairedTestResult:
        """Test `deltas`; raises ValueError when any delta is not finite."""
        ...
