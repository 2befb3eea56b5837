"""`cce diff`: pairing saved reports by id, the paired tests, formats, summary file, gate.

The statistics are checked against scipy's `ttest_rel` and statsmodels' `multipletests`
(test-only dependencies); the markdown is parsed by markdown-it-py, as a reader's
renderer would, rather than matched as text.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from scipy import stats
from statsmodels.stats.multitest import multipletests

from cce_cli.main import main
from cce_cli.output import number_text

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"
BASE = DATA / "diff-base.json"
HEAD = DATA / "diff-head.json"
SHUFFLED = DATA / "diff-head-shuffled.json"
REPO = Path(__file__).parents[3]
KEYS = ("precision_at_k", "recall", "mrr", "f1")

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


def _rows(path: Path) -> dict[str, dict[str, float]]:
    body = json.loads(path.read_text(encoding="utf-8"))
    return {
        row["id"]: {key: float(row[key]) for key in KEYS}
        for row in body["backends"][0]["per_query"]
    }


def _write_report(
    path: Path, backend: str, rows: Mapping[str, Mapping[str, float]], extra: str = ""
) -> Path:
    per_query = [
        {"id": case_id, "k": 5, **{key: f"{value:.6f}" for key, value in values.items()}}
        for case_id, values in rows.items()
    ]
    body: dict[str, Any] = {
        "backends": [{"backend": backend, "per_query": per_query}],
        "schema": "cce.relevance.report/v2",
    }
    path.write_text(json.dumps(body) + extra, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


# --- the statistics against independent implementations -------------------------------


def test_t_p_ci_and_holm_equal_scipy_and_statsmodels(run_cce: RunCce) -> None:
    status, out, err = run_cce("diff", str(BASE), str(HEAD), "--format", "json")
    assert status == 0, err
    metrics = json.loads(out)["metrics"]
    base, head = _rows(BASE), _rows(HEAD)
    ids = list(base)
    raw_p: list[float] = []
    for key in KEYS:
        before = [base[case_id][key] for case_id in ids]
        after = [head[case_id][key] for case_id in ids]
        expected = stats.ttest_rel(after, before)
        low, high = expected.confidence_interval(0.95)
        got = metrics[key]
        assert abs(float(got["t"]) - expected.statistic) < 1e-6
        assert abs(float(got["p"]) - expected.pvalue) < 1e-6
        assert abs(float(got["ci95_low"]) - low) < 1e-6
        assert abs(float(got["ci95_high"]) - high) < 1e-6
        deltas = [a - b for a, b in zip(after, before, strict=True)]
        mean = sum(deltas) / len(deltas)
        sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / (len(deltas) - 1))
        assert abs(float(got["effect_size"]) - mean / sd) < 1e-6
        assert abs(float(got["mean_delta"]) - mean) < 1e-6
        assert got["n"] == 8
        raw_p.append(float(expected.pvalue))
    _, holm, _, _ = multipletests(raw_p, method="holm")
    for key, adjusted in zip(KEYS, holm, strict=True):
        assert abs(float(metrics[key]["p_adjusted"]) - adjusted) < 1e-6


@pytest.mark.parametrize(("correction", "method"), [("bonferroni", "bonferroni"), ("bh", "fdr_bh")])
def test_other_corrections_equal_statsmodels(correction: str, method: str, run_cce: RunCce) -> None:
    out = run_cce("diff", str(BASE), str(HEAD), "--format", "json", "--correction", correction)[1]
    body = json.loads(out)
    assert body["correction"] == correction
    p = [float(body["metrics"][key]["p"]) for key in KEYS]
    _, adjusted, _, _ = multipletests(p, method=method)
    for key, value in zip(KEYS, adjusted, strict=True):
        assert abs(float(body["metrics"][key]["p_adjusted"]) - value) < 2e-6


def test_correction_none_keeps_p(run_cce: RunCce) -> None:
    out = run_cce("diff", str(BASE), str(HEAD), "--format", "json", "--correction", "none")[1]
    for entry in json.loads(out)["metrics"].values():
        assert entry["p_adjusted"] == entry["p"]


def test_wins_ties_losses_and_per_query_rows(run_cce: RunCce) -> None:
    metrics = json.loads(run_cce("diff", str(BASE), str(HEAD), "--format", "json")[1])["metrics"]
    mrr = metrics["mrr"]
    assert (mrr["wins"], mrr["ties"], mrr["losses"]) == (4, 2, 2)
    retry = next(row for row in mrr["per_query"] if row["id"] == "q-retry")
    assert retry == {"base": "1.000000", "delta": "-0.500000", "head": "0.500000", "id": "q-retry"}
    assert [row["id"] for row in mrr["per_query"]] == list(_rows(BASE))


# --- pairing ---------------------------------------------------------------------------


def test_pairs_by_id_not_position_and_lists_unpaired(run_cce: RunCce) -> None:
    status, out, err = run_cce("diff", str(BASE), str(SHUFFLED), "--format", "json")
    assert status == 0
    assert err == (
        "warning: 2 cases are in only one report and excluded from the tests "
        "(listed in the output)\n"
    )
    body = json.loads(out)
    assert body["unpaired"] == {"base": ["q-ring"], "head": ["q-extra"]}
    assert body["paired"] == 7
    base, head = _rows(BASE), _rows(HEAD)
    kept = [case_id for case_id in base if case_id != "q-ring"]
    for key in KEYS:
        expected = stats.ttest_rel(
            [head[case_id][key] for case_id in kept], [base[case_id][key] for case_id in kept]
        )
        assert abs(float(body["metrics"][key]["p"]) - expected.pvalue) < 1e-6
        rows = body["metrics"][key]["per_query"]
        assert [row["id"] for row in rows] == kept
    text = run_cce("diff", str(BASE), str(SHUFFLED))[1]
    assert "unpaired, excluded from the tests: base only: q-ring; head only: q-extra" in text


def test_duplicate_ids_are_an_error(tmp_path: Path, run_cce: RunCce) -> None:
    body = json.loads(BASE.read_text(encoding="utf-8"))
    rows = body["backends"][0]["per_query"]
    rows.append(dict(rows[1]))
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(body), encoding="utf-8")
    status, out, err = run_cce("diff", str(twice), str(HEAD))
    assert (status, out) == (1, "")
    assert err == (
        f"error: {twice}: backend bm25 lists case id 'q-cache' twice (per_query[1] and "
        "per_query[8]); case ids must be unique to pair cases\n"
    )


def test_backend_choice(tmp_path: Path, run_cce: RunCce) -> None:
    body = json.loads(BASE.read_text(encoding="utf-8"))
    other = dict(body["backends"][0], backend="vector")
    body["backends"].append(other)
    both = tmp_path / "both.json"
    both.write_text(json.dumps(body), encoding="utf-8")
    status, _, err = run_cce("diff", str(both), str(HEAD))
    assert status == 2
    assert "has 2 backends (bm25, vector); choose with --backend NAME" in err
    status, out, err = run_cce("diff", str(both), str(HEAD), "--backends", "vector,hybrid")
    assert status == 0, err
    assert "CCE relevance diff — vector" in out
    status, _, err = run_cce("diff", str(both), str(HEAD), "--backend", "bm25")
    assert status == 1
    assert "no backend 'bm25' in this report (it has: hybrid)" in err
    status, _, err = run_cce("diff", str(both), str(HEAD), "--backends", "bm25")
    assert status == 2 and "--backends needs two names" in err


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{\n  "backends": [\n', "line 3 column 1: invalid JSON"),
        ('{"schema": "cce.relevance.report/v1", "backends": []}', 'schema is "cce.relevance'),
        ('{"backends": [{"backend": "b", "per_query": [{"id": "a", "mrr": "x"}]}]}', "mrr is"),
        ('{"backends": [{"backend": "b", "per_query": [{"mrr": "0.5"}]}]}', ".id must be"),
        ("[]", "the document must be a JSON object"),
    ],
)
def test_bad_reports_name_the_file_and_the_field(
    tmp_path: Path, text: str, fragment: str, run_cce: RunCce
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    status, out, err = run_cce("diff", str(bad), str(HEAD))
    assert (status, out) == (1, "")
    assert err.startswith(f"error: {bad}: ") and fragment in err
    assert "Traceback" not in err


def test_missing_report(tmp_path: Path, run_cce: RunCce) -> None:
    status, _, err = run_cce("diff", str(tmp_path / "nope.json"), str(HEAD))
    assert status == 1 and err.startswith("error: could not read report ")


def test_hand_written_numbers_are_accepted(tmp_path: Path, run_cce: RunCce) -> None:
    # Plain JSON numbers instead of 6-decimal strings; no schema field.
    base = tmp_path / "base.json"
    base.write_text(
        json.dumps({"backends": [{"backend": "x", "per_query": [{"id": "a", "mrr": 0.5}]}]}),
        encoding="utf-8",
    )
    head = tmp_path / "head.json"
    head.write_text(
        json.dumps({"backends": [{"backend": "x", "per_query": [{"id": "a", "mrr": 1}]}]}),
        encoding="utf-8",
    )
    body = json.loads(run_cce("diff", str(base), str(head), "--format", "json")[1])
    assert list(body["metrics"]) == ["mrr"]
    assert body["metrics"]["mrr"]["mean_delta"] == "+0.500000"
    assert body["metrics"]["mrr"]["p"] is None


# --- formats ---------------------------------------------------------------------------


def test_json_is_the_pinned_golden(monkeypatch: pytest.MonkeyPatch, run_cce: RunCce) -> None:
    monkeypatch.chdir(DATA)
    status, out, _ = run_cce(
        "diff", "diff-base.json", "diff-head-shuffled.json", "--format", "json", "--by-tag"
    )
    assert status == 0
    assert out == (GOLDEN / "diff.v1.json").read_text(encoding="utf-8")
    assert out.endswith("}\n") and not out.endswith("\n\n")


def _tables(markdown: str) -> list[list[list[str]]]:
    """Every table of the document as rows of cell texts (header row first)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    for token in tokens:
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append(token.content)
        elif token.type == "tr_close" and row is not None:
            tables[-1].append(row)
            row = None
    return tables


