"""The code-aware index: which chunks a code search ranks, and their BM25 over
identifier-split and path terms, derived from a store on demand and cached.

Why it exists: the stored chunks and the reference BM25 stay exactly as they are (they
are what `bm25`, `vector`, `hybrid` and the store format promise), so everything the
`code` backends need is derived from them here, the way `rank.derived` derives the
reference structures: built on first use from the chunks a store already keeps, cached
per derived index and per set of options, dropped with the index.

The chunks may be re-cut without the file texts, which a store does not keep: a stored
chunk that lies inside another of the same file (a method inside its class) is a
duplicate of lines its outer chunk holds, so `chunks = "outermost"` keeps only the
outermost ones and `"tiled"` cuts each outermost chunk at its nested definitions into
pieces that do not overlap (the class header, each method, the lines between), all from
the outer chunk's own text. `max_chunk_lines` cuts a longer piece into windows.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Sequence

import attrs
import numpy as np

from cce_metrics import estimate_tokens
from cce_retrieval.chunk.chunker import chunk_id
from cce_retrieval.model import Chunk, Index
from cce_retrieval.parity.tokenizer import tokenize
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.code import text
from cce_retrieval.rank.derived import RetrievalIndex, retrieval_index
from cce_retrieval.rank.order import IntArray, id_order_ranks

__all__ = ["CHUNK_MODES", "CodeIndex", "CodeOptions", "code_index"]

CHUNK_MODES = ("stored", "outermost", "tiled")


@attrs.frozen(slots=True)
class CodeOptions:
    """What the derived index is built with; one cached `CodeIndex` per distinct value."""

    split_identifiers: bool = True
    path_terms: bool = True
    code_files_only: bool = True
    chunks: str = "tiled"
    max_chunk_lines: int = 0
    k1: float = 1.2
    b: float = 0.75

    @property
    def plain(self) -> bool:
        """The reference BM25 over the stored chunks: nothing to derive."""
        return (
            not self.split_identifiers
            and not self.path_terms
            and not self.code_files_only
            and self.chunks == "stored"
            and self.max_chunk_lines == 0
        )


@attrs.frozen(slots=True)
class CodeIndex:
    """The chunks a code search ranks and their BM25.

    `source[i]` is the stored chunk that chunk i was cut from (itself when it was not
    cut): its embedding stands for chunk i in the vector signal. `by_stem` lists each
    lowercased file stem's chunks, so a definition in a file named like a queried symbol
    is found even when BM25 did not rank it.
    """

    chunks: Sequence[Chunk]
    source: IntArray
    id_ranks: IntArray
    bm25: Bm25Index
    by_stem: dict[str, list[int]]

    @classmethod
    def build(cls, derived: RetrievalIndex, options: CodeOptions) -> CodeIndex:
        stored = derived.chunks
        if options.plain:
            chunks: Sequence[Chunk] = stored
            source = np.arange(len(stored), dtype=np.int64)
            id_ranks = derived.id_ranks
            bm25 = derived.bm25_with(options.k1, options.b)
        else:
            picked = _cut(stored, derived.chunks_by_file, options)
            chunks = [chunk for chunk, _ in picked]
            source = np.fromiter((origin for _, origin in picked), np.int64, len(picked))
            id_ranks = id_order_ranks([chunk.chunk_id for chunk in chunks])
            bm25 = _bm25(chunks, id_ranks, options)
        by_stem: dict[str, list[int]] = {}
        for i, chunk in enumerate(chunks):
            by_stem.setdefault(text.file_stem(chunk.file_path), []).append(i)
        return cls(chunks, source, id_ranks, bm25, by_stem)


def _bm25(chunks: Sequence[Chunk], id_ranks: IntArray, options: CodeOptions) -> Bm25Index:
    term_ids: dict[str, int] = {}
    entry_terms: list[int] = []
    entry_counts: list[int] = []
    distinct = np.zeros(len(chunks), dtype=np.int64)
    lengths = np.zeros(len(chunks), dtype=np.int64)
    path_cache: dict[str, Counter[str]] = {}
    for doc, chunk in enumerate(chunks):
        if options.split_identifiers:
            counts = text.count_code_terms(chunk.content)
        else:
            counts = Counter(tokenize(chunk.content))
        if options.path_terms:
            extra = path_cache.get(chunk.file_path)
            if extra is None:
                extra = path_cache[chunk.file_path] = _path_counts(chunk.file_path, options)
            counts.update(extra)
        distinct[doc] = len(counts)
        lengths[doc] = sum(counts.values())
        for term, count in counts.items():
            term_id = term_ids.get(term)
            if term_id is None:
                term_id = term_ids[term] = len(term_ids)
            entry_terms.append(term_id)
            entry_counts.append(count)
    return Bm25Index.from_term_counts(
        term_ids,
        np.asarray(entry_terms, dtype=np.int64),
        np.asarray(entry_counts, dtype=np.int64),
        distinct,
        lengths,
        id_ranks,
    ).with_parameters(options.k1, options.b)


def _path_counts(path: str, options: CodeOptions) -> Counter[str]:
    return text.path_terms(path, split=options.split_identifiers)


def _cut(
    stored: Sequence[Chunk], by_file: dict[str, list[int]], options: CodeOptions
) -> list[tuple[Chunk, int]]:
    """The chunks to rank, file by file in store order, each with the stored chunk it
    comes from."""
    picked: list[tuple[Chunk, int]] = []
    for path, members in by_file.items():
        if options.code_files_only and not text.code_file(path):
            continue
        if options.chunks == "stored":
            pieces = [(stored[i], i) for i in members]
        else:
            pieces = _non_overlapping(stored, members, tiled=options.chunks == "tiled")
        for chunk, origin in pieces:
            if options.code_files_only and not chunk.content.strip():
                continue
            if options.max_chunk_lines > 0:
                picked.extend((part, origin) for part in _windows(chunk, options.max_chunk_lines))
            else:
                picked.append((chunk, origin))
    return picked


def _contains(outer: Chunk, inner: Chunk) -> bool:
    return outer.start_line <= inner.start_line and inner.end_line <= outer.end_line


def _non_overlapping(
    stored: Sequence[Chunk], members: list[int], *, tiled: bool
) -> list[tuple[Chunk, int]]:
    """One file's outermost chunks in line order; when `tiled`, each cut at the nested
    chunks it holds (recursively) into pieces that share no line."""
    order = sorted(members, key=lambda i: (stored[i].start_line, -stored[i].end_line, i))
    outermost: list[tuple[int, list[int]]] = []
    for i in order:
        if outermost and _contains(stored[outermost[-1][0]], stored[i]):
            outermost[-1][1].append(i)
        else:
            outermost.append((i, []))
    pieces: list[tuple[Chunk, int]] = []
    for i, nested in outermost:
        if tiled and nested:
            pieces.extend(_tile(stored, i, nested))
        else:
            pieces.append((stored[i], i))
    return pieces


def _tile(stored: Sequence[Chunk], outer: int, nested: list[int]) -> list[tuple[Chunk, int]]:
    """`stored[outer]` cut at its direct children (nested chunks, line order): the lines
    before, between and after them become pieces of their own; children are tiled in turn."""
    parent = stored[outer]
    lines = parent.content.split("\n")
    children: list[tuple[int, list[int]]] = []
    for i in nested:
        if children and _contains(stored[children[-1][0]], stored[i]):
            children[-1][1].append(i)
        elif stored[i].start_line == parent.start_line and stored[i].end_line == parent.end_line:
            continue  # the same span stored twice: the outer chunk already stands for it
        else:
            children.append((i, []))
    pieces: list[tuple[Chunk, int]] = []
    line = parent.start_line
    for child, grandchildren in children:
        first = stored[child].start_line
        if first > line:
            pieces.extend(_gap(parent, outer, lines, line, first - 1))
        pieces.extend(
            _tile(stored, child, grandchildren) if grandchildren else [(stored[child], child)]
        )
        line = max(line, stored[child].end_line + 1)
    if line <= parent.end_line:
        pieces.extend(_gap(parent, outer, lines, line, parent.end_line))
    return pieces


def _gap(
    parent: Chunk, origin: int, lines: list[str], first: int, last: int
) -> list[tuple[Chunk, int]]:
    """Lines `first..last` of `parent` as a piece, unless they hold no word."""
    body = "\n".join(lines[first - parent.start_line : last - parent.start_line + 1])
    if not text.words(body):
        return []
    return [(_piece(parent, first, last, body), origin)]


def _piece(parent: Chunk, first: int, last: int, body: str) -> Chunk:
    return Chunk(
        chunk_id=chunk_id(parent.file_path, first, last, body.encode("utf-8")),
        file_path=parent.file_path,
        start_line=first,
        end_line=last,
        chunk_type=parent.chunk_type,
        kind=parent.kind,
        language=parent.language,
        content=body,
        token_count=estimate_tokens(body),
    )


def _windows(chunk: Chunk, size: int) -> list[Chunk]:
    """`chunk` as consecutive windows of at most `size` lines (itself when it fits)."""
    span = chunk.end_line - chunk.start_line + 1
    if span <= size:
        return [chunk]
    lines = chunk.content.split("\n")
    windows: list[Chunk] = []
    for offset in range(0, len(lines), size):
        body = "\n".join(lines[offset : offset + size])
        if not text.words(body):
            continue
        first = chunk.start_line + offset
        last = min(first + size - 1, chunk.end_line)
        windows.append(_piece(chunk, first, last, body))
    return windows


_CACHE: weakref.WeakKeyDictionary[RetrievalIndex, dict[CodeOptions, CodeIndex]] = (
    weakref.WeakKeyDictionary()
)


def code_index(index: Index, options: CodeOptions) -> CodeIndex:
    """The code index of `index` under `options`: derived on first use, then cached
    with the index's derived data (rebuilt whenever that is)."""
    derived = retrieval_index(index)
    per_options = _CACHE.setdefault(derived, {})
    found = per_options.get(options)
    if found is None:
        found = per_options[options] = CodeIndex.build(derived, options)
    return found
