"""Reports and pilots that `cce diff` and `cce plan` must refuse or show safely.

Scores outside what a metric can be, numbers Python reads more loosely than JSON,
duplicate backends, flags that make the arithmetic overflow, and text from a report
(case ids, backend names, configuration keys, paths) holding terminal controls or
markdown that would open a block (docs/hostile-input.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"
BASE = DATA / "diff-base.json"
HEAD = DATA / "diff-head.json"

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


def _report(source: Path = BASE) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
    return body


def _write(path: Path, body: dict[str, Any]) -> Path:
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


# --- gate floors ---------------------------------------------------------------------


def test_a_floor_is_printed_as_given_not_rounded(run_cce: RunCce) -> None:
    status, _, err = run_cce("diff", str(BASE), str(HEAD), "--min", "recall=1.0000001")
    assert status == 3
    assert err == (
        f"gate failed: recall of hybrid ({HEAD}) is 0.875000, below --min recall=1.0000001\n"
    )
    # A floor `%g` shows exactly keeps its short form.
    status, _, err = run_cce("diff", str(BASE), str(HEAD), "--min", "recall=1")
    assert err.endswith("below --min recall=1\n")


def test_an_alpha_is_printed_as_given(run_cce: RunCce) -> None:
    status, out, _ = run_cce("diff", str(BASE), str(HEAD), "--alpha", "0.0500001")
    assert status == 0
    assert "alpha 0.0500001" in out and "alpha 0.05\n" not in out


# --- scores a report cannot hold ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (1e308, "per_query[0].mrr is 1e+308, which no run can score: MRR lies in [0, 1]"),
        ("1.5", 'backends[0].per_query[0].mrr is "1.5", which no run can score'),
        (-0.25, "mrr is -0.25, which no run can score"),
        ("1_0", 'backends[0].per_query[0].mrr is "1_0", not a score'),
        (" 0.5", 'mrr is " 0.5", not a score'),
        ("\u0661", 'mrr is "\\u0661", not a score'),
        (10**400, "mrr is 1000"),
    ],
)
def test_a_score_outside_its_metric_or_loosely_written_is_refused(
    tmp_path: Path, value: object, fragment: str, run_cce: RunCce
) -> None:
    body = _report()
    body["backends"][0]["per_query"][0]["mrr"] = value
    bad = _write(tmp_path / "bad.json", body)
    for argv in (["diff", str(bad), str(HEAD)], ["plan", str(bad)]):
        status, out, err = run_cce(*argv)
        assert (status, out) == (1, ""), argv
        assert err.startswith(f"error: {bad}: ") and fragment in err, err
        assert "Traceback" not in err


def test_an_aggregate_or_token_score_outside_its_bounds_is_refused(
    tmp_path: Path, run_cce: RunCce
) -> None:
    body = _report()
    body["backends"][0]["mrr"] = "2.000000"
    bad = _write(tmp_path / "aggregate.json", body)
    status, _, err = run_cce("diff", str(bad), str(HEAD))
    assert status == 1 and 'backends[0].mrr is "2.000000", which no run can score' in err
    body = _report()
    body["backends"][0]["per_query"][0]["tokens"] = {"iou": "1.100000"}
    bad = _write(tmp_path / "tokens.json", body)
    status, _, err = run_cce("diff", str(bad), str(HEAD))
    assert status == 1 and "per_query[0].tokens.iou is" in err and "tok-IoU lies in [0, 1]" in err


def test_full_precision_scores_at_the_bounds_are_accepted(tmp_path: Path, run_cce: RunCce) -> None:
    body = _report()
    body["backends"][0]["per_query"][0]["mrr"] = 1.0000000000000002  # nDCG-style rounding
    body["backends"][0]["per_query"][1]["mrr"] = 0
    body["backends"][0]["per_query"][2]["mrr"] = "+1e-1"
    good = _write(tmp_path / "good.json", body)
    status, _, err = run_cce("diff", str(good), str(HEAD))
    assert (status, err) == (0, "")


def test_a_report_naming_a_backend_twice_is_refused(tmp_path: Path, run_cce: RunCce) -> None:
    body = _report()
    twin = json.loads(json.dumps(body["backends"][0]))
    twin["per_query"][0]["mrr"] = "0.000000"
    body["backends"].append(twin)
    bad = _write(tmp_path / "twice.json", body)
    for argv in (
        ["diff", str(bad), str(HEAD), "--backend", "bm25"],
        ["plan", str(bad), "--compare", "bm25,hybrid"],
    ):
        status, out, err = run_cce(*argv)
        assert (status, out) == (1, ""), argv
        assert err.startswith(
            f'error: {bad}: backends[0] and backends[1] are both backend "bm25"; '
        )


def test_a_suite_member_naming_a_backend_twice_is_refused(tmp_path: Path, run_cce: RunCce) -> None:
    member = _report()
    member["backends"].append(member["backends"][0])
    suite = {
        "schema": "cce.suite.report/v1",
        "members": [{"name": "m", "report": member}],
    }
    bad = _write(tmp_path / "suite.json", suite)
    status, _, err = run_cce("diff", str(bad), str(bad))
    assert status == 1
    assert "members[0].report.backends[0] and members[0].report.backends[1] are both" in err


# --- cce plan's flags and pilots ---------------------------------------------------------


def _two_backend_report(tmp_path: Path) -> Path:
    body = _report()
    body["backends"].append(_report(HEAD)["backends"][0])
    return _write(tmp_path / "pilot.json", body)


def test_plan_compare_with_one_backend_twice_is_a_usage_error(
    tmp_path: Path, run_cce: RunCce
) -> None:
    pilot = _two_backend_report(tmp_path)
    status, out, err = run_cce("plan", str(pilot), "--compare", "bm25,bm25")
    assert (status, out) == (2, "")
    assert err.startswith("error: --compare requires exactly two distinct backends")


@pytest.mark.parametrize("delta", ["1e-300", "5e-7"])
def test_plan_delta_below_what_a_report_can_show_is_a_usage_error(
    tmp_path: Path, delta: str, run_cce: RunCce
) -> None:
    pilot = _two_backend_report(tmp_path)
    status, out, err = run_cce("plan", str(pilot), "--delta", delta)
    assert (status, out) == (2, "")
    assert f"argument --delta: must be at least 1e-06, got '{delta}'" in err
    assert "Traceback" not in err
    assert run_cce("plan", str(pilot), "--delta", "1e-6")[0] == 0


def _diff_document(tmp_path: Path, run_cce: RunCce) -> dict[str, Any]:
    status, out, _ = run_cce("diff", str(BASE), str(HEAD), "--format", "json")
    assert status == 0
    document: dict[str, Any] = json.loads(out)
    return document


@pytest.mark.parametrize(
    ("key", "delta", "fragment"),
    [
        ("mrr", "1e308", "a change in MRR lies in [-1, 1]"),
        ("mrr", "-1.5", "a change in MRR lies in [-1, 1]"),
        ("mrr", "1_0", "not a delta"),
        ("unknown_metric", "1e308", "cce's 6-decimal numbers show less than 1e12"),
    ],
)
def test_plan_refuses_deltas_a_diff_cannot_hold(
    tmp_path: Path,
    key: str,
    delta: str,
    fragment: str,
    capsys: pytest.CaptureFixture[str],
    run_cce: RunCce,
) -> None:
    document = _diff_document(tmp_path, run_cce)
    metric = document["metrics"].setdefault(key, json.loads(json.dumps(document["metrics"]["mrr"])))
    metric["per_query"][0]["delta"] = delta
    bad = _write(tmp_path / "diff.json", document)
    status, out, err = run_cce("plan", str(bad))
    assert (status, out) == (1, "")
    assert err.startswith(f"error: {bad}: metrics.{key}.per_query[0].delta is ")
    assert fragment in err


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("head", "1e308", "per_query[0].head is 1e+308, which no run can give: MRR lies in"),
        ("delta", "-2.000000", "per_query[0].delta is -2.0, which no run can give: a change in"),
        ("base", "1_0", "per_query[0].base is not a number"),
    ],
)
def test_cce_report_refuses_a_saved_diff_with_values_no_run_gives(
    tmp_path: Path,
    field: str,
    value: str,
    fragment: str,
    capsys: pytest.CaptureFixture[str],
    run_cce: RunCce,
) -> None:
    document = _diff_document(tmp_path, run_cce)
    document["metrics"]["mrr"]["per_query"][0][field] = value
    bad = _write(tmp_path / "saved.json", document)
    status, out, err = run_cce("report", str(bad), "-o", str(tmp_path / "page.html"))
    assert (status, out) == (1, "")
    assert err.startswith(f"error: {bad}: metrics.mrr.") and fragment in err, err
    assert not (tmp_path / "page.html").exists()
