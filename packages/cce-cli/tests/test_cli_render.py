"""Rendering anchors of docs/report-formats.md: format6 cells, the compare block, JSON fields.

The reports here are built by hand (no retrieval), so every expected string below
follows from the spec's numbers alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from cce_cli.evaluation.harness import BackendReport, CaseReport, compare_reports
from cce_cli.render.relevance import RENDERERS, RunSummary, render_human, render_json
from cce_metrics import (
    METRICS,
    MacroAverages,
    Metric,
    QueryScore,
    TokenScore,
    macro_average,
    score_query,
    token_average,
)
from cce_retrieval.parity.numeric import format6_signed


def _score(
    precision: float,
    recall: float,
    mrr: float,
    f1: float,
    rank: int | None = 1,
    tokens: TokenScore | None = None,
) -> QueryScore:
    return QueryScore(
        precision_at_k=precision,
        recall=recall,
        mrr=mrr,
        f1=f1,
        first_relevant_rank=rank,
        relevant_retrieved=0,
        tokens=tokens,
    )


def _report(
    backend: str, ids: Sequence[str], scores: Sequence[QueryScore], k: int = 5
) -> BackendReport:
    cases = tuple(CaseReport(case_id, k, score) for case_id, score in zip(ids, scores, strict=True))
    return BackendReport(backend, cases, macro_average(scores), token_average(scores))


HAND_MRRS_B = (0.7, 0.6, 0.5, 0.8, 0.4, 0.6)
HAND_IDS = tuple(f"q{i}" for i in range(1, 7))


def _hand_reports() -> tuple[BackendReport, BackendReport]:
    a = _report("bm25", HAND_IDS, [_score(0.5, 1.0, 0.5, 0.6) for _ in HAND_IDS])
    b = _report("hybrid", HAND_IDS, [_score(0.5, 1.0, mrr, 0.6) for mrr in HAND_MRRS_B])
    return a, b


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.2, "+0.200000"), (-0.0333333, "-0.033333"), (0.0, "+0.000000"), (-0.0000001, "+0.000000")],
)
def test_format6_signed_anchors(value: float, text: str) -> None:
    assert format6_signed(value) == text


def test_compare_stats_hand_case_values() -> None:
    a, b = _hand_reports()
    comparison = compare_reports(a, b)
    assert [metric.key for metric in comparison.metrics] == [
        "precision_at_k",
        "recall",
        "mrr",
        "f1",
    ]
    mrr = comparison.metrics[2].result
    assert mrr.n == 6
    assert mrr.statistic is not None and abs(mrr.statistic - 3**0.5) < 1e-9
    assert mrr.statistic == 1.732050807568877
    assert mrr.test == "t" and comparison.test == "t"
    assert mrr.p == 0.14381080871159768
    assert mrr.ci95 == (-0.04841261147785682, 0.24841261147785682)
    precision = comparison.metrics[0].result
    assert precision.statistic is None
    assert precision.p == 1.0
    assert comparison.metrics[1].result.n == 6 and comparison.metrics[3].result.n == 6


def test_compare_stats_hand_case_human_block() -> None:
    a, b = _hand_reports()
    text = render_human(RunSummary("corpus", "hash", (a, b), compare_reports(a, b)))
    assert "paired t-test on the per-query deltas (two-sided, n=6, df=5)" in text
    for fragment in ("mean-delta", "95% CI", "n/a", "[-0.048413, +0.248413]", "+1.732051"):
        assert fragment in text
    assert "-0.000000" not in text


def test_compare_stats_hand_case_json() -> None:
    a, b = _hand_reports()
    report = json.loads(render_json(RunSummary("corpus", "hash", (a, b), compare_reports(a, b))))
    compare = report["compare"]
    assert compare["a"] == "bm25"
    assert compare["b"] == "hybrid"
    mrr = compare["metrics"]["mrr"]
    assert mrr == {
        "ci95_high": "+0.248413",
        "ci95_low": "-0.048413",
        "mean_delta": "+0.100000",
        "n": 6,
        "p": "0.143811",
        "t": "+1.732051",
    }
    assert compare["metrics"]["precision_at_k"]["t"] is None
    assert compare["metrics"]["precision_at_k"]["p"] == "1.000000"
    assert compare["metrics"]["recall"]["n"] == 6
    assert compare["metrics"]["f1"]["n"] == 6


def test_token_fields_in_json_and_human() -> None:
    tokens = TokenScore(precision=0.5, recall=1.0, iou=0.5)
    report = _report("bm25", ["ranged"], [_score(0.2, 1.0, 1.0, 1 / 3, tokens=tokens)])
    summary = RunSummary("corpus", "hash", (report,))
    body = json.loads(render_json(summary))
    backend = body["backends"][0]
    assert backend["tokens"]["queries"] == 1
    assert backend["tokens"]["precision"] == "0.500000"
    assert backend["per_query"][0]["tokens"]["recall"] == "1.000000"
    assert backend["per_query"][0]["tokens"]["iou"] == "0.500000"
    human = render_human(summary)
    assert "token-level span metrics (1 of 1 queries carry ranged anchors)" in human
    assert "tok-P" in human and "tok-IoU" in human


def test_unranged_report_has_no_token_keys_and_no_compare() -> None:
    report = _report("bm25", ["plain"], [_score(0.2, 1.0, 1.0, 1 / 3)])
    text = render_json(RunSummary("c", "hash", (report,)))
    body = json.loads(text)
    assert "tokens" not in body["backends"][0]
    assert "tokens" not in body["backends"][0]["per_query"][0]
    assert "compare" not in body
    assert body["schema"] == "cce.relevance.report/v2"
    assert text.endswith("}\n") and not text.endswith("}\n\n")
    assert "token-level" not in render_human(RunSummary("c", "hash", (report,)))


def test_json_layout_is_sorted_two_space_and_null_rank() -> None:
    report = _report("vector", ["miss"], [_score(0.0, 0.0, 0.0, 0.0, rank=None)], k=3)
    text = render_json(RunSummary("dir/ü", "hash", (report,)))
    assert text == (
        "{\n"
        '  "backends": [\n'
        "    {\n"
        '      "backend": "vector",\n'
        '      "f1": "0.000000",\n'
        '      "mrr": "0.000000",\n'
        '      "per_query": [\n'
        "        {\n"
        '          "f1": "0.000000",\n'
        '          "first_relevant_rank": null,\n'
        '          "id": "miss",\n'
        '          "k": 3,\n'
        '          "mrr": "0.000000",\n'
        '          "precision_at_k": "0.000000",\n'
        '          "recall": "0.000000"\n'
        "        }\n"
        "      ],\n"
        '      "precision_at_k": "0.000000",\n'
        '      "recall": "0.000000"\n'
        "    }\n"
        "  ],\n"
        '  "corpus": "dir/ü",\n'
        '  "embedder": "hash",\n'
        '  "queries": 1,\n'
        '  "schema": "cce.relevance.report/v2"\n'
        "}\n"
    )


# The golden's per-query values for bm25 and hybrid (docs/report-formats.md#json-report): (P@k,
# first rank) per case; recall is 1.0 everywhere and only the span case carries tokens.
GOLDEN_IDS = (
    "code-read-config",
    "code-parse-json",
    "code-build-index",
    "code-loader-class",
    "code-sum-node",
    "code-interface-kind",
    "code-read-config-span",
)
GOLDEN_BM25 = ((2, 3), (1, 1), (3, 1), (5, 1), (3, 1), (1, 1), (1, 1))
GOLDEN_HYBRID = ((2, 2), (1, 1), (3, 1), (5, 1), (3, 1), (1, 1), (1, 1))


def _golden_report(backend: str, rows: Sequence[tuple[int, int]], token_mass: int) -> BackendReport:
    scores = []
    for case_id, (relevant, rank) in zip(GOLDEN_IDS, rows, strict=True):
        anchors = 4 if case_id == "code-loader-class" else 1
        matrix = [[False] * anchors for _ in range(rank - 1)]
        matrix.append([True] * anchors)
        matrix += [[True] + [False] * (anchors - 1) for _ in range(relevant - 1)]
        tokens = None
        if case_id == "code-read-config-span":
            tokens = TokenScore(precision=15 / token_mass, recall=1.0, iou=15 / token_mass)
        scores.append(score_query(matrix, anchors, 5, tokens))
    return _report(backend, GOLDEN_IDS, scores)


EXPECTED_COMPARE_STDOUT = """\
CCE relevance — ranking quality vs labeled fixtures (cce.relevance/v1)
  corpus  : eval/relevance/../../test/fixture/samples
  embedder: hash
  queries : 7

  backend            P@k      recall         MRR          F1
  bm25          0.457143    1.000000    0.904762    0.581633
  hybrid        0.457143    1.000000    0.928571    0.581633

  token-level span metrics (1 of 7 queries carry ranged anchors)
  backend          tok-P  tok-recall     tok-IoU
  bm25          0.294118    1.000000    0.294118
  hybrid        0.223881    1.000000    0.223881

  per-query deltas (bm25 → hybrid; positive = hybrid wins)
  query                           dP@k     drecall        dMRR         dF1
  code-read-config           +0.000000   +0.000000   +0.166667   +0.000000
  code-parse-json            +0.000000   +0.000000   +0.000000   +0.000000
  code-build-index           +0.000000   +0.000000   +0.000000   +0.000000
  code-loader-class          +0.000000   +0.000000   +0.000000   +0.000000
  code-sum-node              +0.000000   +0.000000   +0.000000   +0.000000
  code-interface-kind        +0.000000   +0.000000   +0.000000   +0.000000
  code-read-config-span      +0.000000   +0.000000   +0.000000   +0.000000
  mean                       +0.000000   +0.000000   +0.023810   +0.000000

  paired t-test on the per-query deltas (two-sided, n=7, df=6)
  metric        mean-delta           t           p                    95% CI
  P@k            +0.000000         n/a    1.000000    [+0.000000, +0.000000]
  recall         +0.000000         n/a    1.000000    [+0.000000, +0.000000]
  MRR            +0.023810   +1.000000    0.355918    [-0.034450, +0.082069]
  F1             +0.000000         n/a    1.000000    [+0.000000, +0.000000]
