"""One fixture set scored: read, checked, evaluated and rendered, the path every run takes.

Why it exists: `cce relevance FIXTURES` and every member of a suite are scored by this one
function, so a member's block in a suite report is the report the command prints for it.
It owns the order in which inputs are read and checked - which decides which error a user
sees first (docs/harness.md#processing-order) - the corpus path and its displayed form
(docs/harness.md#corpus-path), store mode and the refusal to score a store whose embedder
fails its health check (docs/harness.md#store-mode). Evaluation is
`cce_cli.evaluation.harness`, rendering `cce_cli.render.relevance`; printing and gating are
the caller's.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from cce_cli.compare.gate import with_verdict
from cce_cli.compare.in_run import compare_gate
from cce_cli.compare.pairing import backend_values, diff_reports
from cce_cli.compare.saved_report import SavedBackend, SavedCase, SavedReport
from cce_cli.errors import CliError
from cce_cli.evaluation import configurations as backend_config
from cce_cli.evaluation import corpus_checks, harness, run_checks
from cce_cli.evaluation.building import BuildOptions, progress_bar
from cce_cli.evaluation.corpus_paths import corpus_path
from cce_cli.evaluation.indexes import (
    build_or_fail,
    capitalize,
    open_store,
    print_protection_notice,
    remote_problem,
    walk_error_warnings,
)
from cce_cli.evaluation.provenance import report_provenance
from cce_cli.evaluation.report import tag_groups
from cce_cli.formats import external_runs as runs
from cce_cli.formats import trec
from cce_cli.formats.evidence import evidence_from_runs, read_fixtures, stored_code
from cce_cli.formats.results_file import render_run
from cce_cli.formats.scores import BackendReport
from cce_cli.formats.suite_fixtures import refuse_unrecognised_manifest
from cce_cli.output import display_text
from cce_cli.render import relevance as render
from cce_cli.render.diff import render_diff_markdown
from cce_cli.runs.request import RunRequest
from cce_fixtures import FixtureSet
from cce_metrics import Metric
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

UNPARSED_LANGUAGE = "plaintext"
"""The language of a whole-file chunk no language pack claimed (the chunker's)."""

__all__ = [
    "Scored",
    "build_fixture_corpus",
    "fixture_corpus",
    "gate_reasons",
    "score",
    "step_summary",
]


def _store_refusal(spec: EmbedderSpec, failure: EmbedderUnavailable) -> str:
    return (
        f"this index was built with the {spec.name} embedder but "
        f"{remote_problem(spec, failure)} "
        "— refusing to score across mismatched embedding spaces "
        f"(query and chunk vectors would come from different models). {capitalize(spec.remedy)}, "
        "or evaluate a corpus directory with --dir <corpus> (hash embedder)."
    )


def fixture_corpus(fixtures: str, corpus: str | None, fixture_set: FixtureSet) -> str:
    """The corpus `corpus` (`--dir`) or the header of `fixtures` names, as displayed; an
    error when it is no directory."""
    if corpus is not None:
        display = str(corpus)
    elif fixture_set.corpus is not None:
        display = corpus_path(str(fixtures), fixture_set.corpus)
    else:
        raise CliError('no corpus: pass --dir <corpus> or declare "corpus" in the fixture header')
    if not os.path.isdir(display):
        raise CliError(f"corpus {display_text(display)} is not a directory")
    return display


def _build_corpus(build: BuildOptions, display: str) -> Index:
    result = build_or_fail(display, HashEmbedder(), build=build)
    for warning in walk_error_warnings(result.walk_errors, result.gitignore_errors):
        print(warning, file=sys.stderr)
    print_protection_notice(result, build.verbose)
    return result.index


def build_fixture_corpus(
    fixtures: str, corpus: str | None, fixture_set: FixtureSet, build: BuildOptions
) -> tuple[Index, str]:
    """The in-memory index of `corpus` (`--dir`) or the header corpus, and the corpus as
    displayed.

    Shared by the commands that score or pool a fixture set; walk errors and the strict
    protection notice go to stderr like `cce index`'s.
    """
    display = fixture_corpus(fixtures, corpus, fixture_set)
    return _build_corpus(build, display), display


_COMPARE_TWO = "--compare requires exactly two distinct backends, e.g. bm25,hybrid"


def _choose_backends(
    request: RunRequest, config: backend_config.BackendConfig, extra: Mapping[str, Backend]
) -> tuple[str, ...]:
    if request.compare is not None:
        if not request.compare.replace(",", "").strip():
            raise CliError(_COMPARE_TWO, exit_code=2)
        chosen = backend_config.choose(request.compare, config, extra)
        if len(chosen) != 2:
            raise CliError(_COMPARE_TWO, exit_code=2)
        return chosen
    if request.backends is not None:
        return backend_config.choose(request.backends, config, extra)
    return harness.BACKEND_NAMES


def _embedding_space(backend: Backend) -> tuple[str, str]:
    """The (embedder, model) a configured backend asks for; ("", "") = as the index says."""
    inner = getattr(backend, "inner", backend)
    return str(getattr(inner, "embedder", "") or ""), str(getattr(inner, "model", "") or "")


def _evaluate(
    request: RunRequest,
    fixture_set: FixtureSet,
    index: Index,
    embedder: QueryEmbedder,
    chosen: Sequence[str | Backend],
    corpus_root: str | None = None,
    cost_metrics: Sequence[Metric] = (),
) -> tuple[harness.BackendReport, ...]:
    """Evaluate in the chosen order; an in-memory corpus is re-embedded for a backend
    that asks for another embedder (its own index, its own query vectors)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for position, backend in enumerate(chosen):
        space = ("", "") if isinstance(backend, str) else _embedding_space(backend)
        if request.store is not None or space[0] in ("", index.embedder):
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
            group_index = build_or_fail(
                _corpus_display(request, fixture_set), built, build=request.build
            ).index
            group_embedder = built
        try:
            # A slow backend (a plugin, a model server) runs every query: the bar shows it.
            with progress_bar(request.build.wants_progress(), "querying", unit="query") as progress:
                evaluated = harness.evaluate(
                    group_index,
                    group_embedder,
                    fixture_set,
                    [chosen[i] for i in positions],
                    graded=request.graded,
                    granularity=request.granularity,
                    corpus_root=corpus_root,
                    progress=progress,
                    cost_metrics=cost_metrics,
                )
        except (EmbeddingSpaceError, BackendConfigError, QueryVectorError) as error:
            raise CliError(str(error)) from None
        reports.update(zip(positions, evaluated, strict=True))
    return tuple(reports[i] for i in range(len(chosen)))


def _corpus_display(request: RunRequest, fixture_set: FixtureSet) -> str:
    if request.corpus is not None:
        return str(request.corpus)
    return corpus_path(str(request.fixtures), fixture_set.corpus or "")


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


def _choose_metrics(request: RunRequest) -> tuple[Metric, ...]:
    """The reported chunk metrics; a bad `--metrics` list or a useless `--graded` is a
    usage error (exit 2), found before any file is read."""
    try:
        metrics = harness.parse_metrics(request.metrics)
    except ValueError as error:
        raise CliError(str(error), exit_code=2) from None
    if request.graded and all(item.name != "ndcg" for item in metrics):
        raise CliError(
            "--graded only changes nDCG (expected anchors gain 2); add --metrics ndcg",
            exit_code=2,
        )
    return metrics


def _choose_cost_metrics(request: RunRequest) -> tuple[Metric, ...]:
    """The cost metrics `--metrics` and `--budgets` ask for; a bad budget is a usage
    error (exit 2)."""
    try:
        return harness.parse_cost_metrics(request.metrics, request.budgets)
    except ValueError as error:
        raise CliError(str(error), exit_code=2) from None


@attrs.frozen
class Scored:
    """One fixture set scored: the rendering and the full-precision reports behind it."""

    text: str
    fixture_set: FixtureSet
    embedder: str
    reports: tuple[harness.BackendReport, ...]
    comparison: harness.Comparison | None
    metrics: tuple[Metric, ...]
    render_as: Callable[[str], str] = attrs.field(eq=False, repr=False)
    """The run in another registered format (`render_as("html")`), as the command would
    print it with that `--format`."""
    results: str | None = None
    """What `--results` asks written (a `cce.run/v1` or TREC run), written by the caller
    once the gate has been evaluated, so a refused gate leaves no file behind."""
    cost_metrics: tuple[Metric, ...] = ()
    """The cost metrics asked for (none by default)."""
    index_seconds: float = 0.0
    """Wall-clock seconds to build (or load from the build cache) or open the index."""
    parsed_chunks: tuple[int, int] = (0, 0)
    """How many of the searched index's chunks came from a language parser, of all of
    them: (0, N) means every file was a whole-file chunk (no parser claimed it)."""


def score(request: RunRequest) -> Scored:
    """Read, check, evaluate and render one fixture set, and write `--results` and
    `--export-qrels`; the caller prints the rendering and gates."""
    metrics = _choose_metrics(request)
    refuse_unrecognised_manifest(str(request.fixtures))
    cost_metrics = _choose_cost_metrics(request)
    fixture_set = read_fixtures(str(request.fixtures))
    # A suite's members are configured from the manifest's directory, not their own.
    start = request.config_start or str(request.fixtures)
    wanted = backend_config.requested(request.compare, request.backends, runs=request.runs)
    config = backend_config.config_for(request.config, start, wanted)
    if request.export_qrels is not None:
        qrels = trec.qrels_text(fixture_set, granularity=request.granularity, graded=request.graded)
        runs.write_text(str(request.export_qrels), qrels, "qrels")
    embedder: QueryEmbedder
    index_started = time.perf_counter()
    if request.store is not None:
        if request.build.protection is not None:
            raise CliError(
                "--protection applies when relevance builds the corpus (--dir or the "
                "fixtures' corpus); a --store was protected when it was indexed",
                2,
            )
        index, embedder = open_store(str(request.store), _store_refusal)
        display = str(request.store)
        corpus_checks.check_store(display, request.strict)
        root = corpus_checks.store_corpus_root(display)
    else:
        display = fixture_corpus(request.fixtures, request.corpus, fixture_set)
        root = display
    # The reference reports a missing corpus or store before a bad backend list.
    normaliser = run_checks.PathNormaliser.for_root(root)
    extra, problems = run_checks.load_external_runs(
        request.runs, fixture_set, config, normaliser, request.member_prefix
    )
    if request.strict:
        run_checks.refuse(problems)
    names = _choose_backends(request, config, extra)
    if request.store is None:
        index = _build_corpus(request.build, display)
        embedder = HashEmbedder()
    index_seconds = time.perf_counter() - index_started
    corpus_checks.check_anchors(str(request.fixtures), fixture_set, index, root, request.strict)
    if request.granularity == "file":
        run_checks.check_file_granularity(str(request.fixtures), fixture_set, request.strict)
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
    reports = _evaluate(request, fixture_set, index, embedder, chosen, corpus_root, cost_metrics)
    run_checks.check_results(
        fixture_set,
        index,
        names,
        chosen,
        reports,
        outside,
        problems,
        granularity=request.granularity,
        strict=request.strict,
    )
    if request.strict:
        _refuse_without_vector(reports, len(fixture_set.cases))
    comparison = (
        harness.compare_reports(
            reports[0], reports[1], (*metrics, *cost_metrics), test=request.test
        )
        if request.compare
        else None
    )
    tags = (
        tag_groups(reports, [case.tags for case in fixture_set.cases]) if request.by_tag else None
    )
    configs = backend_config.recorded_configs(names, config)
    sources = {name: extra[name].source for name in names if name in extra}

    def render_as(format_name: str) -> str:
        """This run in the registered format `format_name`, as the command prints it."""
        renderer = render.RENDERERS[format_name]
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
            graded=request.graded,
            granularity=request.granularity,
            cost_metrics=cost_metrics,
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
        if configs and renderer.name == "json":
            text = _with_configs(text, configs)
        if request.provenance and renderer.name == "json":
            stamp = report_provenance(
                str(request.fixtures),
                index,
                names,
                configs,
                sources,
                None if request.store is None else str(request.store),
            )
            text = _with_provenance(text, stamp)
        return text

    text = render_as(request.format or next(iter(render.RENDERERS)))
    if request.results is not None:
        if request.results_format in trec.RUN_FORMATS:
            results = trec.run_text(
                request.results_format, fixture_set, reports, granularity=request.granularity
            )
        else:
            results = render_run(
                display, index.embedder, fixture_set.cases, reports, granularity=request.granularity
            )
    else:
        results = None
    return Scored(
        text,
        fixture_set,
        index.embedder,
        tuple(reports),
        comparison,
        tuple(metrics),
        render_as,
        results,
        cost_metrics,
        parsed_chunks=parsed_share(index.chunks),
        index_seconds=index_seconds,
    )


def parsed_share(chunks: Sequence[Any]) -> tuple[int, int]:
    """(chunks a language parser produced, all chunks): the rest are the walk's
    whole-file chunks of files in languages cce does not parse."""
    parsed = sum(1 for chunk in chunks if chunk.language != UNPARSED_LANGUAGE)
    return parsed, len(chunks)


def _refuse_without_vector(reports: Sequence[BackendReport], queries: int) -> None:
    """`--strict`: a query a backend got no vector for would be scored as that backend's
    miss (docs/hostile-input.md#queries-without-a-vector); refuse the run instead."""
    for report in reports:
        if report.without_vector:
            count = render.without_vector_count(report.backend, report.without_vector, queries)
            them = "it" if len(report.without_vector) == 1 else "them"
            raise CliError(
                f"--strict: {count}: the embedder gave {them} an empty or all-zero vector (a "
                "failed embedding, warned above, or only words its model does not know); "
                f"fix the embedder or its server, or drop --strict to score {them} as misses"
            )


def _saved(report: BackendReport, metrics: Sequence[Metric]) -> SavedBackend:
    """An in-run backend as a saved report's, with the metrics the report shows."""
    cases = tuple(
        SavedCase(case.id, values, case.tags)
        for case, (_, values) in zip(report.cases, backend_values(report, metrics), strict=True)
    )
    return SavedBackend(report.backend, cases, {})


def step_summary(
    request: RunRequest,
    embedder: str,
    reports: Sequence[BackendReport],
    metrics: Sequence[Metric],
    reasons: tuple[str, ...],
) -> str:
    """The markdown `cce diff` would append for this comparison saved as two reports."""
    base, head = (_saved(report, metrics) for report in reports)
    side = SavedReport(str(request.fixtures), None, embedder, (base, head))
    report = diff_reports(
        side,
        side,
        base,
        head,
        test=request.test,
        correction=request.correction,
        alpha=request.alpha,
        by_tag=request.by_tag,
    )
    return render_diff_markdown(with_verdict(report, request.gate, reasons, request.correction))


def gate_reasons(request: RunRequest, scored: Scored) -> tuple[str, ...]:
    """The gate's reasons on `--compare A,B` (B is the head); () = passed or no gate.

    Judged before anything is written, so a gate refused as uncalibrated leaves no
    partial output behind."""
    if scored.comparison is None:
        return ()
    return compare_gate(
        request.gate,
        scored.reports,
        (*scored.metrics, *scored.cost_metrics),
        test=request.test,
        correction=request.correction,
        alpha=request.alpha,
    )