def test_markdown_has_a_row_per_changed_query(run_cce: RunCce) -> None:
    status, out, _ = run_cce("diff", str(BASE), str(HEAD), "--format", "markdown")
    assert status == 0
    assert out.splitlines()[0].startswith("➖ **No gate set**: no significant change from bm25")
    aggregate, _differences, worse, better, other, _details = _tables(out)
    assert aggregate[0][:4] == ["metric", "base", "head", "delta"]
    assert [row[0] for row in aggregate[1:]] == ["P@k", "recall", "MRR", "F1"]
    assert aggregate[3][1:4] == ["0.573", "0.729", "+0.156"]
    # The primary metric (P@k, the first shown) sorts the queries: q-ring lost on it;
    # q-retry and q-cache moved on other metrics only; q-login did not move at all.
    assert [row[0] for row in worse[1:]] == ["q-ring"]
    assert [row[0] for row in other[1:]] == ["q-retry", "q-cache"]
    assert other[1][1] == "MRR 1.000 → 0.500"  # only the metrics that moved
    ids = [row[0] for row in worse[1:] + better[1:] + other[1:]]
    assert sorted(ids) == sorted(set(_rows(BASE)) - {"q-login"})
    assert (
        "8 paired queries on P@k: 1 worse, 4 better, 3 unchanged "
        "(2 of them moved on other metrics)." in out
    )


