"""`cce plan`: the pilot's delta sd, the queries needed and the detectable effect per metric,
from a v2 report or a diff document, and its errors and exit statuses."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from scipy import stats

from cce_stats import minimum_detectable_effect, required_sample_size

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

# Per-query MRR of two backends over eight cases; B - A = [+0.5, 0, -0.5, +0.666667, 0, 0,
# +0.5, -0.25] (as 6-decimal strings, like a saved report's).
MRR_A = [0.5, 1.0, 1.0, 0.333333, 1.0, 0.5, 0.5, 1.0]
MRR_B = [1.0, 1.0, 0.5, 1.0, 1.0, 0.5, 1.0, 0.75]
P_A = [0.2, 0.4, 0.4, 0.2, 0.6, 0.2, 0.2, 0.4]
P_B = [0.4, 0.4, 0.2, 0.4, 0.6, 0.2, 0.4, 0.4]


def _backend(
    name: str, mrr: Sequence[float], precision: Sequence[float], ids: Sequence[str]
) -> object:
    return {
        "backend": name,
        "per_query": [
            {
                "f1": f"{2 * p / (1 + p):.6f}",
                "first_relevant_rank": 1,
                "id": case_id,
                "k": 5,
                "mrr": f"{m:.6f}",
                "precision_at_k": f"{p:.6f}",
                "recall": "1.000000",
            }
            for case_id, m, p in zip(ids, mrr, precision, strict=True)
        ],
    }


def _report(tmp_path: Path, *backends: object, name: str = "report.json") -> Path:
    path = tmp_path / name
    document = {
        "backends": list(backends),
        "corpus": "corpus",
        "embedder": "hash",
        "queries": 8,
        "schema": "cce.relevance.report/v2",
    }
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


IDS = [f"q{i}" for i in range(8)]


@pytest.fixture
def pilot(tmp_path: Path) -> Path:
    return _report(tmp_path, _backend("bm25", MRR_A, P_A, IDS), _backend("hybrid", MRR_B, P_B, IDS))


def _sd(values: Sequence[float]) -> float:
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def test_plan_rows_follow_the_sizing_formulas(pilot: Path, run_cce: RunCce) -> None:
    code, out, err = run_cce("plan", str(pilot), "--format", "json", "--correction", "none")
    assert (code, err) == (0, "")
    plan = json.loads(out)
    assert plan["schema"] == "cce.plan/v1"
    assert (plan["base"], plan["head"], plan["paired"]) == ("bm25", "hybrid", 8)
    deltas = [round(b, 6) - round(a, 6) for a, b in zip(MRR_A, MRR_B, strict=True)]
    sd = _sd(deltas)
    mrr = plan["metrics"]["mrr"]
    assert mrr["n"] == 8
    assert float(mrr["sd"]) == pytest.approx(sd, abs=5e-7)
    needed = required_sample_size(sd, 0.05)
    assert mrr["queries_needed"] == needed
    # n >= (q * sd / delta)^2 is q * sd / sqrt(n) <= delta: the detectable effect at
    # `needed` is within reach and one query fewer is not; and the normal approximation
    # ((1.96 + 0.84) * sd / delta)^2 is close.
    assert minimum_detectable_effect(sd, needed) <= 0.05 < minimum_detectable_effect(sd, needed - 1)
    assert abs(needed - (2.8016 * sd / 0.05) ** 2) < 0.05 * needed
    assert float(mrr["detectable_now"]) == pytest.approx(minimum_detectable_effect(sd, 8), abs=5e-7)
    # Recall never moves: no spread, nothing to plan.
    recall = plan["metrics"]["recall"]
    assert (recall["sd"], recall["queries_needed"], recall["detectable_now"]) == (
        "0.000000",
        None,
        None,
    )


def test_settings_change_the_plan(pilot: Path, run_cce: RunCce) -> None:
    _, base_out, _ = run_cce("plan", str(pilot), "--format", "json")
    _, strict_out, _ = run_cce(
        "plan", str(pilot), "--format", "json", "--power", "0.9", "--alpha", "0.01"
    )
    _, wide_out, _ = run_cce("plan", str(pilot), "--format", "json", "--delta", "0.2")
    base = json.loads(base_out)["metrics"]["mrr"]
    strict = json.loads(strict_out)["metrics"]["mrr"]
    wide = json.loads(wide_out)["metrics"]["mrr"]
    assert strict["queries_needed"] > base["queries_needed"] > wide["queries_needed"]
    assert float(strict["detectable_now"]) > float(base["detectable_now"])
    assert wide["detectable_now"] == base["detectable_now"]


def test_text_table(pilot: Path, run_cce: RunCce) -> None:
    code, out, _ = run_cce("plan", str(pilot), "--compare", "bm25,hybrid", "--correction", "none")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"sample-size plan: hybrid against bm25 ({pilot}), 8 paired queries"
    assert "alpha 0.05, power 0.8, to detect a mean delta of 0.05" in lines[1]
    assert lines[2].split() == [
        "metric",
        "n",
        "mean-delta",
        "delta-sd",
        "queries-needed",
        "detectable-now",
    ]
    mrr = next(line for line in lines if line.split()[:1] == ["MRR"])
    assert mrr.split()[1:3] == ["8", "+0.114583"]
    recall = next(line for line in lines if line.split()[:1] == ["recall"])
    assert recall.split()[-2:] == ["n/a", "n/a"]


def test_reversed_pair_has_the_same_spread(pilot: Path, run_cce: RunCce) -> None:
    _, forward, _ = run_cce("plan", str(pilot), "--format", "json")
    _, backward, _ = run_cce("plan", str(pilot), "--format", "json", "--compare", "hybrid,bm25")
    a = json.loads(forward)["metrics"]["mrr"]
    b = json.loads(backward)["metrics"]["mrr"]
    assert (a["sd"], a["queries_needed"]) == (b["sd"], b["queries_needed"])
    assert a["mean_delta"] == "+0.114583" and b["mean_delta"] == "-0.114583"


def test_byte_stable(pilot: Path, run_cce: RunCce) -> None:
    first = run_cce("plan", str(pilot), "--format", "json")
    assert first == run_cce("plan", str(pilot), "--format", "json")
    assert first[1].endswith("}\n")


def test_a_diff_document_plans_the_same(pilot: Path, tmp_path: Path, run_cce: RunCce) -> None:
    code, diff_out, _ = run_cce(
        "diff", str(pilot), str(pilot), "--backends", "bm25,hybrid", "--format", "json"
    )
    assert code == 0
    diff_path = tmp_path / "diff.json"
    diff_path.write_text(diff_out, encoding="utf-8")
    _, from_diff, _ = run_cce("plan", str(diff_path), "--format", "json")
    _, from_report, _ = run_cce("plan", str(pilot), "--format", "json")
    planned_diff = json.loads(from_diff)
    planned_report = json.loads(from_report)
    assert planned_diff["source"]["schema"] == "cce.relevance.diff/v1"
    assert planned_diff["metrics"] == planned_report["metrics"]
    assert (planned_diff["base"], planned_diff["head"]) == ("bm25", "hybrid")
    code, _, err = run_cce("plan", str(diff_path), "--compare", "bm25,hybrid")
    assert code == 2
    assert "already pairs base and head" in err


def test_unpaired_cases_are_left_out_with_a_warning(tmp_path: Path, run_cce: RunCce) -> None:
    path = _report(
        tmp_path,
        _backend("bm25", MRR_A, P_A, IDS),
        _backend("hybrid", MRR_B[:7], P_B[:7], IDS[:7]),
    )
    code, out, err = run_cce("plan", str(path), "--format", "json")
    assert code == 0
    assert json.loads(out)["paired"] == 7
    assert "1 case is in only one of bm25 and hybrid" in err


def test_an_effect_too_small_to_plan_for(pilot: Path, run_cce: RunCce) -> None:
    # The smallest delta a report can show still needs more queries than can be planned.
    code, out, _ = run_cce("plan", str(pilot), "--delta", "1e-6")
    assert code == 0
    assert ">10000000" in out


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["--delta", "0"], 2, "argument --delta: must be a number > 0"),
        (["--delta", "nan"], 2, "argument --delta: must be a number > 0"),
        (["--power", "1"], 2, "argument --power: must be strictly between 0 and 1"),
        (["--alpha", "x"], 2, "argument --alpha: must be strictly between 0 and 1"),
        (["--compare", "bm25"], 2, "--compare needs two names"),
        (["--compare", "bm25,vector"], 1, "no backend 'vector' in this report"),
    ],
)
def test_bad_arguments(
    pilot: Path, run_cce: RunCce, extra: list[str], code: int, message: str
) -> None:
    status, out, err = run_cce("plan", str(pilot), *extra)
    assert status == code
    assert out == ""
    assert message in err


def test_three_backends_need_compare(tmp_path: Path, run_cce: RunCce) -> None:
    path = _report(
        tmp_path,
        _backend("bm25", MRR_A, P_A, IDS),
        _backend("vector", MRR_A, P_A, IDS),
        _backend("hybrid", MRR_B, P_B, IDS),
    )
    code, out, err = run_cce("plan", str(path))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path} has 3 backends (bm25, vector, hybrid); "
        "name the pair to plan for with --compare A,B\n"
    )


def test_unreadable_and_invalid_files(tmp_path: Path, run_cce: RunCce) -> None:
    missing = tmp_path / "missing.json"
    code, _, err = run_cce("plan", str(missing))
    assert code == 1 and err.startswith(f"error: could not read report {missing}")
    broken = tmp_path / "broken.json"
    broken.write_text('{"backends": [\n', encoding="utf-8")
    code, out, err = run_cce("plan", str(broken))
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {broken}: line 2 column 1: invalid JSON")
    bad_delta = tmp_path / "bad-diff.json"
    bad_delta.write_text(
        json.dumps(
            {
                "schema": "cce.relevance.diff/v1",
                "base": {"backend": "a"},
                "head": {"backend": "b"},
                "paired": 1,
                "metrics": {"mrr": {"label": "MRR", "per_query": [{"delta": "oops"}]}},
            }
        ),
        encoding="utf-8",
    )
    code, _, err = run_cce("plan", str(bad_delta))
    assert code == 1
    assert 'metrics.mrr.per_query[0].delta is "oops", not a delta' in err


def test_the_sd_interval_and_the_queries_it_implies(pilot: Path, run_cce: RunCce) -> None:
    """A pilot's sd is an estimate: its chi-square interval and the sizes at both ends."""
    code, out, _ = run_cce("plan", str(pilot), "--format", "json", "--correction", "none")
    assert code == 0
    mrr = json.loads(out)["metrics"]["mrr"]
    deltas = [round(b, 6) - round(a, 6) for a, b in zip(MRR_A, MRR_B, strict=True)]
    sd = _sd(deltas)
    low = sd * math.sqrt(7 / stats.chi2.ppf(0.975, 7))
    high = sd * math.sqrt(7 / stats.chi2.ppf(0.025, 7))
    assert [float(v) for v in mrr["sd_ci95"]] == pytest.approx([low, high], abs=5e-7)
    assert mrr["queries_needed_range"] == [
        required_sample_size(low, 0.05),
        required_sample_size(high, 0.05),
    ]
    assert mrr["queries_needed_range"][0] < mrr["queries_needed"] < mrr["queries_needed_range"][1]
    assert "sd_ci95" not in json.loads(out)["metrics"]["recall"]
    text = run_cce("plan", str(pilot), "--correction", "none")[1].splitlines()
    row = next(i for i, line in enumerate(text) if line.split()[:1] == ["MRR"])
    first, second = mrr["queries_needed_range"]
    assert text[row + 1].split() == [
        "sd",
        "95%",
        "interval",
        mrr["sd_ci95"][0],
        "to",
        f"{mrr['sd_ci95'][1]}:",
        str(first),
        "to",
        str(second),
        "queries",
    ]


