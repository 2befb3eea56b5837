"""Before against after: pairing two saved relevance reports by case id and testing the change.

Why it exists: a ranking change is judged by running the labeled queries before it
(base) and after it (head) and asking, per metric, which queries moved and whether the
mean moved more than noise would. This module owns the model of that answer
(`DiffReport`): reading `cce.relevance.report/v2` documents of any layout, choosing the
backend on each side, pairing cases by id (never by position), and per metric the
per-query base/head/delta rows, the paired test through the `cce_stats` protocol, the
adjusted p-value over the metrics compared, d_z and wins/ties/losses. The same
computation serves `cce relevance --compare` (`diff_backend_reports`), so its gate
sees exactly the numbers the comparison printed. Rendering is `cce_cli.render.diff`,
the pass/fail rules `cce_cli.compare.gate` (docs/gating.md).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from cce_cli.errors import CliError
from cce_cli.evaluation.harness import BackendReport
from cce_cli.formats import input_files, json_text
from cce_cli.formats.evidence import Evidence
from cce_cli.formats.schemas import REPORT_SCHEMA
from cce_cli.formats.suite_manifest import SUITE_REPORT_SCHEMA
from cce_metrics import COST, COST_METRICS, METRICS, TOKEN, TOKEN_METRICS, Metric
from cce_stats import (
    PairedTestResult,
    adjust_p_values,
    effect_size_dz,
    paired_test,
    wins_ties_losses,
)

__all__ = [
    "DIFF_SCHEMA",
    "DiffGroup",
    "DiffReport",
    "DiffSide",
    "MetricDiff",
    "QueryDelta",
    "SavedBackend",
    "SavedCase",
    "SavedReport",
    "backend_values",
    "decimal_number",
    "diff_backend_reports",
    "diff_reports",
    "head_aggregate",
    "load_report",
    "outside_bounds",
    "parse_report",
    "select_backends",
]

DIFF_SCHEMA: Final = "cce.relevance.diff/v1"

_FIX = f"pass a {REPORT_SCHEMA} document, e.g. from `cce relevance ... --json`"


_CHOOSE_BACKENDS = "--backend NAME or --backends BASE,HEAD"
"""How `cce diff` chooses a saved report's backends (`cce report` has only `--backends`)."""


@attrs.frozen(slots=True)
class SavedCase:
    """One per-query row of a saved report: its id, scores by metric key, its tags."""

    id: str
    values: Mapping[str, float]
    tags: tuple[str, ...] = ()
    query: str | None = None


@attrs.frozen(slots=True)
class SavedBackend:
    """One backend of a saved report: its cases in report order and its aggregates."""

    name: str
    cases: tuple[SavedCase, ...]
    aggregates: Mapping[str, float]
    config: Mapping[str, Any] | None = None

    def aggregate(self, item: Metric) -> float | None:
        """The report's own aggregate of `item`, else the mean over the cases that have
        it (in case order); None when no case has it."""
        found = self.aggregates.get(item.key)
        if found is not None:
            return found
        values = [case.values[item.key] for case in self.cases if item.key in case.values]
        if not values:
            return None
        return item.aggregate(values)