def test_text_lists_changed_queries_worst_first_then_stats_then_verdict(
    run_cce: RunCce,
) -> None:
    out = run_cce("diff", str(BASE), str(HEAD))[1]
    lines = out.splitlines()
    assert lines[5].split() == ["q-ring", "P@k", "0.400000", "0.200000", "-0.200000"]
    assert "  unchanged: 1 of 8" in lines
    assert lines.index("  unchanged: 1 of 8") < next(
        i for i, line in enumerate(lines) if "paired t-test" in line
    )
    assert lines[-1].startswith("  verdict: no significant change on any metric")


def test_step_summary_is_appended_whatever_the_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cce: RunCce
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    markdown = run_cce("diff", str(BASE), str(HEAD), "--format", "markdown")[1]
    status, out, _ = run_cce("diff", str(BASE), str(HEAD), "--format", "json")
    assert status == 0 and out.startswith("{")
    assert summary.read_text(encoding="utf-8") == "# earlier step\n" + markdown + markdown


def test_step_summary_that_cannot_be_written_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cce: RunCce
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "summary.md"))
    status, _, err = run_cce("diff", str(BASE), str(HEAD))
    assert status == 1
    assert err.startswith("error: could not append the job summary to ")


def test_by_tag_adds_per_tag_tests(run_cce: RunCce) -> None:
    body = json.loads(run_cce("diff", str(BASE), str(HEAD), "--format", "json", "--by-tag")[1])
    assert list(body["tags"]) == ["concept", "symbol"]
    assert body["tags"]["symbol"]["paired"] == 4
    base, head = _rows(BASE), _rows(HEAD)
    symbol = ["q-auth", "q-config", "q-ring", "q-payment"]
    expected = stats.ttest_rel([head[i]["mrr"] for i in symbol], [base[i]["mrr"] for i in symbol])
    assert abs(float(body["tags"]["symbol"]["metrics"]["mrr"]["t"]) - expected.statistic) < 1e-6
    assert "tags" not in json.loads(run_cce("diff", str(BASE), str(HEAD), "--format", "json")[1])
    text = run_cce("diff", str(BASE), str(HEAD), "--by-tag")[1]
    assert "  tag concept: 4 paired queries" in text


