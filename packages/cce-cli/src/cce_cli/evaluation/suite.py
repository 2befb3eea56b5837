"""Running a suite: every member scored as its own fixture set, in parallel or on a Dask
cluster, then aggregated over repositories and compared over every query.

Why it exists: a benchmark of many repositories is one input. Each member is scored by
exactly the code path `cce relevance MEMBER_FIXTURES --dir CORPUS` runs, so its block in
the suite report is the report that command prints. Members are independent tasks: they
run in `--jobs N` worker processes or on a Dask cluster (`--executor dask://HOST:PORT`),
and the report is assembled in manifest order, so its bytes do not depend on where or in
which order members ran. Aggregates are per backend and metric, over all members and per
group: `macro` (the mean of the members' means) and `micro` (the mean over all queries),
both from full-precision values. `--compare A,B` pairs queries by `member/case-id` over
the whole suite (docs/suites.md).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import multiprocessing
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from cce_cli.errors import CliError
from cce_cli.evaluation.dask_executor import run_on_dask
from cce_cli.evaluation.member_workers import member_workers
from cce_cli.formats.suite_manifest import Member, SuiteManifest, read_manifest
from cce_cli.render.output import display_text
from cce_metrics import METRICS, Metric

MemberValues = tuple[tuple[str, tuple[tuple[str, Mapping[str, float]], ...]], ...]
"""Per backend (in report order): its name and each case's (id, values by metric key)."""


@attrs.frozen(slots=True)
class MemberTask:
    """What a worker needs to score one member: the member, its corpus directory and the
    command's options (plain values only, so the task pickles for any executor)."""

    member: Member
    corpus: str
    options: Mapping[str, Any]


@attrs.frozen(slots=True)
class MemberResult:
    """One member scored: its `cce.relevance.report/v2` JSON text, the full-precision
    per-query values behind it, and each case's tags."""

    name: str
    report_json: str
    values: MemberValues
    tags: Mapping[str, tuple[str, ...]]
    metrics: tuple[str, ...]
    results_text: str | None = None
    """The member's `--results` lines, ids qualified, when the suite writes results."""


def score_member(task: MemberTask) -> MemberResult:
    """Score one member exactly as `cce relevance FIXTURES --dir CORPUS --json` would.

    Runs in a worker process or on a Dask worker; a `CliError` or a plugin's failure is
    returned to the caller as a `CliError` with the member's name on it."""
    from cce_cli.commands.relevance import score
    from cce_cli.compare.pairing import backend_values
    from cce_retrieval import PluginError, PluginInterrupt

    args = argparse.Namespace(**dict(task.options))
    wants_results = args.results is not None
    args.fixtures = task.member.fixtures
    args.dir = task.corpus
    args.store = None
    args.format = "json"
    args.results = None
    args.export_qrels = None
    args.member_prefix = f"{task.member.name}/"
    try:
        scored = score(args)
    except CliError as error:
        raise CliError(f"member {task.member.name!r}: {error}", error.exit_code) from None
    except PluginError as error:
        raise CliError(f"member {task.member.name!r}: {error}") from None
    except PluginInterrupt as error:
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            # Here a Ctrl-C may be behind it: the command tells, and says which member.
            raise PluginInterrupt(f"member {task.member.name!r}: {error.message}") from None
        # A member worker ignores Ctrl-C, so the plugin raised this itself.
        message = f"{error.message}; no Ctrl-C came, so the plugin raised it itself"
        raise CliError(f"member {task.member.name!r}: {message}") from None
    results_text = None
    if wants_results:
        results_text = _member_results(args, task, scored)
    values = tuple(
        (report.backend, tuple(backend_values(report, scored.metrics))) for report in scored.reports
    )
    tags = {case.id: tuple(case.tags) for case in scored.fixture_set.cases}
    return MemberResult(
        task.member.name,
        scored.text,
        values,
        tags,
        tuple(item.key for item in scored.metrics),
        results_text,
    )


