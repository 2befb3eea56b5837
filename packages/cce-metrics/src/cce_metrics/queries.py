"""Chunk-level IR metrics of one query, from relevance judgments
(docs/metrics.md#chunk-level-metrics).

Why it exists: precision@k, recall, MRR and F1 have several textbook variants; the
reference engine picked specific ones (precision divides by k even when fewer results
came back, recall counts matched anchors rather than relevant results). Their
definitions are declared in `cce_metrics.registry`; this module owns the per-query
score record (`QueryScore`, looked up by metric key) and `score_query`, which scores
every registered metric. It takes a boolean judgment matrix, so it knows nothing of
anchors, fixtures or retrieval and any eval tool can feed it its own judgments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from cce_metrics.registry import METRICS, TOKEN_METRICS, Judgment, judgment
from cce_metrics.spans import TokenScore


class ReferenceValues:
    """Read-only named access to the reference's four chunk metrics, by registry key.

    Shared by the per-query and the averaged scores, which both hold `values` (metric key
    to value) and are immutable once built.
    """

    __slots__ = ()
    values: Mapping[str, float]

    @property
    def precision_at_k(self) -> float:
        return self.values["precision_at_k"]

    @property
    def recall(self) -> float:
        return self.values["recall"]

    @property
    def mrr(self) -> float:
        return self.values["mrr"]

    @property
    def f1(self) -> float:
        return self.values["f1"]

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name!r}")


class QueryScore(ReferenceValues):
    """Every metric of one query, looked up by report key; `tokens` is None when the
    query has no ranged anchor.

    `values` maps each chunk-level metric's key (`METRICS`) to its score; the reference
    four are also attributes (`precision_at_k`, `recall`, `mrr`, `f1`). `value(key)`
    reads either group: a token metric's key gives its token score, or None.
    Immutable; equal when every field is.
    """

    __slots__ = ("first_relevant_rank", "relevant_retrieved", "tokens", "values")

    values: Mapping[str, float]
    first_relevant_rank: int | None
    relevant_retrieved: int
    tokens: TokenScore | None

    def __init__(
        self,
        precision_at_k: float,
        recall: float,
        mrr: float,
        f1: float,
        first_relevant_rank: int | None,
        relevant_retrieved: int,
        tokens: TokenScore | None = None,
        *,
        extra: Mapping[str, float] | None = None,
    ) -> None:
        values = {"precision_at_k": precision_at_k, "recall": recall, "mrr": mrr, "f1": f1}
        if extra:
            values.update(extra)
        object.__setattr__(self, "values", MappingProxyType(values))
        object.__setattr__(self, "first_relevant_rank", first_relevant_rank)
        object.__setattr__(self, "relevant_retrieved", relevant_retrieved)
        object.__setattr__(self, "tokens", tokens)

    @classmethod
    def from_judgment(cls, judged: Judgment) -> QueryScore:
        """Score every registered chunk-level metric on one judgment, in registry order."""
        values: dict[str, float] = {}
        for item in METRICS:
            value = item.score(judged)
            if value is None:
                raise ValueError(f"metric {item.name!r} is undefined for this query")
            values[item.key] = value
        score = cls.__new__(cls)
        object.__setattr__(score, "values", MappingProxyType(values))
        object.__setattr__(score, "first_relevant_rank", judged.first_relevant_rank)
        object.__setattr__(score, "relevant_retrieved", judged.relevant_retrieved)
        object.__setattr__(score, "tokens", judged.tokens)
        return score

    def value(self, key: str) -> float | None:
        """The score keyed `key` (either group); None for an undefined token metric."""
        found = self.values.get(key)
        if found is not None:
            return found
        if key in TOKEN_METRICS:
            if self.tokens is None:
                return None
            # A token metric's report key names its TokenScore field.
            return float(getattr(self.tokens, TOKEN_METRICS.get(key).report_key))
        raise KeyError(key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QueryScore):
            return NotImplemented
        return (
            dict(self.values) == dict(other.values)
            and self.first_relevant_rank == other.first_relevant_rank
            and self.relevant_retrieved == other.relevant_retrieved
            and self.tokens == other.tokens
        )

    def __hash__(self) -> int:
        return hash(
            (
                tuple(self.values.items()),
                self.first_relevant_rank,
                self.relevant_retrieved,
                self.tokens,
            )
        )

    def __repr__(self) -> str:
        scores = ", ".join(f"{key}={value!r}" for key, value in self.values.items())
        return (
            f"QueryScore({scores}, first_relevant_rank={self.first_relevant_rank!r}, "
            f"relevant_retrieved={self.relevant_retrieved!r}, tokens={self.tokens!r})"
        )


def score_query(
    matches: Sequence[Sequence[bool]],
    n_anchors: int,
    k: int,
    tokens: TokenScore | None = None,
) -> QueryScore:
    """Score one query from its judgment matrix.

    `matches[i][j]` says whether result i (rank order) matches anchor j; each row has
    `n_anchors` entries. Only the first `min(len(matches), k)` results count. A result
    is relevant when it matches any anchor (several hits on one anchor each count); an
    anchor is matched when any counted result matches it.

    - precision@k = relevant results / k, even when fewer than k results came back;
    - recall = matched anchors / n_anchors (0.0 when there are no anchors);
    - MRR = 1 / rank of the first relevant result, or 0.0;
    - F1 = 2·P·R / (P + R), or 0.0 when P + R is 0.

    Every other registered metric (`METRICS`) is scored too. `tokens` (from
    `score_tokens`) is carried through unchanged. Raises ValueError when `k < 1`,
    `n_anchors < 0` or a row's length differs from `n_anchors`. For secondary anchors
    and graded gains, build a `judgment(...)` and use `QueryScore.from_judgment`.
    """
    return QueryScore.from_judgment(judgment(matches, n_anchors, k, tokens=tokens))
