"""`cce relevance FIXTURES`: score the retrieval pipeline against a labeled fixture set.

Why it exists: this is the edge where the relevance harness meets the user. It owns the command's
arguments (docs/harness.md#arguments), the order in which inputs are read and checked - which
decides which error a user sees first (docs/harness.md#processing-order) - the corpus path and its
displayed form with Rust `Path` semantics (docs/harness.md#corpus-path), store mode and the refusal
to score a store whose embedder fails its health check (docs/harness.md#store-mode), and writing the
whole rendering to stdout in one go (docs/harness.md#output-and-exit-status). Evaluation is
`cce_cli.evaluation.harness`, rendering `cce_cli.render.relevance`.

The flags beyond the reference's leave the default output alone: `--format` picks a
renderer, `--results` also writes the `cce.run/v1` file, `--by-tag` adds per-tag
aggregates, `--test` picks the paired test of `--compare`, and the gate flags on
`--compare` only add stderr lines and exit status 3 (docs/gating.md). Named backend
configurations (`--config`, else a discovered `cce.toml`), external runs (`--run
NAME=FILE`), `--results-format trec` and `--export-qrels` are docs/backends.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from cce_cli.commands.build_options import add_build_options, progress_bar, wants_progress
from cce_cli.commands.diff import append_step_summary, report_gate
from cce_cli.commands.index import walk_error_warnings
from cce_cli.commands.output_paths import evaluation_inputs, refuse_output_over_input
from cce_cli.compare.gate import (
    GateSpec,
    add_gate_arguments,
    gate_spec,
)
from cce_cli.compare.in_run import compare_gate, step_summary
from cce_cli.errors import CliError
from cce_cli.evaluation import configurations as backend_config
from cce_cli.evaluation import corpus_checks, harness, run_checks
from cce_cli.evaluation.corpus_paths import corpus_path
from cce_cli.evaluation.indexes import (
    add_protection_argument,
    add_verbose_argument,
    build_or_fail,
    capitalize,
    open_store,
    print_protection_notice,
    remote_problem,
)
from cce_cli.evaluation.provenance import report_provenance
from cce_cli.evaluation.report import tag_groups
from cce_cli.formats import external_runs as runs
from cce_cli.formats import trec
from cce_cli.formats.evidence import evidence_from_runs, read_fixtures, stored_code
from cce_cli.formats.results_file import render_run, write_run
from cce_cli.formats.suite_manifest import looks_like_suite
from cce_cli.render import relevance as render
from cce_cli.render.output import display_text, write_stdout
from cce_fixtures import FixtureSet
from cce_metrics import METRICS, Metric
from cce_retrieval import (
    Backend,
    BackendConfigError,
    EmbedderConfigError,
    EmbedderMisconfigured,
    EmbedderModelMissing,
    EmbedderSpec,
    EmbedderUnavailable,
    EmbeddingSpaceError,
    HashEmbedder,
    Index,
    QueryEmbedder,
    QueryVectorError,
    create_embedder,
)
from cce_stats import paired_test_names

__all__ = [
    "Scored",
    "build_fixture_corpus",
    "configure",
    "run",
    "score",
]


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
        + " (docs/metrics.md#ranked-metrics)",
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
        help="on a suite, which aggregate --min tests: macro (default; the mean of the "
        "members' means) or micro (the mean over all queries)",
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


def _store_refusal(spec: EmbedderSpec, failure: EmbedderUnavailable) -> str:
    return (
        f"this index was built with the {spec.name} embedder but "
        f"{remote_problem(spec, failure)} "
        "— refusing to score across mismatched embedding spaces "
        f"(query and chunk vectors would come from different models). {capitalize(spec.remedy)}, "
        "or evaluate a corpus directory with --dir <corpus> (hash embedder)."
    )


def fixture_corpus(args: argparse.Namespace, fixture_set: FixtureSet) -> str:
    """The corpus of `--dir` or the header as displayed; an error when it is no directory."""
    if args.dir is not None:
        display = str(args.dir)
    elif fixture_set.corpus is not None:
        display = corpus_path(str(args.fixtures), fixture_set.corpus)
    else:
        raise CliError('no corpus: pass --dir <corpus> or declare "corpus" in the fixture header')
    if not os.path.isdir(display):
        raise CliError(f"corpus {display_text(display)} is not a directory")
    return display


def _build_corpus(args: argparse.Namespace, display: str) -> Index:
    result = build_or_fail(display, HashEmbedder(), args=args)
    for warning in walk_error_warnings(result.walk_errors, result.gitignore_errors):
        print(warning, file=sys.stderr)
    print_protection_notice(result, getattr(args, "verbose", False))
    return result.index


def build_fixture_corpus(args: argparse.Namespace, fixture_set: FixtureSet) -> tuple[Index, str]:
    """The in-memory index of `--dir` or the header corpus, and the corpus as displayed.

    Shared by the commands that score or pool a fixture set; walk errors and the strict
    protection notice go to stderr like `cce index`'s.
    """
    display = fixture_corpus(args, fixture_set)
    return _build_corpus(args, display), display


_COMPARE_TWO = "--compare requires exactly two distinct backends, e.g. bm25,hybrid"


def _choose_backends(
    args: argparse.Namespace, config: backend_config.BackendConfig, extra: Mapping[str, Backend]
) -> tuple[str, ...]:
    if args.compare is not None:
        if not args.compare.replace(",", "").strip():
            raise CliError(_COMPARE_TWO, exit_code=2)
        chosen = backend_config.choose(args.compare, config, extra)
        if len(chosen) != 2:
            raise CliError(_COMPARE_TWO, exit_code=2)
        return chosen
    if args.backend is not None:
        return backend_config.choose(args.backend, config, extra)
    return harness.BACKEND_NAMES


def _embedding_space(backend: Backend) -> tuple[str, str]:
    """The (embedder, model) a configured backend asks for; ("", "") = as the index says."""
    inner = getattr(backend, "inner", backend)
    return str(getattr(inner, "embedder", "") or ""), str(getattr(inner, "model", "") or "")


def _evaluate(
    args: argparse.Namespace,
    fixture_set: FixtureSet,
    index: Index,
    embedder: QueryEmbedder,
    chosen: Sequence[str | Backend],
    corpus_root: str | None = None,
) -> tuple[harness.BackendReport, ...]:
    """Evaluate in the chosen order; an in-memory corpus is re-embedded for a backend
    that asks for another embedder (its own index, its own query vectors)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for position, backend in enumerate(chosen):
        space = ("", "") if isinstance(backend, str) else _embedding_space(backend)
        if args.store is not None or space[0] in ("", index.embedder):
            space = ("", "")
        groups.setdefault(space, []).append(position)
    reports: dict[int, harness.BackendReport] = {}
    for (name, model), positions in groups.items():
        group_index, group_embedder = index, embedder
        if name:
            try:
                built = create_embedder(name, model or None)
            except EmbedderModelMissing as error:
                raise CliError(
                    f"a backend configuration asks for the {error.embedder} embedder without "
                    f'a model: give it model = "NAME_OR_PATH" or set {error.model_env}'
                ) from None
            except (EmbedderConfigError, EmbedderMisconfigured) as error:
                raise CliError(str(error)) from None
            group_index = build_or_fail(_corpus_display(args, fixture_set), built, args=args).index
            group_embedder = built
        try:
            # A slow backend (a plugin, a model server) runs every query: the bar shows it.
            with progress_bar(wants_progress(args), "querying", unit="query") as progress:
                evaluated = harness.evaluate(
                    group_index,
                    group_embedder,
                    fixture_set,
                    [chosen[i] for i in positions],
                    graded=args.graded,
                    granularity=args.granularity,
                    corpus_root=corpus_root,
                    progress=progress,
                )
        except (EmbeddingSpaceError, BackendConfigError, QueryVectorError) as error:
            raise CliError(str(error)) from None
        reports.update(zip(positions, evaluated, strict=True))
    return tuple(reports[i] for i in range(len(chosen)))


