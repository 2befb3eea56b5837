"""Suite comparisons as a reviewer reads them: per-member tables in the pull-request
comment (within GitHub's limit however many members), text columns sized to long ids.

The rows are checked against a computation by hand over the same per-query scores.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_cli.compare.pairing import diff_reports
from cce_cli.compare.saved_report import SavedBackend, SavedCase, SavedReport
from cce_cli.render.comment import COMMENT_LIMIT, md_text, render_comment
from cce_cli.render.member_table import aggregate_rows, member_rows

REPO = Path(__file__).resolve().parents[3]
# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


def code_lines() -> list[str]:
    return (REPO / "eval" / "relevance" / "code.jsonl").read_text().splitlines()


def _suite_reports(members: int, queries: int, seed: int = 7) -> tuple[SavedReport, SavedReport]:
    rng = random.Random(seed)
    names = tuple(f"member-{index:04d}-with-a-rather-long-name" for index in range(members))
    sides = []
    for side in ("base", "head"):
        cases = []
        for name in names:
            for query in range(queries):
                mrr = rng.choice([0.0, 0.25, 0.5, 1.0])
                ndcg = rng.random()
                cases.append(SavedCase(f"{name}/q{query}", {"mrr": mrr, "ndcg_at_k": ndcg}))
        backend = SavedBackend(side, tuple(cases), {})
        sides.append(SavedReport(f"{side}.json", None, None, (backend,), members=names))
    return sides[0], sides[1]


def _diff(members: int, queries: int):  # type: ignore[no-untyped-def]
    base, head = _suite_reports(members, queries)
    return diff_reports(base, head, base.backends[0], head.backends[0])


def test_member_rows_are_each_members_means_and_the_macro_row_their_mean() -> None:
    report = _diff(3, 4)
    item = report.overall.metric("mrr")
    assert item is not None
    rows = member_rows(report, item)
    assert [row.label for row in rows] == list(report.members or ())
    by_hand_deltas = []
    for row, member in zip(rows, report.members or (), strict=True):
        mine = [r for r in item.rows if r.id.startswith(member + "/")]
        base = sum(r.base for r in mine) / len(mine)
        head = sum(r.head for r in mine) / len(mine)
        assert row.queries == 4
        assert abs((row.base or 0.0) - base) < 1e-12 and abs((row.head or 0.0) - head) < 1e-12
        assert (row.wins, row.ties, row.losses) == (
            sum(r.delta > 0 for r in mine),
            sum(r.delta == 0 for r in mine),
            sum(r.delta < 0 for r in mine),
        )
        by_hand_deltas.append(head - base)
    macro, micro = aggregate_rows(report, item)
    assert macro.label == "macro" and micro.label == "micro"
    assert abs((macro.delta or 0.0) - sum(by_hand_deltas) / 3) < 1e-12
    assert macro.wins + macro.ties + macro.losses == 3
    assert micro.queries == 12
    assert abs((micro.delta or 0.0) - item.result.mean_delta) < 1e-12


def test_the_suite_comment_has_a_member_table_with_macro_and_micro_rows() -> None:
    report = _diff(3, 4)
    text = render_comment(report)
    assert "**Per member: " in text
    assert "| member | queries | base | head | delta | wins / ties / losses |" in text
    for member in report.members or ():
        assert f"| {member.replace('-', '-')} | 4 |" in text
    assert "| **macro** | 12 |" in text and "| **micro** | 12 |" in text
    assert "Per member, every metric (3 members)" in text


def test_a_suite_of_many_members_still_fits_one_comment_with_its_aggregate_rows() -> None:
    report = _diff(1000, 2)
    text = render_comment(report)
    assert len(text) <= COMMENT_LIMIT
    assert "| **macro** | 2000 |" in text and "| **micro** | 2000 |" in text
    assert "member rows were left out" in text
    assert "| member-0000-with-a-rather-long-name |" in text


def test_a_single_run_comment_has_no_member_table() -> None:
    base, head = _suite_reports(2, 3)
    single = [SavedReport(r.path, None, None, r.backends, members=None) for r in (base, head)]
    report = diff_reports(single[0], single[1], single[0].backends[0], single[1].backends[0])
    assert "Per member" not in render_comment(report)


def test_long_ids_get_their_own_column_in_the_text_diff() -> None:
    from cce_cli.render.diff import render_diff_text

    report = _diff(2, 3)
    lines = render_diff_text(report).splitlines()
    rows = [line for line in lines if line.startswith("  member-0000-with-a-rather-long-name/q")]
    assert rows
    longest = max(len(member) for member in report.members or ()) + len("/q0")
    for row in rows:
        # The id, at least one space, then the metric label: never run together.
        assert row[2 + longest] == " "
    header = next(line for line in lines if line.startswith("  query "))
    assert header.index("metric") == 2 + longest + 1


def test_short_ids_keep_the_reference_column_of_24() -> None:
    from cce_cli.output import label_width

    assert label_width(["code-read-config-span"], 24) == 24
    assert label_width(["x" * 23], 24) == 24
    assert label_width(["sinatra/indifferent-hash"], 24) == 25


# --- `--fixtures` given a manifest ------------------------------------------------------

SUITE_TOML = (
    'schema = "cce.suite/v1"\n\n'
    '[[members]]\nname = "alpha"\nfixtures = "alpha.jsonl"\ncorpus = "corpus"\n'
)


def _two_suite_reports(tmp_path: Path, run_cce: RunCce) -> tuple[Path, Path, Path]:
    code_lines = (REPO / "eval" / "relevance" / "code.jsonl").read_text().splitlines()
    (tmp_path / "alpha.jsonl").write_text("\n".join(code_lines[:5]) + "\n")
    shutil.copytree(REPO / "eval" / "corpus" / "sample", tmp_path / "corpus")
    manifest = tmp_path / "suite.toml"
    manifest.write_text(SUITE_TOML)
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(run_cce("relevance", str(manifest), "--json", "--backend", "bm25")[1])
    head.write_text(run_cce("relevance", str(manifest), "--json", "--backend", "vector")[1])
    return manifest, base, head


def test_diff_fixtures_names_a_manifest_without_a_schema(tmp_path: Path, run_cce: RunCce) -> None:
    manifest, base, head = _two_suite_reports(tmp_path, run_cce)
    bad = tmp_path / "bad.toml"
    bad.write_text(SUITE_TOML.replace('schema = "cce.suite/v1"', ""))
    args = ("diff", str(base), str(head), "--backends", "bm25,vector", "--fixtures")
    code, _, err = run_cce(*args, str(bad))
    assert code == 1
    assert str(bad) in err and "no schema" in err and "invalid JSON" not in err
    bad.write_text(SUITE_TOML.replace("cce.suite/v1", "cce.suite/v2"))
    code, _, err = run_cce(*args, str(bad))
    assert code == 1 and str(bad) in err and "'cce.suite/v2'" in err
    bad.write_text('[[member]]\nname = "alpha"\n')
    code, _, err = run_cce(*args, str(bad))
    assert code == 1 and str(bad) in err and "no schema and no [[members]]" in err
    # A manifest cce reads gives each query its text, under the suite's qualified ids.
    code, out, err = run_cce(*args, str(manifest), "--format", "markdown")
    assert code == 0, err
    first = json.loads(code_lines()[1])
    assert "| query | id |" in out and md_text(first["query"][:40]) in out


def test_relevance_names_a_toml_file_that_is_no_manifest(tmp_path: Path, run_cce: RunCce) -> None:
    bad = tmp_path / "suite.toml"
    bad.write_text('[[member]]\nname = "alpha"\n')
    code, _, err = run_cce("relevance", str(bad), "--dir", str(tmp_path))
    assert code == 1 and str(bad) in err and "no schema and no [[members]]" in err


# --- `--members` -------------------------------------------------------------------------


def test_members_scores_only_the_named_members_in_manifest_order(
    tmp_path: Path, run_cce: RunCce
) -> None:
    lines = code_lines()
    for name, rows in (("alpha", lines[1:4]), ("beta", lines[4:6]), ("gamma", lines[6:8])):
        (tmp_path / f"{name}.jsonl").write_text("\n".join([lines[0], *rows]) + "\n")
    shutil.copytree(REPO / "eval" / "corpus" / "sample", tmp_path / "corpus")
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n'
        + "".join(
            f'\n[[members]]\nname = "{name}"\nfixtures = "{name}.jsonl"\ncorpus = "corpus"\n'
            for name in ("alpha", "beta", "gamma")
        )
    )
    code, out, err = run_cce(
        "relevance", str(manifest), "--members", "gamma,alpha", "--json", "--backend", "bm25"
    )
    assert code == 0, err
    body = json.loads(out)
    assert [member["name"] for member in body["members"]] == ["alpha", "gamma"]
    assert body["aggregates"]["bm25"]["overall"]["queries"] == 5
    code, _, err = run_cce("relevance", str(manifest), "--members", "delta")
    assert code == 2 and "no member 'delta'" in err and "alpha, beta, gamma" in err
    code, _, err = run_cce("relevance", str(tmp_path / "alpha.jsonl"), "--members", "alpha")
    assert code == 2 and "--members applies to a suite manifest" in err


# --- gating metrics ----------------------------------------------------------------------


def _precision_drops_mrr_flat() -> tuple[SavedReport, SavedReport]:
    rng = random.Random(3)
    base_cases, head_cases = [], []
    for index in range(30):
        precision = 0.4 + rng.random() * 0.2
        mrr = rng.choice([0.5, 1.0])
        noise = rng.choice([-0.5, 0.0, 0.0, 0.5])
        base_cases.append(SavedCase(f"q{index}", {"precision_at_k": precision, "mrr": mrr}))
        head_cases.append(
            SavedCase(
                f"q{index}",
                {"precision_at_k": precision - 0.2, "mrr": min(1.0, max(0.0, mrr + noise))},
            )
        )
    return (
        SavedReport("base.json", None, None, (SavedBackend("bm25", tuple(base_cases), {}),)),
        SavedReport("head.json", None, None, (SavedBackend("bm25", tuple(head_cases), {}),)),
    )


def test_gate_metrics_test_only_the_named_metrics_corrected_over_them() -> None:
    from statsmodels.stats.multitest import multipletests

    from cce_cli.compare.gate import GateSpec, evaluate_gate, gate_scope, gating_tests
    from cce_metrics import metric

    base, head = _precision_drops_mrr_flat()
    report = diff_reports(base, head, base.backends[0], head.backends[0])
    everything = GateSpec(fail_on_significant=True)
    reasons = evaluate_gate(
        everything, report.overall, lambda _: None, head="h", correction="holm", alpha=0.05
    )
    assert any(reason.startswith("P@k got significantly worse") for reason in reasons)
    named = GateSpec(fail_on_significant=True, gate_metrics=(metric("mrr"),))
    assert (
        evaluate_gate(
            named, report.overall, lambda _: None, head="h", correction="holm", alpha=0.05
        )
        == ()
    )
    assert gate_scope(named, report.overall, "holm") == (
        "--fail-on-significant tested MRR (holm-adjusted over these 1)"
    )
    both = GateSpec(fail_on_significant=True, gate_metrics=(metric("mrr"), metric("precision")))
    tested = gating_tests(both, report.overall, "holm")
    assert [item.metric.key for item, _ in tested] == ["mrr", "precision_at_k"]
    # The decision p (constant deltas decide at the sign-flip p, docs/statistics.md).
    raw = [item.result.decision_p for item, _ in tested]
    expected = multipletests(raw, method="holm")[1]
    for (_, adjusted), reference in zip(tested, expected, strict=True):
        assert adjusted is not None and abs(adjusted - reference) < 1e-12


def test_gate_metrics_choose_the_primary_metric_of_the_comment() -> None:
    from cce_cli.compare.gate import GateSpec
    from cce_cli.runs.diff import SavedDiff, gate_diff
    from cce_metrics import metric

    base, head = _precision_drops_mrr_flat()
    report = diff_reports(base, head, base.backends[0], head.backends[0])
    default = render_comment(report)
    assert "30 paired queries on P@k: 30 worse, 0 better" in default
    spec = GateSpec(fail_on_significant=True, gate_metrics=(metric("mrr"),))
    gated = gate_diff(SavedDiff(report, head.backends[0], "head.json"), spec).report
    text = render_comment(gated)
    assert text.startswith("✅ **Gate passed** (--fail-on-significant tested MRR")
    mrr = gated.overall.metric("mrr")
    assert mrr is not None
    assert f"30 paired queries on MRR: {mrr.losses} worse, {mrr.wins} better" in text
    assert "got worse on MRR, worst first" in text


def test_diff_gate_metrics_flag_and_min_say_what_they_tested(
    tmp_path: Path, run_cce: RunCce
) -> None:
    _, base, head = _two_suite_reports(tmp_path, run_cce)
    args = ("diff", str(base), str(head), "--backends", "bm25,vector")
    code, out, err = run_cce(
        *args, "--fail-on-significant", "--gate-metrics", "mrr,recall", "--format", "json"
    )
    assert code in (0, 3), err
    body = json.loads(out)
    assert body["gate"]["metrics"] == ["mrr", "recall"]
    assert "tested MRR and recall (holm-adjusted over these 2)" in body["verdict"]
    code, _, err = run_cce(*args, "--gate-metrics", "bogus")
    assert code == 2
    code, _, err = run_cce(*args, "--min", "mrr=0.999")
    assert code == 3 and "macro over the suite" in err
    code, _, err = run_cce(*args, "--min", "mrr=0.999", "--min-aggregate", "micro")
    assert code == 3 and "micro over the suite" in err


# --- suite HTML -------------------------------------------------------------------------


def test_suite_html_has_member_group_macro_and_micro_rows_from_the_document(
    tmp_path: Path, run_cce: RunCce
) -> None:
    from html.parser import HTMLParser

    manifest, base, _ = _two_suite_reports(tmp_path, run_cce)
    code, page, err = run_cce("report", str(base), "--fixtures", str(manifest))
    assert code == 0, err

    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[list[str]] = []
            self.inside = False

        def handle_starttag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
            if tag == "table":
                self.inside = ("class", "members") in attributes
            elif tag == "tr" and self.inside:
                self.rows.append([])

        def handle_data(self, data: str) -> None:
            if self.inside and self.rows and data.strip():
                self.rows[-1].append(data.strip())

        def handle_endtag(self, tag: str) -> None:
            if tag == "table":
                self.inside = False

    parser = Rows()
    parser.feed(page)
    header, *rows = parser.rows
    document = json.loads(base.read_text())
    overall = document["aggregates"]["bm25"]["overall"]
    mrr = header.index("MRR")
    by_label = {row[0]: row for row in rows}
    assert set(by_label) == {"alpha", "macro", "micro"}
    assert by_label["macro"][mrr] == f"{float(overall['mrr']['macro']):.3f}"
    assert by_label["micro"][mrr] == f"{float(overall['mrr']['micro']):.3f}"
    member_mrr = document["members"][0]["report"]["backends"][0]["mrr"]
    assert by_label["alpha"][mrr] == f"{float(member_mrr):.3f}"
    first = json.loads(code_lines()[1])
    assert first["query"] in page.replace("&#39;", "'")
    assert ">total</th>" not in page


def test_suite_diff_html_has_the_member_table_and_no_total_column(
    tmp_path: Path, run_cce: RunCce
) -> None:
    _, base, head = _two_suite_reports(tmp_path, run_cce)
    code, page, err = run_cce(
        "diff", str(base), str(head), "--backends", "bm25,vector", "--format", "html"
    )
    assert code == 0, err
    assert "<h2>Per member: P@k</h2>" in page
    assert '<tr class="macro' in page and '<tr class="micro' in page
    assert ">total</th>" not in page


def test_suite_html_drill_down_shows_each_members_stored_code(
    tmp_path: Path, run_cce: RunCce
) -> None:
    import re

    manifest, _, _ = _two_suite_reports(tmp_path, run_cce)
    code, page, err = run_cce("relevance", str(manifest), "--format", "html", "--backend", "bm25")
    assert code == 0, err
    data = json.loads(
        re.search(r'<script type="application/json" id="cce-data">(.*?)</script>', page, re.S)[1]  # type: ignore[index]
    )
    assert data["hasEvidence"]
    first = data["cases"][0]
    hits = first["sides"][0]["hits"]
    assert hits, "the member's results reach the page"
    assert all(hit[1].startswith("alpha/") for hit in hits)
    assert all(anchor.startswith("alpha/") for anchor in first["anchors"])
    path, start, ref = hits[0][1], hits[0][2], hits[0][7]
    assert ref >= 0, "code is there, not '(code not available)'"
    source = (tmp_path / "corpus" / path.removeprefix("alpha/")).read_text().splitlines()
    assert data["code"][ref][0] == source[start - 1]


def test_the_report_names_members_scored_without_a_parser(tmp_path: Path, run_cce: RunCce) -> None:
    lines = code_lines()
    docs = (REPO / "eval" / "relevance" / "docs.jsonl").read_text().splitlines()
    (tmp_path / "alpha.jsonl").write_text("\n".join(lines[:4]) + "\n")
    (tmp_path / "prose.jsonl").write_text("\n".join(docs) + "\n")
    shutil.copytree(REPO / "eval" / "corpus" / "sample", tmp_path / "corpus")
    shutil.copytree(REPO / "eval" / "relevance" / "docs-corpus", tmp_path / "docs")
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n\n'
        '[[members]]\nname = "alpha"\nfixtures = "alpha.jsonl"\ncorpus = "corpus"\n\n'
        '[[members]]\nname = "prose"\nfixtures = "prose.jsonl"\ncorpus = "docs"\n'
    )
    code, out, err = run_cce("relevance", str(manifest), "--json", "--backend", "bm25")
    assert code == 0, err
    parsing = json.loads(out)["parsing"]
    assert parsing["without_parser"] == ["prose"]
    assert parsing["members"]["prose"]["parsed_chunks"] == 0
    assert parsing["members"]["prose"]["chunks"] == len(list((tmp_path / "docs").iterdir()))
    assert 0 < parsing["members"]["alpha"]["parsed_chunks"] <= parsing["members"]["alpha"]["chunks"]
    code, text, _ = run_cce("relevance", str(manifest), "--backend", "bm25")
    assert (
        "scored without a parser (whole-file chunks; cce parses none of their files): prose" in text
    )


# --- timings -----------------------------------------------------------------------------


def test_percentiles_agree_with_numpy() -> None:
    import numpy

    from cce_cli.evaluation.timings import percentile

    rng = random.Random(11)
    for size in (1, 2, 3, 10, 101):
        values = [rng.random() * 100 for _ in range(size)]
        for q in (50, 95):
            found = percentile(values, q)
            assert found is not None
            assert abs(found - float(numpy.percentile(values, q))) < 1e-9
    assert percentile([], 50) is None


def test_timings_are_reported_per_member_and_backend_only_when_asked(
    tmp_path: Path, run_cce: RunCce
) -> None:
    manifest, _, _ = _two_suite_reports(tmp_path, run_cce)
    args = ("relevance", str(manifest), "--compare", "bm25,vector")
    code, out, err = run_cce(*args, "--json", "--timings")
    assert code == 0, err
    body = json.loads(out)
    alpha = body["timings"]["members"]["alpha"]
    assert float(alpha["index_seconds"]) >= 0.0
    assert set(alpha["backends"]) == {"bm25", "vector"}
    bm25 = alpha["backends"]["bm25"]
    assert bm25["n"] == 4 and 0.0 <= float(bm25["p50_ms"]) <= float(bm25["p95_ms"])
    plain = json.loads(run_cce(*args, "--json")[1])
    assert "timings" not in plain
    code, text, _ = run_cce(*args, "--timings")
    assert "  timings (wall clock" in text
    row = next(line for line in text.splitlines() if line.startswith("  alpha") and "bm25" in line)
    assert len(row.split()) == 5
    code, _, err = run_cce("relevance", str(tmp_path / "alpha.jsonl"), "--timings")
    assert code == 2 and "--timings applies to a suite manifest" in err


# --- several systems against one baseline --------------------------------------------


def _system(path: str, name: str, shift: float, seed: int) -> SavedReport:
    rng = random.Random(seed)
    cases = []
    for index in range(25):
        base_rng = random.Random(index)
        mrr = min(1.0, max(0.0, base_rng.random() + shift + (rng.random() - 0.5) * 0.1))
        noise = (rng.random() - 0.5) * 0.05
        precision = min(1.0, max(0.0, base_rng.random() * 0.5 + shift / 2 + noise))
        cases.append(SavedCase(f"q{index}", {"mrr": mrr, "precision_at_k": precision}))
    return SavedReport(path, None, None, (SavedBackend(name, tuple(cases), {}),))


def test_three_systems_are_tested_against_the_first_corrected_over_all_tests() -> None:
    from scipy.stats import ttest_rel
    from statsmodels.stats.multitest import multipletests

    from cce_cli.compare.many import compare_many

    reports = [
        _system("a.json", "bm25", 0.0, 1),
        _system("b.json", "hybrid", 0.3, 2),
        _system("c.json", "vector", 0.0, 3),
    ]
    sides = [(report, report.backends[0]) for report in reports]
    comparison = compare_many(sides, test="t", correction="holm")
    assert comparison.paired == 25 and comparison.tests == 4
    keys = [item.key for item in comparison.metrics]
    assert keys == ["precision_at_k", "mrr"]
    raw = []
    for report in reports[1:]:
        for key in keys:
            base = [case.values[key] for case in reports[0].backends[0].cases]
            head = [case.values[key] for case in report.backends[0].cases]
            raw.append(ttest_rel(head, base).pvalue)
    expected = multipletests(raw, method="holm")[1]
    found = [cell.p_adjusted for row in comparison.rows[1:] for cell in row.cells]
    for value, reference in zip(found, expected, strict=True):
        assert value is not None and abs(value - reference) < 1e-9
    hybrid = comparison.rows[1]
    assert [cell.marker(0.05) for cell in hybrid.cells] == ["▲", "▲"]
    assert comparison.rows[0].cells[0].marker(0.05) == ""


def test_diff_takes_several_heads_in_text_markdown_and_json(run_cce: RunCce) -> None:
    data = Path(__file__).parent / "data"
    base, head = str(data / "diff-base.json"), str(data / "diff-head.json")
    code, out, err = run_cce("diff", base, head, base, "--format", "json")
    assert code == 0, err
    body = json.loads(out)
    assert body["schema"] == "cce.relevance.multi/v1"
    assert body["family"] == {
        "metrics": ["precision_at_k", "recall", "mrr", "f1"],
        "systems": 2,
        "tests": 8,
    }
    assert [system["backend"] for system in body["systems"]] == ["hybrid", "bm25"]
    assert body["systems"][1]["metrics"]["mrr"]["mean_delta"] == "+0.000000"
    code, text, _ = run_cce("diff", base, head, base)
    assert code == 0 and "holm-adjusted over 2 systems × 4 metrics (8 tests)" in text
    code, markdown, _ = run_cce("diff", base, head, base, "--format", "markdown")
    assert code == 0 and "| system | P@k | recall | MRR | F1 |" in markdown
    code, _, err = run_cce("diff", base, head, base, "--fail-on-significant")
    assert code == 2 and "does not gate" in err


def test_relevance_compare_gates_on_the_named_metrics_and_its_summary_says_so(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    fixtures = REPO / "eval" / "relevance" / "code.jsonl"
    code, _, err = run_cce(
        "relevance",
        str(fixtures),
        "--compare",
        "bm25,hybrid",
        "--fail-on-significant",
        "--gate-metrics",
        "mrr",
    )
    assert code == 0, err
    text = summary.read_text()
    assert "(--fail-on-significant tested MRR (holm-adjusted over these 1))" in text
    assert " on MRR: " in text


def test_the_python_api_carries_members_timings_parsing_and_systems(
    tmp_path: Path, run_cce: RunCce
) -> None:
    from cce_cli import api
    from cce_cli.render.many import render_many_json

    manifest, base, head = _two_suite_reports(tmp_path, run_cce)
    report = api.run_suite(str(manifest), members="alpha", timings=True, backends="bm25")
    body = json.loads(report.json())
    cli = json.loads(
        run_cce("relevance", str(manifest), "--members", "alpha", "--json", "--backend", "bm25")[1]
    )
    assert body.pop("timings")["members"]["alpha"]["backends"]["bm25"]["n"] == 4
    assert body == cli
    assert report.without_parser == []
    assert [row["backend"] for row in report.timing_records()] == ["bm25"]
    systems = api.compare_systems([str(base), str(head), str(base)])
    expected = run_cce("diff", str(base), str(head), str(base), "--format", "json")[1]
    assert render_many_json(systems) == expected


def test_cce_report_of_a_suite_reads_each_members_code_from_its_own_corpus(
    tmp_path: Path, run_cce: RunCce
) -> None:
    import re

    manifest, _, _ = _two_suite_reports(tmp_path, run_cce)
    results = tmp_path / "suite.results.jsonl"
    report = tmp_path / "suite.json"
    code, out, err = run_cce(
        "relevance", str(manifest), "--json", "--backend", "bm25", "--results", str(results)
    )
    assert code == 0, err
    report.write_text(out)
    code, page, err = run_cce(
        "report", str(report), "--results", str(results), "--fixtures", str(manifest)
    )
    assert code == 0, err
    data = json.loads(
        re.search(r'<script type="application/json" id="cce-data">(.*?)</script>', page, re.S)[1]  # type: ignore[index]
    )
    hits = data["cases"][0]["sides"][0]["hits"]
    assert hits and all(hit[1].startswith("alpha/") for hit in hits)
    assert all(hit[7] >= 0 for hit in hits), "every result's code was read back"
    path, start, ref = hits[0][1], hits[0][2], hits[0][7]
    source = (tmp_path / "corpus" / path.removeprefix("alpha/")).read_text().splitlines()
    assert data["code"][ref][0] == source[start - 1]
