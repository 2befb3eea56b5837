"""Cost metrics in `cce relevance`: first-hit-tokens, recall@NNNNt (docs/metrics.md#cost-metrics).

The oracle below is written from the definitions alone: results are read in rank order,
each costing its token count; `recall@Bt` is the share of the query's targets (expected
and secondary anchors) covered by the results read before the running total would pass
B; `first-hit-tokens` is the running total at the first result covering a target, or
the cap. Its inputs are read back from the `--results` file (each result's location and
token count, down to the depth) and the fixture file, never from the harness, and the
token counts are checked against the estimator over each result's own text.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from cce_cli.evaluation import harness
from cce_fixtures import parse_fixtures
from cce_metrics import COST_METRICS, estimate_tokens
from cce_retrieval import HashEmbedder, SearchResult, build_index, format6

RunCce = Callable[..., tuple[int, str, str]]

REPO = Path(__file__).parents[3]
SAMPLE = REPO / "eval" / "corpus" / "sample"
CODE = REPO / "eval" / "relevance" / "code.jsonl"

CAP = 32_000

FIXTURES = "\n".join(
    json.dumps(case)
    for case in [
        {"schema": "cce.relevance/v1"},
        {"id": "two", "query": "cache config store", "expected": ["cache.py", "config.py"]},
        {"id": "ranged", "query": "cache get expired entry", "expected": ["cache.py@18-27"]},
        {"id": "kind", "query": "eviction strategy enum", "expected": ["#enum_item"], "k": 3},
        {"id": "missing", "query": "retry delay", "expected": ["nowhere.py"], "k": 5},
        {
            "id": "secondary",
            "query": "requeue a failed job with the next retry delay",
            "expected": ["retry.js"],
            "secondary": ["queue.ts"],
            "k": 2,
        },
    ]
)


# --- the oracle -------------------------------------------------------------------------


def _anchor_covers(anchor: str, hit: dict[str, Any]) -> bool:
    """The anchor grammar `path#kind@a-b` read directly: every facet given must hold;
    line spans need only touch."""
    lines = None
    if "@" in anchor:
        anchor, span = anchor.rsplit("@", 1)
        first, last = span.split("-")
        lines = (int(first), int(last))
    path, _, kind = anchor.partition("#")
    if path and hit["file_path"] != path:
        return False
    if kind and hit["kind"] != kind:
        return False
    return not (lines and (hit["end_line"] < lines[0] or hit["start_line"] > lines[1]))


def oracle_recall(
    tokens: Sequence[int], covers: Sequence[set[int]], targets: int, budget: int
) -> float:
    spent, found = 0, set()
    for count, covered in zip(tokens, covers, strict=True):
        if spent + count > budget:
            break
        spent += count
        found |= covered
    return len(found) / targets


def oracle_first_hit(tokens: Sequence[int], covers: Sequence[set[int]], cap: int = CAP) -> float:
    spent = 0
    for count, covered in zip(tokens, covers, strict=True):
        spent += count
        if covered:
            return float(spent)
    return float(cap)


def _oracle_values(
    record: dict[str, Any], case: dict[str, Any], budgets: Sequence[int]
) -> dict[str, float]:
    anchors = [*case["expected"], *case.get("secondary", [])]
    hits = record["cost"]["results"]
    assert [hit["rank"] for hit in hits] == list(range(1, len(hits) + 1))
    tokens = [hit["tokens"] for hit in hits]
    covers = [
        {i for i, anchor in enumerate(anchors) if _anchor_covers(anchor, hit)} for hit in hits
    ]
    values = {"first_hit_tokens": oracle_first_hit(tokens, covers)}
    for budget in budgets:
        values[f"recall_at_{budget}t"] = oracle_recall(tokens, covers, len(anchors), budget)
    return values


# --- the command, against the oracle ---------------------------------------------------------


@pytest.fixture
def fixtures(tmp_path: Path) -> Path:
    path = tmp_path / "cost.jsonl"
    path.write_text(FIXTURES + "\n", encoding="utf-8")
    return path


BUDGETS = (100, 500, 2000)


def _relevance(run_cce: RunCce, fixtures: Path, *extra: str) -> tuple[int, str, str]:
    """`cce relevance` of the cost fixtures over the sample corpus, with `extra` options."""
    return run_cce("relevance", str(fixtures), "--dir", str(SAMPLE), *extra)


def _saved_grep_and_bm25(run_cce: RunCce, fixtures: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Saved first-hit-tokens reports of grep (the base) and bm25 (the head)."""
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    for path, backend in ((base, "grep"), (head, "bm25")):
        code, out, _ = _relevance(
            run_cce, fixtures, "--backend", backend, "--metrics", "first-hit-tokens", "--json"
        )
        assert code == 0
        path.write_text(out, encoding="utf-8")
    return base, head


