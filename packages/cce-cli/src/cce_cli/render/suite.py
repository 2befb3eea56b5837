"""Text and `cce.suite.report/v1` JSON renderings of a suite run.

Why it exists: a suite report is pinned byte for byte like the single-set report
(`cce.relevance.report/v2`): alphabetical keys, six-decimal strings, one trailing
newline. It holds every member's complete v2 report object, the aggregates per backend
and metric (overall and per group, `macro` = the mean of the members' means, `micro` =
the mean over all queries) and the provenance that lets a reader trust them: the
manifest's digest, each fixture file's digest and corpus identity, and the cce version
(docs/suites.md#the-report). The text form is one table per backend with a row per
member, per group and the overall macro and micro rows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from cce_cli.evaluation.provenance import cce_version, file_sha256
from cce_cli.evaluation.suite import (
    MemberResult,
    aggregate,
    backend_order,
    chosen_cost_metrics,
    chosen_metrics,
)
from cce_cli.formats.suite_manifest import SUITE_REPORT_SCHEMA, Member, SuiteManifest
from cce_cli.output import display_text
from cce_cli.render.cost import cost_cell, cost_header_json
from cce_cli.render.relevance import without_vector_note
from cce_metrics import COST, Metric
from cce_retrieval import format6


def render_suite(
    manifest: SuiteManifest,
    results: Sequence[MemberResult],
    format_name: str,
    comparison: Any = None,
    *,
    timings: bool = False,
) -> str:
    """The suite report in `format_name` (`text` or `json`), with the `--compare` block
    (a `cce.relevance.diff/v1` body or text) when there is one, and with `timings`
    each member's index time and query latencies."""
    if format_name == "json":
        return render_suite_json(manifest, results, comparison, timings=timings)
    if format_name == "html":
        return render_suite_html(manifest, results, comparison)
    text = render_suite_text(manifest, results, comparison)
    if not timings:
        return text
    return text + "\n" + "".join(line + "\n" for line in timing_lines(results))


def render_suite_html(
    manifest: SuiteManifest, results: Sequence[MemberResult], comparison: Any = None
) -> str:
    """The HTML page of a suite: the per-member, group, macro and micro tables, then every
    query of every member (ids `member/case-id`) with its text and expected anchors from
    the members' fixtures; with `--compare`, the comparison over the whole suite."""
    from cce_cli.formats.suite_evidence import suite_evidence
    from cce_cli.formats.suite_fixtures import read_fixtures_or_suite
    from cce_cli.render.html import render_diff_page
    from cce_cli.render.suite_page import render_suite_page

    members = [result.evidence for result in results if result.evidence is not None]
    evidence = suite_evidence(members, read_fixtures_or_suite(manifest.path))
    if comparison is not None:
        queries = {**evidence.queries(), **comparison.queries}
        return render_diff_page(attrs.evolve(comparison, evidence=evidence, queries=queries))
    return render_suite_page(suite_document(manifest, results), manifest.path, evidence)


def _cell(value: float | None) -> str | None:
    return None if value is None else format6(value)


def _text_cell(item: Metric, value: float | None) -> str | None:
    """A text-table cell: a cost metric as `cost_cell` shows it, any other in six decimals."""
    if value is None:
        return None
    return cost_cell(item, value) if item.group == COST else format6(value)


def _aggregates(
    results: Sequence[MemberResult], metrics: Sequence[Metric], backend: str
) -> dict[str, Any]:
    block: dict[str, Any] = {}
    for item in metrics:
        found = aggregate(results, backend, item)
        block[item.key] = {"macro": _cell(found.macro), "micro": _cell(found.micro)}
        block.setdefault("members", found.members)
        block.setdefault("queries", found.queries)
    return block


def _grouped(
    manifest: SuiteManifest, results: Sequence[MemberResult], group: str
) -> list[MemberResult]:
    names = {member.name for member in manifest.members if group in member.groups}
    return [result for result in results if result.name in names]


def _member_provenance(member: Member) -> dict[str, Any]:
    return {
        "corpus": member.corpus_identity(),
        "fixtures_sha256": file_sha256(member.fixtures),
        "name": member.name,
    }


def suite_document(
    manifest: SuiteManifest, results: Sequence[MemberResult], comparison: Any = None
) -> dict[str, Any]:
    """The `cce.suite.report/v1` document as a JSON-ready object."""
    metrics = chosen_metrics(results)
    members = []
    for member, result in zip(manifest.members, results, strict=True):
        members.append(
            {
                "corpus": member.corpus_identity(),
                "groups": list(member.groups),
                "name": member.name,
                "report": json.loads(result.report_json),
            }
        )
    aggregates: dict[str, Any] = {}
    for backend in backend_order(results):
        groups = {
            group: _aggregates(_grouped(manifest, results, group), metrics, backend)
            for group in manifest.groups()
        }
        aggregates[backend] = {
            "groups": groups,
            "overall": _aggregates(results, metrics, backend),
        }
    document: dict[str, Any] = {
        "aggregates": aggregates,
        "parsing": _parsing_block(results),
        "members": members,
        "provenance": {
            "cce_version": cce_version(),
            "manifest_sha256": manifest.sha256,
            "members": [_member_provenance(member) for member in manifest.members],
        },
        "schema": SUITE_REPORT_SCHEMA,
    }
    cost_metrics = chosen_cost_metrics(results)
    if cost_metrics:
        # Only a suite that asked for a cost metric says how it was measured.
        document["cost"] = cost_header_json(cost_metrics)
    if comparison is not None:
        from cce_cli.render.diff import diff_body

        document["compare"] = diff_body(comparison)
    return document


