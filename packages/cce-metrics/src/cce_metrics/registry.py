"""Every metric declared once: what it is called, how one query is scored, how it averages.

Why it exists: a metric's identity (its command-line name, its report key, its column
label, whether a higher value is better, whether the reference report carries it) used
to be spelled wherever scores were stored, averaged, compared or printed. Here each
metric is one `Metric` value, in the spirit of ir_measures' measure objects, and the
scorers, averages, comparisons and renderers loop over the registries below. Adding a
metric is one definition, one `register` call and its tests
(docs/architecture.md#how-to-add-a-metric).

A metric scores a `Judgment`: the boolean matrix of which counted result matched which
anchor (the expected anchors first, then any secondary ones), the cut-off `k`, how many
of the columns are expected anchors, one gain per anchor, and the query's token score.
The four reference metrics read the expected columns only.

Two groups are kept apart because they average differently:

- `METRICS` (chunk level): defined for every query; the average divides by the number
  of queries (at least 1), summing strictly in case order.
- `TOKEN_METRICS` (token-weighted spans): defined only for queries with a ranged
  anchor; the average divides by the number of such queries and is absent when there
  is none.

A third group, `COST_METRICS` (what reading a ranking costs, `cce_metrics.cost`), is
scored from the `Reading` a judgment may carry: the token count of every result down to
the metric's own `depth`. It is defined only for judged queries with a reading and at
least one target, and averages like the token group. Its families (`recall@NNNNt`) are
resolved on first lookup, so any budget can be named.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

import attrs

from cce_metrics import relevant_ranks
from cce_metrics.reading import Reading
from cce_metrics.relevant_ranks import RelevantRanks
from cce_metrics.spans import TokenScore
from cce_metrics.summation import seq_sum

__all__ = [
    "CHUNK",
    "COST",
    "COST_METRICS",
    "METRICS",
    "TOKEN",
    "TOKEN_METRICS",
    "UNIT_INTERVAL",
    "Judgment",
    "Metric",
    "MetricRegistry",
    "judgment",
    "mean",
    "metric",
]

CHUNK: Final = "chunk"
"""Group of the metrics every query has (averaged over all queries)."""

TOKEN: Final = "token"
"""Group of the token span metrics (averaged over the queries with a ranged anchor)."""

COST: Final = "cost"
"""Group of the reading-cost metrics (averaged over the queries with a reading and a target)."""

UNIT_INTERVAL: Final = (0.0, 1.0)
"""The bounds of a metric that is a fraction: a share, a rate or a normalised gain."""


def _gains_converter(values: Iterable[float]) -> tuple[float, ...]:
    return tuple(float(value) for value in values)


def _rows_converter(rows: Iterable[Iterable[bool]]) -> tuple[tuple[bool, ...], ...]:
    return tuple(tuple(row) for row in rows)


@attrs.frozen(slots=True)
class Judgment:
    """What every metric may read about one query; build it with `judgment(...)`.

    `matches[i][j]` says whether counted result i (rank order, at most k rows) matches
    anchor j; the first `n_expected` columns are the expected anchors, the rest are
    secondary anchors. `gains[j]` is anchor j's gain (1.0 for expected anchors unless
    graded). The derived fields summarise the expected columns once, for the
    reference metrics: `relevant[i]` (result i matches some expected anchor),
    `matched_expected` (expected anchors hit by some counted result) and
    `first_relevant_rank` (1-based, None when no counted result is relevant).
    `reading`, when given, is the ranking as a reader pays for it (token counts of the
    results, deeper than k if the caller ranked deeper): only the cost metrics read it.
    """

    matches: tuple[tuple[bool, ...], ...] = attrs.field(converter=_rows_converter)
    k: int
    n_expected: int
    gains: tuple[float, ...] = attrs.field(converter=_gains_converter)
    tokens: TokenScore | None = None
    reading: Reading | None = None
    relevant: tuple[bool, ...] = attrs.field(init=False)
    matched_expected: int = attrs.field(init=False)
    first_relevant_rank: int | None = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        expected_hit = [False] * self.n_expected
        relevant: list[bool] = []
        first: int | None = None
        for rank, row in enumerate(self.matches, start=1):
            hit = False
            for anchor in range(self.n_expected):
                if row[anchor]:
                    hit = True
                    expected_hit[anchor] = True
            relevant.append(hit)
            if hit and first is None:
                first = rank
        object.__setattr__(self, "relevant", tuple(relevant))
        object.__setattr__(self, "matched_expected", expected_hit.count(True))
        object.__setattr__(self, "first_relevant_rank", first)

    @property
    def n_anchors(self) -> int:
        """Expected plus secondary anchors (the width of every row)."""
        return len(self.gains)

    @property
    def relevant_retrieved(self) -> int:
        """Counted results that match at least one expected anchor."""
        return self.relevant.count(True)


def judgment(
    matches: Sequence[Sequence[bool]],
    n_expected: int,
    k: int,
    *,
    tokens: TokenScore | None = None,
    secondary: int = 0,
    gains: Sequence[float] | None = None,
    reading: Reading | None = None,
) -> Judgment:
    """Validate a judgment matrix and keep its first `min(len(matches), k)` rows.

    Each row has `n_expected + secondary` entries. `gains` defaults to 1.0 per anchor.
    Raises ValueError when `k < 1`, a count is negative, a counted row has the wrong
    length or `gains` has the wrong length. `reading` is kept whole (the cost metrics cut
    it at their own depth, not at k).
    """
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    if n_expected < 0:
        raise ValueError(f"n_anchors must not be negative, got {n_expected}")
    if secondary < 0:
        raise ValueError(f"secondary must not be negative, got {secondary}")
    width = n_expected + secondary
    counted = matches[:k]
    for rank, row in enumerate(counted, start=1):
        if len(row) != width:
            raise ValueError(f"result {rank} has {len(row)} judgments, expected {width}")
    if gains is None:
        gains = [1.0] * width
    elif len(gains) != width:
        raise ValueError(f"{len(gains)} gains given for {width} anchors")
    return Judgment(counted, k, n_expected, gains, tokens, reading)


def mean(values: Sequence[float]) -> float:
    """Sum strictly in case order, divided by max(n, 1): the reference's macro average."""
    return seq_sum(values) / max(len(values), 1)


