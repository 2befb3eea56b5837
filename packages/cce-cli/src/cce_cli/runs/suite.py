"""Running a suite: every member scored as its own fixture set, in parallel or on a Dask
cluster, then compared over every query and gated.

Why it exists: a benchmark of many repositories is one input. Each member is scored by
exactly the code path `cce relevance MEMBER_FIXTURES --dir CORPUS` runs
(`cce_cli.runs.single`), so its block in the suite report is the report that command
prints. Members are independent tasks: they run in `--jobs N` worker processes or on a
Dask cluster (`--executor dask://HOST:PORT`), and the report is assembled in manifest
order, so its bytes do not depend on where or in which order members ran. The
aggregates over members are `cce_cli.evaluation.suite`; `--compare A,B` pairs queries by
`member/case-id` over the whole suite (docs/suites.md).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import multiprocessing
import signal
import sys
from collections.abc import Callable, Iterator, Sequence

import attrs

from cce_cli.compare.gate import (
    GateSpec,
    check_gate_metrics,
    evaluate_gate,
    refuse_uncalibrated_gate,
    with_verdict,
)
from cce_cli.compare.pairing import DiffReport, backend_values, diff_reports
from cce_cli.compare.saved_report import SavedBackend, SavedCase, SavedReport
from cce_cli.compare.suite_inference import (
    check_suite_inference,
    mean_heading,
    resolve_suite_mean,
    retest_suite,
)
from cce_cli.compare.tag_family import adjust_tag_family
from cce_cli.errors import CliError
from cce_cli.evaluation.building import cache_root
from cce_cli.evaluation.configurations import config_for, requested
from cce_cli.evaluation.dask_executor import run_on_dask
from cce_cli.evaluation.member_workers import collect_in_order, in_order, member_workers
from cce_cli.evaluation.suite import MemberResult, aggregate, backend_order
from cce_cli.evaluation.timings import MemberTimings
from cce_cli.formats import trec
from cce_cli.formats.evidence import stored_code
from cce_cli.formats.results_file import RUN_SCHEMA, render_run, write_run
from cce_cli.formats.suite_evidence import MemberEvidence, member_evidence
from cce_cli.formats.suite_manifest import Member, SuiteManifest, read_manifest, select_members
from cce_cli.output import display_text
from cce_cli.runs.request import RunRequest
from cce_cli.runs.single import Scored, score
from cce_metrics import Metric
from cce_retrieval import PluginError, PluginInterrupt, forks_without_garbage


@attrs.frozen(slots=True)
class MemberTask:
    """What a worker needs to score one member: the member and the request it is scored
    with (its fixtures and corpus in it), plain values only, so the task pickles for any
    executor."""

    member: Member
    request: RunRequest
    wants_results: bool = False
    """Whether the suite writes `--results` (in the request's `results_format`), so the
    member returns its lines."""
    wants_evidence: bool = False
    """Whether the suite renders HTML, so the member returns its results and their code."""


def score_member(task: MemberTask) -> MemberResult:
    """Score one member exactly as `cce relevance FIXTURES --dir CORPUS --json` would.

    Runs in a worker process or on a Dask worker; a `CliError` or a plugin's failure is
    returned to the caller as a `CliError` with the member's name on it."""
    try:
        scored = score(task.request)
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
    if task.wants_results:
        results_text = _member_results(task, scored)
    values = tuple(
        (report.backend, tuple(backend_values(report, scored.metrics))) for report in scored.reports
    )
    tags = {case.id: tuple(case.tags) for case in scored.fixture_set.cases}
    return MemberResult(
        task.member.name,
        scored.text,
        values,
        tags,
        tuple(item.key for item in (*scored.metrics, *scored.cost_metrics)),
        results_text,
        _member_evidence(task, scored) if task.wants_evidence else None,
        MemberTimings(
            scored.index_seconds,
            {
                report.backend: tuple(case.latency_ms for case in report.cases)
                for report in scored.reports
            },
        ),
        scored.parsed_chunks,
    )


def _member_run(task: MemberTask, scored: Scored) -> str:
    """The member's results as its own `cce.run/v1` file (ids not yet qualified)."""
    return render_run(
        str(task.request.corpus),
        scored.embedder,
        scored.fixture_set.cases,
        scored.reports,
        granularity=task.request.granularity,
    )


def _member_evidence(task: MemberTask, scored: Scored) -> MemberEvidence:
    """The member's results and the code its store kept, qualified by its name."""
    run_text = _member_run(task, scored)
    return member_evidence(task.member.name, run_text, stored_code(scored.reports))


def _member_results(task: MemberTask, scored: Scored) -> str:
    """What `--results` holds for this member, its case ids qualified as `member/id`."""
    prefix = f"{task.member.name}/"
    granularity = task.request.granularity
    if task.request.results_format in trec.RUN_FORMATS:
        return trec.run_text(
            task.request.results_format,
            scored.fixture_set,
            scored.reports,
            granularity=granularity,
            prefix=prefix,
        )
    lines = []
    # The header is the suite's, written once.
    for line in _member_run(task, scored).splitlines()[1:]:
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
    embedder = json.loads(results[0].report_json).get("embedder", "") if results else ""
    header = {"corpus": manifest.path, "embedder": embedder, "schema": RUN_SCHEMA}
    line = json.dumps(header, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return line + "\n" + body


# --- running the members -------------------------------------------------------------


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
        names = [task.member.name for task in tasks]
        return in_order(tasks, names, lambda task, _name: score_member(task), progress)
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    with _interrupts_held():
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


_HOLDS_SIGNALS = hasattr(signal, "pthread_sigmask")
_POLL_SECONDS = 0.1
"""How long a wait for a member's result lasts before a held Ctrl-C is let through."""


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT blocked while the pool runs, so a Ctrl-C is raised only where
    `_let_interrupts_through` lets it in, never inside the executor's own locks.

    A `KeyboardInterrupt` that lands between a lock's acquisition and the `with` block
    that releases it (inside `ProcessPoolExecutor.submit`, say) leaves the lock held; the
    executor's manager thread then waits on it forever, and so does the interpreter's
    exit, which joins that thread: the command printed `error: interrupted` and never
    ended. The pool's threads start while the signal is blocked and keep it blocked, so
    the kernel can hand a Ctrl-C to no thread but this one, at the moments it chooses.
    Leaving restores the mask, which delivers a Ctrl-C still pending."""
    if not _HOLDS_SIGNALS:
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _let_interrupts_through() -> None:
    """Deliver a Ctrl-C held by `_interrupts_held` here, where no lock is held: the
    handler raises `KeyboardInterrupt` (and counts it) at the next bytecode."""
    if _HOLDS_SIGNALS and signal.SIGINT in signal.sigpending():
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _ignore_interrupts() -> None:
    """A member worker leaves Ctrl-C to the command: a terminal sends it to the whole
    process group, and the command stops the workers itself (`_stop`). The worker was
    forked while the command held SIGINT blocked; it unblocks it, so that what it starts
    gets the usual signal mask (with SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _HOLDS_SIGNALS:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _stop(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Cancel the members not started and end the running ones now (their build cache
    writes are atomic, so every cache stays whole), then wait for them and for the
    executor's manager thread to exit: a manager thread still winding down when a later
    suite forks its workers could hold a lock they inherit
    (`cce_retrieval.forks_without_garbage`)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, AttributeError):
            process.terminate()
    for process in processes:
        with contextlib.suppress(OSError, AttributeError):
            process.join(timeout=10)
    if manager is not None:
        with contextlib.suppress(RuntimeError, AttributeError):
            manager.join(timeout=10)


def _collect(
    pool: concurrent.futures.Executor,
    tasks: Sequence[MemberTask],
    progress: Callable[[int, int, str], None] | None,
) -> list[MemberResult]:
    # A fork-context pool forks all its workers inside the first `submit`.
    with forks_without_garbage():
        futures = [pool.submit(score_member, task) for task in tasks]
    return collect_in_order(futures, [task.member.name for task in tasks], _member_result, progress)


def _member_result(future: concurrent.futures.Future[MemberResult], name: str) -> MemberResult:
    try:
        while True:
            _let_interrupts_through()
            try:
                return future.result(timeout=_POLL_SECONDS)
            except concurrent.futures.TimeoutError:
                continue
    except concurrent.futures.process.BrokenProcessPool:
        raise CliError(
            f"a worker process ended without a result before member {name!r} was scored "
            "(it was killed, or code it ran, such as a plugin, ended the process itself)"
        ) from None


def member_tasks(
    manifest: SuiteManifest, request: RunRequest, cache_root: str, single_core: bool
) -> list[MemberTask]:
    """One task per member, corpora resolved (git members checked out) here, in manifest
    order. With `single_core` (several member workers, or a cluster whose worker processes
    may not start processes of their own) each member's build runs on one core."""
    from cce_cli.evaluation.corpora import member_corpus

    return [
        MemberTask(
            member,
            request.for_member(
                member.fixtures,
                member_corpus(member, cache_root),
                member.name,
                single_core=single_core,
            ),
            wants_results=request.results is not None,
            wants_evidence=request.format == "html",
        )
        for member in manifest.members
    ]


@attrs.frozen(slots=True)
class SuiteRun:
    """A suite scored: its manifest, every member's result in manifest order, the
    comparison over every query (with the gate's verdict on it when a gate is on) and the
    report rendered in the requested format."""

    manifest: SuiteManifest
    results: tuple[MemberResult, ...]
    comparison: DiffReport | None
    text: str
    gated: bool = False


def check_suite_request(request: RunRequest) -> None:
    """Refuse the options a suite cannot take (usage errors, exit 2)."""
    for flag, given in (
        ("--store", request.store),
        ("--dir", request.corpus),
    ):
        if given is not None:
            raise CliError(
                f"{flag} does not apply to a suite: each member names its own corpus "
                "in the manifest",
                exit_code=2,
            )


def run_suite(request: RunRequest) -> SuiteRun:
    """`cce relevance SUITE.toml`: score every member, write `--results`, compare, gate
    and render the suite report; the caller prints it and reports the gate."""
    from cce_cli.render.suite import render_suite

    check_suite_request(request)
    spec = request.gate
    if spec.active and request.compare is None:
        raise CliError(
            "--fail-on-significant, --fail-on-query-regression and --min need --compare A,B "
            "(B is the head); or gate two saved suite reports with `cce diff`",
            exit_code=2,
        )
    if request.compare is not None:
        # Refused before any member is scored: the mean and unit need a test that has a form.
        mean = resolve_suite_mean(request.mean, request.min_aggregate)
        check_suite_inference(mean, request.unit, request.test)
    manifest = read_manifest(str(request.fixtures))
    if request.members is not None:
        manifest = select_members(manifest, request.members)
    if request.export_qrels is not None:
        from cce_cli.formats.suite_qrels import write_suite_qrels

        write_suite_qrels(request.export_qrels, manifest, request.granularity, request.graded)
    if request.config is None:
        # Read (and named on stderr) once here when a chosen backend needs it; the
        # members then take it as given, or, when none does, read nothing either.
        wanted = requested(request.compare, request.backends, runs=list(request.runs))
        request = attrs.evolve(
            request,
            config=config_for(None, manifest.path, wanted).path,
            config_start=manifest.path,
        )
    executor = request.executor or manifest.executor
    jobs = 1 if executor is not None else (request.build.jobs or 1)
    tasks = member_tasks(manifest, request, cache_root(), executor is not None or jobs > 1)
    shown = sys.stderr is not None and request.build.wants_progress()
    results = run_members(tasks, jobs, executor, _member_progress if shown else None)
    if request.results is not None:
        write_run(str(request.results), suite_results(manifest, results, request.results_format))
    comparison = None
    if request.compare is not None:
        comparison = compare_suite(manifest, results, request)
        if spec.active:
            comparison = gate_suite(spec, comparison, results, request)
    text = render_suite(
        manifest, results, request.format or "text", comparison, timings=request.timings
    )
    return SuiteRun(manifest, tuple(results), comparison, text, spec.active)


def _member_progress(done: int, total: int, running: str) -> None:
    """One stderr line per step: members done out of total, and the member awaited."""
    waiting = f", scoring {running}" if running else ""
    print(f"members: {done}/{total} done{waiting}", file=sys.stderr, flush=True)


def flattened_backend(results: Sequence[MemberResult], backend: str) -> SavedBackend:
    """`backend`'s cases over the whole suite, ids qualified as `member/case-id`, in
    manifest and case order, with full-precision values."""
    cases = [
        SavedCase(f"{result.name}/{case_id}", values, result.tags.get(case_id, ()))
        for result in results
        for name, rows in result.values
        if name == backend
        for case_id, values in rows
    ]
    return SavedBackend(backend, tuple(cases), {})


def compare_suite(
    manifest: SuiteManifest, results: Sequence[MemberResult], request: RunRequest
) -> DiffReport:
    """The paired comparison of `--compare A,B` over every query of the suite, tested on
    the mean and unit the request names (`cce_cli.compare.suite_inference`)."""
    base_name, head_name = backend_order(results)
    side = SavedReport(
        manifest.path, None, None, (), members=tuple(member.name for member in manifest.members)
    )
    pooled = diff_reports(
        side,
        side,
        flattened_backend(results, base_name),
        flattened_backend(results, head_name),
        test=request.test,
        correction=request.correction,
        alpha=request.alpha,
        by_tag=request.by_tag,
    )
    mean = resolve_suite_mean(request.mean, request.min_aggregate)
    return adjust_tag_family(retest_suite(pooled, mean, request.unit), request.tag_scope)


def gate_suite(
    spec: GateSpec, comparison: DiffReport, results: Sequence[MemberResult], request: RunRequest
) -> DiffReport:
    """The comparison with the gate's verdict on it: floors (`--min`) test the head's macro
    aggregate, or its micro aggregate with `--mean micro` (or `--min-aggregate micro`):
    the mean the comparison tested."""
    head = comparison.head.backend
    which = comparison.mean or "macro"

    def head_value(item: Metric) -> float | None:
        found = aggregate(results, head, item)
        return found.micro if which == "micro" else found.macro

    shown = f"{display_text(head)} ({which} over the suite)"
    check_gate_metrics(spec, comparison.overall, head_value, shown)
    refuse_uncalibrated_gate(spec, comparison.overall, request.test)
    reasons = evaluate_gate(
        spec,
        comparison.overall,
        head_value,
        head=shown,
        correction=request.correction,
        alpha=request.alpha,
        mean=mean_heading(comparison).removesuffix(" delta"),
    )
    return with_verdict(comparison, spec, reasons, request.correction)