# --- the gate --------------------------------------------------------------------------


def _significant_pair(tmp_path: Path) -> tuple[Path, Path]:
    ids = [f"q{i}" for i in range(10)]
    base = {case_id: {"mrr": 1.0, "recall": 1.0} for case_id in ids}
    head = {
        case_id: {"mrr": 0.5 - 0.01 * index, "recall": 1.0} for index, case_id in enumerate(ids)
    }
    return (
        _write_report(tmp_path / "base.json", "bm25", base),
        _write_report(tmp_path / "head.json", "bm25", head),
    )


def test_no_gate_flag_exits_0_even_when_worse(tmp_path: Path, run_cce: RunCce) -> None:
    base, head = _significant_pair(tmp_path)
    status, out, err = run_cce("diff", str(base), str(head))
    assert (status, err) == (0, "")
    assert "verdict: significantly worse on MRR (holm-adjusted p < 0.05)" in out


def test_fail_on_significant(tmp_path: Path, run_cce: RunCce) -> None:
    base, head = _significant_pair(tmp_path)
    status, out, err = run_cce("diff", str(base), str(head), "--fail-on-significant")
    assert status == 3
    lines = err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("gate failed: MRR got significantly worse: mean delta -0.545000,")
    assert "holm-adjusted p" in lines[0]
    assert "gate FAILED (1 reason)" in out
    # The same comparison the other way round improves: the gate passes.
    status, out, err = run_cce("diff", str(head), str(base), "--fail-on-significant")
    assert (status, err) == (0, "")
    assert "gate passed" in out
    # A strict enough alpha lets the regression through.
    status, _, _ = run_cce(
        "diff", str(base), str(head), "--fail-on-significant", "--alpha", "1e-30"
    )
    assert status == 0