def _run(
    run_cce: RunCce, fixtures: Path, tmp_path: Path, *extra: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    results = tmp_path / "run.jsonl"
    code, out, err = _relevance(
        run_cce,
        fixtures,
        "--backend",
        "bm25,grep",
        "--metrics",
        "ndcg,first-hit-tokens,recall@500t",
        "--budgets",
        "100,2000",
        "--format",
        "json",
        "--results",
        str(results),
        *extra,
    )
    assert code == 0, err
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()[1:]]
    return json.loads(out), records


def test_every_cost_value_equals_a_recomputation_from_the_results_file(
    fixtures: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    report, records = _run(run_cce, fixtures, tmp_path)
    cases = {case["id"]: case for case in map(json.loads, FIXTURES.splitlines()[1:])}
    assert report["cost"] == {
        "depth": 50,
        "first_hit_cap": CAP,
        "metrics": ["first-hit-tokens", "recall@500t", "recall@100t", "recall@2000t"],
        "tokenizer": "cce.tokens/v1",
    }
    by_backend = {entry["backend"]: entry for entry in report["backends"]}
    checked = 0
    for record in records:
        entry = by_backend[record["backend"]]
        row = next(row for row in entry["per_query"] if row["id"] == record["id"])
        expected = _oracle_values(record, cases[record["id"]], BUDGETS)
        assert row["cost"] == {key: format6(value) for key, value in expected.items()}
        # The quality metrics still read the first k only.
        assert len(record["results"]) <= record["k"]
        checked += 1
    assert checked == 10
    for entry in report["backends"]:
        rows = [row["cost"] for row in entry["per_query"]]
        mean = sum(float(row["first_hit_tokens"]) for row in rows) / len(rows)
        assert entry["cost"]["first_hit_tokens"] == format6(mean)
        assert entry["cost"]["queries"] == 5
    # grep reads whole files: its first hit costs more than bm25's chunks.
    assert float(by_backend["grep"]["cost"]["first_hit_tokens"]) > float(
        by_backend["bm25"]["cost"]["first_hit_tokens"]
    )


def test_the_results_file_reads_deeper_than_k_and_counts_each_result_text(
    fixtures: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    _, records = _run(run_cce, fixtures, tmp_path)
    index = build_index(str(SAMPLE), HashEmbedder()).index
    chunk_text = {(c.file_path, c.start_line, c.end_line): c.content for c in index.chunks}
    deeper = 0
    for record in records:
        hits = record["cost"]["results"]
        assert record["cost"]["tokenizer"] == "cce.tokens/v1"
        deeper += len(hits) > record["k"]
        for hit in hits:
            if record["backend"] == "grep":
                text = (SAMPLE / hit["file_path"]).read_text(encoding="utf-8")
                assert hit["start_line"] == 1
            else:
                text = chunk_text[(hit["file_path"], hit["start_line"], hit["end_line"])]
            assert hit["tokens"] == estimate_tokens(text)
    assert deeper > 0  # bm25 ranks more chunks than any case's k


def test_a_default_run_has_no_cost_anywhere(
    fixtures: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    results = tmp_path / "plain.jsonl"
    code, out, _ = _relevance(run_cce, fixtures, "--json", "--results", str(results))
    assert code == 0
    assert "cost" not in out
    assert '"cost"' not in results.read_text(encoding="utf-8")


def test_the_quality_metrics_do_not_move_when_cost_is_asked(
    fixtures: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    with_cost, _ = _run(run_cce, fixtures, tmp_path)
    code, out, _ = _relevance(
        run_cce,
        fixtures,
        "--backend",
        "bm25,grep",
        "--metrics",
        "ndcg",
        "--json",
    )
    assert code == 0
    plain = json.loads(out)
    for entry in with_cost["backends"]:
        del entry["cost"]
        for row in entry["per_query"]:
            del row["cost"]
    del with_cost["cost"]
    assert with_cost == plain


def test_the_text_summary_shows_first_hit_as_tokens(fixtures: Path, run_cce: RunCce) -> None:
    code, out, _ = _relevance(
        run_cce,
        fixtures,
        "--backend",
        "bm25",
        "--budgets",
        "500",
    )
    assert code == 0
    assert "Cost (tokens by cce.tokens/v1, reading the top 50 results" in out
    assert "R@500t" in out


def test_the_compare_block_names_a_lower_is_better_metric_and_keeps_its_columns_apart(
    fixtures: Path, run_cce: RunCce
) -> None:
    code, out, _ = _relevance(
        run_cce,
        fixtures,
        "--compare",
        "bm25,hybrid",
        "--metrics",
        "mrr,first-hit-tokens",
    )
    assert code == 0
    assert "positive = hybrid wins; for 1st-hit tok, negative = hybrid wins)" in out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("query "))
    # Each delta label stands apart from the one before it.
    assert " dF1 " in header and " d1st-hit tok" in header
    test_rows = [line for line in out.splitlines() if line.startswith("  1st-hit tok ")]
    assert len(test_rows) == 1 and test_rows[0].split()[2][0] in "+-"


@pytest.mark.parametrize("budgets", ["0", "abc", "5e2", "-3"])
def test_a_bad_budget_is_a_usage_error(fixtures: Path, run_cce: RunCce, budgets: str) -> None:
    code, _, err = _relevance(run_cce, fixtures, "--budgets", budgets)
    assert code == 2
    assert "--budgets takes positive token counts" in err


# --- budget edges and rank order, on the harness itself ---------------------------------


def _hit(rank: int, path: str, tokens: int) -> SearchResult:
    text = "x" * (4 * tokens)  # cce.tokens/v1: a quarter of the bytes
    return SearchResult(rank, f"c{rank}", path, 1, 1, "", "", 1.0, text)


CASE = parse_fixtures(
    '{"schema":"cce.relevance/v1"}\n{"id":"q","query":"x","expected":["a.py","b.py"],"k":1}\n'
).cases[0]


def _cost(results: Sequence[SearchResult], *names: str) -> dict[str, float | None]:
    metrics = [COST_METRICS.get(name) for name in names]
    found = harness.score_cost(CASE, results, metrics)
    return {item.name: found.value(item.key) for item in metrics}


def test_a_result_exactly_at_the_budget_counts_and_one_token_over_does_not() -> None:
    exactly = [_hit(1, "noise.py", 300), _hit(2, "a.py", 200), _hit(3, "b.py", 1)]
    assert _cost(exactly, "recall@500t", "recall@501t", "recall@499t") == {
        "recall@500t": 0.5,
        "recall@501t": 1.0,
        "recall@499t": 0.0,
    }
    over = [_hit(1, "noise.py", 300), _hit(2, "a.py", 201)]
    assert _cost(over, "recall@500t")["recall@500t"] == 0.0
    # Reading stops at the result that crosses: a small hit ranked after it is not read.
    stopped = [_hit(1, "noise.py", 600), _hit(2, "a.py", 1)]
    assert _cost(stopped, "recall@500t")["recall@500t"] == 0.0
    assert oracle_recall([600, 1], [set(), {0}], 2, 500) == 0.0


def test_rank_order_decides_what_the_first_hit_costs() -> None:
    ranked = [_hit(1, "noise.py", 700), _hit(2, "a.py", 50), _hit(3, "b.py", 5)]
    assert _cost(ranked, "first-hit-tokens")["first-hit-tokens"] == 750.0
    swapped = [ranked[1], ranked[0], ranked[2]]
    assert _cost(swapped, "first-hit-tokens")["first-hit-tokens"] == 50.0
    assert _cost([_hit(1, "noise.py", 9)], "first-hit-tokens")["first-hit-tokens"] == CAP
    # The oracle notices both mistakes too: reading out of order, or stopping one short.
    assert oracle_first_hit([700, 50], [set(), {0}]) == 750.0
    assert oracle_first_hit([50, 700], [{0}, set()]) == 50.0


def test_the_depth_caps_what_is_read() -> None:
    deep = [_hit(rank, "noise.py", 1) for rank in range(1, 51)] + [_hit(51, "a.py", 1)]
    assert _cost(deep, "first-hit-tokens")["first-hit-tokens"] == CAP


# --- gate, comparison, diff and suites -------------------------------------------------------


def test_min_on_first_hit_tokens_is_a_ceiling(fixtures: Path, run_cce: RunCce) -> None:
    argv = (
        "relevance",
        str(fixtures),
        "--dir",
        str(SAMPLE),
        "--compare",
        "grep,bm25",
        "--metrics",
        "first-hit-tokens",
    )
    code, _, err = run_cce(*argv, "--min", "first-hit-tokens=1")
    assert code == 3
    assert "1st-hit tok of bm25 is" in err and "above --min first-hit-tokens=1" in err
    code, _, err = run_cce(*argv, "--min", "first-hit-tokens=1000000")
    assert code == 0, err


def test_compare_tests_the_per_query_cost_deltas(fixtures: Path, run_cce: RunCce) -> None:
    code, out, _ = _relevance(
        run_cce,
        fixtures,
        "--compare",
        "grep,bm25",
        "--metrics",
        "first-hit-tokens",
        "--json",
    )
    assert code == 0
    body = json.loads(out)
    rows = {
        e["backend"]: {r["id"]: float(r["cost"]["first_hit_tokens"]) for r in e["per_query"]}
        for e in body["backends"]
    }
    deltas = [rows["bm25"][case] - rows["grep"][case] for case in rows["grep"]]
    compared = body["compare"]["metrics"]["first_hit_tokens"]
    assert compared["n"] == 5
    assert float(compared["mean_delta"]) == pytest.approx(sum(deltas) / len(deltas), abs=1e-6)


def test_diff_orients_cost_wins_and_losses(fixtures: Path, tmp_path: Path, run_cce: RunCce) -> None:
    base, head = _saved_grep_and_bm25(run_cce, fixtures, tmp_path)
    code, out, _ = run_cce("diff", str(base), str(head), "--format", "json")
    assert code == 0
    diffed = json.loads(out)
    first_hit = diffed["metrics"]["first_hit_tokens"]
    before = {
        r["id"]: float(r["cost"]["first_hit_tokens"])
        for r in json.loads(base.read_text())["backends"][0]["per_query"]
    }
    after = {
        r["id"]: float(r["cost"]["first_hit_tokens"])
        for r in json.loads(head.read_text())["backends"][0]["per_query"]
    }
    cheaper = sum(after[case] < before[case] for case in before)
    dearer = sum(after[case] > before[case] for case in before)
    # Fewer tokens is a win for the head.
    assert (first_hit["wins"], first_hit["losses"]) == (cheaper, dearer)
    code, _, err = run_cce("diff", str(base), str(head), "--min", "first-hit-tokens=1")
    assert code == 3
    assert "above --min first-hit-tokens=1" in err


def test_a_suite_carries_cost_per_member_and_in_the_aggregates(
    tmp_path: Path, run_cce: RunCce
) -> None:
    lines = CODE.read_text(encoding="utf-8").splitlines()
    for name, cases in (("alpha", lines[1:5]), ("beta", lines[5:])):
        path = tmp_path / "fixtures" / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join([lines[0], *cases]) + "\n", encoding="utf-8")
    shutil.copytree(SAMPLE, tmp_path / "corpora" / "sample")
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n\n'
        '[[members]]\nname = "alpha"\nfixtures = "fixtures/alpha.jsonl"\n'
        'corpus = "corpora/sample"\n\n'
        '[[members]]\nname = "beta"\nfixtures = "fixtures/beta.jsonl"\n'
        'corpus = "corpora/sample"\n',
        encoding="utf-8",
    )
    code, out, err = run_cce(
        "relevance",
        str(manifest),
        "--backend",
        "bm25,grep",
        "--metrics",
        "first-hit-tokens",
        "--budgets",
        "500",
        "--json",
    )
    assert code == 0, err
    body = json.loads(out)
    assert body["cost"]["metrics"] == ["first-hit-tokens", "recall@500t"]
    member_values: list[list[float]] = []
    for member in body["members"]:
        grep = next(e for e in member["report"]["backends"] if e["backend"] == "grep")
        member_values.append([float(r["cost"]["first_hit_tokens"]) for r in grep["per_query"]])
        assert grep["cost"]["first_hit_tokens"] is not None
    overall = body["aggregates"]["grep"]["overall"]["first_hit_tokens"]
    every = [value for values in member_values for value in values]
    macro = sum(sum(v) / len(v) for v in member_values) / len(member_values)
    assert float(overall["micro"]) == pytest.approx(sum(every) / len(every), abs=1e-6)
    assert float(overall["macro"]) == pytest.approx(macro, abs=1e-6)
    code, text, _ = run_cce(
        "relevance", str(manifest), "--backend", "grep", "--metrics", "first-hit-tokens"
    )
    assert code == 0
    assert "1st-hit tok" in text


# --- grep reads files under the corpus root ------------------------------------------------


def test_pool_hands_every_backend_the_corpus_root(
    fixtures: Path, tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str | None] = []
    real = harness.run_backend

    def recording(index: Any, backend: Any, query: harness.Query, k: int) -> Any:
        seen.append(query.corpus_root)
        return real(index, backend, query, k)

    monkeypatch.setattr(harness, "run_backend", recording)
    out = tmp_path / "judging.jsonl"
    code, _, err = run_cce(
        "pool", str(fixtures), "--dir", str(SAMPLE), "--backends", "grep", "-o", str(out)
    )
    assert code == 0, err
    assert seen and set(seen) == {str(SAMPLE.resolve())}
    assert "cache.py" in out.read_text(encoding="utf-8")


def test_search_with_grep_reads_the_store_corpus(tmp_path: Path, run_cce: RunCce) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE, corpus)
    assert run_cce("index", str(corpus))[0] == 0
    # A word only the file on disk holds: found only if grep reads under the store's root.
    with (corpus / "cache.py").open("a", encoding="utf-8") as handle:
        handle.write("# zebraquokka\n")
    code, out, err = run_cce(
        "search",
        "zebraquokka",
        "--store",
        str(corpus / ".cce" / "index.json"),
        "--backend",
        "grep",
        "--json",
    )
    assert code == 0, err
    assert "cache.py" in out