"""


def test_documented_compare_block_from_golden_values() -> None:
    bm25 = _golden_report("bm25", GOLDEN_BM25, 51)
    hybrid = _golden_report("hybrid", GOLDEN_HYBRID, 67)
    summary = RunSummary(
        "eval/relevance/../../test/fixture/samples",
        "hash",
        (bm25, hybrid),
        compare_reports(bm25, hybrid),
    )
    assert render_human(summary) == EXPECTED_COMPARE_STDOUT
    compare = json.loads(render_json(summary))["compare"]
    assert compare["metrics"]["mrr"] == {
        "ci95_high": "+0.082069",
        "ci95_low": "-0.034450",
        "mean_delta": "+0.023810",
        "n": 7,
        "p": "0.355918",
        "t": "+1.000000",
    }
    assert compare["metrics"]["f1"] == {
        "ci95_high": "+0.000000",
        "ci95_low": "+0.000000",
        "mean_delta": "+0.000000",
        "n": 7,
        "p": "1.000000",
        "t": None,
    }


def test_long_query_id_pushes_the_row_right() -> None:
    long_id = "x" * 30
    a = _report("bm25", [long_id, "b"], [_score(0.2, 1.0, 1.0, 1 / 3)] * 2)
    b = _report("vector", [long_id, "b"], [_score(0.4, 1.0, 0.5, 0.5)] * 2)
    text = render_human(RunSummary("c", "hash", (a, b), compare_reports(a, b)))
    assert f"  {long_id}   +0.200000   +0.000000   -0.500000   +0.166667\n" in text


def test_single_case_compare_has_no_statistics() -> None:
    a = _report("bm25", ["only"], [_score(0.2, 1.0, 1.0, 1 / 3)])
    b = _report("hybrid", ["only"], [_score(0.4, 1.0, 1.0, 0.5)])
    summary = RunSummary("c", "hash", (a, b), compare_reports(a, b))
    assert "(two-sided, n=1, df=0)" in render_human(summary)
    metrics = json.loads(render_json(summary))["compare"]["metrics"]
    assert metrics["precision_at_k"] == {
        "ci95_high": None,
        "ci95_low": None,
        "mean_delta": "+0.200000",
        "n": 1,
        "p": None,
        "t": None,
    }


def test_renderer_registry_names_text_first_then_json() -> None:
    assert list(RENDERERS) == ["text", "json", "html"]
    a, b = _hand_reports()
    summary = RunSummary("corpus", "hash", (a, b), compare_reports(a, b))
    assert RENDERERS["text"].render(summary) == render_human(summary)
    assert RENDERERS["json"].render(summary) == render_json(summary)
    page = RENDERERS["html"].render(summary)
    assert page.startswith("<!DOCTYPE html>") and page.count('<tr class="case') == len(a.cases)


def test_a_fifth_metric_gets_its_own_aligned_column_everywhere() -> None:
    hits = Metric("hits", "hits_at_k", "hits", lambda j: float(j.relevant_retrieved))
    metrics = (*METRICS.defaults(), hits)

    def report(backend: str, hit_counts: Sequence[float]) -> BackendReport:
        scores = [
            QueryScore(0.5, 1.0, 0.5, 0.6, 1, 1, extra={"hits_at_k": count}) for count in hit_counts
        ]
        means = {**macro_average(scores).values, "hits_at_k": sum(hit_counts) / len(hit_counts)}
        cases = tuple(CaseReport(f"q{i}", 5, s) for i, s in enumerate(scores, start=1))
        return BackendReport(backend, cases, MacroAverages.from_values(means), None)

    a, b = report("bm25", [1.0, 2.0, 1.0]), report("hybrid", [2.0, 2.0, 3.0])
    comparison = compare_reports(a, b, metrics)
    summary = RunSummary("c", "hash", (a, b), comparison, metrics=metrics)
    lines = render_human(summary).splitlines()
    header = next(line for line in lines if line.startswith("  backend"))
    assert header.endswith("        hits")
    assert "  bm25          0.500000    1.000000    0.500000    0.600000    1.333333" in lines
    delta_header = next(line for line in lines if line.startswith("  query"))
    assert len(delta_header) == len(next(line for line in lines if line.startswith("  q1")))
    assert delta_header.endswith("       dhits")
    assert any(line.startswith("  hits      ") for line in lines)
    body = json.loads(render_json(summary))
    assert body["backends"][1]["hits_at_k"] == "2.333333"
    assert body["backends"][0]["per_query"][1]["hits_at_k"] == "2.000000"
    assert body["compare"]["metrics"]["hits_at_k"]["mean_delta"] == "+1.000000"
