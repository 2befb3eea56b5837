"""The gate decides on evidence: constant deltas, the bootstrap's per-metric n.

A t-test on deltas that are all the same prints the reference's p = 0 (there is no
variance to speak of), but that p is a convention, not evidence: the gate decides on
the exact sign-flip p instead (docs/statistics.md#constant-deltas), here checked by
enumerating the sign assignments by hand.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

RunCce = Callable[..., tuple[int, str, str]]


def _write_report(path: Path, rows: Mapping[str, Mapping[str, float]]) -> Path:
    per_query = [
        {"id": case_id, "k": 5, **{key: f"{value:.6f}" for key, value in values.items()}}
        for case_id, values in rows.items()
    ]
    body: dict[str, Any] = {
        "backends": [{"backend": "bm25", "per_query": per_query}],
        "schema": "cce.relevance.report/v2",
    }
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def _sign_flip_p(deltas: list[float]) -> float:
    observed = abs(sum(deltas))
    flips = list(itertools.product((1.0, -1.0), repeat=len(deltas)))
    hits = sum(
        1
        for signs in flips
        if abs(sum(s * d for s, d in zip(signs, deltas, strict=True))) >= observed - 1e-12
    )
    return hits / len(flips)


def _two_constant_losses(tmp_path: Path) -> tuple[Path, Path]:
    base = {"q1": {"mrr": 1.0, "recall": 1.0}, "q2": {"mrr": 0.7, "recall": 1.0}}
    head = {"q1": {"mrr": 0.8, "recall": 1.0}, "q2": {"mrr": 0.5, "recall": 1.0}}
    return _write_report(tmp_path / "base.json", base), _write_report(tmp_path / "head.json", head)


def test_two_queries_that_both_lost_the_same_cannot_fail_the_gate(
    tmp_path: Path, run_cce: RunCce
) -> None:
    base, head = _two_constant_losses(tmp_path)
    status, out, err = run_cce("diff", str(base), str(head), "--fail-on-significant")
    assert status == 0, err
    assert "significantly worse" not in out
    status, out, _ = run_cce("diff", str(base), str(head), "--format", "json")
    mrr = json.loads(out)["metrics"]["mrr"]
    assert mrr["p"] == "0.000000"  # the printed p keeps the reference's convention
    # Holm over two metrics: recall's p is 1.0, MRR's decision p the exact 0.5, times 2.
    assert _sign_flip_p([-0.2, -0.2]) == 0.5
    assert mrr["p_adjusted"] == "1.000000"


def test_a_saved_diff_with_constant_deltas_decides_the_same_way(
    tmp_path: Path, run_cce: RunCce
) -> None:
    from cce_cli.compare.saved_diff import diff_from_document

    base, head = _two_constant_losses(tmp_path)
    status, out, _ = run_cce("diff", str(base), str(head), "--format", "json")
    assert status == 0
    reloaded = diff_from_document(json.loads(out), "saved.json")
    mrr = reloaded.overall.metric("mrr")
    assert mrr is not None
    assert mrr.result.p == 0.0
    assert mrr.result.decision_p == _sign_flip_p([-0.2, -0.2])


def test_bootstrap_refusal_names_the_blocking_metric_and_its_own_n(
    tmp_path: Path, run_cce: RunCce
) -> None:
    """32 queries carry MRR; a token metric only on 2 of them blocks, and the message
    gives its n (2), not MRR's, and not a count over all metrics."""
    base: dict[str, dict[str, float]] = {}
    head: dict[str, dict[str, float]] = {}
    for index in range(32):
        base[f"q{index}"] = {"mrr": 1.0}
        head[f"q{index}"] = {"mrr": 0.5 + 0.01 * index}
    base_path = _write_report(tmp_path / "base.json", base)
    head_path = _write_report(tmp_path / "head.json", head)
    for path, low in ((base_path, 0.5), (head_path, 0.25)):
        body = json.loads(path.read_text(encoding="utf-8"))
        for row in body["backends"][0]["per_query"][:2]:
            row["tokens"] = {"iou": f"{low:.6f}"}
        path.write_text(json.dumps(body), encoding="utf-8")
    status, out, err = run_cce(
        "diff", str(base_path), str(head_path), "--test", "bootstrap", "--fail-on-significant"
    )
    assert (status, out) == (1, "")
    assert "got 2 (tok-IoU):" in err
    assert "MRR" not in err.split(":")[1]


DATA = Path(__file__).parent / "data"


def test_by_tag_family_adjusts_every_tag_and_metric_at_once(run_cce: RunCce) -> None:
    """--tag-correction family: Holm over every tag × metric's decision p (statsmodels'
    multipletests on the same p's), and the text says which scope was used."""
    from statsmodels.stats.multitest import multipletests

    argv = ["diff", str(DATA / "diff-base.json"), str(DATA / "diff-head-shuffled.json")]
    status, out, _ = run_cce(*argv, "--by-tag", "--format", "json")
    assert status == 0
    per_tag = json.loads(out)["tags"]
    status, out, _ = run_cce(*argv, "--by-tag", "--format", "json", "--tag-correction", "family")
    assert status == 0
    family = json.loads(out)
    assert family["tag_correction"] == "family"
    cells = [
        (tag, key, entry)
        for tag, group in sorted(family["tags"].items())
        for key, entry in group["metrics"].items()
    ]
    # The decision p: the printed p, except a constant-delta t-test's exact sign-flip p.
    decision = []
    for _, _, entry in cells:
        deltas = [float(row["delta"]) for row in entry["per_query"]]
        constant = max(deltas) - min(deltas) < 1e-12 and deltas[0] != 0.0
        decision.append(_sign_flip_p(deltas) if constant else float(entry["p"]))
    expected = multipletests(decision, method="holm")[1]
    for (tag, key, entry), adjusted in zip(cells, expected, strict=True):
        assert float(entry["p_adjusted"]) == pytest.approx(adjusted, abs=1e-5), (tag, key)
        assert entry["p"] == per_tag[tag]["metrics"][key]["p"]
    assert any(
        entry["p_adjusted"] != per_tag[tag]["metrics"][key]["p_adjusted"]
        for tag, key, entry in cells
    )
    status, text, _ = run_cce(*argv, "--by-tag", "--tag-correction", "family")
    assert f"holm-adjusted over {len(cells)} tests (every tag × metric)" in text
    status, text, _ = run_cce(*argv, "--by-tag")
    assert "holm-adjusted over 4 metrics within the tag" in text


def test_suite_only_flags_on_single_reports_are_usage_errors(
    tmp_path: Path, run_cce: RunCce
) -> None:
    base, head = _two_constant_losses(tmp_path)
    for flags in (["--unit", "member"], ["--mean", "micro"]):
        status, out, err = run_cce("diff", str(base), str(head), *flags)
        assert (status, out) == (2, ""), flags
        assert "needs two suite reports" in err
    status, _, err = run_cce(
        "relevance", "eval/relevance/code.jsonl", "--compare", "bm25,hybrid", "--mean", "macro"
    )
    assert status == 2 and "applies to a suite" in err
