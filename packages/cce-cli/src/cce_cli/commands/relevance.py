"""`cce relevance FIXTURES`: score the retrieval pipeline against a labeled fixture set.

Why it exists: this is the edge where the relevance harness meets the user. It owns the
command's arguments (docs/harness.md#arguments) and turns them into one frozen
`RunRequest` (`run_request`), the only form in which a run reaches the layers below;
it refuses the flag combinations that cannot work, and writes the whole rendering to
stdout in one go, then the gate's lines and status (docs/harness.md#output-and-exit-status).
Reading, checking, scoring and rendering one fixture set is `cce_cli.runs.single`, a
suite `cce_cli.runs.suite`.

The flags beyond the reference's leave the default output alone: `--format` picks a
renderer, `--results` also writes the `cce.run/v1` file, `--by-tag` adds per-tag
aggregates, `--test` picks the paired test of `--compare`, and the gate flags on
`--compare` only add stderr lines and exit status 3 (docs/gating.md). Named backend
configurations (`--config`, else a discovered `cce.toml`), external runs (`--run
NAME=FILE`), `--results-format trec` and `--export-qrels` are docs/backends.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from cce_cli.commands.build_options import (
    add_build_options,
    add_protection_argument,
    add_verbose_argument,
    build_options,
)
from cce_cli.commands.gate_options import add_gate_arguments, gate_spec
from cce_cli.commands.inference_options import add_inference_arguments
from cce_cli.commands.output_paths import evaluation_inputs, refuse_output_over_input
from cce_cli.compare.gate import append_step_summary, report_gate
from cce_cli.errors import CliError
from cce_cli.evaluation import harness
from cce_cli.formats import trec
from cce_cli.formats.results_file import write_run
from cce_cli.formats.suite_manifest import looks_like_suite
from cce_cli.output import write_stdout
from cce_cli.render import relevance as render
from cce_cli.runs.request import RunRequest, refuse_suite_selection, refuse_suite_tests
from cce_cli.runs.single import gate_reasons, score, step_summary
from cce_metrics import METRICS
from cce_stats import paired_test_names

__all__ = ["configure", "run"]


class _SetOnce(argparse.Action):
    """Store a value, refusing a second occurrence of the flag (clap's behaviour)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"argument {option_string}: cannot be used multiple times")
        setattr(namespace, self.dest, values)


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce relevance`'s arguments; conflicts are usage errors (exit 2)."""
    parser.add_argument("fixtures", metavar="FIXTURES", help="the cce.relevance/v1 NDJSON file")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--dir",
        metavar="DIR",
        action=_SetOnce,
        help="corpus directory to index in memory (overrides the header corpus)",
    )
    source.add_argument(
        "--store",
        metavar="STORE",
        action=_SetOnce,
        help="a persisted store file, e.g. <root>/.cce/index.json",
    )
    selection = parser.add_mutually_exclusive_group()
    selection.add_argument(
        "--backend",
        metavar="LIST",
        action=_SetOnce,
        help="comma list of bm25, vector, hybrid (default: all three)",
    )
    selection.add_argument(
        "--compare",
        metavar="A,B",
        action=_SetOnce,
        help="compare exactly two backends with per-query deltas and a paired t-test",
    )
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument(
        "--format",
        choices=tuple(render.RENDERERS),
        default=None,
        help="output format: "
        + "; ".join(f"{item.name}: {item.help}" for item in render.RENDERERS.values()),
    )
    formats.add_argument(
        "--json",
        dest="format",
        action="store_const",
        const="json",
        help="emit the JSON report (same as --format json)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse to score (exit 1) when an anchor can never match or the store is stale",
    )
    parser.add_argument(
        "--provenance",
        action="store_true",
        help="add a provenance object to the JSON report: fixture and corpus hashes, "
        "backend parameters, embedder, cce version (docs/gating.md#provenance)",
    )
    parser.add_argument(
        "--results",
        metavar="FILE",
        action=_SetOnce,
        help="also write what each query retrieved, one cce.run/v1 JSON line per case",
    )
    parser.add_argument(
        "--results-format",
        choices=("run", *trec.RUN_FORMATS),
        default="run",
        help="format of --results: cce.run/v1 JSON Lines (default), a TREC run, or the "
        "judged TREC run that reproduces cce's nDCG and AP with --export-qrels",
    )
    parser.add_argument(
        "--export-qrels",
        metavar="FILE",
        action=_SetOnce,
        help="also write the anchors cce judges (expected and secondary, with their gains) "
        "as TREC qrels",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        action=_SetOnce,
        help="named backend configurations (default: cce.toml or pyproject.toml [tool.cce] "
        "beside the fixtures or in a parent directory)",
    )
    parser.add_argument(
        "--run",
        metavar="NAME=FILE",
        action="append",
        default=[],
        help="add backend NAME whose results come from FILE (cce.run/v1, FILE#backend, "
        "or a TREC run); repeatable",
    )
    parser.add_argument(
        "--by-tag", action="store_true", help="add the aggregates per case tag to every output"
    )
    parser.add_argument(
        "--metrics",
        metavar="LIST",
        action=_SetOnce,
        help="comma list of metrics to add to P@k, recall, MRR and F1: "
        + ", ".join(item.name for item in METRICS if not item.default)
        + " (docs/metrics.md#ranked-metrics); or cost metrics: first-hit-tokens, "
        "recall@NNNNt (docs/metrics.md#cost-metrics)",
    )
    parser.add_argument(
        "--budgets",
        metavar="LIST",
        action=_SetOnce,
        help="comma list of token budgets, each adding the cost metric recall@Nt "
        "(e.g. 500,4000; docs/metrics.md#cost-metrics)",
    )
    parser.add_argument(
        "--graded",
        action="store_true",
        help="expected anchors gain 2 (secondary anchors 1) in nDCG; needs --metrics ndcg",
    )
    parser.add_argument(
        "--granularity",
        choices=harness.GRANULARITIES,
        default="chunk",
        help="match results to anchors by chunk (path, kind and lines; default) or by file "
        "(the path alone, each file once per ranking)",
    )
    parser.add_argument(
        "--test",
        choices=paired_test_names(),
        default="t",
        help="paired test of --compare on the per-query deltas (default: t)",
    )
    add_gate_arguments(parser)
    parser.add_argument(
        "--min-aggregate",
        choices=("macro", "micro"),
        default=None,
        help="on a suite, which aggregate --min tests: macro (the mean of the "
        "members' means) or micro (the mean over all queries); default: --mean's",
    )
    add_inference_arguments(parser)
    parser.add_argument(
        "--members",
        metavar="A,B",
        default=None,
        help="on a suite, score only these members (comma-separated names, kept in "
        "manifest order); the report names the manifest it read",
    )
    parser.add_argument(
        "--timings",
        action="store_true",
        help="on a suite, add each member's index time and each backend's query latency "
        "(p50, p95) to the report; wall-clock figures, so the bytes differ run to run",
    )
    parser.add_argument(
        "--executor",
        metavar="dask://HOST:PORT",
        default=None,
        help="on a suite, score the members on this Dask cluster (default: --jobs local "
        "worker processes)",
    )
    add_build_options(parser)
    add_protection_argument(parser, None)
    add_verbose_argument(parser)


def _check_provenance_usage(args: argparse.Namespace) -> None:
    if getattr(args, "provenance", False) and args.format != "json":
        raise CliError(
            "--provenance adds to the JSON report; add --json (or --format json)", exit_code=2
        )


def _check_gate_usage(request: RunRequest) -> None:
    if request.gate.active and request.compare is None:
        raise CliError(
            "--fail-on-significant, --fail-on-query-regression and --min need --compare A,B "
            "(B is the head); or gate two saved reports with `cce diff`",
            exit_code=2,
        )


def run_request(args: argparse.Namespace) -> RunRequest:
    """The run the parsed arguments ask for; a gate flag that cannot apply is a usage
    error (exit 2)."""
    return RunRequest(
        fixtures=str(args.fixtures),
        corpus=None if args.dir is None else str(args.dir),
        store=None if args.store is None else str(args.store),
        backends=args.backend,
        compare=args.compare,
        metrics=args.metrics,
        budgets=args.budgets,
        graded=bool(args.graded),
        granularity=args.granularity,
        test=args.test,
        gate=gate_spec(args),
        correction=args.correction,
        alpha=args.alpha,
        min_aggregate=args.min_aggregate,
        format=args.format,
        strict=bool(args.strict),
        provenance=bool(args.provenance),
        by_tag=bool(args.by_tag),
        results=None if args.results is None else str(args.results),
        results_format=args.results_format,
        export_qrels=None if args.export_qrels is None else str(args.export_qrels),
        config=None if args.config is None else str(args.config),
        runs=tuple(str(option) for option in args.run),
        executor=args.executor,
        build=build_options(args),
        mean=args.mean,
        unit=args.unit,
        tag_scope=args.tag_scope,
        members=args.members,
        timings=bool(args.timings),
    )


def run(args: argparse.Namespace) -> int:
    """Evaluate, render and print; every user-facing failure raises CliError."""
    _check_provenance_usage(args)
    refuse_output_over_input(
        (("--results", args.results), ("--export-qrels", args.export_qrels)),
        evaluation_inputs(args),
    )
    if looks_like_suite(str(args.fixtures)):
        return _run_suite(args)
    refuse_suite_selection(str(args.fixtures), members=args.members, timings=bool(args.timings))
    request = run_request(args)
    _check_gate_usage(request)
    refuse_suite_tests(request)
    scored = score(request)
    reasons = gate_reasons(request, scored)
    if scored.results is not None:
        write_run(str(request.results), scored.results)
    write_stdout(scored.text)
    if request.gate.active and scored.comparison is not None:
        # A gated comparison is a CI step: its job summary gets the diff, as `cce diff`'s.
        append_step_summary(
            step_summary(request, scored.embedder, scored.reports, scored.metrics, reasons)
        )
    return report_gate(reasons)


def _run_suite(args: argparse.Namespace) -> int:
    """`cce relevance SUITE.toml`: print the suite report, then the gate's verdict."""
    from cce_cli.render.diff import render_diff_markdown
    from cce_cli.runs.suite import check_suite_request, run_suite

    # The flags a suite cannot take are refused before the gate flags are read.
    check_suite_request(
        RunRequest(
            str(args.fixtures), corpus=args.dir, store=args.store, export_qrels=args.export_qrels
        )
    )
    suite = run_suite(run_request(args))
    write_stdout(suite.text)
    if suite.comparison is None or not suite.gated:
        return 0
    # A gated comparison is a CI step: its job summary gets the diff, as `cce diff`'s.
    append_step_summary(render_diff_markdown(suite.comparison))
    return report_gate(suite.comparison.gate_reasons)
