"""The worked examples of docs/metrics.md compute what the page says, on both sides.

Each example in "Where cce differs from trec_eval" ends with a line
`Result: cce <metric> = <x>; trec_eval <measure> = <y>.` The tests below rebuild the
example: cce's side from its judgment matrix with cce-metrics, trec_eval's side with
pytrec_eval on the qrels the page describes (every chunk matching an anchor judged 1).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import pytrec_eval

from cce_metrics import anchor_gains, evaluate, ndcg_at_k, score_query

DOC = Path(__file__).parents[3] / "docs" / "metrics.md"


def section(heading: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"^### {re.escape(heading)}\n(.*?)(?=^#)", text, flags=re.M | re.S)
    assert match is not None, f"docs/metrics.md has no section {heading!r}"
    return match.group(1)


def documented_result(heading: str) -> tuple[str, float, str, float]:
    match = re.search(
        r"^Result: cce (\w+) = ([0-9.]+); trec_eval (\w+) = ([0-9.]+)\.$",
        section(heading),
        flags=re.M,
    )
    assert match is not None, f"section {heading!r} states no result line"
    return match.group(1), float(match.group(2)), match.group(3), float(match.group(4))


def trec_eval(qrels: dict[str, int], ranking: list[str], measure: str) -> float:
    """pytrec_eval's score of one query ranked in `ranking` order."""
    run = {doc: float(len(ranking) - index) for index, doc in enumerate(ranking)}
    family = measure.rsplit("_", 1)[0] if measure[-1].isdigit() else measure
    cutoff = measure.rsplit("_", 1)[1] if measure[-1].isdigit() else None
    spec = family if cutoff is None else f"{family}.{cutoff}"
    scores = pytrec_eval.RelevanceEvaluator({"q": qrels}, {spec}).evaluate({"q": run})
    return float(scores["q"][measure])


def test_recall_over_anchors() -> None:
    metric, cce_value, measure, trec_value = documented_result("Recall over anchors")
    assert (metric, measure) == ("recall", "recall_5")
    results = ["auth.py:1", "auth.py:2", "other:1", "other:2", "other:3"]
    anchors = ["auth.py", "tokens.py"]
    matches = [[result.split(":")[0] == anchor for anchor in anchors] for result in results]
    assert score_query(matches, len(anchors), 5).recall == cce_value
    qrels = {"auth.py:1": 1, "auth.py:2": 1, "tokens.py:1": 1}
    assert trec_eval(qrels, results, measure) == trec_value


def test_one_chunk_satisfying_several_anchors() -> None:
    metric, cce_value, measure, trec_value = documented_result(
        "One chunk satisfying several anchors"
    )
    assert (metric, measure) == ("ndcg", "ndcg_cut_3")
    # auth.py lines 1-40 touches both auth.py@10-20 and auth.py@15-30.
    matches = [[True, True], [False, False], [False, False]]
    assert score_query(matches, 2, 3).recall == 1.0
    assert ndcg_at_k(matches, anchor_gains(2), 3) == cce_value
    assert cce_value == 1.0 / (1.0 + 1.0 / math.log2(3))
    assert trec_eval({"auth.py:1-40": 1}, ["auth.py:1-40", "x", "y"], measure) == trec_value


def test_kind_anchors() -> None:
    metric, cce_value, measure, trec_value = documented_result("Kind anchors")
    assert (metric, measure) == ("recall", "recall_3")
    results = ["a.ts#interface", "b.ts#interface", "other"]
    matches = [[result.endswith("#interface")] for result in results]
    score = score_query(matches, 1, 3)
    assert score.recall == cce_value
    assert score.precision_at_k == 2 / 3
    qrels = {f"{name}.ts#interface": 1 for name in "abcd"}
    assert trec_eval(qrels, results, measure) == trec_value


def test_mrr_cut_at_k() -> None:
    metric, cce_value, measure, trec_value = documented_result("MRR cut at k")
    assert (metric, measure) == ("mrr", "recip_rank")
    results = ["x", "y", "z", "auth.py"]
    matches = [[result == "auth.py"] for result in results]
    assert score_query(matches, 1, 3).mrr == cce_value
    assert trec_eval({"auth.py": 1}, results, measure) == trec_value
    # evaluate() offers both: plain mrr is trec_eval's, mrr@3 is cce's.
    run = {doc: float(4 - index) for index, doc in enumerate(results)}
    both = evaluate({"q": {"auth.py": 1}}, {"q": run}, ["mrr", "mrr@3"]).aggregate
    assert both == {"mrr": trec_value, "mrr@3": cce_value}


def test_evaluate_snippet_prints_what_its_comments_say() -> None:
    match = re.search(r"^## Evaluate\n.*?```python\n(.*?)```", DOC.read_text("utf-8"), re.M | re.S)
    assert match is not None
    namespace: dict[str, object] = {}
    checked = 0
    for line in match.group(1).splitlines():
        code, _, comment = line.partition("  # ")
        if comment:
            assert eval(code, namespace) == pytest.approx(float(comment), abs=0.0), line
            checked += 1
        else:
            exec(line, namespace)
    assert checked == 2
