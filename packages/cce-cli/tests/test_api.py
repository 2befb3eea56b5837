"""The Python API returns what the command writes, byte for byte.

Why it exists: `cce_cli.api` promises that a run, a suite, a saved-report diff and a
gate's verdict called from Python serialise to exactly the bytes `cce relevance` and
`cce diff` write with the same options (docs/python-api.md). Each test runs both and
compares; the records are checked against the JSON report's own numbers, and the
example of docs/python-api.md is run as it is written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_cli import (
    CliError,
    apply_gate,
    diff_saved_reports,
    gate,
    render_report,
    run_relevance,
    run_suite,
)
from cce_retrieval import format6

RunCce = Callable[..., tuple[int, str, str]]
REPO = Path(__file__).resolve().parents[3]
CODE = str(REPO / "eval" / "relevance" / "code.jsonl")


def test_a_run_is_the_commands_report_in_every_format(run_cce: RunCce) -> None:
    report = run_relevance(CODE, backends="bm25,hybrid")
    code, out, _ = run_cce("relevance", CODE, "--backend", "bm25,hybrid", "--json")
    assert code == 0 and report.json() == out == report.text
    for name in ("text", "html"):
        code, out, _ = run_cce("relevance", CODE, "--backend", "bm25,hybrid", "--format", name)
        assert code == 0 and render_report(report, name) == out


def test_a_compared_run_with_tags_and_metrics_is_the_commands_json(
    run_cce: RunCce, tmp_path: Path
) -> None:
    options = ("--compare", "bm25,hybrid", "--by-tag", "--metrics", "ndcg", "--test", "signed-rank")
    cli_results, api_results = tmp_path / "cli.jsonl", tmp_path / "api.jsonl"
    code, out, _ = run_cce("relevance", CODE, *options, "--json", "--results", str(cli_results))
    report = run_relevance(
        CODE,
        compare="bm25,hybrid",
        by_tag=True,
        metrics="ndcg",
        test="signed-rank",
        results=str(api_results),
    )
    assert code == 0 and report.json() == out
    assert api_results.read_bytes() == cli_results.read_bytes()


def test_a_gate_verdict_on_a_run_is_the_commands(run_cce: RunCce) -> None:
    flags = ("--fail-on-query-regression", "mrr", "--min", "recall=0.99")
    code, out, err = run_cce("relevance", CODE, "--compare", "bm25,hybrid", *flags, "--json")
    report = run_relevance(CODE, compare="bm25,hybrid")
    verdict = apply_gate(report, gate(fail_on_query_regression="mrr", minimums={"recall": 0.99}))
    assert code == 3 and verdict.exit_status == 3 and not verdict.passed
    assert verdict.lines() == err
    assert report.json() == out  # the gate adds nothing to a run's report
    assert apply_gate(report, gate()).exit_status == 0


def test_records_carry_the_reports_numbers_at_full_precision() -> None:
    report = run_relevance(CODE, backends="bm25,hybrid")
    document = json.loads(report.json())
    records = report.records()
    per_query = [
        (entry["backend"], row) for entry in document["backends"] for row in entry["per_query"]
    ]
    assert len(records) == len(per_query) == 2 * document["queries"]
    for record, (backend, row) in zip(records, per_query, strict=True):
        assert (record["backend"], record["id"], record["k"]) == (backend, row["id"], row["k"])
        for key in ("mrr", "recall", "precision_at_k", "f1"):
            assert format6(record[key]) == row[key]
    means = report.aggregate_records()
    for mean, entry in zip(means, document["backends"], strict=True):
        assert mean["backend"] == entry["backend"]
        assert format6(mean["mrr"]) == entry["mrr"]
        assert format6(mean["token_iou"]) == entry["tokens"]["iou"]
    # Plain values only: what a DataFrame constructor takes without help.
    for row in records + means:
        assert all(isinstance(key, str) for key in row)
        assert all(isinstance(value, str | int | float | list | None) for value in row.values())
    pandas = pytest.importorskip("pandas")
    assert pandas.DataFrame(records).shape[0] == len(records)


def test_a_diff_and_its_gate_are_the_commands(run_cce: RunCce, tmp_path: Path) -> None:
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(run_relevance(CODE, backends="bm25").json(), encoding="utf-8")
    head.write_text(run_relevance(CODE, backends="hybrid").json(), encoding="utf-8")
    pair = (str(base), str(head), "--backends", "bm25,hybrid")
    code, out, _ = run_cce("diff", *pair, "--format", "json")
    result = diff_saved_reports(str(base), str(head), backends="bm25,hybrid")
    assert code == 0 and result.json() == out and result.verdict.active is False
    code, text, _ = run_cce("diff", *pair)
    assert result.render("text") == text
    records = result.records()
    assert {row["metric"] for row in records} == {
        row["metric"] for row in result.aggregate_records()
    }

    flags = ("--fail-on-query-regression", "--min", "mrr=0.9", "--format", "json")
    code, out, err = run_cce("diff", *pair, *flags)
    spec = gate(fail_on_query_regression=True, minimums={"mrr": 0.9})
    gated = diff_saved_reports(str(base), str(head), backends="bm25,hybrid", gate=spec)
    assert code == 3 == gated.verdict.exit_status
    assert gated.json() == out
    assert gated.verdict.lines() == "".join(
        line + "\n" for line in err.splitlines() if line.startswith("gate failed: ")
    )
    assert apply_gate(result, spec) == gated.verdict


def two_member_suite(tmp_path: Path) -> Path:
    """A suite manifest of the code fixtures split into members `one` and `two`."""
    members = tmp_path / "fixtures"
    members.mkdir()
    lines = Path(CODE).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["corpus"] = str((Path(CODE).parent / header["corpus"]).resolve())
    for name, cases in (("one", lines[1:6]), ("two", lines[6:])):
        (members / f"{name}.jsonl").write_text(
            "\n".join([json.dumps(header), *cases]) + "\n", encoding="utf-8"
        )
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n'
        + "".join(
            f'\n[[members]]\nname = "{name}"\nfixtures = "fixtures/{name}.jsonl"\n'
            f'corpus = "{header["corpus"]}"\n'
            for name in ("one", "two")
        ),
        encoding="utf-8",
    )
    return manifest


def test_a_suite_is_the_commands_report(run_cce: RunCce, tmp_path: Path) -> None:
    manifest = two_member_suite(tmp_path)
    code, out, _ = run_cce("relevance", str(manifest), "--compare", "bm25,hybrid", "--json")
    suite = run_suite(str(manifest), compare="bm25,hybrid")
    assert code == 0 and suite.json() == out
    assert {row["member"] for row in suite.records()} == {"one", "two"}
    rows = suite.aggregate_records()
    assert {(row["backend"], row["members"]) for row in rows} == {("bm25", 2), ("hybrid", 2)}
    code, _, err = run_cce(
        "relevance", str(manifest), "--compare", "bm25,hybrid", "--fail-on-query-regression"
    )
    verdict = apply_gate(suite, gate(fail_on_query_regression=True))
    assert code == verdict.exit_status == 3
    assert verdict.lines() == "".join(
        line + "\n" for line in err.splitlines() if line.startswith("gate failed: ")
    )


def test_a_gate_on_a_diff_of_suite_reports_is_the_commands(run_cce: RunCce, tmp_path: Path) -> None:
    manifest = two_member_suite(tmp_path)
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(run_suite(str(manifest), backends="bm25").json(), encoding="utf-8")
    head.write_text(run_suite(str(manifest), backends="hybrid").json(), encoding="utf-8")
    pair = (str(base), str(head), "--backends", "bm25,hybrid")
    spec = gate(minimums={"mrr": 0.99})
    code, _, err = run_cce("diff", *pair, "--min", "mrr=0.99")
    gated = diff_saved_reports(str(base), str(head), backends="bm25,hybrid", gate=spec)
    expected = "".join(line + "\n" for line in err.splitlines() if line.startswith("gate failed: "))
    assert code == 3 == gated.verdict.exit_status
    assert gated.verdict.lines() == expected
    assert ", macro over the suite)" in expected  # the floor says which mean it tested
    ungated = diff_saved_reports(str(base), str(head), backends="bm25,hybrid")
    assert apply_gate(ungated, spec) == gated.verdict


def test_the_semble_dev_suite_through_the_api_is_the_commands_json(
    run_cce: RunCce, semble_dev: Path
) -> None:
    suite_toml = semble_dev / "suite.toml"
    code, out, _ = run_cce("relevance", str(suite_toml), "--backend", "bm25", "--json")
    suite = run_suite(str(suite_toml), backends="bm25")
    assert code == 0 and suite.json() == out
    assert json.loads(out)["schema"] == "cce.suite.report/v1"


def test_bad_input_is_the_commands_error() -> None:
    with pytest.raises(CliError, match="--compare requires exactly two distinct backends"):
        run_relevance(CODE, compare="bm25")
    with pytest.raises(CliError, match="a gate needs compare"):
        run_relevance(CODE, gate=gate(fail_on_significant=True))
    with pytest.raises(CliError, match="unknown test 'wilcoxon'"):
        run_relevance(CODE, compare="bm25,hybrid", test="wilcoxon")
    with pytest.raises(CliError) as refused:
        gate(minimums={"no-such-metric": 0.5})
    assert refused.value.exit_code == 2


@pytest.mark.parametrize(
    ("options", "flags"),
    [
        ({"members": "a"}, ("--members", "a")),
        ({"timings": True}, ("--timings",)),
        (
            {"mean": "micro", "compare": "bm25,hybrid"},
            ("--mean", "micro", "--compare", "bm25,hybrid"),
        ),
        (
            {"unit": "member", "compare": "bm25,hybrid"},
            ("--unit", "member", "--compare", "bm25,hybrid"),
        ),
        (
            {"tag_scope": "family", "compare": "bm25,hybrid", "by_tag": True},
            ("--tag-correction", "family", "--compare", "bm25,hybrid", "--by-tag"),
        ),
    ],
)
def test_suite_only_options_on_one_fixture_set_are_the_commands_usage_error(
    run_cce: RunCce, options: dict[str, object], flags: tuple[str, ...]
) -> None:
    code, _, err = run_cce("relevance", CODE, *flags)
    assert code == 2
    with pytest.raises(CliError) as refused:
        run_relevance(CODE, **options)
    assert refused.value.exit_code == 2
    assert err == f"error: {refused.value}\n"


def test_the_documented_example_runs() -> None:
    text = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/python-api.md has no python example"
    env = {**os.environ, "CCE_CACHE_DIR": os.environ.get("CCE_CACHE_DIR", "")}
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={key: value for key, value in env.items() if value},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cce.relevance.report/v2 ['bm25', 'hybrid']\n")
    assert "mean MRR {'bm25':" in done.stdout
