"""`cce relevance` additions behind flags: the gate on --compare, --results, --by-tag, --test.

Without these flags the output is the reference's (pinned by the golden and by the
reference checks); each test here also checks that the default did not move.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_cli.formats.results_file import RUN_SCHEMA, parse_run
from cce_metrics import score_query
from cce_retrieval import format6

REPO = Path(__file__).parents[3]
GOLDEN = Path(__file__).parent / "golden" / "code.report.json"
CODE = "eval/relevance/code.jsonl"

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    # A gated comparison appends to the job summary; CI's own must stay untouched.
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def test_compare_gate_fails_on_a_regressed_query(run_cce: RunCce) -> None:
    plain = run_cce("relevance", CODE, "--compare", "bm25,hybrid")
    gated = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--fail-on-query-regression")
    assert plain[0] == 0 and gated[0] == 3
    assert gated[1] == plain[1]  # the gate adds stderr lines only
    reasons = gated[2].splitlines()
    assert reasons and all(line.startswith("gate failed: query ") for line in reasons)
    assert "gate failed: query code-lru-evict got worse on MRR: 1.000000 -> 0.250000" in gated[2]


def test_compare_gate_min_and_significance(run_cce: RunCce) -> None:
    status, _, err = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--min", "mrr=0.5")
    assert (status, err) == (0, "")
    status, _, err = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--min", "mrr=0.9")
    assert status == 3
    assert err == "gate failed: MRR of hybrid is 0.780303, below --min mrr=0.9\n"
    # No metric moves significantly on 11 queries: the significance gate passes.
    status, _, err = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--fail-on-significant")
    assert (status, err) == (0, "")


def test_bare_query_regression_flag_leaves_the_fixtures_alone(
    run_cce: RunCce,
) -> None:
    """The flag's value is optional: bare, it must not swallow FIXTURES after it."""
    last = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--fail-on-query-regression")
    first = run_cce("relevance", "--fail-on-query-regression", CODE, "--compare", "bm25,hybrid")
    middle = run_cce("relevance", CODE, "--fail-on-query-regression", "--compare", "bm25,hybrid")
    assert last[0] == 3 and first == last and middle == last


def test_query_regression_on_chosen_metrics(run_cce: RunCce) -> None:
    status, _, err = run_cce(
        "relevance", CODE, "--compare", "bm25,hybrid", "--fail-on-query-regression", "MRR"
    )
    assert status == 3
    assert err.splitlines() == [
        "gate failed: query code-load-config got worse on MRR: 0.500000 -> 0.333333 (-0.166667)",
        "gate failed: query code-lru-evict got worse on MRR: 1.000000 -> 0.250000 (-0.750000)",
    ]
    argv = ["--fail-on-query-regression", "mrr", "--regression-tolerance", "0.75"]
    assert run_cce("relevance", CODE, "--compare", "bm25,hybrid", *argv)[::2] == (0, "")


def test_floor_labels_and_floors_the_report_lacks(run_cce: RunCce) -> None:
    status, _, err = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--min", "tok-IoU=0.9")
    assert (status, err) == (
        3,
        "gate failed: tok-IoU of hybrid is 0.222257, below --min token-iou=0.9\n",
    )
    status, out, err = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--min", "nDCG@k=0.3")
    assert (status, out) == (2, "")
    assert err == (
        "error: --min ndcg=0.3: hybrid has no nDCG@k; add it with `cce relevance --metrics ndcg`\n"
    )
    argv = ["--min", "nDCG@k=0.3", "--metrics", "ndcg"]
    assert run_cce("relevance", CODE, "--compare", "bm25,hybrid", *argv)[::2] == (0, "")


def test_gated_compare_appends_the_job_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cce: RunCce
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    plain = run_cce("relevance", CODE, "--compare", "bm25,hybrid")
    assert plain[0] == 0 and not summary.exists()  # no gate flag: nothing moves
    gated = run_cce(
        "relevance", CODE, "--compare", "bm25,hybrid", "--fail-on-query-regression", "mrr"
    )
    assert gated[0] == 3 and gated[1] == plain[1]
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("❌ **Gate failed** (2 reasons)")
    assert "### cce diff: bm25 → hybrid" in text
    assert "query code-lru-evict got worse on MRR" in text
    status = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--min", "mrr=0.5")[0]
    assert status == 0
    assert summary.read_text(encoding="utf-8").count("### cce diff: bm25 → hybrid") == 2