def _worse_pair(tmp_path: Path, n: int) -> tuple[Path, Path]:
    """n queries whose MRR drops by 0.3 to 0.5: significantly worse by every test."""
    ids = [f"q{i}" for i in range(n)]
    base = {case_id: {"mrr": 1.0, "recall": 1.0} for case_id in ids}
    head = {
        case_id: {"mrr": 0.5 + 0.2 * (index % 2) * (index % 3) / 2, "recall": 1.0}
        for index, case_id in enumerate(ids)
    }
    return (
        _write_report(tmp_path / "base.json", "bm25", base),
        _write_report(tmp_path / "head.json", "bm25", head),
    )


def test_bootstrap_gates_significance_only_from_the_calibrated_n(
    tmp_path: Path, run_cce: RunCce
) -> None:
    """Below 30 paired queries a bootstrap significance gate is an error (exit 1,
    nothing on stdout); from 30 on it gates like the other tests."""
    argv = ["--test", "bootstrap", "--fail-on-significant"]
    base, head = _worse_pair(tmp_path, 29)
    status, out, err = run_cce("diff", str(base), str(head), *argv)
    assert (status, out) == (1, "")
    assert err.startswith(
        "error: --fail-on-significant with --test bootstrap needs at least 30 paired "
        "queries per gated metric, got 29 (recall, MRR): "
    )
    assert "(docs/gating.md#which-test-can-gate)" in err
    assert run_cce("diff", str(base), str(head), "--test", "bootstrap")[0] == 0
    assert run_cce("diff", str(base), str(head), "--fail-on-significant")[0] == 3
    base, head = _worse_pair(tmp_path, 30)
    status, out, err = run_cce("diff", str(base), str(head), *argv)
    assert status == 3
    assert err.startswith("gate failed: MRR got significantly worse: mean delta ")
    assert run_cce("diff", str(head), str(base), *argv)[0] == 0


def test_fail_on_query_regression(run_cce: RunCce) -> None:
    status, out, err = run_cce("diff", str(BASE), str(HEAD), "--fail-on-query-regression")
    assert status == 3
    assert out.endswith("; gate FAILED (5 reasons)\n")
    assert err.splitlines() == [
        "gate failed: query q-ring got worse on P@k: 0.400000 -> 0.200000 (-0.200000)",
        "gate failed: query q-ring got worse on recall: 1.000000 -> 0.500000 (-0.500000)",
        "gate failed: query q-retry got worse on MRR: 1.000000 -> 0.500000 (-0.500000)",
        "gate failed: query q-ring got worse on MRR: 0.500000 -> 0.333333 (-0.166667)",
        "gate failed: query q-ring got worse on F1: 0.571429 -> 0.285714 (-0.285715)",
    ]
    body = json.loads(
        run_cce("diff", str(BASE), str(HEAD), "--fail-on-query-regression", "--format", "json")[1]
    )
    assert body["gate"]["passed"] is False and len(body["gate"]["reasons"]) == 5
    status, _, err = run_cce("diff", str(BASE), str(BASE), "--fail-on-query-regression")
    assert (status, err) == (0, "")


def test_query_regression_on_chosen_metrics_with_a_tolerance(
    run_cce: RunCce,
) -> None:
    """A metric list narrows the rule; a tolerance lets small drops through; the bare
    flag, before or after the reports, keeps watching every metric."""
    mrr_only = [
        "gate failed: query q-retry got worse on MRR: 1.000000 -> 0.500000 (-0.500000)",
        "gate failed: query q-ring got worse on MRR: 0.500000 -> 0.333333 (-0.166667)",
    ]
    for spelling in ("mrr", "MRR", "mrr,mrr"):
        status, _, err = run_cce(
            "diff", str(BASE), str(HEAD), "--fail-on-query-regression", spelling
        )
        assert (status, err.splitlines()) == (3, mrr_only)
    status, _, err = run_cce(
        "diff", str(BASE), str(HEAD), "--fail-on-query-regression", "mrr,recall"
    )
    assert status == 3 and len(err.splitlines()) == 3
    argv = ["--fail-on-query-regression", "mrr", "--regression-tolerance", "0.2"]
    status, _, err = run_cce("diff", str(BASE), str(HEAD), *argv)
    assert (status, err.splitlines()) == (3, mrr_only[:1])
    # A drop of exactly the tolerance is within it.
    argv = ["--fail-on-query-regression", "--regression-tolerance", "0.5"]
    assert run_cce("diff", str(BASE), str(HEAD), *argv)[:3:2] == (0, "")
    bare_first = run_cce("diff", "--fail-on-query-regression", str(BASE), str(HEAD))
    bare_last = run_cce("diff", str(BASE), str(HEAD), "--fail-on-query-regression")
    assert bare_first == bare_last and len(bare_first[2].splitlines()) == 5
    abbreviated = run_cce("diff", "--fail-on-query", str(BASE), str(HEAD))
    assert abbreviated == bare_last
    explicit_all = run_cce("diff", str(BASE), str(HEAD), "--fail-on-query-regression", "all")
    assert explicit_all == bare_last