@attrs.frozen(slots=True)
class Metric:
    """One metric's declaration.

    - `name`: the command-line name (`precision`, `mrr`, ...);
    - `key`: the report key (`precision_at_k`, `mrr`, ...; for token metrics the key
      inside the report's `tokens` object is `report_key`);
    - `label`: the human column heading (`P@k`, `MRR`, ...);
    - `score`: the per-query value from a `Judgment`, None when undefined for that
      query (token metrics on a query without a ranged anchor);
    - `aggregate`: the average of the defined per-query values, in case order;
    - `higher_is_better`, `default` (part of the reference report), `group`;
    - `ranking_score`: the value over a document ranking reduced to its relevant ranks,
      at a cut-off (None: all ranks), which is what `evaluate` computes; None for a
      metric that `evaluate` does not offer (the token metrics);
    - `aliases`: the other spellings `evaluate` accepts for it (trec_eval's,
      ir_measures', ranx's), matched case-insensitively like `name`;
    - `needs_cutoff`: `evaluate` refuses the metric without `@k`;
    - `bounds`: the least and greatest value one query can score, or None when the
      metric has no bounds (a count, a length). The chunk and token metrics are
      fractions in [0, 1]; `cce diff` and `cce plan` refuse a saved score outside a
      metric's bounds, since no scorer could have produced it;
    - `depth`: how many ranked results the metric reads, independent of the case's `k`
      (None: the first k, like every chunk and token metric). A caller ranking for this
      metric asks its retriever for at least this many results;
    - `unit`: what one unit of the value is, for renderers ("" for a fraction;
      "tokens" for `first-hit-tokens`).
    """

    name: str
    key: str
    label: str
    score: Callable[[Judgment], float | None]
    aggregate: Callable[[Sequence[float]], float] = mean
    higher_is_better: bool = True
    default: bool = True
    group: str = CHUNK
    report_key: str = ""
    description: str = ""
    ranking_score: Callable[[RelevantRanks, int | None], float] | None = None
    aliases: tuple[str, ...] = ()
    needs_cutoff: bool = False
    bounds: tuple[float, float] | None = UNIT_INTERVAL
    depth: int | None = None
    unit: str = ""

    def oriented(self, delta: float) -> float:
        """`delta` (after minus before) signed so that positive means better."""
        return delta if self.higher_is_better else -delta

    def spellings(self) -> frozenset[str]:
        """The lower-cased names `evaluate` accepts for this metric (empty if it is not offered)."""
        if self.ranking_score is None:
            return frozenset()
        return frozenset(spelling.lower() for spelling in (self.name, *self.aliases))

    def average(self, values: Sequence[float | None]) -> float | None:
        """Aggregate per-query values, skipping undefined ones.

        A chunk metric over no query averages to 0.0; a token or cost metric with no
        defined value has no average (None).
        """
        defined = [value for value in values if value is not None]
        if not defined and self.group != CHUNK:
            return None
        return self.aggregate(defined)


