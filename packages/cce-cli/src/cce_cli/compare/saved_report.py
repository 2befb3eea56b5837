"""Reading saved relevance reports: the `cce.relevance.report/v2` document (and a suite
report flattened into one) as `SavedReport`, and choosing the backend on each side.

Why it exists: `cce diff`, `cce report`, `cce plan` and a suite's review all start from a
report on disk, and each must refuse the same damaged or hand-written inputs with the same
one-line error naming the file and the field. This module owns that reading: decimal
scores within their metric's bounds, unique case ids and backend names, a suite's
`member/case-id` flattening with its chosen aggregate, and `--backend`/`--backends`.
Pairing and testing what was read is `cce_cli.compare.pairing`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from cce_cli.errors import CliError
from cce_cli.formats import input_files, json_text
from cce_cli.formats.schemas import REPORT_SCHEMA
from cce_cli.formats.suite_manifest import SUITE_REPORT_SCHEMA
from cce_metrics import COST_METRICS, METRICS, TOKEN_METRICS, Metric

__all__ = [
    "SavedBackend",
    "SavedCase",
    "SavedReport",
    "decimal_number",
    "load_report",
    "outside_bounds",
    "parse_report",
    "read_report_text",
    "select_backends",
]

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
    repeat = _first_repeat([case.id for case in cases])
    if repeat is not None:
        first, again = repeat
        raise CliError(
            f"{path}: backend {name} lists case id {cases[again].id!r} twice "
            f"(per_query[{first}] and per_query[{again}]); "
            "case ids must be unique to pair cases"
        )
    config = body.get("config")
    return SavedBackend(
        name, cases, _scores(path, where, body), config if isinstance(config, dict) else None
    )


def _refuse_duplicate_backends(path: str, where: str, backends: Sequence[SavedBackend]) -> None:
    """Two entries of one report with the same backend name: choosing by name would
    silently take the first and hide the other's scores."""
    repeat = _first_repeat([backend.name for backend in backends])
    if repeat is not None:
        first, again = repeat
        raise CliError(
            f"{path}: {where}[{first}] and {where}[{again}] are both backend "
            f"{json.dumps(backends[again].name, ensure_ascii=False)}; a report names each "
            "backend once, so keep one entry (or rename one) and compare again"
        )


def _first_repeat(keys: Sequence[str]) -> tuple[int, int] | None:
    """The indices of the first key listed again (where it was first, where again)."""
    seen: dict[str, int] = {}
    for index, key in enumerate(keys):
        if key in seen:
            return seen[key], index
        seen[key] = index
    return None


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
