"""Token-level span metrics: how much of the expected code, weighted by tokens, came back.

Why it exists: chunk-level precision treats a 3-line hit and a 300-line hit alike. The
span metrics of docs/metrics.md#token-metrics weigh every line by its `cce.tokens/v1` estimate and
compare the lines a query was expected to find with the lines its top-k results cover.
This module owns the line-weight table, `score_tokens` and its result type. It works on
plain `(file_path, first_line, last_line)` spans, so any eval tool can use it.

Line sets are kept as merged, sorted line intervals rather than sets of line numbers,
and the mass of an interval comes from per-file prefix sums, so a span of thousands of
lines costs a couple of binary searches, not thousands of lookups.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeAlias

import attrs

from cce_metrics.summation import ratio
from cce_metrics.tokens import line_token_estimates

Span: TypeAlias = tuple[str, int, int]
"""`(file_path, first_line, last_line)`, 1-based and inclusive (first_line <= last_line)."""

Interval: TypeAlias = tuple[int, int]


@attrs.frozen(slots=True)
class TokenScore:
    """Token-weighted precision, recall and intersection-over-union of one query."""

    precision: float
    recall: float
    iou: float


@attrs.frozen(slots=True)
class _FileMassTable:
    """Prefix sums over one file's weighed lines: `excess[i]` = Σ (weight − 1) of lines[:i]."""

    lines: list[int]
    excess: list[int]


@attrs.frozen(slots=True)
class _DenseMassTable:
    """Prefix sums over every line 0..top of one file: `excess[i]` = Σ (weight − 1) of
    lines 0..i-1 (lines no chunk covers add 0)."""

    excess: list[int]

    def mass(self, first_line: int, last_line: int) -> int:
        top = len(self.excess) - 1
        high = min(max(last_line + 1, 0), top)
        low = min(max(first_line, 0), top)
        return last_line - first_line + 1 + self.excess[high] - self.excess[low]


def _line_count(content: str) -> int:
    """How many lines `line_token_estimates(content)` weighs (`rust_lines`)."""
    return content.count("\n") + (0 if content.endswith("\n") else 1)


def _uncovered(covered: list[Interval], first: int, last: int) -> list[Interval]:
    """The parts of `first..=last` outside the sorted, disjoint intervals `covered`, which
    then take the whole range in (merged)."""
    gaps: list[Interval] = []
    at = bisect.bisect_left(covered, (first, first))
    if at and covered[at - 1][1] >= first:
        at -= 1
    cursor = first
    end = at
    while end < len(covered) and covered[end][0] <= last + 1:
        low, high = covered[end]
        if low > cursor:
            gaps.append((cursor, min(low - 1, last)))
        cursor = max(cursor, high + 1)
        end += 1
    if cursor <= last:
        gaps.append((cursor, last))
    merged_first = min(first, covered[at][0]) if at < end else first
    merged_last = max(last, covered[end - 1][1]) if at < end else last
    covered[at:end] = [(merged_first, merged_last)]
    return gaps


_DENSE_SLACK_LINES = 1 << 16
"""Lines a dense table may hold beyond twice those its chunks cover."""


def _dense_mass_table(file_chunks: list[tuple[int, str]]) -> _DenseMassTable | None:
    """The mass table of one file's chunks (index order, first writer wins per line), or
    None (then the per-line table serves) for a chunk starting before line 0 or chunks
    so sparse that a table of every line up to the last would be far larger than they
    are (a store may claim any line number).

    Chunks arrive outer before inner, so most are already covered whole and are never
    estimated; the rest write only their uncovered lines, a slice at a time.
    """
    if any(start < 0 for start, _ in file_chunks):
        return None
    spans = [(start, start + _line_count(content) - 1, content) for start, content in file_chunks]
    top = max(last for _, last, _ in spans) + 1
    if top > 2 * sum(last - start + 1 for start, last, _ in spans) + _DENSE_SLACK_LINES:
        return None
    excess_by_line = [0] * (top + 1)
    covered: list[Interval] = []
    for start, last, content in spans:
        gaps = _uncovered(covered, start, last)
        if not gaps:
            continue
        estimates = line_token_estimates(content)
        for first, end in gaps:
            excess_by_line[first : end + 1] = [
                estimate - 1 for estimate in estimates[first - start : end - start + 1]
            ]
    return _DenseMassTable(list(itertools.accumulate(excess_by_line, initial=0)))


