"""The HTML page of a suite report: its per-member, group, macro and micro tables.

Why it exists: a suite's page is the relevance page over every member's queries (ids
`member/case-id`), but a reviewer first asks how each repository fared and what the
suite's averages are. Those rows are the suite document's own (`cce.suite.report/v1`:
its members' aggregates and the `aggregates` block), so `cce relevance SUITE.toml
--format html` and `cce report SUITE.json` show the same tables from the same numbers,
one table per backend: a row per member, per group (macro over its members), then
macro and micro over the suite (docs/reports.md#suites).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cce_cli.compare.saved_report import parse_report
from cce_cli.formats.evidence import Evidence
from cce_cli.render.comment import format3
from cce_cli.render.html import render_relevance_page
from cce_metrics import METRICS, TOKEN_METRICS, Metric

__all__ = ["render_suite_page", "suite_tables"]


def _value(cell: Any) -> str:
    try:
        return format3(float(cell))
    except (TypeError, ValueError):
        return "n/a"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _metrics_of(overall: Mapping[str, Any]) -> list[Metric]:
    return [
        item for item in (*METRICS, *TOKEN_METRICS) if isinstance(overall.get(item.key), Mapping)
    ]


def _member_value(member: Mapping[str, Any], backend: str, item: Metric) -> str:
    """A member's own aggregate of `item` for `backend`, as its v2 report states it."""
    report = _mapping(member.get("report"))
    for entry in report.get("backends") or ():
        entry = _mapping(entry)
        if entry.get("backend") == backend:
            found = entry.get(item.key)
            if found is None:  # token averages sit in their own block
                found = _mapping(entry.get("tokens")).get(item.key)
            return _value(found)
    return "n/a"


def suite_tables(document: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """One table per backend: members (with their query count), groups, macro, micro."""
    tables: list[dict[str, Any]] = []
    members = [_mapping(member) for member in document.get("members") or ()]
    aggregates = _mapping(document.get("aggregates"))
    # The members' report order (a saved document's keys are sorted), then any others.
    order = [
        str(_mapping(entry).get("backend"))
        for member in members
        for entry in _mapping(member.get("report")).get("backends") or ()
    ]
    names = list(dict.fromkeys(name for name in order if name in aggregates))
    names += [name for name in aggregates if name not in names]
    for backend in names:
        block = aggregates[backend]
        overall = _mapping(_mapping(block).get("overall"))
        metrics = _metrics_of(overall)
        rows: list[dict[str, Any]] = []
        for member in members:
            name = str(member.get("name", ""))
            rows.append(
                {
                    "label": name,
                    "kind": "member",
                    "cells": [_member_value(member, backend, item) for item in metrics],
                }
            )
        for group, grouped in sorted(_mapping(_mapping(block).get("groups")).items()):
            cells = [_value(_mapping(_mapping(grouped).get(m.key)).get("macro")) for m in metrics]
            rows.append({"label": f"group {group}", "kind": "group", "cells": cells})
        for which in ("macro", "micro"):
            cells = [_value(_mapping(overall.get(m.key)).get(which)) for m in metrics]
            rows.append({"label": which, "kind": which, "cells": cells})
        tables.append(
            {
                "title": f"{backend}: per member",
                "note": f"{overall.get('members', len(members))} members, "
                f"{overall.get('queries', 'n/a')} queries; a group row and macro weigh "
                "members alike, micro weighs queries alike",
                "first": "member",
                "columns": [item.label for item in metrics],
                "rows": rows,
            }
        )
    return tuple(tables)


def render_suite_page(
    document: Mapping[str, Any], path: str, evidence: Evidence | None = None
) -> str:
    """The page of a suite document: its tables, then every member's queries."""
    report = parse_report(json.dumps(document), path)
    return render_relevance_page(report, evidence, tables=suite_tables(document))