def _parsing_block(results: Sequence[MemberResult]) -> dict[str, Any]:
    """Per member, how its index was chunked: `chunks`, `parsed_chunks` (from a language
    parser) and `without_parser` (every chunk a whole-file one), and the members scored
    without a parser."""
    return {
        "members": {
            result.name: {
                "chunks": result.parsed_chunks[1],
                "parsed_chunks": result.parsed_chunks[0],
                "without_parser": result.without_parser,
            }
            for result in results
        },
        "without_parser": [result.name for result in results if result.without_parser],
    }


def _ms(value: float | None) -> str | None:
    return None if value is None else f"{value:.3f}"


def timings_block(results: Sequence[MemberResult]) -> dict[str, Any]:
    """Per member: `index_seconds` and per backend `latency_ms` `p50`/`p95` and `n`."""
    members: dict[str, Any] = {}
    for result in results:
        if result.timings is None:
            continue
        found = result.timings
        members[result.name] = {
            "backends": {
                backend: {
                    "n": len(values),
                    "p50_ms": _ms(found.latency(backend, 50)),
                    "p95_ms": _ms(found.latency(backend, 95)),
                }
                for backend, values in found.latencies_ms.items()
            },
            "index_seconds": f"{found.index_seconds:.3f}",
        }
    return {"members": members}


def timing_lines(results: Sequence[MemberResult]) -> list[str]:
    """The text table: a row per member and backend with index time, p50 and p95."""
    names = [display_text(result.name) for result in results]
    width = max(10, *(len(name) + 2 for name in names))
    lines = [
        "  timings (wall clock; the index time includes loading it from the build cache)",
        f"  {'member':<{width}}{'backend':<12}{'index s':>10}{'p50 ms':>12}{'p95 ms':>12}",
    ]
    for result in results:
        if result.timings is None:
            continue
        found = result.timings
        for backend in found.latencies_ms:
            p50, p95 = found.latency(backend, 50), found.latency(backend, 95)
            lines.append(
                f"  {display_text(result.name):<{width}}{display_text(backend):<12}"
                f"{found.index_seconds:>10.3f}{_ms(p50) or 'n/a':>12}{_ms(p95) or 'n/a':>12}"
            )
    return lines


def render_suite_json(
    manifest: SuiteManifest,
    results: Sequence[MemberResult],
    comparison: Any = None,
    *,
    timings: bool = False,
) -> str:
    document = suite_document(manifest, results, comparison)
    if timings:
        document["timings"] = timings_block(results)
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _row(label: str, values: Sequence[str | None], width: int) -> str:
    cells = "".join(f"{value if value is not None else 'n/a':>12}" for value in values)
    return f"  {label:<{width}}{cells}\n"


def _without_vector_notes(results: Sequence[MemberResult]) -> list[str]:
    """A note per member and backend that got no vector for some queries, read from the
    member's report (docs/report-formats.md#queries-without-a-vector); none otherwise."""
    notes: list[str] = []
    for result in results:
        report = json.loads(result.report_json)
        for backend in report.get("backends", []):
            case_ids = backend.get("queries_without_vector")
            if case_ids:
                note = without_vector_note(
                    backend["backend"], case_ids, report["queries"], member=result.name
                )
                notes.append(note + "\n")
    return ["\n", *notes] if notes else []


def render_suite_text(
    manifest: SuiteManifest, results: Sequence[MemberResult], comparison: Any = None
) -> str:
    """One table per backend: a row per member, per group (macro), then macro and micro."""
    metrics = chosen_metrics(results)
    total = sum(len(result.values[0][1]) if result.values else 0 for result in results)
    member_word = "member" if len(results) == 1 else "members"
    query_word = "query" if total == 1 else "queries"
    lines = [
        "CCE suite — ranking quality over many repositories (cce.suite/v1)\n",
        f"  manifest: {display_text(manifest.path)}\n",
        f"  {len(results)} {member_word}, {total} {query_word}\n",
    ]
    names = [display_text(member.name) for member in manifest.members]
    groups = [f"group {display_text(group)}" for group in manifest.groups()]
    width = max(10, *(len(label) + 2 for label in [*names, *groups, "micro (all queries)"]))
    for backend in backend_order(results):
        lines.append("\n")
        lines.append(f"  {display_text(backend)}\n")
        lines.append(_row("member", [item.label for item in metrics], width))
        for result in results:
            cells = [_text_cell(item, aggregate([result], backend, item).macro) for item in metrics]
            lines.append(_row(display_text(result.name), cells, width))
        for group in manifest.groups():
            grouped = _grouped(manifest, results, group)
            cells = [_text_cell(item, aggregate(grouped, backend, item).macro) for item in metrics]
            lines.append(_row(f"group {display_text(group)}", cells, width))
        overall = [aggregate(results, backend, item) for item in metrics]
        macro = [
            _text_cell(item, found.macro) for item, found in zip(metrics, overall, strict=True)
        ]
        micro = [
            _text_cell(item, found.micro) for item, found in zip(metrics, overall, strict=True)
        ]
        lines.append(_row("macro", macro, width))
        lines.append(_row("micro (all queries)", micro, width))
    lines += _without_vector_notes(results)
    unparsed = [display_text(result.name) for result in results if result.without_parser]
    if unparsed:
        lines.append("\n")
        lines.append(
            "  scored without a parser (whole-file chunks; cce parses none of their "
            f"files): {', '.join(unparsed)}\n"
        )
    text = "".join(lines)
    if comparison is not None:
        from cce_cli.render.diff import render_diff_text

        text += "\n" + render_diff_text(comparison)
    return text
