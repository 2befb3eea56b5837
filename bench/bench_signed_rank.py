"""CPU time of one exact signed-rank p at m = 300, 500 and 1,000, beside the exact integer count.

Why it exists: `cce_stats.SignedRankTest` counts the permutation distribution of W+
exactly up to `EXACT_LIMIT` (1,000) non-zero deltas, and that limit is only worth what
the count costs there. This script times, on seeded deltas with W+ near its mean (the
costliest place for a given precision): untied continuous deltas, ±1 deltas (one tie
group) and P@10-like deltas (multiples of 0.1, ten tie groups); then, at m = 1,000,
deltas whose p lies further out (a smaller p keeps more bits per count) and deltas
whose magnitudes all come in pairs (every doubled rank odd: the most fields), and tied
deltas (P@10-like, in pairs) whose p is 1e-50 to 1e-97. Beside each
fixed-point time it prints the time of the same meet-in-the-middle count with exact
integer fields, the baseline the fixed-point bracket replaces, and checks that both give
the same p to the last bit. Each time is the best of `--repeat` runs of CPU time
(`time.process_time`). Timings are printed, never asserted. Usage:
`uv run python bench/bench_signed_rank.py [--repeat R] [--skip-exact] [--tiny-only]`
(docs/statistics.md#how-the-exact-p-is-computed).
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable
from functools import partial

from cce_stats import SignedRankTest
from cce_stats.signed_rank import _bounded_count_at_most, signed_ranks


def untied(m: int, drift: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(drift, 1.0) for _ in range(m)]


def lattice(m: int, bias: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [(1 if rng.random() < 0.5 + bias else -1) * rng.randint(1, 10) / 10 for _ in range(m)]


def tied_in_pairs(m: int, seed: int) -> list[float]:
    """Every magnitude twice: all mid-ranks are half-integers, the costliest lattice."""
    rng = random.Random(seed)
    magnitudes = [rng.random() for _ in range(m // 2)]
    return [size * rng.choice((1, -1)) for size in magnitudes for _ in range(2)]


def tied_in_pairs_drifting(m: int, bias: float, seed: int) -> list[float]:
    """Magnitudes in pairs, each sign positive with probability 0.5 + `bias`: a tiny p."""
    rng = random.Random(seed)
    magnitudes = [rng.random() for _ in range(m // 2)]
    return [
        size * (1 if rng.random() < 0.5 + bias else -1) for size in magnitudes for _ in range(2)
    ]


def fixed_point_p(test: SignedRankTest, deltas: list[float]) -> float | None:
    return test.run(deltas).p


def exact_integer_p(deltas: list[float]) -> float:
    """The same p from exact integer fields (no truncation): the baseline."""
    ranks, _ = signed_ranks(deltas)
    doubled = [round(2.0 * abs(rank)) for rank in ranks]
    observed = sum(d for d, rank in zip(doubled, ranks, strict=True) if rank > 0.0)
    divisor = math.gcd(*doubled)
    reduced = [d // divisor for d in doubled]
    total, observed = sum(reduced), observed // divisor
    if 2 * observed == total:
        return 1.0
    count, _ = _bounded_count_at_most(reduced, min(observed, total - observed), None)
    return min(1.0, 2 * count / (1 << len(reduced)))


def best_time(run: Callable[[], float | None], repeat: int) -> tuple[float, float | None]:
    times, value = [], None
    for _ in range(repeat):
        start = time.process_time()
        value = run()
        times.append(time.process_time() - start)
    return min(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-exact", action="store_true", help="time the fixed point only")
    parser.add_argument(
        "--tiny-only", action="store_true", help="only the tied deltas with a tiny p"
    )
    args = parser.parse_args()
    test = SignedRankTest()
    cases: list[tuple[str, list[float]]] = []
    for m in (300, 500, 1000):
        cases.append((f"m={m} untied", untied(m, 0.0, m)))
        cases.append((f"m={m} +-1", [1.0] * (m // 2 + 3) + [-1.0] * (m - m // 2 - 3)))
        cases.append((f"m={m} P@10-like", lattice(m, 0.0, m)))
    cases += [
        ("m=1000 untied, small p", untied(1000, 0.25, 1000)),
        ("m=1000 untied, tiny p", untied(1000, 0.5, 1000)),
        ("m=1000 P@10-like, small p", lattice(1000, 0.13, 1000)),
        ("m=1000 tied in pairs", tied_in_pairs(1000, 1000)),
        # Ties with a tiny p: the most bits per count on a tied lattice.
        ("m=1000 P@10-like, p~1e-50", lattice(1000, 0.27, 1000)),
        ("m=1000 P@10-like, p~1e-97", lattice(1000, 0.38, 1000)),
        ("m=1000 pairs, p~1e-53", tied_in_pairs_drifting(1000, 0.3, 1000)),
        ("m=1000 pairs, p~1e-97", tied_in_pairs_drifting(1000, 0.39, 1000)),
    ]
    if args.tiny_only:
        cases = cases[-4:]
    print(f"{'deltas':28} {'p':>11} {'now (s)':>9} {'exact fields (s)':>17}")
    for name, deltas in cases:
        seconds, p = best_time(partial(fixed_point_p, test, deltas), args.repeat)
        line = f"{name:28} {p:11.4g} {seconds:9.3f}"
        if not args.skip_exact:
            exact_seconds, exact = best_time(partial(exact_integer_p, deltas), 1)
            line += f" {exact_seconds:17.3f}"
            if exact != p:
                line += f"  MISMATCH: exact {exact!r}, fixed point {p!r}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
