"""Reading a saved `cce.relevance.diff/v1` document back into a `DiffReport`.

Why it exists: CI archives `cce diff --format json`; `cce report` renders that file as
the HTML page later, without the two relevance reports it came from. This module owns
the way back: the per-metric rows, tests and adjusted p-values as the document states
them (only a t-test's decision p for constant deltas is recomputed, from the saved
deltas), the per-tag groups, a suite's members and tested mean, and the gate. A
document that is not a diff, or is missing a field, is a `CliError` naming the file
and the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from cce_cli.compare.pairing import (
    DIFF_SCHEMA,
    DiffGroup,
    DiffReport,
    DiffSide,
    MetricDiff,
    QueryDelta,
)
from cce_cli.compare.saved_report import decimal_number, outside_bounds
from cce_cli.compare.suite_inference import SUITE_MEANS, SUITE_UNITS
from cce_cli.errors import CliError
from cce_metrics import METRICS, TOKEN_METRICS, Metric
from cce_stats import PairedTestResult, member_means, paired_test

__all__ = ["diff_from_document"]


def _number(path: str, where: str, value: Any) -> float | None:
    if value is None:
        return None
    number = decimal_number(value)  # "1_0" is not 10 here either
    if not math.isfinite(number):
        raise CliError(f"{path}: {where} is not a number; expected a {DIFF_SCHEMA} document")
    return number


def _bounded(path: str, where: str, value: Any, item: Metric, spread: bool = False) -> float:
    number = _required(path, where, value)
    bounds = outside_bounds(item, number, spread=spread)
    if bounds is not None:
        raise CliError(
            f"{path}: {where} is {number!r}, which no run can give: {bounds}; "
            "the document was damaged or written by hand, so regenerate it with `cce diff`"
        )
    return number


def _required(path: str, where: str, value: Any) -> float:
    number = _number(path, where, value)
    if number is None:
        raise CliError(f"{path}: {where} is missing; expected a {DIFF_SCHEMA} document")
    return number


def _metric(key: str) -> Metric | None:
    known: list[Metric] = [*METRICS, *TOKEN_METRICS]
    for item in known:
        if item.key == key:
            return item
    return None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _fallback_p(
    test: str, rows: list[QueryDelta], members: tuple[str, ...] | None = None
) -> float | None:
    """The decision p a saved t-test's printed p stands in for, from the saved deltas.

    The document prints p (for constant deltas the reference's p = 0) and not the p a
    decision uses; re-running the t-test on the per-query deltas (with `members`, a
    member-level test's: on the members' mean deltas) gives it back, so a reloaded
    result decides as the original did (docs/statistics.md#constant-deltas).
    """
    if test != "t" or len(rows) < 2:
        return None
    deltas = [row.delta for row in rows]
    try:
        if members is not None:
            grouped = [
                [row.delta for row in rows if row.id.startswith(f"{name}/")] for name in members
            ]
            deltas = member_means([group for group in grouped if group])
        return paired_test("t").run(deltas).fallback_p
    except ValueError:
        return None


def _group(
    path: str,
    where: str,
    tag: str | None,
    body: Any,
    test: str,
    member_unit: tuple[str, ...] | None = None,
) -> DiffGroup:
    if not isinstance(body, Mapping):
        raise CliError(f"{path}: {where} must be an object of metrics")
    metrics: list[MetricDiff] = []
    case_ids: list[str] = []
    for key, entry in body.items():
        item = _metric(key)
        if item is None or not isinstance(entry, Mapping):
            continue  # a metric this cce does not know: left out of the page
        here = f"{where}.{key}"
        rows = []
        for index, row in enumerate(entry.get("per_query") or []):
            if not isinstance(row, Mapping) or not isinstance(row.get("id"), str):
                raise CliError(f"{path}: {here}.per_query[{index}] needs a string id")
            at = f"{here}.per_query[{index}]"
            base = _bounded(path, f"{at}.base", row.get("base"), item)
            head = _bounded(path, f"{at}.head", row.get("head"), item)
            delta = _bounded(path, f"{at}.delta", row.get("delta"), item, spread=True)
            rows.append(QueryDelta(row["id"], base, head, delta))
        for row in rows:
            if row.id not in case_ids:
                case_ids.append(row.id)
        low = _number(path, f"{here}.ci95_low", entry.get("ci95_low"))
        high = _number(path, f"{here}.ci95_high", entry.get("ci95_high"))
        result = PairedTestResult(
            test,
            len(rows),
            _required(path, f"{here}.mean_delta", entry.get("mean_delta")),
            _number(path, f"{here}.statistic", entry.get("statistic")),
            _number(path, f"{here}.p", entry.get("p")),
            None if low is None or high is None else (low, high),
            _fallback_p(test, rows, member_unit),
        )

        def count(name: str, entry: Mapping[str, Any] = entry, here: str = here) -> int:
            value = entry.get(name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise CliError(f"{path}: {here}.{name} must be an integer")
            return value

        metrics.append(
            MetricDiff(
                item,
                tuple(rows),
                result,
                _number(path, f"{here}.p_adjusted", entry.get("p_adjusted")),
                _number(path, f"{here}.effect_size", entry.get("effect_size")),
                count("wins"),
                count("ties"),
                count("losses"),
            )
        )
    order = {item.key: position for position, item in enumerate((*METRICS, *TOKEN_METRICS))}
    metrics.sort(key=lambda diff: order[diff.metric.key])
    return DiffGroup(tag, tuple(case_ids), tuple(metrics))


def _side(path: str, name: str, body: Any) -> DiffSide:
    if not isinstance(body, Mapping) or not isinstance(body.get("backend"), str):
        raise CliError(
            f"{path}: {name}.backend must be a string; expected a {DIFF_SCHEMA} document"
        )

    def text(key: str) -> str | None:
        value = body.get(key)
        return value if isinstance(value, str) else None

    return DiffSide(text("path") or name, body["backend"], text("corpus"), text("embedder"))


def diff_from_document(body: Mapping[str, Any], path: str) -> DiffReport:
    """The `DiffReport` a saved diff document states."""
    test = body.get("test") if isinstance(body.get("test"), str) else "t"
    correction = body.get("correction") if isinstance(body.get("correction"), str) else "holm"
    alpha = _number(path, "alpha", body.get("alpha"))
    unpaired = _mapping(body.get("unpaired"))
    members_body = body.get("members")
    members = (
        tuple(str(name) for name in members_body) if isinstance(members_body, Mapping) else None
    )
    mean = body.get("mean") if body.get("mean") in SUITE_MEANS else None
    unit = body.get("unit") if body.get("unit") in SUITE_UNITS else "query"
    member_unit = members if unit == "member" else None
    tag_scope = "family" if body.get("tag_correction") == "family" else "tag"
    tags_body = body.get("tags")
    tags = None
    if isinstance(tags_body, Mapping):
        tags = tuple(
            _group(path, f"tags.{tag}.metrics", tag, entry.get("metrics"), str(test), member_unit)
            for tag, entry in sorted(tags_body.items())
            if isinstance(entry, Mapping)
        )
    gate = _mapping(body.get("gate"))
    raw_reasons = gate.get("reasons")
    reasons: list[Any] = raw_reasons if isinstance(raw_reasons, list) else []
    return DiffReport(
        _side(path, "base", body.get("base")),
        _side(path, "head", body.get("head")),
        str(test),
        str(correction),
        0.05 if alpha is None else alpha,
        _group(path, "metrics", None, body.get("metrics"), str(test), member_unit),
        tuple(str(i) for i in unpaired.get("base", []) if isinstance(i, str)),
        tuple(str(i) for i in unpaired.get("head", []) if isinstance(i, str)),
        tags,
        gate_active=bool(reasons) or "passed" in gate,
        gate_reasons=tuple(str(reason) for reason in reasons),
        members=members,
        mean=str(mean) if mean is not None else None,
        unit=str(unit),
        tag_scope=tag_scope,
    )
