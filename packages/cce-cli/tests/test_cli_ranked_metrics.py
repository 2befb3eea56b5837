"""`cce relevance --metrics ndcg,map,hit,rprec` and `--graded` (docs/metrics.md#ranked-metrics).

The nDCG oracle is the semble code-search benchmark's `ndcg_at_k(relevant_ranks,
n_relevant, k)`, transcribed from its documented formula: binary relevance at each
expected anchor's first-match rank within k, DCG with a log2(i + 2) discount over 0-based
positions, over the DCG of min(k, n_relevant) ones. Its inputs are read back from the
`--results` file (cce.run/v1: which expected anchors every result matched), not from the
harness, so the test crosses the whole command.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from cce_cli.evaluation import harness
from cce_cli.main import main
from cce_fixtures import parse_fixtures
from cce_metrics import METRICS
from cce_retrieval import HashEmbedder, build_index, format6

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

REPO = Path(__file__).parents[3]
CODE = REPO / "eval" / "relevance" / "code.jsonl"
SAMPLE = REPO / "eval" / "corpus" / "sample"

# Several anchors per case, anchors one chunk satisfies together, more anchors than k,
# an anchor nothing matches, and a secondary anchor.
MULTI = "\n".join(
    json.dumps(case)
    for case in [
        {"schema": "cce.relevance/v1"},
        {
            "id": "three-files",
            "query": "cache config store",
            "expected": ["cache.py", "config.py", "store.rs"],
            "k": 3,
        },
        {
            "id": "overlap",
            "query": "cache get expired entry",
            "expected": ["cache.py@18-27", "cache.py@20-22"],
            "k": 5,
        },
        {
            "id": "kind-and-path",
            "query": "eviction strategy enum",
            "expected": ["#enum_item", "cache.py"],
            "k": 4,
        },
        {"id": "missing", "query": "retry delay", "expected": ["nowhere.py"], "k": 5},
        {
            "id": "more-than-k",
            "query": "cache config store ring retry",
            "expected": ["cache.py", "config.py", "store.rs", "ring.c", "retry.js"],
            "k": 2,
        },
        {
            "id": "secondary",
            "query": "requeue a failed job with the next retry delay",
            "expected": ["retry.js"],
            "secondary": ["queue.ts"],
            "k": 5,
        },
    ]
)


def semble_ndcg_at_k(relevant_ranks: Sequence[int], n_relevant: int, k: int) -> float:
    if n_relevant == 0:
        return 0.0
    relevances = [0] * k
    for rank in relevant_ranks:
        if 1 <= rank <= k:
            relevances[rank - 1] = 1
    dcg = 0.0
    for i, rel in enumerate(relevances):
        dcg += rel / math.log2(i + 2)
    ideal = 0.0
    for i in range(min(k, n_relevant)):
        ideal += 1 / math.log2(i + 2)
    return dcg / ideal if ideal > 0 else 0.0


def first_match_ranks(matches: Sequence[Sequence[int]], n_expected: int) -> list[int]:
    ranks = []
    for anchor in range(n_expected):
        for rank, matched in enumerate(matches, start=1):
            if anchor in matched:
                ranks.append(rank)
                break
    return ranks


@pytest.fixture
def multi(tmp_path: Path) -> Path:
    path = tmp_path / "multi.jsonl"
    path.write_text(MULTI + "\n", encoding="utf-8")
    return path


def _per_query(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (backend["backend"], row["id"]): row
        for backend in report["backends"]
        for row in backend["per_query"]
    }


@pytest.mark.parametrize("fixture", ["code", "multi"])
def test_ndcg_reproduces_the_benchmark_from_the_results_file(
    fixture: str, multi: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    fixtures = CODE if fixture == "code" else multi
    results = tmp_path / "run.jsonl"
    argv = [str(fixtures), "--dir", str(SAMPLE), "--metrics", "ndcg", "--json"]
    code, out, err = run_cce("relevance", *argv, "--results", str(results))
    # The "missing" case's anchor is dead on purpose; only it may be warned about.
    assert code == 0
    assert all('case missing: anchor "nowhere.py"' in line for line in err.splitlines())
    rows = _per_query(json.loads(out))
    cases = {case.id: case for case in parse_fixtures(fixtures.read_text("utf-8")).cases}
    records = [json.loads(line) for line in results.read_text("utf-8").splitlines()[1:]]
    assert len(records) == len(rows) == 3 * len(cases)
    nonzero = 0
    compared = 0
    for record in records:
        if cases[record["id"]].secondary:
            continue  # the benchmark's formula has unit gains over the expected anchors
        compared += 1
        matches = [hit["matches"] for hit in record["results"]]
        n_expected = len(cases[record["id"]].expected)
        oracle = semble_ndcg_at_k(first_match_ranks(matches, n_expected), n_expected, record["k"])
        row = rows[(record["backend"], record["id"])]
        assert row["ndcg_at_k"] == format6(oracle), record["id"]
        nonzero += oracle > 0.0
    assert compared >= 3 * (len(cases) - 1)
    assert nonzero > compared // 2  # the oracle is not trivially zero


def test_ndcg_equals_the_benchmark_to_1e_12_in_process(multi: Path) -> None:
    fixture_set = parse_fixtures(multi.read_text("utf-8"))
    index = build_index(str(SAMPLE), HashEmbedder()).index
    reports = harness.evaluate(index, HashEmbedder(), fixture_set, harness.BACKEND_NAMES)
    for report in reports:
        for case, case_report in zip(fixture_set.cases, report.cases, strict=True):
            matches = [
                [j for j, anchor in enumerate(case.expected) if anchor.matches(hit)]
                for hit in case_report.results
            ]
            n_expected = len(case.expected)
            if case.secondary:
                continue  # unit gains over expected anchors only: see the graded test
            oracle = semble_ndcg_at_k(first_match_ranks(matches, n_expected), n_expected, case.k)
            assert abs(case_report.score.values["ndcg_at_k"] - oracle) <= 1e-12


def test_default_report_is_unchanged_and_metrics_only_add_columns(
    run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    base = ["eval/relevance/code.jsonl", "--json"]
    _, default, _ = run_cce("relevance", *base)
    golden = REPO / "packages" / "cce-cli" / "tests" / "golden" / "code.report.json"
    assert default == golden.read_text("utf-8")
    # Naming only reference metrics changes nothing.
    assert run_cce("relevance", *base, "--metrics", "precision, mrr,")[1] == default
    _, extended, _ = run_cce("relevance", *base, "--metrics", "rprec,ndcg,hit,map")
    report, reference = json.loads(extended), json.loads(default)
    for backend, plain in zip(report["backends"], reference["backends"], strict=True):
        added = {"ndcg_at_k", "ap_at_k", "hit_at_k", "r_precision"}
        assert set(backend) - set(plain) == added
        assert {key: backend[key] for key in plain if key != "per_query"} == {
            key: value for key, value in plain.items() if key != "per_query"
        }
        for row, plain_row in zip(backend["per_query"], plain["per_query"], strict=True):
            assert set(row) - set(plain_row) == added
            assert {key: row[key] for key in plain_row} == plain_row


def test_text_columns_follow_the_registry_order(run_cce: RunCce) -> None:
    code, out, _ = run_cce("relevance", str(CODE), "--metrics", "rprec,ndcg")
    assert code == 0
    header = next(line for line in out.splitlines() if line.strip().startswith("backend"))
    assert header.split() == ["backend", "P@k", "recall", "MRR", "F1", "nDCG@k", "R-prec"]


def test_compare_tests_the_chosen_metrics(run_cce: RunCce) -> None:
    argv = [str(CODE), "--compare", "bm25,hybrid", "--metrics", "ndcg,hit", "--json"]
    code, out, _ = run_cce("relevance", *argv)
    assert code == 0
    compared = json.loads(out)["compare"]["metrics"]
    assert list(compared) == ["f1", "hit_at_k", "mrr", "ndcg_at_k", "precision_at_k", "recall"]
    assert compared["ndcg_at_k"]["n"] == 11


def test_graded_weighs_expected_over_secondary(multi: Path, run_cce: RunCce) -> None:
    argv = [str(multi), "--dir", str(SAMPLE), "--backend", "bm25", "--json", "--metrics"]
    plain = _per_query(json.loads(run_cce("relevance", *argv, "ndcg,map")[1]))
    graded = _per_query(json.loads(run_cce("relevance", *argv, "ndcg,map", "--graded")[1]))
    for key, row in plain.items():
        reference = {name: row[name] for name in ("precision_at_k", "recall", "mrr", "f1")}
        assert {name: graded[key][name] for name in reference} == reference
        assert graded[key]["ap_at_k"] == row["ap_at_k"]  # AP reads relevance only
        if key[1] != "secondary":
            # Every anchor is expected: doubling every gain leaves the ratio unchanged.
            assert graded[key]["ndcg_at_k"] == row["ndcg_at_k"]
    secondary = ("bm25", "secondary")
    assert graded[secondary]["ndcg_at_k"] != plain[secondary]["ndcg_at_k"]


def test_graded_values_match_the_gain_rule(multi: Path) -> None:
    fixture_set = parse_fixtures(multi.read_text("utf-8"))
    case = next(case for case in fixture_set.cases if case.id == "secondary")
    index = build_index(str(SAMPLE), HashEmbedder()).index
    (report,) = harness.evaluate(
        index, HashEmbedder(), parse_fixtures(MULTI), ["bm25"], graded=True
    )
    case_report = next(item for item in report.cases if item.id == "secondary")
    anchors = [*case.expected, *case.secondary]
    gains = [2.0, 1.0]
    found: set[int] = set()
    dcg = 0.0
    for rank, hit in enumerate(case_report.results, start=1):
        new = [j for j, anchor in enumerate(anchors) if anchor.matches(hit) and j not in found]
        found.update(new)
        dcg += max((gains[j] for j in new), default=0.0) / math.log2(rank + 1)
    ideal = 2.0 + 1.0 / math.log2(3)
    assert found == {0, 1}  # the case really exercises both gains
    assert abs(case_report.score.values["ndcg_at_k"] - dcg / ideal) <= 1e-12


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--metrics", "bpref"], "unknown metric 'bpref' for --metrics"),
        (["--metrics", "token-iou"], "unknown metric 'token-iou'"),
        (["--graded"], "add --metrics ndcg"),
        (["--graded", "--metrics", "map"], "add --metrics ndcg"),
    ],
)
def test_usage_errors_exit_2_before_reading_anything(
    argv: list[str], fragment: str, tmp_path: Path, run_cce: RunCce
) -> None:
    code, out, err = run_cce("relevance", str(tmp_path / "missing.jsonl"), *argv)
    assert (code, out) == (2, "")
    assert err.startswith("error: ") and fragment in err


def test_the_registry_names_the_flag_accepts() -> None:
    assert [item.name for item in METRICS if not item.default] == ["ndcg", "map", "hit", "rprec"]
    assert harness.parse_metrics(None) == harness.COMPARED_METRICS


def test_cce_diff_carries_the_ranked_metrics_of_saved_reports(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run_cce: RunCce,
) -> None:
    monkeypatch.chdir(REPO)
    saved = {}
    for backend in ("bm25", "hybrid"):
        argv = ["eval/relevance/code.jsonl", "--backend", backend, "--metrics", "ndcg,map,hit"]
        code, out, _ = run_cce("relevance", *argv, "--json")
        assert code == 0
        saved[backend] = tmp_path / f"{backend}.json"
        saved[backend].write_text(out, encoding="utf-8")
    base, head = str(saved["bm25"]), str(saved["hybrid"])
    assert main(["diff", base, head, "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert {"ndcg_at_k", "ap_at_k", "hit_at_k"} <= set(body["metrics"])
    assert "r_precision" not in body["metrics"]  # neither report carries it
    ndcg = body["metrics"]["ndcg_at_k"]
    assert ndcg["label"] == "nDCG@k" and ndcg["mean_delta"] == "-0.030108"
    assert main(["diff", base, head, "--min", "ndcg=0.9"]) == 3
    assert "nDCG@k of hybrid" in capsys.readouterr().err


def test_a_graded_report_says_so(multi: Path, run_cce: RunCce) -> None:
    argv = [str(multi), "--dir", str(SAMPLE), "--backend", "bm25", "--metrics", "ndcg"]
    plain_json = json.loads(run_cce("relevance", *argv, "--json")[1])
    graded_json = json.loads(run_cce("relevance", *argv, "--json", "--graded")[1])
    assert "gains" not in plain_json
    assert graded_json["gains"] == "graded"
    plain_text = run_cce("relevance", *argv)[1]
    graded_text = run_cce("relevance", *argv, "--graded")[1]
    line = "  gains   : graded (expected anchors 2, secondary anchors 1)"
    assert line not in plain_text.splitlines()
    assert graded_text.splitlines()[4] == line
