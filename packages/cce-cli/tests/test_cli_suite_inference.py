"""A suite comparison tests the mean it reports: macro by default, micro or members on request.

The suite is the constructed one of the audit: a member of 300 queries that improves a
little and two members of 10 queries that lose a lot. Pooled (micro) the change looks
better; the macro mean the table shows (each member once) is worse. The default
comparison must test and gate on the macro mean, with a weighted paired t whose mean,
standard error, p and interval are recomputed here with statsmodels' WLS (HC1 errors)
and scipy's t distribution at Kish's effective degrees of freedom; member-level
inference must give scipy's `ttest_rel` on the member means.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

RunCce = Callable[..., tuple[int, str, str]]

SIZES = {"big": 300, "small-a": 10, "small-b": 10}


def _scores(member: str, index: int) -> tuple[float, float]:
    """(base, head) MRR of one query: the big member gains 0.05 on average, the small
    ones lose 0.2, each with a spread so that no test is degenerate."""
    spread = ((index % 5) - 2) * 0.05
    if member == "big":
        return 0.5, 0.5 + 0.05 + spread
    return 0.6, 0.6 - 0.2 + spread + (0.01 if member == "small-b" else 0.0)


def _suite_report(path: Path, backend: str, side: int, sizes: dict[str, int] | None = None) -> Path:
    members = []
    per_member_means: list[float] = []
    every: list[float] = []
    for name, size in (sizes or SIZES).items():
        values = [round(_scores(name, index)[side], 6) for index in range(size)]
        per_member_means.append(sum(values) / size)
        every += values
        rows = [
            {"id": f"q{index}", "k": 5, "mrr": f"{value:.6f}"} for index, value in enumerate(values)
        ]
        members.append(
            {
                "corpus": name,
                "groups": [],
                "name": name,
                "report": {
                    "backends": [{"backend": backend, "per_query": rows}],
                    "schema": "cce.relevance.report/v2",
                },
            }
        )
    macro = sum(per_member_means) / len(per_member_means)
    micro = sum(every) / len(every)
    body: dict[str, Any] = {
        "aggregates": {
            backend: {
                "groups": {},
                "overall": {"mrr": {"macro": f"{macro:.6f}", "micro": f"{micro:.6f}"}},
            }
        },
        "members": members,
        "schema": "cce.suite.report/v1",
    }
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


@pytest.fixture
def reports(tmp_path: Path) -> tuple[Path, Path]:
    return (
        _suite_report(tmp_path / "base.json", "bm25", 0),
        _suite_report(tmp_path / "head.json", "bm25", 1),
    )


def _deltas() -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    for name, size in SIZES.items():
        pairs = [_scores(name, index) for index in range(size)]
        found[name] = [round(head, 6) - round(base, 6) for base, head in pairs]
    return found


def _diff(run_cce: RunCce, base: Path, head: Path, *flags: str) -> dict[str, Any]:
    status, out, err = run_cce("diff", str(base), str(head), "--format", "json", *flags)
    assert status == 0, err
    body: dict[str, Any] = json.loads(out)
    return body


def test_the_constructed_suite_is_better_pooled_and_worse_by_members(
    reports: tuple[Path, Path], run_cce: RunCce
) -> None:
    deltas = _deltas()
    pooled = [delta for member in deltas.values() for delta in member]
    macro = float(np.mean([np.mean(member) for member in deltas.values()]))
    assert np.mean(pooled) > 0.02 and macro < -0.1
    micro = _diff(run_cce, *reports, "--mean", "micro")["metrics"]["mrr"]
    assert float(micro["mean_delta"]) == pytest.approx(np.mean(pooled), abs=1e-6)
    assert float(micro["p"]) == pytest.approx(stats.ttest_1samp(pooled, 0.0).pvalue, abs=1e-6)


def test_the_default_tests_the_macro_mean_as_wls_with_hc1_errors_gives_it(
    reports: tuple[Path, Path], run_cce: RunCce
) -> None:
    deltas = _deltas()
    members = len(deltas)
    values = np.array([delta for member in deltas.values() for delta in member])
    weights = np.array(
        [1.0 / (members * len(member)) for member in deltas.values() for _ in member]
    )
    fit = sm.WLS(values, np.ones_like(values), weights=weights).fit(cov_type="HC1")
    mean, standard_error = float(fit.params[0]), float(fit.bse[0])
    kish_df = weights.sum() ** 2 / (weights**2).sum() - 1.0
    t = mean / standard_error
    p = 2.0 * stats.t.sf(abs(t), kish_df)
    half = stats.t.ppf(0.975, kish_df) * standard_error

    body = _diff(run_cce, *reports)
    assert (body["mean"], body["unit"]) == ("macro", "query")
    mrr = body["metrics"]["mrr"]
    assert float(mrr["mean_delta"]) == pytest.approx(mean, abs=1e-6)
    assert float(mrr["statistic"]) == pytest.approx(t, abs=1e-6)
    assert float(mrr["p"]) == pytest.approx(p, abs=1e-6)
    assert float(mrr["ci95_low"]) == pytest.approx(mean - half, abs=1e-6)
    assert float(mrr["ci95_high"]) == pytest.approx(mean + half, abs=1e-6)
    assert float(mrr["p"]) < 0.05 and mean < 0.0
    assert "significantly worse on MRR" in body["verdict"] and "macro mean" in body["verdict"]
    # Each member's own d_z sits in the member table.
    big = deltas["big"]
    assert float(body["members"]["big"]["mrr"]["effect_size"]) == pytest.approx(
        np.mean(big) / np.std(big, ddof=1), abs=1e-6
    )


def test_the_gate_follows_the_tested_mean(reports: tuple[Path, Path], run_cce: RunCce) -> None:
    base, head = reports
    status, _, err = run_cce("diff", str(base), str(head), "--fail-on-significant")
    assert status == 3
    assert "MRR got significantly worse: macro mean delta -0.113333" in err
    status, _, err = run_cce(
        "diff", str(base), str(head), "--fail-on-significant", "--mean", "micro"
    )
    assert status == 0, err


def test_text_markdown_and_html_name_the_macro_mean_and_its_interval(
    reports: tuple[Path, Path], run_cce: RunCce
) -> None:
    base, head = reports
    body = _diff(run_cce, base, head)
    low, high = body["metrics"]["mrr"]["ci95_low"], body["metrics"]["mrr"]["ci95_high"]
    status, text, _ = run_cce("diff", str(base), str(head))
    assert status == 0
    assert "paired t-test of the macro mean, each member counting once" in text
    assert "macro-delta" in text and f"[{low}, {high}]" in text
    status, markdown, _ = run_cce("diff", str(base), str(head), "--format", "markdown")
    assert status == 0
    assert "macro means (the mean of the members' means" in markdown
    assert "of the macro mean" in markdown and "| macro mean delta |" in markdown
    assert f"[{float(low):+.3f}, {float(high):+.3f}]" in markdown
    status, page, _ = run_cce("diff", str(base), str(head), "--format", "html")
    assert status == 0 and "of the macro mean" in page
    assert f"[{float(low):+.3f}, {float(high):+.3f}]" in page


def test_member_level_inference_is_scipys_paired_t_on_the_member_means(
    reports: tuple[Path, Path], run_cce: RunCce
) -> None:
    base_means, head_means = [], []
    for name, size in SIZES.items():
        pairs = [_scores(name, index) for index in range(size)]
        base_means.append(np.mean([round(b, 6) for b, _ in pairs]))
        head_means.append(np.mean([round(h, 6) for _, h in pairs]))
    expected = stats.ttest_rel(head_means, base_means)
    body = _diff(run_cce, *reports, "--unit", "member")
    assert body["unit"] == "member"
    mrr = body["metrics"]["mrr"]
    assert float(mrr["p"]) == pytest.approx(expected.pvalue, abs=1e-6)
    assert float(mrr["statistic"]) == pytest.approx(expected.statistic, abs=1e-6)
    status, text, _ = run_cce("diff", str(reports[0]), str(reports[1]), "--unit", "member")
    assert status == 0
    assert "on the members' mean deltas (members as the unit" in text


def test_a_test_without_a_weighted_form_is_a_usage_error_naming_the_ways_out(
    reports: tuple[Path, Path], run_cce: RunCce
) -> None:
    base, head = reports
    status, out, err = run_cce("diff", str(base), str(head), "--test", "signed-rank")
    assert (status, out) == (2, "")
    assert "--unit member" in err and "--mean micro" in err
    assert (
        run_cce("diff", str(base), str(head), "--test", "signed-rank", "--unit", "member")[0] == 0
    )
    assert run_cce("diff", str(base), str(head), "--test", "signed-rank", "--mean", "micro")[0] == 0
    status, _, err = run_cce("diff", str(base), str(head), "--unit", "member", "--mean", "micro")
    assert status == 2 and "--unit member" in err


def test_floors_use_the_tested_mean(reports: tuple[Path, Path], run_cce: RunCce) -> None:
    base, head = reports
    body = json.loads(head.read_text(encoding="utf-8"))
    cell = body["aggregates"]["bm25"]["overall"]["mrr"]
    between = (float(cell["macro"]) + float(cell["micro"])) / 2
    floor = f"mrr={between:.6f}"
    assert run_cce("diff", str(base), str(head), "--min", floor)[0] == 3  # macro is below
    assert run_cce("diff", str(base), str(head), "--min", floor, "--mean", "micro")[0] == 0
    status, _, err = run_cce(
        "diff", str(base), str(head), "--mean", "macro", "--min-aggregate", "micro"
    )
    assert status == 2 and "name different means" in err


def test_the_api_carries_the_tested_mean_and_serialises_to_the_cli_bytes(
    reports: tuple[Path, Path], run_cce: RunCce
) -> None:
    from cce_cli.api import diff_saved_reports

    base, head = reports
    status, out, _ = run_cce("diff", str(base), str(head), "--format", "json", "--unit", "member")
    assert status == 0
    result = diff_saved_reports(str(base), str(head), unit="member")
    assert result.json() == out
    (row,) = result.aggregate_records()
    assert (row["mean"], row["unit"], row["n"]) == ("macro", "member", 3)
    assert f"{row['ci95_low']:+.6f}" == json.loads(out)["metrics"]["mrr"]["ci95_low"]


def test_a_bootstrap_gate_over_three_members_is_refused_with_their_count(
    reports: tuple[Path, Path], run_cce: RunCce
) -> None:
    base, head = reports
    status, out, err = run_cce(
        "diff",
        str(base),
        str(head),
        "--unit",
        "member",
        "--test",
        "bootstrap",
        "--fail-on-significant",
    )
    assert (status, out) == (1, "")
    assert "got 3 (MRR):" in err


def test_a_saved_suite_diff_reads_back_with_its_mean_and_members(
    reports: tuple[Path, Path], run_cce: RunCce, tmp_path: Path
) -> None:
    from cce_cli.compare.saved_diff import diff_from_document
    from cce_cli.render.diff import render_diff_json

    base, head = reports
    body = _diff(run_cce, base, head)
    reloaded = diff_from_document(body, "saved.json")
    assert (reloaded.mean, reloaded.unit) == ("macro", "query")
    assert reloaded.members is not None and set(reloaded.members) == set(SIZES)
    again = json.loads(render_diff_json(reloaded))
    assert again["metrics"]["mrr"]["mean_delta"] == body["metrics"]["mrr"]["mean_delta"]
    assert again["members"] == body["members"]
    saved = tmp_path / "diff.json"
    saved.write_text(json.dumps(body), encoding="utf-8")
    status, page, _ = run_cce("report", str(saved))
    assert status == 0 and "of the macro mean" in page


def test_the_weighted_randomization_p_is_an_exact_count_of_weighted_sign_flips(
    tmp_path: Path, run_cce: RunCce
) -> None:
    """Members of 8, 3 and 3 queries: at most 2^14 sign assignments, so the randomization
    p is exact, and it is the share of weighted sums at least as far from zero as the
    observed one, counted here directly over every assignment (a zero delta's sign
    changes no sum, so counting it leaves the share as it is)."""
    sizes = {"big": 8, "small-a": 3, "small-b": 3}
    base = _suite_report(tmp_path / "base.json", "bm25", 0, sizes)
    head = _suite_report(tmp_path / "head.json", "bm25", 1, sizes)
    deltas, weights = [], []
    for name, size in sizes.items():
        for index in range(size):
            before, after = _scores(name, index)
            deltas.append(round(after, 6) - round(before, 6))
            weights.append(1.0 / (len(sizes) * size))
    products = np.array(deltas) * np.array(weights)
    observed = abs(products.sum())
    signs = np.array(
        [
            [1.0 if (mask >> bit) & 1 else -1.0 for bit in range(len(deltas))]
            for mask in range(2 ** len(deltas))
        ]
    )
    sums = np.abs(signs @ products)
    expected = float(np.mean(sums >= observed * (1 - 1e-9)))
    body = _diff(run_cce, base, head, "--test", "randomization")
    mrr = body["metrics"]["mrr"]
    assert body["mean"] == "macro"
    assert float(mrr["p"]) == pytest.approx(expected, abs=1e-6)
    macro = np.mean([np.mean(deltas[:8]), np.mean(deltas[8:11]), np.mean(deltas[11:])])
    assert float(mrr["mean_delta"]) == pytest.approx(macro, abs=1e-6)
