"""`cce diff BASE.json HEAD.json`: what a ranking change did, query by query, and a gate.

Why it exists: the pull-request workflow saves a relevance report before a change and
one after it; this command pairs them by case id, prints the changed queries and the
paired tests in the chosen format, appends the markdown to the GitHub Actions job
summary when `GITHUB_STEP_SUMMARY` names a file, and exits 3 when a gate flag fails
(docs/gating.md). `--results`, `--fixtures` and `--corpus` add each query's text and
what each side retrieved to the comment and the HTML page (docs/reports.md). It owns
the command's arguments and the order of its effects: stdout first, then the summary
file, then one stderr line per gate reason. When both reports carry provenance and it
names different fixture files, it warns before anything else (`--strict` refuses).
"""

from __future__ import annotations

import argparse
import sys

import attrs

from cce_cli.commands.evidence_options import add_evidence_arguments, evidence_from_args
from cce_cli.commands.gate_options import add_gate_arguments, gate_spec
from cce_cli.compare import pairing as diff_model
from cce_cli.compare.gate import (
    append_step_summary,
    check_gate_metrics,
    evaluate_gate,
    refuse_uncalibrated_gate,
    report_gate,
)
from cce_cli.errors import CliError
from cce_cli.evaluation.provenance import differing_fixtures
from cce_cli.output import display_text, write_stdout
from cce_cli.render.diff import DIFF_RENDERERS, render_diff_markdown
from cce_stats import paired_test_names

__all__ = ["append_step_summary", "check_fixtures_alike", "configure", "report_gate", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce diff`'s arguments."""
    parser.add_argument("base", metavar="BASE.json", help="the report before the change")
    parser.add_argument("head", metavar="HEAD.json", help="the report after the change")
    selection = parser.add_mutually_exclusive_group()
    selection.add_argument(
        "--backend", metavar="NAME", help="the backend to compare (same name on both sides)"
    )
    selection.add_argument(
        "--backends", metavar="BASE,HEAD", help="the base report's backend, the head's backend"
    )
    parser.add_argument(
        "--format",
        choices=tuple(DIFF_RENDERERS),
        default=next(iter(DIFF_RENDERERS)),
        help="output format: "
        + "; ".join(f"{item.name}: {item.help}" for item in DIFF_RENDERERS.values()),
    )
    parser.add_argument(
        "--test",
        choices=paired_test_names(),
        default="t",
        help="paired test on the per-query deltas (default: t)",
    )
    parser.add_argument(
        "--by-tag", action="store_true", help="add per-tag deltas and tests (cases' tags)"
    )
    add_gate_arguments(parser)
    parser.add_argument(
        "--min-aggregate",
        choices=("macro", "micro"),
        default="macro",
        help="for suite reports, which aggregate --min tests: macro (default; the mean of "
        "the members' means) or micro (the mean over all queries)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse (exit 1) to compare reports whose provenance records different fixture files",
    )
    add_evidence_arguments(parser)


def check_fixtures_alike(
    base: diff_model.SavedReport, head: diff_model.SavedReport, strict: bool
) -> None:
    """Warn (refuse with `strict`) when both reports' provenance names different
    fixture files: their per-query scores answer different questions."""
    differing = differing_fixtures(base.provenance, head.provenance)
    if not differing:
        return
    members = [name for name in differing if name]
    which = "the fixture files" + (f" of {', '.join(members)}" if members else "")
    message = (
        f"{which} differ between {base.path} and {head.path} (fixtures_sha256 of their "
        "provenance): the same case ids may not ask the same questions"
    )
    if strict:
        raise CliError(f"{message}; --strict refuses to compare them")
    print(f"warning: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Load, pair, test, render; exit 3 when a gate flag fails."""
    spec = gate_spec(args)
    base = diff_model.load_report(str(args.base), args.min_aggregate)
    head = diff_model.load_report(str(args.head), args.min_aggregate)
    check_fixtures_alike(base, head, args.strict)
    base_backend, head_backend = diff_model.select_backends(base, head, args.backend, args.backends)
    report = diff_model.diff_reports(
        base,
        head,
        base_backend,
        head_backend,
        test=args.test,
        correction=args.correction,
        alpha=args.alpha,
        by_tag=args.by_tag,
    )
    evidence = evidence_from_args(args)
    if evidence is not None:
        queries = {**evidence.queries(), **report.queries}
        report = attrs.evolve(report, evidence=evidence, queries=queries)
    refuse_uncalibrated_gate(spec, report.overall, args.test)
    if spec.active:
        head_name = f"{display_text(head_backend.name)} ({display_text(head.path)})"
        check_gate_metrics(spec, report.overall, head_backend.aggregate, head_name)
        reasons = evaluate_gate(
            spec,
            report.overall,
            head_backend.aggregate,
            head=head_name,
            correction=args.correction,
            alpha=args.alpha,
        )
        report = attrs.evolve(report, gate_active=True, gate_reasons=reasons)
    unpaired = len(report.unpaired_base) + len(report.unpaired_head)
    if unpaired:
        print(
            f"warning: {unpaired} case{'s are' if unpaired != 1 else ' is'} in only one report "
            "and excluded from the tests (listed in the output)",
            file=sys.stderr,
        )
    write_stdout(DIFF_RENDERERS[args.format].render(report))
    append_step_summary(render_diff_markdown(report))
    return report_gate(report.gate_reasons)
