"""The relevance harness (docs/harness.md#backend-selection, docs/harness.md#backends,
docs/metrics.md#chunk-level-metrics, docs/statistics.md#paired-tests, docs/harness.md#evaluation):
backends, judgments, pairing.

Pipeline tests index the reference's `test/fixture/base` corpus with the hash embedder
(skipped unless `CCE_REFERENCE_DIR` names the reference data); the rest build small
indexes in a temporary directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_cli.evaluation import harness
from cce_cli.evaluation.harness import BackendError, Query, parse_backends, run_backend
from cce_cli.render.relevance import RunSummary, render_json
from cce_fixtures import Anchor, Case, FixtureSet, parse_fixtures
from cce_metrics import LineWeights
from cce_retrieval import build_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Index, SearchResult

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def base_index(reference_path: Callable[..., Path]) -> Index:
    base = reference_path("test", "fixture", "base")
    return build_index(str(base), HashEmbedder()).index


def _case(query: str, anchors: list[str], k: int = 5, case_id: str = "c") -> Case:
    return Case(case_id, query, tuple(Anchor.parse(a) for a in anchors), k, 1)


class CountingEmbedder:
    """A hash embedder that counts how often a query is embedded."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.calls: list[str] = []

    def embed(self, text: str) -> list[float]:
        self.calls.append(text)
        return list(self.inner.embed(text))


@pytest.mark.parametrize(
    ("text", "backends"),
    [
        ("bm25,hybrid", ("bm25", "hybrid")),
        ("bm25, bm25 ,", ("bm25",)),
        ("vector,bm25", ("vector", "bm25")),
        (" hybrid ,, vector", ("hybrid", "vector")),
    ],
)
def test_parse_backends_accepts(text: str, backends: tuple[str, ...]) -> None:
    assert parse_backends(text) == backends


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("bm42", "unknown backend"),
        ("BM25", "unknown backend"),
        ("bm25,bm42", "'bm42'"),
        ("", "at least one of bm25, vector, hybrid"),
        (" , ", "at least one of bm25, vector, hybrid"),
    ],
)
def test_parse_backends_rejects(text: str, fragment: str) -> None:
    with pytest.raises(BackendError, match=fragment):
        parse_backends(text)


@pytest.mark.parametrize("backend", harness.BACKEND_NAMES)
def test_hash_password_ranks_auth_first_on_every_backend(base_index: Index, backend: str) -> None:
    results = run_backend(base_index, backend, Query("hash password", HashEmbedder()), 5)
    assert 0 < len(results) <= 5
    assert results[0].file_path == "auth.py"
    assert results[0].rank == 1


@pytest.mark.parametrize("backend", harness.BACKEND_NAMES)
def test_blank_query_returns_nothing(base_index: Index, backend: str) -> None:
    assert run_backend(base_index, backend, Query("   ", HashEmbedder()), 5) == []


@pytest.mark.parametrize("backend", harness.BACKEND_NAMES)
def test_empty_index_returns_nothing(backend: str) -> None:
    empty = Index(embedder="hash", chunks=[])
    assert run_backend(empty, backend, Query("hash password", HashEmbedder()), 5) == []


def test_hybrid_evaluation_is_deterministic(base_index: Index) -> None:
    fixture_set = FixtureSet(None, (_case("hash password", ["auth.py"]),))
    runs = [harness.evaluate(base_index, HashEmbedder(), fixture_set, ["hybrid"]) for _ in range(2)]
    assert runs[0] == runs[1]
    score = runs[0][0].cases[0].score
    assert score.first_relevant_rank == 1
    assert score.mrr == 1.0


def test_json_report_over_three_backends(base_index: Index) -> None:
    fixture_set = FixtureSet(None, (_case("hash password", ["auth.py"]),))
    reports = harness.evaluate(base_index, HashEmbedder(), fixture_set, harness.BACKEND_NAMES)
    text = render_json(RunSummary("base", base_index.embedder, reports))
    body = json.loads(text)
    assert body["schema"] == "cce.relevance.report/v2"
    assert body["queries"] == 1
    assert [b["backend"] for b in body["backends"]] == ["bm25", "vector", "hybrid"]
    for backend in body["backends"]:
        assert "." in backend["precision_at_k"] and "." in backend["mrr"]
        assert "tokens" not in backend
        assert "tokens" not in backend["per_query"][0]
    assert "compare" not in body
    assert text.endswith("}\n")