def test_the_python_api_carries_cost_and_prints_the_command_bytes(
    fixtures: Path, run_cce: RunCce
) -> None:
    from cce_cli.api import run_relevance

    report = run_relevance(
        str(fixtures),
        corpus=str(SAMPLE),
        backends="bm25,grep",
        metrics="first-hit-tokens",
        budgets="500",
    )
    code, out, _ = _relevance(
        run_cce,
        fixtures,
        "--backend",
        "bm25,grep",
        "--metrics",
        "first-hit-tokens",
        "--budgets",
        "500",
        "--json",
    )
    assert code == 0
    assert report.json() == out
    rows = report.records()
    assert all("first_hit_tokens" in row and "recall_at_500t" in row for row in rows)
    means = {row["backend"]: row["first_hit_tokens"] for row in report.aggregate_records()}
    body = json.loads(out)
    for entry in body["backends"]:
        assert format6(means[entry["backend"]]) == entry["cost"]["first_hit_tokens"]


def test_the_pull_request_comment_shows_first_hit_in_whole_tokens(
    fixtures: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    base, head = _saved_grep_and_bm25(run_cce, fixtures, tmp_path)
    code, out, _ = run_cce("diff", str(base), str(head), "--format", "markdown")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("| 1st-hit tok"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    base_mean = json.loads(base.read_text())["backends"][0]["cost"]["first_hit_tokens"]
    assert cells[1] == f"{round(float(base_mean)):,}"
    assert "." not in cells[1] + cells[2] + cells[3]
    assert cells[3].startswith("-")  # bm25 reads fewer tokens to its first hit


def test_worst_first_is_decided_by_the_fractions_before_token_counts() -> None:
    from cce_cli.compare.pairing import DiffGroup, MetricDiff, QueryDelta
    from cce_cli.render.changes import changed_queries
    from cce_metrics import METRICS
    from cce_stats import paired_test

    def diff(name: str, rows: list[tuple[str, float, float]]) -> MetricDiff:
        item = COST_METRICS.get(name) if name in COST_METRICS else METRICS.get(name)
        deltas = tuple(QueryDelta(i, b, h, h - b) for i, b, h in rows)
        result = paired_test("t").run([row.delta for row in deltas])
        return MetricDiff(item, deltas, result, result.p, None, 0, 0, 0)

    group = DiffGroup(
        None,
        ("a", "b", "c"),
        (
            diff("mrr", [("a", 1.0, 0.5), ("b", 1.0, 1.0), ("c", 1.0, 1.0)]),
            # b reads 20,000 more tokens (worse) and c 300 fewer (better): a still leads,
            # since MRR fell there, and b comes before c.
            diff("first-hit-tokens", [("a", 100.0, 100.0), ("b", 100.0, 20100.0), ("c", 400, 100)]),
        ),
    )
    assert [change.id for change in changed_queries(group)] == ["a", "b", "c"]


def test_a_saved_report_page_draws_the_curve_from_its_budgets(
    fixtures: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    saved = tmp_path / "saved.json"
    code, out, _ = _relevance(
        run_cce,
        fixtures,
        "--backend",
        "bm25,grep",
        "--metrics",
        "first-hit-tokens",
        "--budgets",
        "4000,500,1000",
        "--json",
    )
    assert code == 0
    saved.write_text(out, encoding="utf-8")
    code, page, err = run_cce("report", str(saved))
    assert code == 0, err
    assert page.count('<polyline class="series"') == 2
    body = json.loads(out)
    grep = next(entry for entry in body["backends"] if entry["backend"] == "grep")
    shown = f"grep: recall {float(grep['cost']['recall_at_500t']):.3f} within 500 tokens"
    assert shown in page
    # Token counts show as whole tokens in the metrics table.
    mean = round(float(grep["cost"]["first_hit_tokens"]))
    assert f">{mean:,}<" in page


def test_an_unknown_metric_names_the_cost_metrics_too(fixtures: Path, run_cce: RunCce) -> None:
    code, _, err = _relevance(run_cce, fixtures, "--metrics", "recall@0t")
    assert code == 2
    assert err.count("\n") == 1
    assert "unknown metric 'recall@0t' for --metrics" in err
    assert "first-hit-tokens, recall@NNNNt" in err
