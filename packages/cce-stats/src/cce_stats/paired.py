"""One protocol for every paired test, and the ordered registry of them.

Why it exists: a comparison of two retrieval backends pairs their per-query
scores and asks whether the mean delta (B minus A) is distinguishable from zero.
Several tests answer that question — the reference's t-test, a sign-flip
randomization test, the Wilcoxon signed-rank test, a bootstrap interval — and the
harness and renderers should not care which one ran. This module owns
`PAIRED_TESTS`, the registry by name that command-line choices, help text and
error messages are derived from, and the t-test's entry (the shared result type
and protocol live in `cce_stats.protocol`). Adding a test is one class plus one registry entry
(docs/architecture.md#how-to-add-a-paired-test).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from cce_stats.bootstrap import BootstrapTest
from cce_stats.protocol import PairedTest, PairedTestResult
from cce_stats.randomization import RandomizationTest
from cce_stats.signed_rank import SignedRankTest
from cce_stats.ttest import paired_t_test

__all__ = [
    "PAIRED_TESTS",
    "BootstrapTest",
    "PairedTest",
    "PairedTestResult",
    "RandomizationTest",
    "SignedRankTest",
    "TTest",
    "paired_test",
    "paired_test_names",
]


@dataclass(frozen=True, slots=True)
class TTest:
    """The reference's paired t-test (`paired_t_test`) behind the protocol.

    Its numbers are exactly `paired_t_test`'s: `statistic` is t, `ci95` the 95%
    t interval (docs/statistics.md#paired-t-test). On constant deltas `p` keeps the
    reference's 0.0 and `fallback_p` carries the exact sign-flip p that a decision
    uses instead (`PairedTestResult.decision_p`, docs/statistics.md#constant-deltas).
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
            fallback_p=result.constant_p,
        )


def _registry(*tests: PairedTest) -> Mapping[str, PairedTest]:
    return MappingProxyType({test.name: test for test in tests})


PAIRED_TESTS: Mapping[str, PairedTest] = _registry(
    TTest(), RandomizationTest(), SignedRankTest(), BootstrapTest()
)
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