def _corpus_display(args: argparse.Namespace, fixture_set: FixtureSet) -> str:
    if args.dir is not None:
        return str(args.dir)
    return corpus_path(str(args.fixtures), fixture_set.corpus or "")


def _with_configs(text: str, configs: Mapping[str, Mapping[str, object]]) -> str:
    """The JSON report with `config` added to each configured backend's object.

    The report holds only strings, integers and nulls, so re-encoding it with the same
    options reproduces its bytes; it is only done when some backend is configured.
    """
    document = json.loads(text)
    for entry in document["backends"]:
        config = configs.get(entry["backend"])
        if config is not None:
            entry["config"] = dict(config)
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _with_provenance(text: str, provenance: Mapping[str, Any]) -> str:
    """The JSON report with its `provenance` object, re-encoded as `_with_configs` does."""
    document = json.loads(text)
    document["provenance"] = dict(provenance)
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _check_provenance_usage(args: argparse.Namespace) -> None:
    if getattr(args, "provenance", False) and args.format != "json":
        raise CliError(
            "--provenance adds to the JSON report; add --json (or --format json)", exit_code=2
        )


def _check_gate_usage(args: argparse.Namespace, spec: GateSpec) -> None:
    if spec.active and args.compare is None:
        raise CliError(
            "--fail-on-significant, --fail-on-query-regression and --min need --compare A,B "
            "(B is the head); or gate two saved reports with `cce diff`",
            exit_code=2,
        )