@attrs.frozen(slots=True)
class SavedReport:
    """A parsed `cce.relevance.report/v2` document."""

    path: str
    corpus: str | None
    embedder: str | None
    backends: tuple[SavedBackend, ...]
    members: tuple[str, ...] | None = None
    """A suite report's member names (its case ids are `member/case-id`); else None."""
    provenance: Mapping[str, Any] | None = None

    def backend_names(self) -> tuple[str, ...]:
        return tuple(backend.name for backend in self.backends)

    def backend(self, name: str, choose_with: str = _CHOOSE_BACKENDS) -> SavedBackend:
        """The backend `name`; a CliError naming the report's backends and `choose_with`,
        the flags of the command at hand that choose one."""
        for backend in self.backends:
            if backend.name == name:
                return backend
        names = ", ".join(self.backend_names()) or "none"
        raise CliError(
            f"{self.path}: no backend {name!r} in this report (it has: {names}); "
            f"name one of those with {choose_with}"
        )


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A number written out in ASCII digits, as JSON and cce's own reports write one.
Python's `float` also reads `1_0` (as 10), padding spaces and other scripts' digits."""

_ROUNDING = 1e-9
"""How far past its bounds a full-precision score may stray by floating-point rounding
(nDCG's ratio of sums can come out at 1.0000000000000002)."""


def decimal_number(value: object) -> float:
    """A JSON number or a decimal string (`"0.500000"`, `"+0.25"`) as a float; NaN for
    anything else (a bool, `"1_0"`, `" 1"`, `"inf"`), so callers refuse one test."""
    if isinstance(value, bool):
        return math.nan
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:
            return math.nan  # an integer of hundreds of digits
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        return float(value)
    return math.nan


def outside_bounds(item: Metric | None, value: float, *, spread: bool = False) -> str | None:
    """Why `value` cannot be `item`'s (a score, or with `spread` a difference of two
    scores), or None when it can or the metric has no bounds."""
    if item is None or item.bounds is None:
        return None
    low, high = item.bounds
    if spread:
        low, high = low - high, high - low
    if low - _ROUNDING <= value <= high + _ROUNDING:
        return None
    what = f"a change in {item.label}" if spread else f"{item.label}"
    return f"{what} lies in [{low:g}, {high:g}]"


def _score(path: str, where: str, value: object, item: Metric | None = None) -> float:
    """A score cell: a JSON number or a decimal string such as "0.500000", within the
    bounds of its metric."""
    number = decimal_number(value)
    if not math.isfinite(number):
        raise CliError(
            f"{path}: {where} is {json.dumps(value)}, not a score; "
            'scores are numbers or decimal strings such as "0.500000"'
        )
    bounds = outside_bounds(item, number)
    if bounds is not None:
        raise CliError(
            f"{path}: {where} is {json.dumps(value)}, which no run can score: {bounds}; "
            "the report was damaged or written by hand, so correct or regenerate it"
        )
    return number


def _known(key: str) -> Metric | None:
    """The registered metric whose report key is `key`, if any (a cost metric's key
    names it even before its family member was looked up)."""
    every: tuple[Metric, ...] = (*METRICS, *TOKEN_METRICS)
    found = next((item for item in every if item.key == key), None)
    return found if found is not None else COST_METRICS.resolve(key)


def _object(path: str, where: str, value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise CliError(f"{path}: {where} must be a JSON object; {_FIX}")
    return value


def _scores(path: str, where: str, body: Mapping[str, Any]) -> dict[str, float]:
    values: dict[str, float] = {}
    for item in METRICS:
        if item.key in body:
            values[item.key] = _score(path, f"{where}.{item.key}", body[item.key], item)
    tokens = body.get("tokens")
    if tokens is not None:
        tokens = _object(path, f"{where}.tokens", tokens)
        for item in TOKEN_METRICS:
            if item.report_key in tokens:
                where_token = f"{where}.tokens.{item.report_key}"
                values[item.key] = _score(path, where_token, tokens[item.report_key], item)
    cost = body.get("cost")
    if cost is not None:
        values.update(_cost_scores(path, f"{where}.cost", _object(path, f"{where}.cost", cost)))
    return values


def _cost_scores(path: str, where: str, cost: Mapping[str, Any]) -> dict[str, float]:
    """The cost metrics of a `cost` object (docs/report-formats.md#cost); a null value
    (a query without a target) is left out, like an absent token score."""
    values: dict[str, float] = {}
    for key, raw in sorted(cost.items()):
        item = COST_METRICS.resolve(key)
        if item is None or raw is None:
            continue  # `queries` and anything a later version adds
        values[item.key] = _score(path, f"{where}.{key}", raw, item)
    return values


def _case(path: str, where: str, row: object) -> SavedCase:
    body = _object(path, where, row)
    case_id = body.get("id")
    if not isinstance(case_id, str):
        raise CliError(f"{path}: {where}.id must be a string (the case id); {_FIX}")
    raw_tags = body.get("tags", [])
    if not isinstance(raw_tags, list) or not all(isinstance(tag, str) for tag in raw_tags):
        raise CliError(f"{path}: {where}.tags must be a list of strings")
    query = body.get("query")
    return SavedCase(
        case_id,
        _scores(path, where, body),
        tuple(raw_tags),
        query if isinstance(query, str) else None,
    )


def _backend(path: str, where: str, entry: object) -> SavedBackend:
    body = _object(path, where, entry)
    name = body.get("backend")
    if not isinstance(name, str):
        raise CliError(f"{path}: {where}.backend must be a string (the backend name); {_FIX}")
    rows = body.get("per_query")
    if not isinstance(rows, list):
        raise CliError(f"{path}: {where}.per_query must be a list of per-query rows; {_FIX}")
    cases = tuple(_case(path, f"{where}.per_query[{i}]", row) for i, row in enumerate(rows))
    seen: dict[str, int] = {}
    for index, case in enumerate(cases):
        if case.id in seen:
            raise CliError(
                f"{path}: backend {name} lists case id {case.id!r} twice "
                f"(per_query[{seen[case.id]}] and per_query[{index}]); "
                "case ids must be unique to pair cases"
            )
        seen[case.id] = index
    config = body.get("config")
    return SavedBackend(
        name, cases, _scores(path, where, body), config if isinstance(config, dict) else None
    )


def _refuse_duplicate_backends(path: str, where: str, backends: Sequence[SavedBackend]) -> None:
    """Two entries of one report with the same backend name: choosing by name would
    silently take the first and hide the other's scores."""
    seen: dict[str, int] = {}
    for index, backend in enumerate(backends):
        if backend.name in seen:
            raise CliError(
                f"{path}: {where}[{seen[backend.name]}] and {where}[{index}] are both backend "
                f"{json.dumps(backend.name, ensure_ascii=False)}; a report names each backend "
                "once, so keep one entry (or rename one) and compare again"
            )
        seen[backend.name] = index


def parse_report(text: str, path: str, aggregate: str = "macro") -> SavedReport:
    """Parse a v2 report, or a suite report flattened into one (`_parse_suite`); every
    problem is a CliError naming the file and the field."""
    try:
        document = json_text.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(
            f"{path}: line {error.lineno} column {error.colno}: invalid JSON ({error.msg}); {_FIX}"
        ) from None
    body = _object(path, "the document", document)
    schema = body.get("schema")
    if schema == SUITE_REPORT_SCHEMA:
        return _parse_suite(body, path, aggregate)
    if schema is not None and schema != REPORT_SCHEMA:
        raise CliError(
            f"{path}: schema is {json.dumps(schema)}, expected {json.dumps(REPORT_SCHEMA)}; {_FIX}"
        )
    entries = body.get("backends")
    if not isinstance(entries, list):
        raise CliError(f'{path}: no "backends" list; {_FIX}')
    backends = tuple(_backend(path, f"backends[{i}]", entry) for i, entry in enumerate(entries))
    _refuse_duplicate_backends(path, "backends", backends)
    corpus = body.get("corpus")
    embedder = body.get("embedder")
    provenance = body.get("provenance")
    return SavedReport(
        path,
        corpus if isinstance(corpus, str) else None,
        embedder if isinstance(embedder, str) else None,
        backends,
        provenance=provenance if isinstance(provenance, dict) else None,
    )


def load_report(path: str, aggregate: str = "macro") -> SavedReport:
    """Read and parse the report at `path` (UTF-8); for a suite report, `aggregate`
    (`macro` or `micro`) is the aggregate its backends carry."""
    return parse_report(read_report_text(path), path, aggregate)


def _parse_suite(body: Mapping[str, Any], path: str, aggregate: str) -> SavedReport:
    """A `cce.suite.report/v1` document as one report over every member's cases: case ids
    become `member/case-id`, in member and case order, and each backend's aggregates are
    the suite's `aggregate` (macro: the mean of the members' means; micro: over all
    queries), which floors (`--min`) test."""
    members = body.get("members")
    if not isinstance(members, list) or not members:
        raise CliError(f'{path}: a suite report needs a "members" list; {_FIX}')
    names: list[str] = []
    cases: dict[str, list[SavedCase]] = {}
    for i, member in enumerate(members):
        entry = _object(path, f"members[{i}]", member)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise CliError(f"{path}: members[{i}] has no name; {_FIX}")
        names.append(name)
        report = _object(path, f"members[{i}].report", entry.get("report"))
        backends = report.get("backends")
        if not isinstance(backends, list):
            raise CliError(f'{path}: members[{i}].report has no "backends" list; {_FIX}')
        parsed = tuple(
            _backend(path, f"members[{i}].report.backends[{j}]", raw)
            for j, raw in enumerate(backends)
        )
        _refuse_duplicate_backends(path, f"members[{i}].report.backends", parsed)
        for backend in parsed:
            cases.setdefault(backend.name, []).extend(
                attrs.evolve(case, id=f"{name}/{case.id}") for case in backend.cases
            )
    aggregates = body.get("aggregates")
    totals = aggregates if isinstance(aggregates, Mapping) else {}
    flattened = []
    for name, rows in cases.items():
        overall = totals.get(name, {}).get("overall", {}) if isinstance(totals, Mapping) else {}
        chosen: dict[str, float] = {}
        if isinstance(overall, Mapping):
            for key, cell in overall.items():
                if isinstance(cell, Mapping) and cell.get(aggregate) is not None:
                    chosen[key] = _score(
                        path, f"aggregates.{name}.overall.{key}", cell[aggregate], _known(key)
                    )
        flattened.append(SavedBackend(name, tuple(rows), chosen))
    # Kept so that `cce diff` can compare each member's fixture hash (docs/gating.md).
    provenance = body.get("provenance")
    return SavedReport(
        path,
        None,
        None,
        tuple(flattened),
        provenance=provenance if isinstance(provenance, dict) else None,
        members=tuple(names),
    )


def read_report_text(path: str) -> str:
    """The text of the JSON report at `path`, or a CliError naming it and the cause."""
    try:
        data = input_files.read_input(path, input_files.REPORT)
    except OSError as error:
        cause = error.strerror or str(error)
        raise CliError(f"could not read report {path}: {cause}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"could not read report {path}: it is not valid UTF-8") from None


def select_backends(
    base: SavedReport,
    head: SavedReport,
    backend: str | None,
    backends: str | None,
    choose_with: str = _CHOOSE_BACKENDS,
) -> tuple[SavedBackend, SavedBackend]:
    """The backend of each side: `--backend NAME`, `--backends BASE,HEAD`, or the only one;
    `choose_with` names the flags the command at hand has for that."""
    if backends is not None:
        parts = [part.strip() for part in backends.split(",")]
        if len(parts) != 2 or not all(parts):
            raise CliError(
                f"--backends needs two names, BASE,HEAD (e.g. bm25,hybrid), got {backends!r}",
                exit_code=2,
            )
        return base.backend(parts[0], choose_with), head.backend(parts[1], choose_with)
    if backend is not None:
        return base.backend(backend, choose_with), head.backend(backend, choose_with)
    for report in (base, head):
        if len(report.backends) != 1:
            names = ", ".join(report.backend_names()) or "none"
            raise CliError(
                f"{report.path} has {len(report.backends)} backends ({names}); "
                f"choose with {choose_with}",
                exit_code=2,
            )
    return base.backends[0], head.backends[0]


@attrs.frozen(slots=True)
class QueryDelta:
    """One paired query on one metric: base value, head value, head − base."""

    id: str
    base: float
    head: float
    delta: float


@attrs.frozen(slots=True)
class MetricDiff:
    """One metric compared over the paired queries that have it on both sides."""

    metric: Metric
    rows: tuple[QueryDelta, ...]
    result: PairedTestResult
    p_adjusted: float | None
    effect_size: float | None
    wins: int
    ties: int
    losses: int

    @property
    def n(self) -> int:
        return len(self.rows)

    def worse(self, row: QueryDelta) -> bool:
        """Whether the head is worse than the base on this row."""
        return row.delta < 0.0 if self.metric.higher_is_better else row.delta > 0.0

    @property
    def moved_worse(self) -> bool:
        """Whether the mean moved in the worse direction."""
        mean = self.result.mean_delta
        return mean < 0.0 if self.metric.higher_is_better else mean > 0.0


@attrs.frozen(slots=True)
class DiffGroup:
    """Every compared metric over one set of paired queries (all of them, or one tag)."""

    tag: str | None
    case_ids: tuple[str, ...]
    metrics: tuple[MetricDiff, ...]

    def metric(self, key: str) -> MetricDiff | None:
        for item in self.metrics:
            if item.metric.key == key:
                return item
        return None


@attrs.frozen(slots=True)
class DiffSide:
    """Which report and backend a side of the diff is."""

    path: str
    backend: str
    corpus: str | None
    embedder: str | None
    config: Mapping[str, Any] | None = None
    provenance: Mapping[str, Any] | None = None


@attrs.frozen(slots=True)
class DiffReport:
    """Base against head: the paired comparison, the unpaired ids and the settings."""

    base: DiffSide
    head: DiffSide
    test: str
    correction: str
    alpha: float
    overall: DiffGroup
    unpaired_base: tuple[str, ...]
    unpaired_head: tuple[str, ...]
    tags: tuple[DiffGroup, ...] | None = None
    gate_active: bool = False
    gate_reasons: tuple[str, ...] = ()
    members: tuple[str, ...] | None = None
    """For suite reports: the member names, whose cases carry `member/` ids."""
    # What the reviewer-facing renderings show beside the numbers: each case's query
    # text (from the reports' rows or a results file) and what each side retrieved.
    queries: Mapping[str, str] = attrs.field(factory=dict)
    evidence: Evidence | None = None
    # A suite comparison's tested mean and unit (`cce_cli.compare.suite_inference`):
    # mean "macro" or "micro" (None: not a suite), unit "query" or "member".
    mean: str | None = None
    unit: str = "query"
    tag_scope: str = "tag"
    """What the correction adjusts over with `--by-tag`: "tag" (each tag's metrics) or
    "family" (every tag × metric at once, `cce_cli.compare.tag_family`)."""
    gate_metrics: tuple[str, ...] = ()
    """`--gate-metrics` (metric keys, in the order named): the first is the primary
    metric headline counts, colours and orders use; () = the first metric shown."""
    gate_scope: str | None = None
    """What `--fail-on-significant` tested, when `--gate-metrics` narrowed it."""

    @property
    def gate_passed(self) -> bool:
        return not self.gate_reasons


def _finite_or_none(p: float | None) -> float | None:
    return p if p is not None and math.isfinite(p) else None


def _compare_group(
    tag: str | None,
    pairs: Sequence[tuple[str, Mapping[str, float], Mapping[str, float]]],
    metrics: Sequence[Metric],
    test_name: str,
    correction: str,
) -> DiffGroup:
    """Test every metric over the pairs that have it on both sides, then adjust the p's."""
    test = paired_test(test_name)
    partial: list[tuple[Metric, tuple[QueryDelta, ...], PairedTestResult]] = []
    for item in metrics:
        rows = tuple(
            QueryDelta(case_id, base[item.key], head[item.key], head[item.key] - base[item.key])
            for case_id, base, head in pairs
            if item.key in base and item.key in head
        )
        if not rows and item.group in (TOKEN, COST):
            continue  # a token or cost metric neither side has for these queries
        partial.append((item, rows, test.run([row.delta for row in rows])))
    # The decision p, not the printed one: constant deltas print the reference's p = 0
    # but decide on the exact sign-flip p (docs/statistics.md#constant-deltas).
    adjusted = adjust_p_values(
        [_finite_or_none(result.decision_p) for _, _, result in partial], correction
    )
    diffs: list[MetricDiff] = []
    for (item, rows, result), p_adjusted in zip(partial, adjusted, strict=True):
        deltas = [row.delta for row in rows]
        oriented = deltas if item.higher_is_better else [-delta for delta in deltas]
        wins, ties, losses = wins_ties_losses(oriented)
        diffs.append(
            MetricDiff(item, rows, result, p_adjusted, effect_size_dz(deltas), wins, ties, losses)
        )
    return DiffGroup(tag, tuple(case_id for case_id, _, _ in pairs), tuple(diffs))


def _groups(
    pairs: Sequence[tuple[str, Mapping[str, float], Mapping[str, float]]],
    tags_of: Mapping[str, tuple[str, ...]],
    metrics: Sequence[Metric],
    test: str,
    correction: str,
) -> tuple[DiffGroup, ...]:
    """One group per tag (sorted by code point), each with its own tests."""
    tags = sorted({tag for case_id, _, _ in pairs for tag in tags_of.get(case_id, ())})
    return tuple(
        _compare_group(
            tag,
            [pair for pair in pairs if tag in tags_of.get(pair[0], ())],
            metrics,
            test,
            correction,
        )
        for tag in tags
    )


def _compared_metrics(
    pairs: Sequence[tuple[str, Mapping[str, float], Mapping[str, float]]],
) -> list[Metric]:
    """Chunk metrics every paired row carries on both sides, then the token metrics some
    paired row carries on both sides; registry order."""
    chosen = [
        item
        for item in METRICS
        if pairs and all(item.key in base and item.key in head for _, base, head in pairs)
    ]
    chosen += [
        item
        for item in TOKEN_METRICS
        if any(item.key in base and item.key in head for _, base, head in pairs)
    ]
    cost_keys = dict.fromkeys(key for _, base, _ in pairs for key in base)
    chosen += [
        item
        for item in (COST_METRICS.resolve(key) for key in cost_keys)
        if item is not None
        and item.group == COST
        and any(item.key in base and item.key in head for _, base, head in pairs)
    ]
    return chosen


def diff_reports(
    base: SavedReport,
    head: SavedReport,
    base_backend: SavedBackend,
    head_backend: SavedBackend,
    *,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    by_tag: bool = False,
) -> DiffReport:
    """Pair the two backends' cases by id (base order) and compare every shared metric."""
    head_cases = {case.id: case for case in head_backend.cases}
    base_ids = {case.id for case in base_backend.cases}
    pairs = [
        (case.id, case.values, head_cases[case.id].values)
        for case in base_backend.cases
        if case.id in head_cases
    ]
    if not pairs and (base_backend.cases or head_backend.cases):
        # A gate over nothing would pass anything: a wrong or renamed report is an error.
        raise CliError(
            f"no case ids in common between {base.path} ({base_backend.name}) and "
            f"{head.path} ({head_backend.name}); diff reports of the same fixture set"
        )
    tags_of: dict[str, tuple[str, ...]] = {}
    for case in base_backend.cases:
        if case.id in head_cases:
            tags_of[case.id] = case.tags or head_cases[case.id].tags
    metrics = _compared_metrics(pairs)
    return DiffReport(
        DiffSide(
            base.path,
            base_backend.name,
            base.corpus,
            base.embedder,
            base_backend.config,
            base.provenance,
        ),
        DiffSide(
            head.path,
            head_backend.name,
            head.corpus,
            head.embedder,
            head_backend.config,
            head.provenance,
        ),
        test,
        correction,
        alpha,
        _compare_group(None, pairs, metrics, test, correction),
        tuple(case.id for case in base_backend.cases if case.id not in head_cases),
        tuple(case.id for case in head_backend.cases if case.id not in base_ids),
        _groups(pairs, tags_of, metrics, test, correction) if by_tag else None,
        members=base.members if base.members is not None else head.members,
        queries=_query_texts(base_backend, head_backend),
    )


def _query_texts(*backends: SavedBackend) -> dict[str, str]:
    """Each case's query text where a report row carries one (the base side wins)."""
    texts: dict[str, str] = {}
    for backend in backends:
        for case in backend.cases:
            if case.query is not None:
                texts.setdefault(case.id, case.query)
    return texts


def backend_values(
    report: BackendReport, shown: Sequence[Metric] | None = None
) -> list[tuple[str, dict[str, float]]]:
    """Each case's id and full-precision scores by metric key, token metrics included;
    with `shown`, only those chunk metrics (what a report with those metrics carries)."""
    keys = None if shown is None else {item.key for item in shown}
    rows: list[tuple[str, dict[str, float]]] = []
    for case in report.cases:
        values = {
            key: value for key, value in case.score.values.items() if keys is None or key in keys
        }
        for item in TOKEN_METRICS:
            token_value = case.score.value(item.key)
            if token_value is not None:
                values[item.key] = token_value
        if case.cost is not None:
            # Only a run that asked for cost has it; a query without a target has none.
            values.update((key, value) for key, value in case.cost.values if value is not None)
        rows.append((case.id, values))
    return rows


def diff_backend_reports(
    a: BackendReport,
    b: BackendReport,
    metrics: Sequence[Metric],
    *,
    test: str = "t",
    correction: str = "holm",
) -> DiffGroup:
    """The comparison of two in-run backend reports (full-precision scores, case order)."""
    pairs = [
        (case_id, base, head)
        for (case_id, base), (_, head) in zip(backend_values(a), backend_values(b), strict=True)
    ]
    return _compare_group(None, pairs, metrics, test, correction)


def head_aggregate(report: BackendReport, item: Metric) -> float | None:
    """An in-run backend's aggregate of `item` (None for an absent token average)."""
    if item.key in report.averages.values:
        return report.averages.value(item.key)
    if item.key in TOKEN_METRICS and report.tokens is not None:
        return report.tokens.value(item.key)
    if item.group == COST and report.cost is not None and item in report.cost.metrics:
        return report.cost.value(item.key)
    return None