class MetricRegistry:
    """An ordered set of metrics, looked up by name or by key."""

    __slots__ = ("_families", "_group", "_metrics")

    def __init__(self, group: str, metrics: Iterable[Metric] = ()) -> None:
        self._group = group
        self._metrics: list[Metric] = []
        self._families: list[Callable[[str], Metric | None]] = []
        for item in metrics:
            self.register(item)

    def register(self, item: Metric) -> Metric:
        """Append a metric; its name and key must be new to this registry and, for the
        global registries, to both (`metric()` looks names up across them)."""
        if item.group != self._group:
            raise ValueError(f"metric {item.name!r} belongs to group {item.group!r}")
        scope = _REGISTRIES if any(self is known for known in _REGISTRIES) else []
        known_metrics = [known for registry in scope for known in registry]
        for known in [*known_metrics, *self._metrics]:
            if {known.name, known.key} & {item.name, item.key}:
                raise ValueError(f"metric {item.name!r} ({item.key}) is already registered")
            if clash := known.spellings() & item.spellings():
                raise ValueError(
                    f"metric {item.name!r}: spelling {min(clash)!r} already names {known.name!r}"
                )
        self._metrics.append(item)
        return item

    def add_family(self, resolve: Callable[[str], Metric | None]) -> None:
        """Let `get` accept names no metric was registered under yet.

        `resolve(name)` returns the metric a name spells (`recall@1234t`) or None when
        the name is not of the family; the metric is registered on first lookup, so a
        registry iterates every family member that was ever looked up, in lookup order.
        """
        self._families.append(resolve)

    def resolve(self, name: str) -> Metric | None:
        """The registered metric called or keyed `name`, or one of a family, registered now."""
        for item in self._metrics:
            if name in (item.name, item.key):
                return item
        for family in self._families:
            made = family(name)
            if made is not None:
                for item in self._metrics:
                    if made.name == item.name:
                        return item
                return self.register(made)
        return None

    def __iter__(self) -> Iterator[Metric]:
        return iter(tuple(self._metrics))

    def __len__(self) -> int:
        return len(self._metrics)

    def __contains__(self, name_or_key: object) -> bool:
        return any(name_or_key in (item.name, item.key) for item in self._metrics)

    def get(self, name_or_key: str) -> Metric:
        """The metric called or keyed `name_or_key` (or spelled by one of the registry's
        families); ValueError listing the names."""
        found = self.resolve(name_or_key)
        if found is not None:
            return found
        raise ValueError(
            f"unknown metric {name_or_key!r}; expected one of {', '.join(self.names())}"
        )

    def names(self) -> tuple[str, ...]:
        return tuple(item.name for item in self._metrics)

    def keys(self) -> tuple[str, ...]:
        return tuple(item.key for item in self._metrics)

    def defaults(self) -> tuple[Metric, ...]:
        """The metrics the reference report carries, in registry order."""
        return tuple(item for item in self._metrics if item.default)


