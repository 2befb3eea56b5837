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

from cce_cli.commands.evidence_options import add_evidence_arguments, evidence_from_args
from cce_cli.commands.gate_options import add_gate_arguments, gate_spec
from cce_cli.commands.inference_options import add_inference_arguments
from cce_cli.compare.gate import (
    append_step_summary,
    report_gate,
)
from cce_cli.errors import CliError
from cce_cli.output import write_stdout
from cce_cli.render.diff import DIFF_RENDERERS, render_diff_markdown
from cce_cli.runs.diff import DiffRequest, diff_saved
from cce_stats import paired_test_names

__all__ = ["configure", "diff_request", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce diff`'s arguments."""
    parser.add_argument("base", metavar="BASE.json", help="the report before the change")
    parser.add_argument("head", metavar="HEAD.json", help="the report after the change")
    parser.add_argument(
        "more",
        metavar="MORE.json",
        nargs="*",
        default=[],
        help="further systems: with them, every report after BASE is tested against it "
        "in one table, corrected over systems × metrics (text, markdown or json)",
    )
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
        default=None,
        help="for suite reports, which aggregate --min tests: macro (the mean of "
        "the members' means) or micro (the mean over all queries); default: --mean's",
    )
    add_inference_arguments(parser)
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse (exit 1) to compare reports whose provenance records different fixture files",
    )
    add_evidence_arguments(parser)


def diff_request(args: argparse.Namespace) -> DiffRequest:
    """The comparison the parsed arguments ask for; a gate flag that cannot apply is a
    usage error (exit 2)."""
    return DiffRequest(
        str(args.base),
        str(args.head),
        backend=args.backend,
        backends=args.backends,
        test=args.test,
        correction=args.correction,
        alpha=args.alpha,
        by_tag=bool(args.by_tag),
        gate=gate_spec(args),
        min_aggregate=args.min_aggregate,
        strict=bool(args.strict),
        mean=args.mean,
        unit=args.unit,
        tag_scope=args.tag_scope,
    )


def _run_many(args: argparse.Namespace) -> int:
    """`cce diff BASE HEAD MORE...`: the systems table, printed; no gate."""
    from cce_cli.render.many import render_many_json, render_many_markdown, render_many_text
    from cce_cli.runs.diff import compare_saved_many

    refused = [
        flag
        for flag, given in (
            ("--backends", args.backends is not None),
            ("--by-tag", args.by_tag),
            ("--format html", args.format == "html"),
            ("--results", bool(args.results)),
            ("--fixtures", args.fixtures is not None),
            ("a gate flag", gate_spec(args).active),
        )
        if given
    ]
    if refused:
        raise CliError(
            f"{refused[0]} compares two sides; with more than one head, cce diff prints the "
            "systems table (text, markdown or json) and does not gate",
            exit_code=2,
        )
    comparison = compare_saved_many(
        [str(args.base), str(args.head), *(str(path) for path in args.more)],
        args.backend,
        test=args.test,
        correction=args.correction,
        alpha=args.alpha,
        aggregate=args.min_aggregate,
    )
    render = {"json": render_many_json, "markdown": render_many_markdown}.get(
        args.format, render_many_text
    )
    write_stdout(render(comparison))
    return 0


def run(args: argparse.Namespace) -> int:
    """Load, pair, test, render; exit 3 when a gate flag fails."""
    if args.more:
        return _run_many(args)
    diffed = diff_saved(diff_request(args), lambda: evidence_from_args(args))
    report = diffed.report
    write_stdout(DIFF_RENDERERS[args.format].render(report))
    append_step_summary(render_diff_markdown(report))
    return report_gate(report.gate_reasons)
