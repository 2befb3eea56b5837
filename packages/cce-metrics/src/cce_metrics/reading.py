"""A ranking as a reader pays for it: each result's token count and the targets it covers.

Why it exists: the cost metrics (`cce_metrics.cost`) ask what a reader spends, in
tokens, to find what a query is after when reading results in rank order. They need a
deeper ranking than the chunk metrics' k and one number per result that no judgment
matrix holds. `Reading` carries exactly that, built from a judgment matrix
(`reading`), from the results' own texts and a tokenizer (`reading_of_texts`), or from
a plain document ranking with token counts (`reading_of_ranking`), so any eval tool can
feed it without knowing anchors or fixtures.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

import attrs

from cce_metrics.tokens import ESTIMATOR, TOKENIZER_ID, Tokenizer

__all__ = ["Reading", "reading", "reading_of_ranking", "reading_of_texts"]


def _counts(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(values)


def _covers(rows: Iterable[Iterable[int]]) -> tuple[frozenset[int], ...]:
    return tuple(frozenset(row) for row in rows)


@attrs.frozen(slots=True)
class Reading:
    """One query's results in rank order, as the cost metrics read them.

    `tokens[i]` is the token count of result i (rank i + 1); `covers[i]` the targets
    (indices in `range(n_targets)`) that result covers; `tokenizer` the id of what
    counted the tokens. A query's targets are its expected and secondary anchors, each
    counted once, as nDCG counts them. Raises ValueError on a negative count, a target
    out of range or lists of different lengths.
    """

    tokens: tuple[int, ...] = attrs.field(converter=_counts)
    covers: tuple[frozenset[int], ...] = attrs.field(converter=_covers)
    n_targets: int
    tokenizer: str = TOKENIZER_ID

    def __attrs_post_init__(self) -> None:
        if len(self.tokens) != len(self.covers):
            raise ValueError(
                f"{len(self.tokens)} token counts given for {len(self.covers)} results"
            )
        if self.n_targets < 0:
            raise ValueError(f"n_targets must not be negative, got {self.n_targets}")
        for rank, count in enumerate(self.tokens, start=1):
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError(f"result {rank}: token count must be a whole number >= 0")
        for rank, covered in enumerate(self.covers, start=1):
            if any(target < 0 or target >= self.n_targets for target in covered):
                raise ValueError(f"result {rank} covers a target outside 0..{self.n_targets - 1}")

    def __len__(self) -> int:
        return len(self.tokens)

    def head(self, depth: int | None) -> Reading:
        """The first `depth` results (all of them when `depth` is None)."""
        if depth is None or depth >= len(self.tokens):
            return self
        if depth < 1:
            raise ValueError(f"depth must be a positive integer, got {depth}")
        return Reading(self.tokens[:depth], self.covers[:depth], self.n_targets, self.tokenizer)


def reading(
    matches: Sequence[Sequence[bool]],
    tokens: Sequence[int],
    *,
    tokenizer: str = TOKENIZER_ID,
) -> Reading:
    """A reading from a judgment matrix and each result's token count.

    `matches[i][j]` says whether result i covers target j (the matrix of
    `cce_metrics.judgment`, expected columns then secondary ones, but not cut at k); every
    row has the same width, which is the number of targets. `tokens[i]` is result i's
    count, made by the tokenizer whose id is `tokenizer`.
    """
    width = len(matches[0]) if matches else 0
    for rank, row in enumerate(matches, start=1):
        if len(row) != width:
            raise ValueError(f"result {rank} has {len(row)} judgments, expected {width}")
    covers = [[target for target, hit in enumerate(row) if hit] for row in matches]
    return Reading(tokens, covers, width, tokenizer)


def reading_of_texts(
    matches: Sequence[Sequence[bool]],
    texts: Sequence[str],
    n_targets: int | None = None,
    *,
    tokenizer: Tokenizer = ESTIMATOR,
) -> Reading:
    """A reading whose token counts are `tokenizer`'s over each result's own text.

    `n_targets` is needed only when there are no results (an empty matrix has no width).
    """
    if len(texts) != len(matches):
        raise ValueError(f"{len(texts)} texts given for {len(matches)} results")
    made = reading(matches, [tokenizer.count(text) for text in texts], tokenizer=tokenizer.id)
    if not matches and n_targets is not None:
        return Reading((), (), n_targets, tokenizer.id)
    if n_targets is not None and n_targets != made.n_targets:
        raise ValueError(f"n_targets is {n_targets} but the rows have {made.n_targets} columns")
    return made


def reading_of_ranking(
    ranking: Sequence[str],
    relevant: Collection[str],
    tokens: Mapping[str, int],
    *,
    tokenizer: str = TOKENIZER_ID,
) -> Reading:
    """A reading of a plain document ranking: each relevant document is one target.

    `ranking` lists document ids best first (a repeated id is read, and paid for, again);
    `relevant` the query's relevant ids (targets in sorted order); `tokens` each ranked
    document's count. Raises ValueError when a ranked document has no count.
    """
    targets = {doc: index for index, doc in enumerate(sorted(set(relevant)))}
    counts: list[int] = []
    covers: list[list[int]] = []
    for doc in ranking:
        if doc not in tokens:
            raise ValueError(f"document {doc!r} has no token count")
        counts.append(tokens[doc])
        covers.append([targets[doc]] if doc in targets else [])
    return Reading(counts, covers, len(targets), tokenizer)