def test_min_accepts_the_printed_labels(run_cce: RunCce) -> None:
    status, _, err = run_cce("diff", str(BASE), str(HEAD), "--min", "MRR=0.8", "--min", "P@k=0.1")
    assert status == 3
    assert err.splitlines() == [
        f"gate failed: MRR of hybrid ({HEAD}) is 0.729167, below --min mrr=0.8",
    ]


def test_a_floor_is_printed_with_every_digit_it_has(run_cce: RunCce) -> None:
    # `:g` printed 0.7291671 as 0.729167, a floor the head seems to meet.
    status, _, err = run_cce("diff", str(BASE), str(HEAD), "--min", "MRR=0.7291671")
    assert status == 3
    assert err.splitlines() == [
        f"gate failed: MRR of hybrid ({HEAD}) is 0.729167, below --min mrr=0.7291671",
    ]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (1.0000001, "1.0000001"),
        (1.0, "1"),
        (0.6, "0.6"),
        (1e-05, "1e-05"),
        (100000.0, "100000"),
        (1e-06, "1e-06"),
    ],
)
def test_number_text_round_trips_and_keeps_short_values_short(value: float, shown: str) -> None:
    assert number_text(value) == shown
    assert float(number_text(value)) == value


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--min", "nDCG@k=0.5"],
            f"error: --min ndcg=0.5: hybrid ({HEAD}) has no nDCG@k; add it with "
            "`cce relevance --metrics ndcg`\n",
        ),
        (
            ["--fail-on-query-regression", "mrr,ndcg"],
            "error: --fail-on-query-regression ndcg: the compared sides do not both have "
            "nDCG@k; add it with `cce relevance --metrics ndcg`\n",
        ),
        (
            ["--min", "tok-IoU=0.5"],
            f"error: --min token-iou=0.5: hybrid ({HEAD}) has no tok-IoU; token metrics need "
            "expected anchors with line ranges (path@START-END) in the fixtures\n",
        ),
    ],
)
def test_a_gate_on_a_metric_the_reports_lack_is_a_usage_error(
    argv: list[str], message: str, run_cce: RunCce
) -> None:
    assert run_cce("diff", str(BASE), str(HEAD), *argv) == (2, "", message)


def test_min_floors(run_cce: RunCce) -> None:
    # The head's MRR aggregate is 0.729167 and its recall 0.875.
    status, _, err = run_cce(
        "diff", str(BASE), str(HEAD), "--min", "mrr=0.7", "--min", "recall=0.8"
    )
    assert (status, err) == (0, "")
    status, out, err = run_cce(
        "diff", str(BASE), str(HEAD), "--min", "mrr=0.8", "--min", "recall=0.9"
    )
    assert status == 3
    assert "gate FAILED (2 reasons)" in out
    assert err.splitlines() == [
        f"gate failed: MRR of hybrid ({HEAD}) is 0.729167, below --min mrr=0.8",
        f"gate failed: recall of hybrid ({HEAD}) is 0.875000, below --min recall=0.9",
    ]
    assert json.loads(
        run_cce("diff", str(BASE), str(HEAD), "--min", "mrr=0.7", "--format", "json")[1]
    )["gate"] == {"passed": True}


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--min", "mrr"], "expected METRIC=VALUE"),
        (["--min", "bpref=0.5"], "unknown metric 'bpref'"),
        (["--min", "mrr=high"], "must be a number"),
        (["--alpha", "1.5"], "alpha must be between 0 and 1"),
        (["--correction", "sidak"], "invalid choice"),
        (["--format", "pdf"], "invalid choice"),
        (["--fail-on-query-regression", "mrr,bpref"], "unknown metric 'bpref'"),
        (["--regression-tolerance", "0.1"], "only loosens --fail-on-query-regression"),
        (["--fail-on-query-regression", "--regression-tolerance", "-1"], "0 or more"),
    ],
)
def test_gate_usage_errors_exit_2(argv: list[str], fragment: str, run_cce: RunCce) -> None:
    status, out, err = run_cce("diff", str(BASE), str(HEAD), *argv)
    assert (status, out) == (2, "")
    assert fragment in err


