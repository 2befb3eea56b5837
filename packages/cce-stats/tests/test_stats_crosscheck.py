"""Every statistic against an independent oracle on thousands of random inputs.

Why it exists: the other tests pin edge cases and worked examples; this one checks
that on ordinary inputs of every shape IR deltas take (continuous, lattice with ties
and zeros, +-1 hit deltas, skewed) each statistic equals its oracle to 1e-9:

- paired t-test (t, p, 95% interval): scipy's Student t distribution;
- d_z: numpy's mean and sd;
- signed-rank (W+, p): scipy's exact Wilcoxon where its definition coincides (no
  ties, no zeros); on tied and zero-heavy deltas an exact numpy convolution of the
  mid-rank null distribution; beyond the exact limit, scipy's normal approximation
  without continuity correction;
- randomization (exact, up to 14 non-zero deltas): numpy's enumeration of all sign
  assignments with the package's documented tie tolerance;
- Holm, Benjamini-Hochberg and Bonferroni: statsmodels' `multipletests`.

2,000 inputs per statistic come from one numpy generator with a fixed seed (SEED).
Left out are the inputs the package deliberately treats otherwise: constant deltas
(t and d_z undefined by the package's rule) and the Monte Carlo randomization p,
which no oracle shares a generator with. The oracles are called in batches (one
scipy call per sample size) so the whole file runs in a few seconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from unittest import mock

import numpy as np
from numpy.typing import NDArray
from scipy import stats
from statsmodels.stats.multitest import multipletests

from cce_stats import (
    RandomizationTest,
    SignedRankTest,
    adjust_p_values,
    effect_size_dz,
    paired_t_test,
)
from cce_stats.signed_rank import EXACT_LIMIT

SEED = 0x5EED_C0DE
COUNT = 2_000
TOLERANCE = 1e-9
Vector = NDArray[np.float64]


def _shape(rng: np.random.Generator, n: int, kind: int) -> Vector:
    """One delta vector of length n in one of the shapes IR comparisons produce."""
    if kind == 0:  # continuous, shifted: nDCG or recall deltas on many documents
        return rng.normal(0.05, 0.25, n)
    if kind == 1:  # a 0.05 lattice: P@k and MRR deltas, with ties and zeros
        return np.asarray(rng.integers(-8, 9, n) * 0.05, dtype=np.float64)
    if kind == 2:  # hit@1 deltas: -1, 0, +1, mostly 0
        return rng.choice(np.array([-1.0, 0.0, 0.0, 0.0, 1.0]), n)
    return rng.exponential(0.2, n) - 0.15  # skewed


def _vectors(rng: np.random.Generator, sizes: tuple[int, int]) -> list[Vector]:
    return [
        _shape(rng, int(rng.integers(sizes[0], sizes[1] + 1)), int(rng.integers(0, 4)))
        for _ in range(COUNT)
    ]


def _close(actual: float | None, expected: float, scale: float = 1.0) -> bool:
    return actual is not None and abs(actual - expected) <= TOLERANCE * max(scale, abs(expected))


def _not_constant(vector: Vector) -> bool:
    return bool(np.ptp(vector) > 1e-12)


def test_t_test_equals_scipy() -> None:
    rng = np.random.default_rng(SEED)
    vectors = [v for v in _vectors(rng, (2, 80)) if _not_constant(v)]
    assert len(vectors) > 0.9 * COUNT
    n = np.array([len(v) for v in vectors], dtype=float)
    mean = np.array([v.mean() for v in vectors])
    se = np.array([v.std(ddof=1) for v in vectors]) / np.sqrt(n)
    t = mean / se
    p = 2.0 * stats.t.sf(np.abs(t), n - 1)
    half = stats.t.ppf(0.975, n - 1) * se
    failures = []
    for index, vector in enumerate(vectors):
        got = paired_t_test(vector.tolist())
        ci = got.ci95
        ok = (
            _close(got.t, t[index])
            and _close(got.p, p[index])
            and ci is not None
            and _close(ci[0], mean[index] - half[index])
            and _close(ci[1], mean[index] + half[index])
        )
        if not ok:
            failures.append((vector.tolist(), got, t[index], p[index]))
    assert not failures, failures[:3]


def test_effect_size_equals_numpy() -> None:
    rng = np.random.default_rng(SEED + 1)
    vectors = [v for v in _vectors(rng, (2, 200)) if _not_constant(v)]
    assert len(vectors) > 0.9 * COUNT
    failures = [
        vector.tolist()
        for vector in vectors
        if not _close(effect_size_dz(vector.tolist()), vector.mean() / vector.std(ddof=1))
    ]
    assert not failures, failures[:3]


def _null_distribution(doubled_ranks: list[int]) -> Vector:
    """P(doubled W+ = w) for every w, by convolving one rank at a time in float64."""
    total = sum(doubled_ranks)
    probability = np.zeros(total + 1)
    probability[0] = 1.0
    for rank in doubled_ranks:
        shifted = np.zeros_like(probability)
        shifted[rank:] = probability[: total + 1 - rank]
        probability = 0.5 * (probability + shifted)
    return probability


def _signed_rank_oracle(vector: Vector) -> tuple[float, float]:
    """(W+, exact two-sided p) from scipy's mid-ranks and an independent convolution."""
    nonzero = vector[vector != 0.0]
    ranks = stats.rankdata(np.round(np.abs(nonzero), 9))
    w_plus = float(ranks[nonzero > 0].sum())
    doubled = [round(2 * r) for r in ranks]
    probability = _null_distribution(doubled)
    observed = round(2 * w_plus)
    centre = sum(doubled) / 2
    distance = abs(observed - centre)
    values = np.arange(len(probability))
    p = float(probability[np.abs(values - centre) >= distance - 1e-9].sum())
    return w_plus, min(1.0, p)