def test_gate_flags_need_compare(run_cce: RunCce) -> None:
    status, out, err = run_cce("relevance", CODE, "--fail-on-query-regression")
    assert (status, out) == (2, "")
    assert err.startswith("error: --fail-on-significant, --fail-on-query-regression and --min")


def test_results_file_reads_back_to_the_report_scores(tmp_path: Path, run_cce: RunCce) -> None:
    results = tmp_path / "out" / "run.jsonl"
    status, out, err = run_cce("relevance", CODE, "--json", "--results", str(results))
    assert status == 0, err
    assert out == GOLDEN.read_text(encoding="utf-8")
    text = results.read_text(encoding="utf-8")
    header, records = parse_run(text)
    assert header == {
        "corpus": "eval/relevance/../corpus/sample",
        "embedder": "hash",
        "schema": RUN_SCHEMA,
    }
    report = json.loads(out)
    assert [record.backend for record in records] == [
        backend["backend"] for backend in report["backends"] for _ in backend["per_query"]
    ]
    rows = [row for backend in report["backends"] for row in backend["per_query"]]
    fixture_lines = (REPO / CODE).read_text(encoding="utf-8").splitlines()[1:]
    fixtures = {json.loads(line)["id"]: json.loads(line) for line in fixture_lines}
    for record, row in zip(records, rows, strict=True):
        assert record.id == row["id"] and record.k == row["k"]
        assert record.query == fixtures[record.id]["query"]
        n_expected = len(fixtures[record.id]["expected"])
        matrix = [[j in hit for j in range(n_expected)] for hit in record.matches]
        score = score_query(matrix, n_expected, record.k)
        for key in ("precision_at_k", "recall", "mrr", "f1"):
            assert format6(score.values[key]) == row[key]
        assert [hit["rank"] for hit in record.results] == list(range(1, len(record.results) + 1))
    # Deterministic bytes, one compact sorted-key line per record.
    again = tmp_path / "again.jsonl"
    run_cce("relevance", CODE, "--results", str(again))
    assert again.read_text(encoding="utf-8") == text
    assert text.splitlines()[0] == (
        '{"corpus":"eval/relevance/../corpus/sample","embedder":"hash","schema":"cce.run/v1"}'
    )


def test_results_that_cannot_be_written_is_an_error(tmp_path: Path, run_cce: RunCce) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    status, out, err = run_cce("relevance", CODE, "--results", str(blocker / "run.jsonl"))
    assert (status, out) == (1, "")
    assert err.startswith(f"error: could not write results {blocker / 'run.jsonl'}: ")


def _tagged_fixtures(tmp_path: Path) -> Path:
    corpus = (REPO / "eval" / "corpus" / "sample").resolve()
    lines = [
        json.dumps({"schema": "cce.relevance/v1", "corpus": str(corpus)}),
        json.dumps(
            {"id": "a", "query": "load config", "expected": ["config.py"], "tags": ["symbol"]}
        ),
        json.dumps({"id": "b", "query": "evict cache entry", "expected": ["cache.py"]}),
        json.dumps(
            {
                "id": "c",
                "query": "retry backoff delay",
                "expected": ["retry.js"],
                "tags": ["concept", "symbol"],
            }
        ),
    ]
    path = tmp_path / "tagged.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_by_tag_adds_per_tag_aggregates(tmp_path: Path, run_cce: RunCce) -> None:
    fixtures = str(_tagged_fixtures(tmp_path))
    plain = run_cce("relevance", fixtures, "--backend", "bm25")[1]
    tagged = run_cce("relevance", fixtures, "--backend", "bm25", "--by-tag")[1]
    assert tagged.startswith(plain)
    assert "  tag concept (1 of 3 queries)" in tagged
    assert "  tag symbol (2 of 3 queries)" in tagged
    body = json.loads(run_cce("relevance", fixtures, "--backend", "bm25", "--by-tag", "--json")[1])
    assert list(body["tags"]) == ["concept", "symbol"]
    assert body["tags"]["symbol"]["queries"] == 2
    per_query = body["backends"][0]["per_query"]
    assert [row["tags"] for row in per_query] == [["symbol"], [], ["concept", "symbol"]]
    symbol_mrr = (float(per_query[0]["mrr"]) + float(per_query[2]["mrr"])) / 2
    assert body["tags"]["symbol"]["backends"][0]["mrr"] == format6(symbol_mrr)
    plain_json = json.loads(run_cce("relevance", fixtures, "--backend", "bm25", "--json")[1])
    assert "tags" not in plain_json and "tags" not in plain_json["backends"][0]["per_query"][0]


