"""One protocol for every paired test, and the ordered registry of them.

Why it exists: a comparison of two retrieval backends pairs their per-query
scores and asks whether the mean delta (B minus A) is distinguishable from zero.
Several tests answer that question — the reference's t-test, a sign-flip
randomization test, the Wilcoxon signed-rank test, a bootstrap interval — and the
harness and renderers should not care which one ran. This module owns the shared
result type (`PairedTestResult`), the `PairedTest` protocol, and `PAIRED_TESTS`,
the registry by name that command-line choices, help text and error messages are
derived from. Adding a test is one class plus one registry entry
(docs/architecture.md#how-to-add-a-paired-test).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from cce_stats.ttest import paired_t_test

__all__ = [
    "PAIRED_TESTS",
    "PairedTest",
    "PairedTestResult",
    "TTest",
    "paired_test",
    "paired_test_names",
]


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


@dataclass(frozen=True, slots=True)
class TTest:
    """The reference's paired t-test (`paired_t_test`) behind the protocol.

    Its numbers are exactly `paired_t_test`'s: `statistic` is t, `ci95` the 95%
    t interval (docs/statistics.md#paired-t-test).
    """

    name: str = "t"
    label: str = "paired t-test"
    statistic_name: str = "t"

    def run(self, deltas: Sequence[float]) -> PairedTestResult:
        result = paired_t_test(deltas)
        return PairedTestResult(
            test=self.name,
            n=result.n,
            mean_delta=result.mean_delta,
            statistic=result.t,
            p=result.p,
            ci95=result.ci95,
        )


def _registry(*tests: PairedTest) -> Mapping[str, PairedTest]:
    return MappingProxyType({test.name: test for test in tests})


PAIRED_TESTS: Mapping[str, PairedTest] = _registry(TTest())
"""Every paired test by name, in the order help text lists them; "t" is the default."""


def paired_test_names() -> tuple[str, ...]:
    """Return the registered test names in registry order."""
    return tuple(PAIRED_TESTS)


def paired_test(name: str) -> PairedTest:
    """Return the registered test called `name`; ValueError lists the valid names."""
    try:
        return PAIRED_TESTS[name]
    except KeyError:
        valid = ", ".join(PAIRED_TESTS)
        raise ValueError(f"unknown paired test {name!r}; expected one of: {valid}") from None