def _with_provenance(source: Path, target: Path, fixtures_sha256: str | None) -> Path:
    body = json.loads(source.read_text(encoding="utf-8"))
    if fixtures_sha256 is not None:
        body["provenance"] = {"cce_version": "0.1.0", "fixtures_sha256": fixtures_sha256}
    target.write_text(json.dumps(body), encoding="utf-8")
    return target


def test_reports_of_different_fixture_files_are_named_and_strict_refuses(
    tmp_path: Path, run_cce: RunCce
) -> None:
    plain = run_cce("diff", str(BASE), str(HEAD))
    base = _with_provenance(BASE, tmp_path / "base.json", "a" * 64)
    head = _with_provenance(HEAD, tmp_path / "head.json", "b" * 64)
    status, out, err = run_cce("diff", str(base), str(head))
    assert status == 0
    assert err == (
        f"warning: the fixture files differ between {base} and {head} (fixtures_sha256 of "
        "their provenance): the same case ids may not ask the same questions\n"
    )
    assert out == plain[1].replace(str(BASE), str(base)).replace(str(HEAD), str(head))
    status, out, err = run_cce("diff", str(base), str(head), "--strict")
    assert (status, out) == (1, "")
    assert err.startswith("error: the fixture files differ between ")
    assert err.endswith("; --strict refuses to compare them\n")
    # The same fixture file, or provenance on one side only: nothing to say.
    same = _with_provenance(HEAD, tmp_path / "same.json", "a" * 64)
    bare = _with_provenance(HEAD, tmp_path / "bare.json", None)
    for other in (same, bare):
        status, _, err = run_cce("diff", str(base), str(other), "--strict")
        assert (status, err) == (0, "")


# --- the documented workflow on the project's own fixture set --------------------------


def test_bm25_against_hybrid_on_the_starter_set(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run_cce: RunCce,
) -> None:
    monkeypatch.chdir(REPO)
    reports = {}
    for backend in ("bm25", "hybrid"):
        code = main(["relevance", "eval/relevance/code.jsonl", "--backend", backend, "--json"])
        assert code == 0
        reports[backend] = tmp_path / f"{backend}.json"
        reports[backend].write_text(capsys.readouterr().out, encoding="utf-8")
    a, b = str(reports["bm25"]), str(reports["hybrid"])
    status, out, _ = run_cce("diff", a, b, "--backends", "bm25,hybrid", "--format", "markdown")
    assert status == 0
    changed = [row for table in _tables(out) if table[0] == ["id", "base → head"] for row in table]
    body = json.loads(run_cce("diff", a, b, "--backends", "bm25,hybrid", "--format", "json")[1])
    moved = {
        row["id"]
        for entry in body["metrics"].values()
        for row in entry["per_query"]
        if row["delta"] not in ("+0.000000", "-0.000000")
    }
    assert moved and {row[0] for row in changed if row[0] != "id"} == moved
    status, _, err = run_cce(
        "diff", a, b, "--backends", "bm25,hybrid", "--fail-on-query-regression"
    )
    assert status == 3 and err.startswith("gate failed: query ")
    assert run_cce("diff", a, a, "--fail-on-query-regression")[0] == 0