def _member_results(args: argparse.Namespace, task: MemberTask, scored: Any) -> str:
    """What `--results` holds for this member, its case ids qualified as `member/id`."""
    from cce_cli.formats import trec
    from cce_cli.formats.results_file import render_run

    prefix = f"{task.member.name}/"
    if args.results_format in trec.RUN_FORMATS:
        return trec.run_text(
            args.results_format,
            scored.fixture_set,
            scored.reports,
            granularity=args.granularity,
            prefix=prefix,
        )
    text = render_run(
        task.corpus,
        scored.embedder,
        scored.fixture_set.cases,
        scored.reports,
        granularity=args.granularity,
    )
    lines = []
    for line in text.splitlines()[1:]:  # the header is the suite's, written once
        record = json.loads(line)
        record["id"] = prefix + record["id"]
        record["member"] = task.member.name
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")))
    return "".join(line + "\n" for line in lines)


def suite_results(
    manifest: SuiteManifest, results: Sequence[MemberResult], results_format: str
) -> str:
    """One `--results` file for the whole suite: a `cce.run/v1` header naming the manifest,
    then every member's lines in manifest order (or one TREC run), ids `member/case-id`."""
    body = "".join(result.results_text or "" for result in results)
    if results_format != "run":  # a TREC run has no header
        return body
    from cce_cli.formats.results_file import RUN_SCHEMA

    embedder = json.loads(results[0].report_json).get("embedder", "") if results else ""
    header = {"corpus": manifest.path, "embedder": embedder, "schema": RUN_SCHEMA}
    line = json.dumps(header, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return line + "\n" + body


# --- running the members -------------------------------------------------------------


_PICKLABLE_OPTIONS = (str, int, float, bool, type(None))


def member_options(args: argparse.Namespace) -> dict[str, Any]:
    """The command's options as plain values, for the member tasks."""
    options: dict[str, Any] = {}
    for key, value in vars(args).items():
        if isinstance(value, _PICKLABLE_OPTIONS):
            options[key] = value
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            options[key] = list(value)
    return options


def run_members(
    tasks: Sequence[MemberTask],
    jobs: int,
    executor: str | None,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[MemberResult]:
    """Every member's result, in task order, from `jobs` worker processes (1: here) or
    the Dask cluster `executor` names. A Ctrl-C cancels the members not yet started."""
    if executor is not None:
        names = [task.member.name for task in tasks]
        return run_on_dask(executor, score_member, tasks, names, progress)
    workers = member_workers(jobs, len(tasks)) if jobs > 1 else 1
    if workers <= 1:
        results = []
        for done, task in enumerate(tasks):
            if progress is not None:
                progress(done, len(tasks), task.member.name)
            results.append(score_member(task))
        if progress is not None:
            progress(len(tasks), len(tasks), "")
        return results
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    pool = concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=context, initializer=_ignore_interrupts
    )
    try:
        results = _collect(pool, tasks, progress)
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    return results


def _ignore_interrupts() -> None:
    """A member worker leaves Ctrl-C to the command: a terminal sends it to the whole
    process group, and the command stops the workers itself (`_stop`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Cancel the members not started and end the running ones now (their build cache
    writes are atomic, so every cache stays whole), then wait for them to exit."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, AttributeError):
            process.terminate()
    for process in processes:
        with contextlib.suppress(OSError, AttributeError):
            process.join(timeout=10)


def _collect(
    pool: concurrent.futures.Executor,
    tasks: Sequence[MemberTask],
    progress: Callable[[int, int, str], None] | None,
) -> list[MemberResult]:
    futures = [pool.submit(score_member, task) for task in tasks]
    try:
        results: list[MemberResult] = []
        for done, future in enumerate(futures):
            if progress is not None:
                progress(done, len(tasks), tasks[done].member.name)
            try:
                results.append(future.result())
            except concurrent.futures.process.BrokenProcessPool:
                raise CliError(
                    "a worker process ended without a result before member "
                    f"{tasks[done].member.name!r} was scored (it was killed, or code it ran, "
                    "such as a plugin, ended the process itself)"
                ) from None
        if progress is not None:
            progress(len(tasks), len(tasks), "")
        return results
    except BaseException:
        for future in futures:
            future.cancel()
        raise


# --- aggregates ------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Aggregate:
    """One backend's metric over a set of members: macro and micro means and the counts."""

    macro: float | None
    micro: float | None
    members: int
    queries: int


def chosen_metrics(results: Sequence[MemberResult]) -> tuple[Metric, ...]:
    """The chunk metrics every member reported, in registry order."""
    keys = set(results[0].metrics) if results else set()
    for result in results[1:]:
        keys &= set(result.metrics)
    return tuple(item for item in METRICS if item.key in keys)


def backend_order(results: Sequence[MemberResult]) -> tuple[str, ...]:
    """The backends of the first member, in report order (every member runs the same)."""
    return tuple(name for name, _ in results[0].values) if results else ()


def aggregate(results: Sequence[MemberResult], backend: str, item: Metric) -> Aggregate:
    """`item` of `backend` over `results`: the mean over members of each member's
    aggregate (macro) and the aggregate over all their queries (micro), in manifest and
    case order."""
    member_means: list[float] = []
    every_value: list[float] = []
    for result in results:
        cases = dict(result.values).get(backend, ())
        values = [case_values[item.key] for _, case_values in cases if item.key in case_values]
        if values:
            member_means.append(item.aggregate(values))
            every_value.extend(values)
    macro = _mean(member_means) if member_means else None
    micro = item.aggregate(every_value) if every_value else None
    return Aggregate(macro, micro, len(member_means), len(every_value))


def _mean(values: Sequence[float]) -> float:
    total = 0.0
    for value in values:  # in order, as every mean of the reports is summed
        total += value
    return total / len(values)


def member_tasks(
    manifest: SuiteManifest, args: argparse.Namespace, cache_root: str, single_core: bool
) -> list[MemberTask]:
    """One task per member, corpora resolved (git members checked out) here, in manifest
    order. With `single_core` (several member workers, or a cluster whose worker processes
    may not start processes of their own) each member's build runs on one core."""
    from cce_cli.evaluation.corpora import member_corpus

    options = member_options(args)
    # Progress is the suite's, member by member; the members' own builds draw no bars.
    options["progress"] = False
    if single_core:
        options["jobs"] = 1
    return [
        MemberTask(member, member_corpus(member, cache_root), options)
        for member in manifest.members
    ]


def suite_cache_root() -> str:
    """The cache directory's root (`cce_cli.commands.build_options.cache_root`), where git
    members are checked out beside the build cache."""
    from cce_cli.commands.build_options import cache_root

    return cache_root()


def run_suite(args: argparse.Namespace) -> int:
    """`cce relevance SUITE.toml`: score every member, render the suite report, gate."""
    from cce_cli.compare.gate import gate_spec
    from cce_cli.render.output import write_stdout
    from cce_cli.render.suite import render_suite

    for flag, given in (("--store", args.store), ("--dir", args.dir)):
        if given is not None:
            raise CliError(
                f"{flag} does not apply to a suite: each member names its own corpus "
                "in the manifest",
                exit_code=2,
            )
    spec = gate_spec(args)
    if spec.active and args.compare is None:
        raise CliError(
            "--fail-on-significant, --fail-on-query-regression and --min need --compare A,B "
            "(B is the head); or gate two saved suite reports with `cce diff`",
            exit_code=2,
        )
    manifest = read_manifest(str(args.fixtures))
    if args.export_qrels is not None:
        from cce_cli.formats.suite_qrels import write_suite_qrels

        write_suite_qrels(str(args.export_qrels), manifest, args.granularity, args.graded)
    if args.config is None:
        from cce_cli.evaluation.configurations import config_for, requested

        # Read (and named on stderr) once here when a chosen backend needs it; the
        # members then take it as given, or, when none does, read nothing either.
        wanted = requested(args.compare, args.backend, runs=args.run)
        args.config = config_for(None, manifest.path, wanted).path
        args.config_start = manifest.path
    executor = getattr(args, "executor", None) or manifest.executor
    jobs = 1 if executor is not None else (args.jobs or 1)
    tasks = member_tasks(manifest, args, suite_cache_root(), executor is not None or jobs > 1)
    forced = getattr(args, "progress", None)
    shown = sys.stderr is not None and (sys.stderr.isatty() if forced is None else bool(forced))
    results = run_members(tasks, jobs, executor, _member_progress if shown else None)
    if args.results is not None:
        from cce_cli.formats.results_file import write_run

        write_run(str(args.results), suite_results(manifest, results, args.results_format))
    comparison = None
    if args.compare is not None:
        comparison = compare_suite(manifest, results, args)
        if spec.active:
            comparison = gate_suite(spec, comparison, results, args)
    write_stdout(render_suite(manifest, results, args.format or "text", comparison))
    if comparison is None or not spec.active:
        return 0
    from cce_cli.commands.diff import append_step_summary, report_gate
    from cce_cli.render.diff import render_diff_markdown

    # A gated comparison is a CI step: its job summary gets the diff, as `cce diff`'s.
    append_step_summary(render_diff_markdown(comparison))
    return report_gate(comparison.gate_reasons)


def _member_progress(done: int, total: int, running: str) -> None:
    """One stderr line per step: members done out of total, and the member awaited."""
    waiting = f", scoring {running}" if running else ""
    print(f"members: {done}/{total} done{waiting}", file=sys.stderr, flush=True)


# --- comparing and gating -----------------------------------------------------------------


def flattened_backend(results: Sequence[MemberResult], backend: str) -> Any:
    """`backend`'s cases over the whole suite, ids qualified as `member/case-id`, in
    manifest and case order, with full-precision values."""
    from cce_cli.compare.pairing import SavedBackend, SavedCase

    cases = [
        SavedCase(f"{result.name}/{case_id}", values, result.tags.get(case_id, ()))
        for result in results
        for name, rows in result.values
        if name == backend
        for case_id, values in rows
    ]
    return SavedBackend(backend, tuple(cases), {})


def compare_suite(
    manifest: SuiteManifest, results: Sequence[MemberResult], args: argparse.Namespace
) -> Any:
    """The paired comparison of `--compare A,B` over every query of the suite."""
    from cce_cli.compare.pairing import SavedReport, diff_reports

    base_name, head_name = backend_order(results)
    side = SavedReport(
        manifest.path, None, None, (), members=tuple(member.name for member in manifest.members)
    )
    return diff_reports(
        side,
        side,
        flattened_backend(results, base_name),
        flattened_backend(results, head_name),
        test=args.test,
        correction=args.correction,
        alpha=args.alpha,
        by_tag=args.by_tag,
    )


def gate_suite(spec: Any, comparison: Any, results: Sequence[MemberResult], args: Any) -> Any:
    """The comparison with the gate's verdict on it: floors (`--min`) test the head's macro
    aggregate, or its micro aggregate with `--min-aggregate micro`."""
    from cce_cli.compare.gate import check_gate_metrics, evaluate_gate, refuse_uncalibrated_gate

    head = comparison.head.backend
    which = getattr(args, "min_aggregate", None) or "macro"

    def head_value(item: Metric) -> float | None:
        found = aggregate(results, head, item)
        return found.micro if which == "micro" else found.macro

    shown = f"{display_text(head)} ({which} over the suite)"
    check_gate_metrics(spec, comparison.overall, head_value, shown)
    refuse_uncalibrated_gate(spec, comparison.overall, args.test)
    reasons = evaluate_gate(
        spec,
        comparison.overall,
        head_value,
        head=shown,
        correction=args.correction,
        alpha=args.alpha,
    )
    return attrs.evolve(comparison, gate_active=True, gate_reasons=reasons)