def test_test_t_is_the_default(run_cce: RunCce) -> None:
    default = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--json")[1]
    explicit = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--json", "--test", "t")[1]
    assert explicit == default
    assert "test" not in json.loads(default)["compare"]


@pytest.mark.parametrize(
    ("test", "label", "statistic"),
    [
        ("randomization", "paired randomization test", "mean"),
        ("signed-rank", "Wilcoxon signed-rank test", "W+"),
        ("bootstrap", "paired bootstrap", "mean"),
    ],
)
def test_other_paired_tests_name_themselves(
    test: str, label: str, statistic: str, run_cce: RunCce
) -> None:
    argv = [CODE, "--compare", "bm25,hybrid", "--test", test]
    status, text, err = run_cce("relevance", *argv)
    assert status == 0, err
    assert f"  {label} on the per-query deltas (two-sided, n=11)\n" in text
    header = next(line for line in text.splitlines() if line.startswith("  metric  "))
    assert header.split()[:3] == ["metric", "mean-delta", statistic]
    assert run_cce("relevance", *argv)[1] == text  # fixed generators: the same bytes again
    compare = json.loads(run_cce("relevance", *argv, "--json")[1])["compare"]
    assert (compare["test"], compare["statistic"]) == (test, statistic)
    mrr = compare["metrics"]["mrr"]
    assert "t" not in mrr and mrr["statistic"] is not None and mrr["n"] == 11
    assert mrr["mean_delta"] == "-0.037879"


def test_bootstrap_cannot_gate_significance_on_few_queries(
    run_cce: RunCce,
) -> None:
    """Below BOOTSTRAP_CALIBRATED_N queries the percentile p is too small under a true
    null, so a significance gate on it is refused before anything is written."""
    argv = [CODE, "--compare", "bm25,hybrid", "--test", "bootstrap"]
    status, out, err = run_cce("relevance", *argv, "--fail-on-significant")
    assert (status, out) == (1, "")
    assert err.startswith(
        "error: --fail-on-significant with --test bootstrap needs at least 30 paired "
        "queries per gated metric, got 11 (P@k, recall, MRR, F1): "
    )
    assert "gate with --test t or --test randomization" in err
    assert err.count("\n") == 1
    # The report itself, and the gates that do not read p, still run with the bootstrap.
    assert run_cce("relevance", *argv)[0] == 0
    status, _, err = run_cce("relevance", *argv, "--fail-on-query-regression")
    assert status == 3 and err.startswith("gate failed: query ")
    # Every other test may still gate at this n.
    for test in ("t", "randomization", "signed-rank"):
        status, _, err = run_cce(
            "relevance", CODE, "--compare", "bm25,hybrid", "--test", test, "--fail-on-significant"
        )
        assert (status, err) == (0, ""), test


def test_unknown_paired_test_is_a_usage_error(run_cce: RunCce) -> None:
    status, out, err = run_cce("relevance", CODE, "--compare", "bm25,hybrid", "--test", "z")
    assert (status, out) == (2, "")
    assert "invalid choice: 'z'" in err


def test_provenance_is_opt_in_and_only_adds_its_object(
    run_cce: RunCce,
) -> None:
    import hashlib

    status, out, err = run_cce("relevance", CODE, "--json", "--provenance")
    assert status == 0, err
    document = json.loads(out)
    provenance = document.pop("provenance")
    # Without the object the bytes are the default report's, which the golden pins.
    assert json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n" == (
        GOLDEN.read_text(encoding="utf-8")
    )
    assert provenance["fixtures_sha256"] == hashlib.sha256((REPO / CODE).read_bytes()).hexdigest()
    assert set(provenance["backends"]) == {"bm25", "vector", "hybrid"}
    assert provenance["embedder"] == "hash" and provenance["cce_version"]
    assert len(provenance["corpus_sha256"]) == 64
    again = json.loads(run_cce("relevance", CODE, "--json", "--provenance")[1])["provenance"]
    assert again == provenance
    assert run_cce("relevance", CODE, "--provenance")[:2] == (2, "")