def test_hybrid_is_truncated_to_k(base_index: Index) -> None:
    # Graph expansion appends chunks after the top k; the harness must cut them off.
    for k in (1, 2, 3):
        results = run_backend(
            base_index, "hybrid", Query("process payment amount", HashEmbedder()), k
        )
        assert len(results) <= k


def test_vector_returns_min_k_chunks_even_without_word_tokens(base_index: Index) -> None:
    results = run_backend(base_index, "vector", Query("???", HashEmbedder()), 3)
    assert len(results) == min(3, len(base_index.chunks))
    assert run_backend(base_index, "bm25", Query("???", HashEmbedder()), 3) == []
    assert run_backend(base_index, "hybrid", Query("???", HashEmbedder()), 3) == []


def test_query_is_embedded_once_for_vector_and_hybrid(base_index: Index) -> None:
    embedder = CountingEmbedder()
    cases = (_case("hash password", ["auth.py"]), _case("refund payment", ["payments.py"]))
    harness.evaluate(base_index, embedder, FixtureSet(None, cases), harness.BACKEND_NAMES)
    assert embedder.calls == ["hash password", "refund payment"]


def test_bm25_only_evaluation_never_embeds(base_index: Index) -> None:
    embedder = CountingEmbedder()
    cases = (_case("hash password", ["auth.py"]),)
    harness.evaluate(base_index, embedder, FixtureSet(None, cases), ["bm25"])
    assert embedder.calls == []


def _hit(file_path: str, kind: str, start: int, end: int) -> SearchResult:
    return SearchResult(
        rank=1,
        chunk_id="x",
        file_path=file_path,
        start_line=start,
        end_line=end,
        chunk_type="code",
        kind=kind,
        score=0.0,
        content="",
    )


def test_judgment_matrix_rows_are_results_and_columns_anchors() -> None:
    anchors = [Anchor.parse("auth.py"), Anchor.parse("#class_definition"), Anchor.parse("a.py@3-4")]
    results = [
        _hit("auth.py", "function_definition", 1, 2),
        _hit("a.py", "class_definition", 4, 9),
        _hit("b.py", "module", 1, 2),
    ]
    assert harness.judge(results, anchors) == [
        [True, False, False],
        [False, True, True],
        [False, False, False],
    ]


def test_score_case_counts_only_the_first_k_results_for_tokens() -> None:
    case = _case("q", ["f.py@1-5"], k=1)
    results = [_hit("g.py", "m", 1, 5), _hit("f.py", "m", 1, 5)]
    score = harness.score_case(case, results, LineWeights.uniform())
    assert score.tokens is not None
    assert score.tokens.recall == 0.0
    assert score.precision_at_k == 0.0


def test_score_case_span_metrics_ignore_unranged_anchors() -> None:
    case = _case("q", ["f.py@1-5", "other.py"], k=5)
    score = harness.score_case(case, [_hit("f.py", "m", 1, 5)], LineWeights.uniform())
    assert score.tokens is not None
    assert (score.tokens.precision, score.tokens.recall, score.tokens.iou) == (1.0, 1.0, 1.0)
    assert score.recall == 0.5


def test_score_case_without_ranged_anchor_has_no_tokens() -> None:
    case = _case("q", ["auth.py", "#function_definition"], k=5)
    score = harness.score_case(case, [_hit("auth.py", "m", 1, 10)], LineWeights.uniform())
    assert score.tokens is None


def test_line_weights_follow_index_order(tmp_path: Path) -> None:
    (tmp_path / "python.py").write_text(
        'import os\n\n\ndef read_config(path):\n    return os.path.join(path, "config.yml")\n',
        encoding="utf-8",
    )
    index = build_index(str(tmp_path), HashEmbedder()).index
    weights = harness.line_weights(index)
    assert weights.weight("python.py", 4) == 5
    assert weights.weight("python.py", 5) == 10
    assert weights.weight("python.py", 999) == 1
    assert weights.weight("missing.py", 4) == 1