def test_signed_rank_equals_scipy_and_an_exact_convolution() -> None:
    rng = np.random.default_rng(SEED + 2)
    test = SignedRankTest()
    failures: list[object] = []
    # Continuous deltas (no ties, no zeros): scipy's exact distribution, one call per n.
    by_n: dict[int, list[Vector]] = defaultdict(list)
    for _ in range(COUNT // 2):
        n = int(rng.integers(2, 41))
        by_n[n].append(rng.normal(0.03, 0.2, n))
    for group in by_n.values():
        block = np.array(group)
        expected = stats.wilcoxon(block, axis=1, method="exact").pvalue
        for vector, p in zip(group, np.atleast_1d(expected), strict=True):
            got = test.run(vector.tolist())
            w_plus = float(stats.rankdata(np.abs(vector))[vector > 0].sum())
            if not (_close(got.p, float(p)) and _close(got.statistic, w_plus)):
                failures.append((vector.tolist(), got, p))
    # Lattice, hit and skewed deltas with ties and zeros, up to 80 pairs (numpy's
    # convolution oracle grows as m^3; test_stats_signed_rank_exact covers m = 21-1,000).
    for _ in range(COUNT // 2):
        n = int(rng.integers(2, 81))
        vector = _shape(rng, n, int(rng.integers(1, 4)))
        if vector.shape[0] > 0 and not np.any(vector != 0.0):
            continue
        got = test.run(vector.tolist())
        w_plus, p = _signed_rank_oracle(vector)
        if not (_close(got.p, p) and _close(got.statistic, w_plus)):
            failures.append((vector.tolist(), got, p))
    assert not failures, failures[:3]


def test_signed_rank_approximation_equals_scipy_beyond_the_exact_limit() -> None:
    rng = np.random.default_rng(SEED + 3)
    test = SignedRankTest()
    failures = []
    for _ in range(20):
        vector = rng.integers(-8, 9, EXACT_LIMIT + 200) * 0.05
        vector[: EXACT_LIMIT + 1] = np.where(
            vector[: EXACT_LIMIT + 1] == 0.0, 0.05, vector[: EXACT_LIMIT + 1]
        )
        expected = stats.wilcoxon(vector, method="asymptotic", correction=False).pvalue
        got = test.run(vector.tolist())
        if not _close(got.p, float(expected)):
            failures.append((got.p, expected))
    assert not failures, failures[:3]


def _sign_matrix(m: int) -> NDArray[np.float64]:
    bits = (np.arange(1 << m)[:, None] >> np.arange(m)) & 1
    return np.asarray(1.0 - 2.0 * bits, dtype=np.float64)


def test_exact_randomization_equals_a_numpy_enumeration() -> None:
    rng = np.random.default_rng(SEED + 4)
    test = RandomizationTest()
    matrices = {m: _sign_matrix(m) for m in range(15)}
    failures = []
    for vector in _vectors(rng, (2, 16)):
        nonzero = vector[vector != 0.0][:14]
        vector = np.concatenate([nonzero, np.zeros(len(vector) - len(nonzero))])
        if len(vector) < 2:
            continue
        # The package's documented rule: flipped sums within 1e-10 * sum|d| of the
        # observed |sum| count as reaching it (the same sum in another order).
        tolerance = 1e-10 * float(np.abs(nonzero).sum())
        threshold = abs(float(nonzero.sum()))
        sums = np.abs(matrices[len(nonzero)] @ nonzero)
        p = float(np.count_nonzero(sums >= threshold - tolerance)) / (1 << len(nonzero))
        got = test.run(vector.tolist())
        if not _close(got.p, p):
            failures.append((vector.tolist(), got.p, p))
    assert not failures, failures[:3]


STATSMODELS_NAME = {"holm": "holm", "bh": "fdr_bh", "bonferroni": "bonferroni"}


def test_corrections_equal_statsmodels() -> None:
    rng = np.random.default_rng(SEED + 5)
    special = np.array([0.0, 1e-6, 0.01, 0.05, 0.5, 1.0])
    failures = []
    oracle: Callable[..., tuple[object, NDArray[np.float64], object, object]] = multipletests
    # multipletests runs a full gc.collect() on every Holm call (about 0.25 s in a large
    # test process, 8 minutes over 2,000 families); it frees nothing the result needs.
    with mock.patch("gc.collect"):
        for _ in range(COUNT):
            size = int(rng.integers(1, 13))
            family = np.where(
                rng.random(size) < 0.3, rng.choice(special, size), rng.random(size) ** 3
            )
            for method, name in STATSMODELS_NAME.items():
                expected = oracle(family, alpha=0.05, method=name)[1]
                got = adjust_p_values(family.tolist(), method)
                if not all(_close(a, float(e)) for a, e in zip(got, expected, strict=True)):
                    failures.append((method, family.tolist(), got, expected.tolist()))
    assert not failures, failures[:3]
