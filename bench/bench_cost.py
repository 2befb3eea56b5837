"""What reading each backend's results costs on a cce.suite/v1 suite: first-hit tokens and
recall within token budgets, per member and over all queries.

Why it exists: the cost metrics (docs/metrics.md#cost-metrics) are meant to show how many
tokens a retriever saves a reader against the grep-and-read baseline
(docs/backends.md#grep). Until every report carries them, this measures them with the
library API alone: each member's corpus is indexed (hash embedder), every case is run
through each backend to the cost metrics' depth (50), each result judged against the
case's expected and secondary anchors, and its own text counted with `cce.tokens/v1`.
Every value is then recomputed independently from the running totals (a cumulative
curve), and the script stops if the two ever disagree. Usage:
`uv run python bench/bench_cost.py SUITE.toml [BACKEND,BACKEND]` (default bm25,grep).
"""

from __future__ import annotations

import itertools
import os
import sys
import time
import tomllib

from cce_fixtures import parse_fixtures
from cce_metrics import (
    COST_DEPTH,
    FIRST_HIT_CAP,
    metric,
    reading_of_texts,
    score_reading,
)
from cce_retrieval import HashEmbedder, build_index
from cce_retrieval.rank.backends import Query, create_backend

BUDGETS = (500, 1000, 2000, 4000, 8000, 16000, 32000)
NAMES = ("first-hit-tokens", *(f"recall@{budget}t" for budget in BUDGETS))


def recomputed(tokens: list[int], hits: list[set[int]], n: int) -> dict[str, float]:
    """The same values from the cumulative curve, without cce_metrics.cost."""
    totals = list(itertools.accumulate(tokens))
    covered_after: list[int] = []
    seen: set[int] = set()
    for targets in hits:
        seen = seen | targets
        covered_after.append(len(seen))
    points = list(zip(totals, covered_after, strict=True))
    first = next((total for total, covered in points if covered), FIRST_HIT_CAP)
    values = {"first-hit-tokens": float(first)}
    for budget in BUDGETS:
        within = [covered for total, covered in points if total <= budget]
        # Totals only grow, so the points within the budget are a prefix of the curve.
        values[f"recall@{budget}t"] = (within[-1] if within else 0) / n
    return values


def means_and_cells(values: dict[str, list[float]]) -> tuple[dict[str, float], str]:
    """Each metric's mean (0.0 with no value) and the row's cells, tokens whole."""
    means = {n: sum(v) / max(len(v), 1) for n, v in values.items()}
    cells = " ".join(
        f"{means[n]:>16.0f}" if n == "first-hit-tokens" else f"{means[n]:>16.3f}" for n in NAMES
    )
    return means, cells


def main() -> None:
    manifest_path = sys.argv[1]
    backends = sys.argv[2].split(",") if len(sys.argv) > 2 else ["bm25", "grep"]
    base = os.path.dirname(os.path.abspath(manifest_path))
    with open(manifest_path, "rb") as handle:
        manifest = tomllib.load(handle)
    metrics = [metric(name) for name in NAMES]
    every: dict[str, dict[str, list[float]]] = {b: {n: [] for n in NAMES} for b in backends}
    macro: dict[str, dict[str, list[float]]] = {b: {n: [] for n in NAMES} for b in backends}
    print(f"{'member':<10} {'backend':<7} {'n':>3} " + " ".join(f"{n:>16}" for n in NAMES))
    for member in manifest["members"]:
        corpus = os.path.join(base, member["corpus"])
        with open(os.path.join(base, member["fixtures"]), encoding="utf-8") as handle:
            cases = parse_fixtures(handle.read()).cases
        index = build_index(corpus, HashEmbedder()).index
        for name in backends:
            backend = create_backend(name)
            values: dict[str, list[float]] = {n: [] for n in NAMES}
            started = time.perf_counter()
            for case in cases:
                anchors = (*case.expected, *case.secondary)
                if not anchors:
                    continue
                query = Query(case.query, HashEmbedder(), corpus_root=os.path.abspath(corpus))
                results = backend.search(index, query, COST_DEPTH)
                matches = [[anchor.matches(hit) for anchor in anchors] for hit in results]
                read = reading_of_texts(matches, [hit.content for hit in results], len(anchors))
                check = recomputed(list(read.tokens), [set(c) for c in read.covers], len(anchors))
                for item in metrics:
                    value = score_reading(read, item)
                    assert value is not None and value == check[item.name], (case.id, item.name)
                    values[item.name].append(value)
            elapsed = time.perf_counter() - started
            count = len(values[NAMES[0]])
            means, cells = means_and_cells(values)
            for n in NAMES:
                every[name][n].extend(values[n])
                macro[name][n].append(means[n])
            print(f"{member['name']:<10} {name:<7} {count:>3} {cells}   ({elapsed:.2f} s)")
    for label, table in (("micro", every), ("macro", macro)):
        for name in backends:
            _, cells = means_and_cells(table[name])
            print(f"{label:<10} {name:<7} {len(table[name][NAMES[0]]):>3} {cells}")


if __name__ == "__main__":
    main()