def test_compare_reports_pairs_cases_in_order(base_index: Index) -> None:
    cases = (
        _case("hash password", ["auth.py"], case_id="one"),
        _case("process payment amount", ["payments.py"], case_id="two"),
    )
    reports = harness.evaluate(
        base_index, HashEmbedder(), FixtureSet(None, cases), ["bm25", "vector"]
    )
    comparison = harness.compare_reports(reports[0], reports[1])
    assert (comparison.a, comparison.b) == ("bm25", "vector")
    mrr = comparison.metrics[2].result
    assert mrr.n == 2
    deltas = [
        v.score.mrr - b.score.mrr for b, v in zip(reports[0].cases, reports[1].cases, strict=True)
    ]
    assert mrr.mean_delta in (deltas[0], (deltas[0] + deltas[1]) / 2)


def test_compare_reports_rejects_unpaired_reports(base_index: Index) -> None:
    one = harness.evaluate(
        base_index, HashEmbedder(), FixtureSet(None, (_case("hash", ["auth.py"]),)), ["bm25"]
    )[0]
    two = harness.evaluate(
        base_index,
        HashEmbedder(),
        FixtureSet(None, (_case("hash", ["auth.py"]), _case("pay", ["payments.py"]))),
        ["bm25"],
    )[0]
    with pytest.raises(ValueError, match="cannot pair"):
        harness.compare_reports(one, two)


def test_secondary_anchors_are_judged_but_leave_the_reference_metrics_alone() -> None:
    results = [_hit("other.py", "m", 1, 5), _hit("auth.py", "m", 1, 5)]
    plain = Case("c", "q", (Anchor.parse("auth.py"),), 5, 1)
    with_secondary = Case(
        "c", "q", (Anchor.parse("auth.py"),), 5, 1, secondary=(Anchor.parse("other.py"),)
    )
    weights = LineWeights.uniform()
    secondary_score = harness.score_case(with_secondary, results, weights)
    plain_score = harness.score_case(plain, results, weights)
    for metric in harness.COMPARED_METRICS:
        assert secondary_score.values[metric.key] == plain_score.values[metric.key]
    assert secondary_score.first_relevant_rank == 2
    # The opt-in ranked metrics do see the secondary anchor, found at rank 1.
    assert plain_score.values["ndcg_at_k"] < secondary_score.values["ndcg_at_k"] == 1.0


def test_progress_counts_every_query_of_every_backend() -> None:
    """The query phase reports (done, total) after each (backend, query)."""
    fixture_set = parse_fixtures((REPO / "eval" / "relevance" / "code.jsonl").read_text())
    index = build_index(str(REPO / "eval" / "corpus" / "sample"), HashEmbedder()).index
    seen: list[tuple[int, int]] = []
    harness.evaluate(
        index,
        HashEmbedder(),
        fixture_set,
        ["bm25", "hybrid"],
        progress=lambda done, total: seen.append((done, total)),
    )
    total = 2 * len(fixture_set.cases)
    assert seen == [(done, total) for done in range(1, total + 1)]


def test_relevance_draws_a_query_bar_when_progress_is_asked_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cce_cli.evaluation import building
    from cce_cli.main import main
    from cce_cli.runs import single as relevance

    bars: list[tuple[bool, str]] = []
    real = building.progress_bar

    def recorded(enabled: bool, description: str, unit: str = "file") -> object:
        bars.append((enabled, description))
        return real(enabled, description, unit)

    monkeypatch.setattr(relevance, "progress_bar", recorded)
    fixtures = str(REPO / "eval" / "relevance" / "code.jsonl")
    assert main(["relevance", fixtures, "--progress", "--backend", "bm25"]) == 0
    assert main(["relevance", fixtures, "--no-progress", "--backend", "bm25"]) == 0
    capsys.readouterr()
    assert bars == [(True, "querying"), (False, "querying")]
