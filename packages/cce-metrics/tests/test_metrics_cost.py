"""The reading-cost metrics: recall within a token budget and tokens to the first hit.

Every value is checked against an independent recomputation (a cumulative curve read
backwards, the way the public semble benchmark states the rule), on hand-made edges
(a result exactly at the budget counts, one token over does not; a smaller result after
the one that crosses does not count) and on rankings that a scorer reading out of rank
order would get wrong.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_metrics import (
    COST,
    COST_DEPTH,
    COST_METRICS,
    ESTIMATOR,
    FIRST_HIT_CAP,
    METRICS,
    TOKENIZER_ID,
    Reading,
    Tokenizer,
    budget_recall,
    estimate_tokens,
    evaluate_cost,
    first_hit_tokens,
    first_hit_tokens_metric,
    judgment,
    metric,
    reading,
    reading_of_ranking,
    reading_of_texts,
    recall_curve,
    recall_within_budget,
    score_reading,
    tokens_to_first_hit,
)

# --- an independent recomputation -------------------------------------------------------


def curve(tokens: list[int], covers: list[set[int]]) -> list[tuple[int, int]]:
    """(running tokens, targets covered so far) after each result, from (0, 0)."""
    points = [(0, 0)]
    seen: set[int] = set()
    for total, targets in zip(itertools.accumulate(tokens), covers, strict=True):
        seen = seen | targets
        points.append((total, len(seen)))
    return points


def oracle_recall(tokens: list[int], covers: list[set[int]], n: int, budget: int) -> float:
    """Covered count at the last curve point within budget, before the first one past it."""
    points = curve(tokens, covers)
    within = list(itertools.takewhile(lambda point: point[0] <= budget, points))
    return within[-1][1] / n


def oracle_first_hit(tokens: list[int], covers: list[set[int]], cap: int) -> float:
    points = curve(tokens, covers)
    hits = [total for total, covered in points if covered > 0]
    return float(hits[0]) if hits else float(cap)


# --- budget edges -----------------------------------------------------------------------


def test_a_result_exactly_at_the_budget_counts_and_one_token_over_does_not() -> None:
    read = Reading([300, 200], [set(), {0}], 1)
    assert recall_within_budget(read, 500) == 1.0  # 300 + 200 = 500: at the budget
    assert recall_within_budget(read, 499) == 0.0  # one token short: the hit is over
    assert budget_recall(500).score(judgment((), 0, 1, reading=read)) == 1.0
    assert budget_recall(499).score(judgment((), 0, 1, reading=read)) == 0.0


def test_reading_stops_at_the_first_result_that_crosses() -> None:
    # The 900-token result crosses 1,000; the 10-token hit after it would fit on its
    # own but is never read.
    read = Reading([100, 900, 10], [set(), set(), {0}], 1)
    assert recall_within_budget(read, 1000) == 0.0
    assert recall_within_budget(read, 1010) == 1.0
    assert oracle_recall([100, 900, 10], [set(), set(), {0}], 1, 1000) == 0.0


def test_rank_order_matters() -> None:
    # Same results, same tokens, two orders: a scorer that sorted by size, ignored the
    # order or counted hits outside the budget would give both the same value.
    hit_first = Reading([50, 5000], [{0}, set()], 1)
    hit_last = Reading([5000, 50], [set(), {0}], 1)
    assert recall_within_budget(hit_first, 500) == 1.0
    assert recall_within_budget(hit_last, 500) == 0.0
    assert first_hit_tokens(hit_first) == 50.0
    assert first_hit_tokens(hit_last) == 5050.0


def test_targets_count_once_and_partial_coverage() -> None:
    read = Reading([10, 10, 10, 10], [{0}, {0}, {1}, {0, 2}], 4)
    assert recall_within_budget(read, 20) == 0.25
    assert recall_within_budget(read, 30) == 0.5
    assert recall_within_budget(read, 40) == 0.75
    assert recall_within_budget(read, 0) == 0.0


def test_first_hit_counts_the_hit_itself_and_the_cap() -> None:
    assert tokens_to_first_hit(Reading([7, 11], [set(), {0}], 1)) == 18
    assert first_hit_tokens(Reading([7, 11], [set(), set()], 1)) == float(FIRST_HIT_CAP)
    assert first_hit_tokens(Reading([7, 11], [set(), set()], 1), cap=100) == 100.0
    # A hit found after more than the cap costs what it cost (semble's rule).
    assert first_hit_tokens(Reading([40_000, 1], [set(), {0}], 1)) == 40_001.0
    assert first_hit_tokens(Reading((), (), 2)) == float(FIRST_HIT_CAP)


def test_a_query_without_targets_is_undefined() -> None:
    read = Reading([5], [set()], 0)
    assert recall_within_budget(read, 500) is None
    assert first_hit_tokens(read) is None
    assert COST_METRICS.get("first-hit-tokens").average([None, 10.0, 20.0]) == 15.0
    assert COST_METRICS.get("first-hit-tokens").average([None]) is None


# --- against the recomputation ----------------------------------------------------------


rankings = st.integers(min_value=1, max_value=4).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(
            st.tuples(
                st.integers(min_value=0, max_value=3000),
                st.sets(st.integers(min_value=0, max_value=n - 1), max_size=n),
            ),
            max_size=70,
        ),
    )
)


@given(rankings, st.integers(min_value=0, max_value=40_000))
def test_values_equal_the_recomputation(
    drawn: tuple[int, list[tuple[int, set[int]]]], budget: int
) -> None:
    n, rows = drawn
    tokens = [count for count, _ in rows]
    covers = [targets for _, targets in rows]
    read = Reading(tokens, covers, n)
    assert recall_within_budget(read, budget) == oracle_recall(tokens, covers, n, budget)
    assert first_hit_tokens(read) == oracle_first_hit(tokens, covers, FIRST_HIT_CAP)
    # Through the registry the metrics read COST_DEPTH results only.
    deep = judgment((), 0, 1, reading=read)
    head = tokens[:COST_DEPTH], covers[:COST_DEPTH]
    assert budget_recall(max(budget, 1)).score(deep) == oracle_recall(*head, n, max(budget, 1))
    assert COST_METRICS.get("first-hit-tokens").score(deep) == oracle_first_hit(
        *head, FIRST_HIT_CAP
    )


def test_a_seeded_sweep_against_the_recomputation() -> None:
    generator = random.Random(42)
    for _ in range(300):
        n = generator.randint(1, 5)
        size = generator.randint(0, 60)
        tokens = [generator.choice([0, 1, 250, 499, 500, 501, 4000]) for _ in range(size)]
        covers = [{t for t in range(n) if generator.random() < 0.1} for _ in range(size)]
        read = Reading(tokens, covers, n)
        for budget in (1, 499, 500, 501, 1000, 4000, 32_000):
            assert recall_within_budget(read, budget) == oracle_recall(tokens, covers, n, budget)
        assert first_hit_tokens(read, 1234) == oracle_first_hit(tokens, covers, 1234)


# --- depth, judgments and the registry --------------------------------------------------


def test_depth_is_the_metrics_own_not_k() -> None:
    # 60 one-token results, the only hit at rank 55: past the depth of 50, so unseen,
    # though k is 10 and the reading holds all 60.
    tokens = [1] * 60
    covers: list[set[int]] = [set()] * 60
    covers[54] = {0}
    deep = judgment([[False]] * 60, 1, 10, reading=Reading(tokens, covers, 1))
    assert len(deep.matches) == 10
    assert metric("first-hit-tokens").score(deep) == float(FIRST_HIT_CAP)
    assert metric("recall@32000t").score(deep) == 0.0
    covers[54], covers[44] = set(), {0}
    deep = judgment([[False]] * 60, 1, 10, reading=Reading(tokens, covers, 1))
    assert metric("first-hit-tokens").score(deep) == 45.0
    assert all(item.depth == COST_DEPTH for item in COST_METRICS)


def test_declarations() -> None:
    names = [item.name for item in COST_METRICS][:8]
    assert names == [
        "first-hit-tokens",
        "recall@500t",
        "recall@1000t",
        "recall@2000t",
        "recall@4000t",
        "recall@8000t",
        "recall@16000t",
        "recall@32000t",
    ]
    first = metric("first-hit-tokens")
    assert first.group == COST
    assert not first.higher_is_better
    assert first.bounds is None
    assert first.unit == "tokens"
    assert first.oriented(-100.0) == 100.0  # fewer tokens is an improvement
    assert metric("recall@500t").higher_is_better
    assert metric("recall@500t").bounds == (0.0, 1.0)
    assert metric("recall@500t").oriented(0.25) == 0.25
    assert not any(item.default for item in COST_METRICS)
    assert not any(item.group == COST for item in METRICS)


def test_families_resolve_any_budget_and_cap() -> None:
    made = metric("recall@1234t")
    assert (made.name, made.key, made.label) == ("recall@1234t", "recall_at_1234t", "R@1234t")
    assert metric("recall_at_1234t") is made
    assert budget_recall(1234) is made
    capped = first_hit_tokens_metric(16_000)
    assert capped.name == "first-hit-tokens:cap=16000"
    assert metric("first_hit_tokens_cap_16000") is capped
    assert first_hit_tokens_metric() is metric("first-hit-tokens")
    no_hit = Reading([10], [set()], 1)
    assert score_reading(no_hit, capped) == 16_000.0
    for bad in ("recall@0t", "recall@t", "recall@05t", "recall@500", "first-hit-tokens:cap=0"):
        with pytest.raises(ValueError, match="unknown metric"):
            metric(bad)
    with pytest.raises(ValueError, match="positive integer"):
        budget_recall(0)
    with pytest.raises(ValueError, match="not a cost metric"):
        score_reading(no_hit, metric("mrr"))


def test_judgments_without_a_reading_leave_cost_metrics_undefined() -> None:
    plain = judgment([[True]], 1, 10)
    assert all(item.score(plain) is None for item in COST_METRICS)


# --- building readings ------------------------------------------------------------------


def test_reading_from_a_judgment_matrix() -> None:
    made = reading([[False, True], [True, True], [False, False]], [3, 4, 5])
    assert made.covers == (frozenset({1}), frozenset({0, 1}), frozenset())
    assert made.n_targets == 2
    assert made.tokenizer == TOKENIZER_ID
    with pytest.raises(ValueError, match="judgments"):
        reading([[True], [True, False]], [1, 1])


def test_reading_from_texts_uses_the_estimator_or_a_plugged_tokenizer() -> None:
    texts = ["x" * 40, "héllo wörld" * 3]
    made = reading_of_texts([[False], [True]], texts)
    assert made.tokens == tuple(estimate_tokens(text) for text in texts)
    assert made.tokenizer == ESTIMATOR.id == "cce.tokens/v1"

    class Words:
        id = "test/words"

        def count(self, text: str) -> int:
            return len(text.split())

    assert isinstance(Words(), Tokenizer)
    plugged = reading_of_texts([[False], [True]], ["a b c", "d e"], tokenizer=Words())
    assert plugged.tokens == (3, 2)
    assert plugged.tokenizer == "test/words"
    assert first_hit_tokens(plugged) == 5.0
    assert reading_of_texts([], [], 3).n_targets == 3


def test_reading_of_a_plain_document_ranking() -> None:
    made = reading_of_ranking(
        ["d3", "d1", "d9", "d1"], {"d1", "d2"}, {"d1": 100, "d3": 50, "d9": 10}
    )
    assert made.n_targets == 2
    assert made.tokens == (50, 100, 10, 100)
    assert recall_within_budget(made, 150) == 0.5
    assert first_hit_tokens(made) == 150.0
    with pytest.raises(ValueError, match="no token count"):
        reading_of_ranking(["d4"], {"d1"}, {})


def test_readings_refuse_bad_input() -> None:
    with pytest.raises(ValueError, match="token counts"):
        Reading([1, 2], [set()], 1)
    with pytest.raises(ValueError, match="whole number"):
        Reading([-1], [set()], 1)
    with pytest.raises(ValueError, match="outside"):
        Reading([1], [{1}], 1)
    with pytest.raises(ValueError, match="negative"):
        recall_within_budget(Reading((), (), 1), -1)


# --- the worked example of docs/metrics.md ----------------------------------------------


def test_the_documented_example() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "metrics.md").read_text(encoding="utf-8")
    line = next(text for text in doc.splitlines() if text.startswith("Result: recall@500t"))
    stated = dict(
        (name.strip(), float(value))
        for name, value in (part.split("=") for part in line[len("Result: ") : -1].split(";"))
    )
    read = reading_of_ranking(
        ["README.md", "auth.py", "tests/test_big.py", "session.py"],
        relevant={"auth.py", "session.py"},
        tokens={"README.md": 1200, "auth.py": 900, "tests/test_big.py": 3000, "session.py": 150},
    )
    assert len(stated) == 5
    for name, value in stated.items():
        assert score_reading(read, metric(name)) == value, name


# --- plain runs and curves --------------------------------------------------------------


def test_evaluate_cost_over_a_trec_style_run() -> None:
    qrels = {"q1": {"a": 1, "c": 2, "x": 0}, "q2": {"b": 1}, "q3": {"z": 0}, "q4": {"d": 1}}
    run = {
        "q1": {"a": 0.2, "b": 0.9, "c": 0.5},  # ranked b, c, a
        "q2": {"a": 1.0, "b": 1.0},  # a tie: the greater id first, so b then a
        "q3": {"z": 1.0},
    }
    tokens = {"a": 300, "b": 1000, "c": 200}
    result = evaluate_cost(qrels, run, tokens, ["first-hit-tokens", "recall@1200t", "recall@1500t"])
    assert result.metrics == ("first-hit-tokens", "recall@1200t", "recall@1500t")
    # q3 has no relevant document: no cost value. q4 is judged but not run: reads nothing.
    assert sorted(result.per_query) == ["q1", "q2", "q4"]
    assert result.per_query["q1"] == {
        "first-hit-tokens": oracle_first_hit([1000, 200, 300], [set(), {1}, {0}], FIRST_HIT_CAP),
        "recall@1200t": oracle_recall([1000, 200, 300], [set(), {1}, {0}], 2, 1200),
        "recall@1500t": oracle_recall([1000, 200, 300], [set(), {1}, {0}], 2, 1500),
    }
    assert result.per_query["q1"]["recall@1200t"] == 0.5
    assert result.per_query["q2"]["first-hit-tokens"] == 1000.0
    assert result.per_query["q4"] == {
        "first-hit-tokens": float(FIRST_HIT_CAP),
        "recall@1200t": 0.0,
        "recall@1500t": 0.0,
    }
    assert result.aggregate["first-hit-tokens"] == (1200.0 + 1000.0 + FIRST_HIT_CAP) / 3
    with pytest.raises(ValueError, match="unknown metric 'mrr'"):
        evaluate_cost(qrels, run, tokens, ["mrr"])
    with pytest.raises(ValueError, match="no token count"):
        evaluate_cost(qrels, run, {"a": 1}, ["first-hit-tokens"])
    with pytest.raises(ValueError, match="nothing to cost"):
        evaluate_cost({"q3": {"z": 0}}, run, tokens, ["first-hit-tokens"])


def test_evaluate_cost_reads_to_the_depth_only() -> None:
    docs = [f"d{index:03d}" for index in range(60)]
    run = {"q": {doc: float(60 - index) for index, doc in enumerate(docs)}}
    tokens = dict.fromkeys(docs, 1)
    late = evaluate_cost({"q": {"d055": 1}}, run, tokens, ["first-hit-tokens"])
    assert late.per_query["q"]["first-hit-tokens"] == float(FIRST_HIT_CAP)
    early = evaluate_cost({"q": {"d044": 1}}, run, tokens, ["first-hit-tokens"])
    assert early.per_query["q"]["first-hit-tokens"] == 45.0


def test_recall_curve_is_the_mean_recall_per_budget() -> None:
    one = Reading([100, 400], [{0}, {1}], 2)
    two = Reading([600], [{0}], 1)
    skipped = Reading([10], [set()], 0)
    assert recall_curve([one, two, skipped], (100, 500, 600)) == (0.25, 0.5, 1.0)
    assert recall_curve([], (100,)) == (0.0,)
    assert recall_curve([Reading([1] * 60, [set()] * 59 + [{0}], 1)], (1000,)) == (0.0,)