class LineWeights:
    """Token weight of every `(file, line)`, as the index's chunks give it
    (docs/metrics.md#token-metrics).

    A line weighs `estimate_tokens` of its text in the first chunk, in index order, that
    covers it; lines no chunk covers weigh 1. Immutable after construction: the only
    state that changes later is private caches, a file's weights (when built
    `from_chunks`) and its prefix sums, filled the first time the file is weighed.
    """

    __slots__ = ("_by_file", "_chunks", "_dense_tables", "_mass_tables")

    def __init__(self, weights_by_file: Mapping[str, Mapping[int, int]]) -> None:
        """Wrap an already-built `file -> {line: weight}` table (copied defensively)."""
        self._by_file: dict[str, dict[int, int]] = {
            file_path: dict(lines) for file_path, lines in weights_by_file.items() if lines
        }
        self._mass_tables: dict[str, _FileMassTable] = {}
        self._chunks: dict[str, list[tuple[int, str]]] = {}
        """Each file's `(start_line, content)` chunks, when built `from_chunks`."""
        self._dense_tables: dict[str, _DenseMassTable | None] = {}

    @classmethod
    def from_chunks(cls, chunks: Iterable[tuple[str, int, str]]) -> LineWeights:
        """Build the table from `(file_path, start_line, content)` chunks in INDEX order.

        First writer wins per line: the order of chunks, not their nesting, decides
        which text a line is weighed by (a nested chunk's first line is partial).
        A file's weights are computed the first time one of its lines is weighed: a
        fixture set touches a few hundred files of an index's thousands, and estimating
        every indexed line was most of the cost of scoring token spans.
        """
        pending: dict[str, list[tuple[int, str]]] = {}
        for file_path, start_line, content in chunks:
            if not content:
                continue  # covers no line; keeps the table free of empty files
            file_chunks = pending.get(file_path)
            if file_chunks is None:
                file_chunks = pending[file_path] = []
            file_chunks.append((start_line, content))
        weights = cls.__new__(cls)
        weights._by_file = {}
        weights._mass_tables = {}
        weights._chunks = pending
        weights._dense_tables = {}
        return weights

    def _file_weights(self, file_path: str) -> dict[int, int] | None:
        file_weights = self._by_file.get(file_path)
        if file_weights is not None:
            return file_weights
        file_chunks = self._chunks.get(file_path)
        if file_chunks is None:
            return None
        file_weights = self._by_file[file_path] = {}
        # setdefault keeps the first writer; the bound method and zip keep this loop,
        # which runs once per weighed line, as lean as plain Python allows.
        keep_first = file_weights.setdefault
        for start_line, content in file_chunks:
            estimates = line_token_estimates(content)
            for line, estimate in zip(
                range(start_line, start_line + len(estimates)), estimates, strict=True
            ):
                keep_first(line, estimate)
        return file_weights

    def _complete(self) -> dict[str, dict[int, int]]:
        """Every file's weights (what equality and the summary need)."""
        for file_path in self._chunks:
            self._file_weights(file_path)
        return self._by_file

    @classmethod
    def uniform(cls) -> LineWeights:
        """The empty table: every line of every file weighs 1."""
        return cls({})

    def weight(self, file_path: str, line: int) -> int:
        """Weight of one line; 1 for lines and files no chunk covers."""
        file_weights = self._file_weights(file_path)
        if file_weights is None:
            return 1
        return file_weights.get(line, 1)

    def mass(self, file_path: str, first_line: int, last_line: int) -> int:
        """Sum of the weights of lines `first_line..=last_line` of one file (0 if empty)."""
        if first_line > last_line:
            return 0
        line_count = last_line - first_line + 1
        file_chunks = self._chunks.get(file_path)
        if file_chunks is not None:
            if file_path in self._dense_tables:
                dense = self._dense_tables[file_path]
            else:
                dense = self._dense_tables[file_path] = _dense_mass_table(file_chunks)
            if dense is not None:
                return dense.mass(first_line, last_line)
        file_weights = self._file_weights(file_path)
        if not file_weights:
            return line_count
        table = self._mass_table(file_path, file_weights)
        low = bisect.bisect_left(table.lines, first_line)
        high = bisect.bisect_right(table.lines, last_line, lo=low)
        return line_count + table.excess[high] - table.excess[low]

    def _mass_table(self, file_path: str, file_weights: dict[int, int]) -> _FileMassTable:
        table = self._mass_tables.get(file_path)
        if table is None:
            lines = sorted(file_weights)
            excess = [0] * (len(lines) + 1)
            running = 0
            for index, line in enumerate(lines, start=1):
                running += file_weights[line] - 1
                excess[index] = running
            table = self._mass_tables[file_path] = _FileMassTable(lines, excess)
        return table

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LineWeights):
            return NotImplemented
        return self._complete() == other._complete()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        line_count = 0
        for file_weights in self._complete().values():
            line_count += len(file_weights)
        return f"LineWeights(files={len(self._by_file)}, lines={line_count})"


