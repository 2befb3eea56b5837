"""Two saved reports compared: paired by case, tested, and judged by the gate.

Why it exists: `cce diff BASE.json HEAD.json` and a Python caller (`cce_cli.api`) read,
pair and gate two saved reports the same way, from one frozen `DiffRequest`. It owns the
order of the checks - provenance naming different fixture files warns (or, `strict`,
refuses) before anything is paired, an uncalibrated gate is refused before anything is
written - and the gate's verdict on the head's aggregates (docs/gating.md). Printing the
rendering, the job summary and the exit status are the caller's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import attrs

from cce_cli.compare import pairing, saved_report
from cce_cli.compare.gate import (
    GateSpec,
    check_gate_metrics,
    evaluate_gate,
    refuse_uncalibrated_gate,
    with_verdict,
)
from cce_cli.compare.many import ManyComparison, compare_many
from cce_cli.compare.suite_inference import mean_heading, resolve_suite_mean, retest_suite
from cce_cli.compare.tag_family import adjust_tag_family
from cce_cli.errors import CliError
from cce_cli.evaluation.provenance import differing_fixtures
from cce_cli.formats.evidence import Evidence
from cce_cli.output import display_text

__all__ = [
    "DiffRequest",
    "SavedDiff",
    "check_fixtures_alike",
    "compare_saved_many",
    "diff_saved",
    "gate_diff",
]


@attrs.frozen(slots=True)
class DiffRequest:
    """One `cce diff`: the two saved reports, which backends, the test and the gate.

    The defaults are the command's without flags; `backend` names the backend on both
    sides, `backends` is `BASE,HEAD`."""

    base: str
    head: str
    backend: str | None = None
    backends: str | None = None
    test: str = "t"
    correction: str = "holm"
    alpha: float = 0.05
    by_tag: bool = False
    gate: GateSpec = attrs.field(factory=GateSpec)
    min_aggregate: str | None = None
    """For suite reports, the aggregate `--min` floors; None: the tested mean."""
    strict: bool = False
    mean: str | None = None
    """For suite reports, the mean tested and shown (`--mean`); None: `min_aggregate`,
    else macro (`cce_cli.compare.suite_inference`)."""
    unit: str = "query"
    """For suite reports, `member` tests the members' mean deltas (`--unit`)."""
    tag_scope: str = "tag"
    """With `by_tag`, the correction's scope: each tag, or every tag × metric (`family`)."""


@attrs.frozen(slots=True)
class SavedDiff:
    """The comparison of two saved reports, with what the gate judges it by: the head's
    backend (its aggregates) and the head report's path."""

    report: pairing.DiffReport
    head_backend: saved_report.SavedBackend
    head_path: str


def check_fixtures_alike(
    base: saved_report.SavedReport, head: saved_report.SavedReport, strict: bool
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


def diff_saved(
    request: DiffRequest, evidence: Callable[[], Evidence | None] | None = None
) -> SavedDiff:
    """Load, pair and test the two reports, add the `evidence` (read after the reports),
    and judge the gate when one is on; the unpaired cases are a warning on stderr."""
    mean = resolve_suite_mean(request.mean, request.min_aggregate)
    base = saved_report.load_report(request.base, mean)
    head = saved_report.load_report(request.head, mean)
    check_fixtures_alike(base, head, request.strict)
    base_backend, head_backend = saved_report.select_backends(
        base, head, request.backend, request.backends
    )
    report = pairing.diff_reports(
        base,
        head,
        base_backend,
        head_backend,
        test=request.test,
        correction=request.correction,
        alpha=request.alpha,
        by_tag=request.by_tag,
    )
    if report.members is not None:
        report = retest_suite(report, mean, request.unit)
    elif request.unit != "query" or request.mean is not None:
        flag = "--unit member" if request.unit != "query" else f"--mean {request.mean}"
        raise CliError(
            f"{flag} needs two suite reports (cce.suite.report/v1): only a suite has "
            "members whose means it could weigh or test",
            exit_code=2,
        )
    report = adjust_tag_family(report, request.tag_scope)
    loaded = evidence() if evidence is not None else None
    if loaded is not None:
        queries = {**loaded.queries(), **report.queries}
        report = attrs.evolve(report, evidence=loaded, queries=queries)
    diffed = gate_diff(SavedDiff(report, head_backend, head.path), request.gate)
    unpaired = len(report.unpaired_base) + len(report.unpaired_head)
    if unpaired:
        print(
            f"warning: {unpaired} case{'s are' if unpaired != 1 else ' is'} in only one report "
            "and excluded from the tests (listed in the output)",
            file=sys.stderr,
        )
    return diffed


def compare_saved_many(
    paths: Sequence[str],
    backend: str | None,
    *,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    aggregate: str = "macro",
) -> ManyComparison:
    """`cce diff BASE HEAD MORE...`: every head against the base in one table; the
    backend is `backend` in every report, or each report's only one."""
    sides = []
    for path in paths:
        report = saved_report.load_report(path, aggregate)
        if backend is not None:
            chosen = report.backend(backend, "--backend NAME")
        elif len(report.backends) == 1:
            chosen = report.backends[0]
        else:
            names = ", ".join(report.backend_names())
            raise CliError(
                f"{path} has {len(report.backends)} backends ({names}); choose with --backend NAME",
                exit_code=2,
            )
        sides.append((report, chosen))
    return compare_many(sides, test=test, correction=correction, alpha=alpha)


def gate_diff(diffed: SavedDiff, spec: GateSpec) -> SavedDiff:
    """The comparison with the gate's verdict on it (`gate_active`, `gate_reasons`); an
    uncalibrated gate, or a floor on a metric the head does not carry, is refused.
    A suite comparison's mean (`macro` or `micro`, recorded by `retest_suite`) is what
    the head's floors test, and the reasons say so."""
    report = diffed.report
    refuse_uncalibrated_gate(spec, report.overall, report.test)
    if spec.gate_metrics is not None:
        report = attrs.evolve(report, gate_metrics=tuple(item.key for item in spec.gate_metrics))
        diffed = attrs.evolve(diffed, report=report)
    if not spec.active:
        return diffed
    head = diffed.head_backend
    over = "" if report.mean is None else f", {report.mean} over the suite"
    head_name = f"{display_text(head.name)} ({display_text(diffed.head_path)}{over})"
    check_gate_metrics(spec, report.overall, head.aggregate, head_name)
    reasons = evaluate_gate(
        spec,
        report.overall,
        head.aggregate,
        head=head_name,
        correction=report.correction,
        alpha=report.alpha,
        mean=mean_heading(report).removesuffix(" delta"),
    )
    return attrs.evolve(diffed, report=with_verdict(report, spec, reasons, report.correction))
