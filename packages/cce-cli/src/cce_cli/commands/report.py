"""`cce report REPORT.json -o report.html`: a saved report as one self-contained HTML page.

Why it exists: the JSON reports are what CI archives; a reviewer wants a page. This
command reads a saved relevance report (`cce.relevance.report/v2`) or diff
(`cce.relevance.diff/v1`), adds the evidence the options name (results files, fixtures,
corpus), and writes the page of `cce_cli.render.html` atomically to `-o`, or to stdout.
It owns the choice of page by the document's schema: `PAGES` maps each schema to its
builder, so a new report kind (a suite, say) is one entry (docs/reports.md).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from cce_cli.commands.evidence_options import add_evidence_arguments, evidence_for
from cce_cli.commands.output_paths import refuse_output_over_input
from cce_cli.compare import pairing, saved_report
from cce_cli.compare.suite_inference import retest_suite
from cce_cli.errors import CliError
from cce_cli.formats import json_text
from cce_cli.formats.evidence import Evidence
from cce_cli.formats.schemas import REPORT_SCHEMA
from cce_cli.formats.suite_manifest import SUITE_REPORT_SCHEMA
from cce_cli.output import write_output, write_stdout
from cce_retrieval import describe_os_error

__all__ = ["PAGES", "ReportRequest", "configure", "run", "write_page", "write_report_page"]

PageBuilder = Callable[[Mapping[str, Any], str, "ReportRequest", "Evidence | None"], str]


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce report`'s arguments."""
    parser.add_argument(
        "report",
        metavar="REPORT.json",
        help=f"a saved report: {', '.join(PAGES)}",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the page here (default: stdout)"
    )
    parser.add_argument(
        "--backends",
        metavar="BASE,HEAD",
        help="of a relevance report with several backends: show two as base against head",
    )
    add_evidence_arguments(parser)


@attrs.frozen(slots=True)
class ReportRequest:
    """One `cce report`: the saved report, where the page goes (None: stdout), the two
    backends to show of a relevance report, and the evidence to attach."""

    report: str
    output: str | None = None
    backends: str | None = None
    """`BASE,HEAD` (`--backends`)."""
    results: tuple[str, ...] = ()
    fixtures: str | None = None
    corpus: str | None = None


def report_request(args: argparse.Namespace) -> ReportRequest:
    """The page the parsed arguments ask for."""
    return ReportRequest(
        str(args.report),
        None if args.output is None else str(args.output),
        args.backends,
        tuple(str(path) for path in args.results),
        None if args.fixtures is None else str(args.fixtures),
        None if args.corpus is None else str(args.corpus),
    )


def _relevance_page(
    body: Mapping[str, Any], path: str, request: ReportRequest, evidence: Evidence | None
) -> str:
    from cce_cli.render.html import render_diff_page, render_relevance_page

    report = saved_report.parse_report(json.dumps(body), path)
    if request.backends is None:
        return render_relevance_page(report, evidence)
    base, head = saved_report.select_backends(
        report, report, None, request.backends, "--backends BASE,HEAD"
    )
    diff = pairing.diff_reports(report, report, base, head, by_tag=True)
    if diff.members is not None:
        # A suite's page shows the mean its table reports, as `cce diff` tests it.
        diff = retest_suite(diff, "macro")
    return render_diff_page(_with_evidence(diff, evidence))


def _suite_page(
    body: Mapping[str, Any], path: str, request: ReportRequest, evidence: Evidence | None
) -> str:
    from cce_cli.render.suite_page import render_suite_page

    if request.backends is not None:  # a comparison over the suite: the diff page
        return _relevance_page(body, path, request, evidence)
    return render_suite_page(body, path, evidence)


def _diff_page(
    body: Mapping[str, Any], path: str, request: ReportRequest, evidence: Evidence | None
) -> str:
    from cce_cli.compare.saved_diff import diff_from_document
    from cce_cli.render.html import render_diff_page

    if request.backends is not None:
        raise CliError("--backends chooses within a relevance report; a diff has two sides", 2)
    return render_diff_page(_with_evidence(diff_from_document(body, path), evidence))


def _with_evidence(report: pairing.DiffReport, evidence: Evidence | None) -> pairing.DiffReport:
    if evidence is None:
        return report
    queries = {**evidence.queries(), **report.queries}
    return attrs.evolve(report, evidence=evidence, queries=queries)


PAGES: dict[str, PageBuilder] = {
    REPORT_SCHEMA: _relevance_page,
    pairing.DIFF_SCHEMA: _diff_page,
    # A suite report reads as one report over every member's queries (`member/case-id`).
    SUITE_REPORT_SCHEMA: _suite_page,
}
"""The page builder of each report schema `cce report` renders."""


def write_page(output: str | None, page: str) -> None:
    """The page to `output` atomically, or to stdout when `output` is None."""
    if output is None:
        write_stdout(page)
        return
    try:
        write_output(output, page.encode("utf-8"))
    except OSError as error:
        raise CliError(f"could not write {output}: {describe_os_error(error)}") from None


def run(args: argparse.Namespace) -> int:
    return write_report_page(report_request(args))


def write_report_page(request: ReportRequest) -> int:
    """Read the report, choose its page by schema, render, write."""
    path = request.report
    refuse_output_over_input([("-o", request.output)], [path, request.fixtures, *request.results])
    text = saved_report.read_report_text(path)
    try:
        body = json_text.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(
            f"{path}: line {error.lineno} column {error.colno}: invalid JSON ({error.msg})"
        ) from None
    if not isinstance(body, dict):
        raise CliError(f"{path}: a report is a JSON object")
    schema = body.get("schema", REPORT_SCHEMA if "backends" in body else None)
    builder = PAGES.get(schema) if isinstance(schema, str) else None
    if builder is None:
        known = ", ".join(PAGES)
        raise CliError(
            f"{path}: schema {json.dumps(schema)} has no HTML page; cce report reads {known}"
        )
    evidence = evidence_for(request.results, request.fixtures, request.corpus)
    write_page(request.output, builder(body, path, request, evidence))
    return 0
