"""The scored run: each case's outcome on one backend, and a backend's whole report.

Why it exists: these are the values every layer above the harness reads - the results
file and TREC run writers (`cce_cli.formats`), the comparisons (`cce_cli.compare`) and
the renderers - so they live at the bottom, as plain data, and the harness that fills
them (`cce_cli.evaluation.harness`) re-exports them under their old names.
"""

from __future__ import annotations

import attrs

from cce_cli.formats.cost_scores import CaseCost, CostSummary
from cce_metrics import MacroAverages, QueryScore, TokenAverages
from cce_retrieval import SearchResult

__all__ = ["BackendReport", "CaseReport"]


@attrs.frozen(slots=True)
class CaseReport:
    """One case's outcome on one backend."""

    id: str
    k: int
    score: QueryScore
    results: tuple[SearchResult, ...] = attrs.field(default=(), eq=False, repr=False)
    """The ranked results the score was computed from (for `--results`)."""
    tags: tuple[str, ...] = attrs.field(default=(), eq=False)
    """The case's tags (for `--by-tag`)."""
    cost: CaseCost | None = None
    """The cost metrics' values, only on a run that asked for one."""
    latency_ms: float = attrs.field(default=0.0, eq=False, repr=False)
    """Wall-clock milliseconds the backend's search took for this case (suite timings)."""


@attrs.frozen(slots=True)
class BackendReport:
    """Every case's score on one backend, with the macro and token averages."""

    backend: str
    cases: tuple[CaseReport, ...]
    averages: MacroAverages
    tokens: TokenAverages | None
    cost: CostSummary | None = None
    """The cost metrics' means, only on a run that asked for one."""
    without_vector: tuple[str, ...] = ()
    """The ids of the cases whose query this backend asked a vector for and got none
    (an empty or all-zero embedding: docs/hostile-input.md#queries-without-a-vector),
    in fixture order; empty for a backend that never asked."""