_REGISTRIES: list[MetricRegistry] = []


def _precision(j: Judgment) -> float:
    # Divided by k even when fewer than k results came back (docs/metrics.md#precision).
    return j.relevant_retrieved / j.k


def _recall(j: Judgment) -> float:
    return 0.0 if j.n_expected == 0 else j.matched_expected / j.n_expected


def _mrr(j: Judgment) -> float:
    return 0.0 if j.first_relevant_rank is None else 1.0 / j.first_relevant_rank


def _f1(j: Judgment) -> float:
    precision = _precision(j)
    recall = _recall(j)
    # Same operation order as the reference: (2·P)·R, then the division.
    return 2.0 * precision * recall / (precision + recall) if precision + recall > 0.0 else 0.0


def _token_precision(j: Judgment) -> float | None:
    return None if j.tokens is None else j.tokens.precision


def _token_recall(j: Judgment) -> float | None:
    return None if j.tokens is None else j.tokens.recall


def _token_iou(j: Judgment) -> float | None:
    return None if j.tokens is None else j.tokens.iou


METRICS: Final = MetricRegistry(
    CHUNK,
    (
        Metric(
            "precision",
            "precision_at_k",
            "P@k",
            _precision,
            description="relevant results among the top k, divided by k",
            ranking_score=relevant_ranks.precision,
            aliases=("P",),
            needs_cutoff=True,
        ),
        Metric(
            "recall",
            "recall",
            "recall",
            _recall,
            description="expected anchors matched by a top-k result",
            ranking_score=relevant_ranks.recall,
            aliases=("R",),
        ),
        Metric(
            "mrr",
            "mrr",
            "MRR",
            _mrr,
            description="1 / rank of the first relevant result",
            ranking_score=relevant_ranks.reciprocal_rank,
            aliases=("RR", "recip_rank"),
        ),
        Metric(
            "f1",
            "f1",
            "F1",
            _f1,
            description="harmonic mean of P@k and recall",
            ranking_score=relevant_ranks.f1,
            needs_cutoff=True,
        ),
    ),
)
"""The chunk-level metrics, in report order; new metrics are appended with `register`."""
_REGISTRIES.append(METRICS)

TOKEN_METRICS: Final = MetricRegistry(
    TOKEN,
    (
        Metric(
            "token-precision",
            "token_precision",
            "tok-P",
            _token_precision,
            group=TOKEN,
            report_key="precision",
            description="token-weighted share of the returned lines that were expected",
        ),
        Metric(
            "token-recall",
            "token_recall",
            "tok-recall",
            _token_recall,
            group=TOKEN,
            report_key="recall",
            description="token-weighted share of the expected lines that came back",
        ),
        Metric(
            "token-iou",
            "token_iou",
            "tok-IoU",
            _token_iou,
            group=TOKEN,
            report_key="iou",
            description="token-weighted intersection over union of the two line sets",
        ),
    ),
)
"""The token span metrics, in report order (keys inside the report's `tokens` object
are each metric's `report_key`)."""
_REGISTRIES.append(TOKEN_METRICS)


COST_METRICS: Final = MetricRegistry(COST)
"""The reading-cost metrics (`cce_metrics.cost` registers them and the `recall@NNNNt`
family); none is part of the reference report."""
_REGISTRIES.append(COST_METRICS)


def metric(name_or_key: str) -> Metric:
    """Look a metric of either group up by name or key; ValueError listing every name."""
    for registry in _REGISTRIES:
        found = registry.resolve(name_or_key)
        if found is not None:
            return found
    names = [name for registry in _REGISTRIES for name in registry.names()]
    raise ValueError(f"unknown metric {name_or_key!r}; expected one of {', '.join(names)}")