def _merge(intervals: list[Interval]) -> list[Interval]:
    """Sort and merge intervals so each line appears once; adjacent intervals join."""
    intervals.sort()
    merged: list[Interval] = []
    for first, last in intervals:
        if merged and first <= merged[-1][1] + 1:
            if last > merged[-1][1]:
                merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return merged


def _line_sets(spans: Iterable[Span]) -> dict[str, list[Interval]]:
    """Per-file union of spans, as merged intervals."""
    by_file: dict[str, list[Interval]] = {}
    for file_path, first, last in spans:
        if first > last:
            raise ValueError(f"span {file_path!r} {first}-{last} ends before it starts")
        by_file.setdefault(file_path, []).append((first, last))
    return {file_path: _merge(intervals) for file_path, intervals in by_file.items()}


def _intersect(left: list[Interval], right: list[Interval]) -> list[Interval]:
    """Intersection of two merged interval lists (two-pointer sweep)."""
    common: list[Interval] = []
    i = j = 0
    while i < len(left) and j < len(right):
        first = max(left[i][0], right[j][0])
        last = min(left[i][1], right[j][1])
        if first <= last:
            common.append((first, last))
        if left[i][1] < right[j][1]:
            i += 1
        else:
            j += 1
    return common


def _mass(line_sets: Mapping[str, list[Interval]], weights: LineWeights) -> int:
    total = 0
    for file_path, intervals in line_sets.items():
        for first, last in intervals:
            total += weights.mass(file_path, first, last)
    return total


def score_tokens(
    expected: Iterable[Span],
    retrieved: Sequence[Span],
    k: int,
    weights: LineWeights,
) -> TokenScore | None:
    """Token-weighted precision, recall and IoU of one query (docs/metrics.md#token-metrics).

    `expected` holds the spans of the query's RANGED anchors only (drop unranged ones);
    `retrieved` holds every result's span in rank order, of which only the first
    `min(len, k)` count, relevant or not. Overlapping spans count each line once.
    Returns None when `expected` is empty: such a query has no token score at all.
    A zero denominator gives 0.0, never NaN. Raises ValueError when `k < 1` or a span
    ends before it starts.
    """
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    relevant = _line_sets(expected)
    if not relevant:
        return None
    returned = _line_sets(retrieved[:k])
    overlap = {
        file_path: common
        for file_path, intervals in relevant.items()
        if (common := _intersect(intervals, returned.get(file_path, [])))
    }
    relevant_mass = _mass(relevant, weights)
    retrieved_mass = _mass(returned, weights)
    overlap_mass = _mass(overlap, weights)
    union_mass = relevant_mass + retrieved_mass - overlap_mass
    return TokenScore(
        precision=ratio(overlap_mass, retrieved_mass),
        recall=ratio(overlap_mass, relevant_mass),
        iou=ratio(overlap_mass, union_mass),
    )