def _choose_metrics(args: argparse.Namespace) -> tuple[Metric, ...]:
    """The reported chunk metrics; a bad `--metrics` list or a useless `--graded` is a
    usage error (exit 2), found before any file is read."""
    try:
        metrics = harness.parse_metrics(args.metrics)
    except ValueError as error:
        raise CliError(str(error), exit_code=2) from None
    if args.graded and all(item.name != "ndcg" for item in metrics):
        raise CliError(
            "--graded only changes nDCG (expected anchors gain 2); add --metrics ndcg",
            exit_code=2,
        )
    return metrics


def run(args: argparse.Namespace) -> int:
    """Evaluate, render and print; every user-facing failure raises CliError."""
    _check_provenance_usage(args)
    refuse_output_over_input(
        (("--results", args.results), ("--export-qrels", args.export_qrels)),
        evaluation_inputs(args),
    )
    if looks_like_suite(str(args.fixtures)):
        from cce_cli.evaluation.suite import run_suite

        return run_suite(args)
    spec = gate_spec(args)
    _check_gate_usage(args, spec)
    scored = score(args)
    reasons = (
        compare_gate(args, spec, scored.reports, scored.metrics)
        if scored.comparison is not None
        else ()
    )
    if scored.results is not None:
        write_run(str(args.results), scored.results)
    write_stdout(scored.text)
    if spec.active and scored.comparison is not None:
        # A gated comparison is a CI step: its job summary gets the diff, as `cce diff`'s.
        append_step_summary(
            step_summary(args, scored.embedder, scored.reports, scored.metrics, reasons)
        )
    return report_gate(reasons)


@attrs.frozen
class Scored:
    """One fixture set scored: the rendering and the full-precision reports behind it."""

    text: str
    fixture_set: FixtureSet
    embedder: str
    reports: tuple[harness.BackendReport, ...]
    comparison: harness.Comparison | None
    metrics: tuple[Metric, ...]
    results: str | None = None
    """What `--results` asks written (a `cce.run/v1` or TREC run), written by the caller
    once the gate has been evaluated, so a refused gate leaves no file behind."""