def test_the_plan_sizes_at_the_gates_effective_alpha(pilot: Path, run_cce: RunCce) -> None:
    """By default the gate adjusts (holm) over every compared metric, here four, so each is
    sized at 0.05 / 4; the plan says so, and --gate-metrics narrows the family."""
    code, out, _ = run_cce("plan", str(pilot), "--format", "json")
    assert code == 0
    plan = json.loads(out)
    assert (plan["alpha"], plan["correction"], plan["effective_alpha"]) == (
        "0.050000",
        "holm",
        "0.012500",
    )
    assert plan["gated_metrics"] == ["precision_at_k", "recall", "mrr", "f1"]
    deltas = [round(b, 6) - round(a, 6) for a, b in zip(MRR_A, MRR_B, strict=True)]
    sd = _sd(deltas)
    assert plan["metrics"]["mrr"]["queries_needed"] == required_sample_size(sd, 0.05, 0.0125)
    assert float(plan["metrics"]["mrr"]["detectable_now"]) == pytest.approx(
        minimum_detectable_effect(sd, 8, 0.0125), abs=5e-7
    )
    text = run_cce("plan", str(pilot))[1].splitlines()
    assert (
        "at effective alpha 0.0125 (the gate's alpha 0.05, holm-adjusted over 4 gated metrics)"
        in text[1]
    )
    code, out, _ = run_cce("plan", str(pilot), "--format", "json", "--gate-metrics", "MRR,P@k")
    narrowed = json.loads(out)
    assert (narrowed["effective_alpha"], sorted(narrowed["metrics"])) == (
        "0.025000",
        ["mrr", "precision_at_k"],
    )
    code, _, err = run_cce("plan", str(pilot), "--gate-metrics", "ndcg")
    assert code == 2 and "does not compare it" in err


def test_plan_builds_a_frozen_request_from_its_flags() -> None:
    import argparse

    import attrs

    from cce_cli.commands.plan import configure, plan_request
    from cce_cli.runs.plan import PlanRequest

    parser = argparse.ArgumentParser()
    configure(parser)
    request = plan_request(parser.parse_args(["pilot.json", "--correction", "bonferroni"]))
    assert request == PlanRequest("pilot.json", correction="bonferroni")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        request.alpha = 0.1  # type: ignore[misc]