@pytest.mark.parametrize(("test", "statistic"), [("signed-rank", "W+"), ("bootstrap", "mean")])
def test_diff_other_tests_name_the_test_and_carry_its_statistic(
    test: str, statistic: str, run_cce: RunCce
) -> None:
    argv = [str(BASE), str(HEAD), "--format", "json", "--test", test]
    out = run_cce("diff", *argv)[1]
    body = json.loads(out)
    assert (body["test"], body["statistic"]) == (test, statistic)
    mrr = body["metrics"]["mrr"]
    assert mrr["t"] is None and mrr["statistic"] is not None
    assert mrr["mean_delta"] == "+0.156250"
    p = [float(body["metrics"][key]["p"]) for key in KEYS]
    _, holm, _, _ = multipletests(p, method="holm")
    assert abs(float(mrr["p_adjusted"]) - holm[2]) < 2e-6
    assert run_cce("diff", *argv)[1] == out
    text = run_cce("diff", str(BASE), str(HEAD), "--test", test)[1]
    assert f"{statistic:>12}" in next(line for line in text.splitlines() if "mean-delta" in line)


def test_reports_with_no_case_in_common_are_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gate over zero paired queries would pass anything; it is refused instead."""
    base = {
        "schema": "cce.relevance.report/v2",
        "corpus": "c",
        "embedder": "hash",
        "queries": 1,
        "backends": [
            {"backend": "bm25", "per_query": [{"id": "a", "mrr": "1.000000"}], "mrr": "1.000000"}
        ],
    }
    head = json.loads(json.dumps(base))
    head["backends"][0]["per_query"][0]["id"] = "renamed"
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "head.json").write_text(json.dumps(head))
    code = main(
        ["diff", str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--fail-on-significant"]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("error: no case ids in common")


def test_a_wide_statistic_keeps_a_space_before_it(tmp_path: Path, run_cce: RunCce) -> None:
    """W+ over 400 queries has six integer digits, wider than its column: the row must
    still split into one field per column rather than run W/T/L and W+ together."""
    rng = random.Random(11)
    ids = [f"q{i}" for i in range(400)]
    base = {case_id: {"mrr": rng.choice((0.25, 0.5, 1.0))} for case_id in ids}
    head = {case_id: {"mrr": rng.choice((0.25, 0.5, 1.0))} for case_id in ids}
    a = _write_report(tmp_path / "base.json", "bm25", base)
    b = _write_report(tmp_path / "head.json", "bm25", head)
    out = run_cce("diff", str(a), str(b), "--test", "signed-rank")[1]
    row = next(line for line in out.splitlines() if line.startswith("  MRR "))
    fields = row.split()
    # label, n, mean-delta, W/T/L, W+, p, p-adj, d_z, CI ("n/a" for the signed-rank test)
    assert len(fields) == 9, row
    assert fields[4].startswith("+") and float(fields[4]) > 9999.0


def test_text_names_the_backend_parameters_that_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A configured backend's report carries its `config`; the diff prints what differs,
    and stays as it was when neither side records one."""
    from cce_cli.main import main as cce_main

    code = cce_main(
        [
            "relevance",
            str(REPO / "eval" / "relevance" / "code.jsonl"),
            "--backend",
            "bm25",
            "--json",
        ]
    )
    saved = capsys.readouterr().out
    assert code == 0
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(saved)
    document = json.loads(saved)
    document["backends"][0]["config"] = {"use": "bm25", "b": 0.4}
    head.write_text(json.dumps(document))
    code = cce_main(["diff", str(base), str(head), "--backend", "bm25"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    at = lines.index("  parameters that differ (base → head):")
    assert lines[at + 1 : at + 3] == ["    b: (default) → 0.4", "    use: (default) → bm25"]
    code = cce_main(["diff", str(base), str(base), "--backend", "bm25"])
    assert "parameters that differ" not in capsys.readouterr().out