def score(args: argparse.Namespace) -> Scored:
    """Read, check, evaluate and render one fixture set, and write `--results` and
    `--export-qrels`; the caller prints the rendering and gates."""
    metrics = _choose_metrics(args)
    fixture_set = read_fixtures(str(args.fixtures))
    # A suite's members are configured from the manifest's directory, not their own.
    start = getattr(args, "config_start", None) or str(args.fixtures)
    wanted = backend_config.requested(args.compare, args.backend, runs=args.run)
    config = backend_config.config_for(args.config, start, wanted)
    if args.export_qrels is not None:
        qrels = trec.qrels_text(fixture_set, granularity=args.granularity, graded=args.graded)
        runs.write_text(str(args.export_qrels), qrels, "qrels")
    embedder: QueryEmbedder
    if args.store is not None:
        if args.protection is not None:
            raise CliError(
                "--protection applies when relevance builds the corpus (--dir or the "
                "fixtures' corpus); a --store was protected when it was indexed",
                2,
            )
        index, embedder = open_store(str(args.store), _store_refusal)
        display = str(args.store)
        corpus_checks.check_store(display, args.strict)
        root = corpus_checks.store_corpus_root(display)
    else:
        display = fixture_corpus(args, fixture_set)
        root = display
    # The reference reports a missing corpus or store before a bad backend list.
    normaliser = run_checks.PathNormaliser.for_root(root)
    extra, problems = run_checks.load_external_runs(args, fixture_set, config, normaliser)
    if args.strict:
        run_checks.refuse(problems)
    names = _choose_backends(args, config, extra)
    if args.store is None:
        index = _build_corpus(args, display)
        embedder = HashEmbedder()
    corpus_checks.check_anchors(str(args.fixtures), fixture_set, index, root, args.strict)
    if args.granularity == "file":
        run_checks.check_file_granularity(str(args.fixtures), fixture_set, args.strict)
    # Every name becomes a Backend: the built-ins rank exactly like the harness's own
    # path, and also refuse a query vector of another dimension than the store's.
    chosen: list[str | Backend] = []
    # What comes from outside cce (by position: its source) is checked before it counts.
    outside: dict[int, str] = {}
    for position, name in enumerate(names):
        backend = backend_config.instantiate(name, config, extra)
        if name in extra:
            outside[position] = extra[name].source
        elif backend_config.is_plugin(name, config):
            outside[position] = "plugin"
            backend = run_checks.RepairedBackend(backend, normaliser)
        chosen.append(backend)
    corpus_root = os.path.abspath(root) if root is not None else None
    reports = _evaluate(args, fixture_set, index, embedder, chosen, corpus_root)
    run_checks.check_results(args, fixture_set, index, names, chosen, reports, outside, problems)
    comparison = (
        harness.compare_reports(reports[0], reports[1], metrics, test=args.test)
        if args.compare
        else None
    )
    tags = tag_groups(reports, [case.tags for case in fixture_set.cases]) if args.by_tag else None
    renderer = render.RENDERERS[args.format or next(iter(render.RENDERERS))]
    # JSON carries an undecodable byte as its \udcXX escape (lossless); human output
    # quotes and escapes the name (docs/hostile-input.md#printing).
    shown = display if renderer.name == "json" else display_text(display)
    summary = render.RunSummary(
        shown,
        index.embedder,
        reports,
        comparison,
        metrics=metrics,
        tags=tags,
        graded=args.graded,
        granularity=args.granularity,
    )
    if renderer.name == "html":
        # The page shows what every query retrieved, read from the run itself; Jinja2
        # is imported only when a page is asked for.
        from cce_cli.render.html import render_summary_page

        run_text = render_run(display, index.embedder, fixture_set.cases, reports)
        evidence = evidence_from_runs(
            [("this run", run_text)],
            corpus=root,
            fixtures=fixture_set,
            stored=stored_code(reports, index.chunks),
        )
        text = render_summary_page(summary, evidence)
    else:
        text = renderer.render(summary)
    configs = backend_config.recorded_configs(names, config)
    if configs and renderer.name == "json":
        text = _with_configs(text, configs)
    if getattr(args, "provenance", False):
        sources = {name: extra[name].source for name in names if name in extra}
        stamp = report_provenance(
            str(args.fixtures),
            index,
            names,
            configs,
            sources,
            None if args.store is None else str(args.store),
        )
        text = _with_provenance(text, stamp)
    if args.results is not None:
        if args.results_format in trec.RUN_FORMATS:
            results = trec.run_text(
                args.results_format, fixture_set, reports, granularity=args.granularity
            )
        else:
            results = render_run(
                display, index.embedder, fixture_set.cases, reports, granularity=args.granularity
            )
    else:
        results = None
    return Scored(
        text, fixture_set, index.embedder, tuple(reports), comparison, tuple(metrics), results
    )
