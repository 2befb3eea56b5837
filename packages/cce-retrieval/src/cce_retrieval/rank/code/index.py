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

import functools
import gc
import os
import re
import weakref
from collections import Counter
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from cce_metrics import estimate_tokens
from cce_retrieval.chunk.chunker import PLAINTEXT, chunk_id
from cce_retrieval.model import Chunk, Index
from cce_retrieval.parity.tokenizer import tokenize
from cce_retrieval.protect.strict import STRICT, protect_text
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.code import grammars, text
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
    max_chunk_lines: int = 25
    gap_chunks: bool = True
    grammar_chunks: bool = True
    split_unparsed: bool = False
    fold_plurals: bool = True
    k1: float = 1.2
    b: float = 0.75

    @property
    def plain(self) -> bool:
        """The reference BM25 over the stored chunks: nothing to derive."""
        return (
            not self.split_identifiers
            and not self.fold_plurals
            and not self.path_terms
            and not self.code_files_only
            and self.chunks == "stored"
            and self.max_chunk_lines == 0
        )

    def root_used(self, root: str | None) -> str | None:
        """The corpus root the index reads files from: only gap chunks need it."""
        return root if self.gap_chunks and self.chunks != "stored" else None


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
    def build(
        cls, derived: RetrievalIndex, options: CodeOptions, root: str | None = None
    ) -> CodeIndex:
        """Derive the code index; `root` is the corpus directory gap chunks are read from
        (none without it)."""
        # The build allocates tens of thousands of chunks and lists and no reference
        # cycle; the cyclic collector would only re-walk them (about 6% of the build).
        collecting = gc.isenabled()
        gc.disable()
        try:
            return cls._build(derived, options, root)
        finally:
            if collecting:
                gc.enable()

    @classmethod
    def _build(cls, derived: RetrievalIndex, options: CodeOptions, root: str | None) -> CodeIndex:
        if options.plain:
            chunks: Sequence[Chunk] = derived.chunks
            source = np.arange(len(chunks), dtype=np.int64)
            id_ranks = derived.id_ranks
            bm25 = derived.bm25_with(options.k1, options.b)
        else:
            # A store's chunks are decoded on every access: decode each once.
            stored = list(derived.chunks)
            picked = _cut(stored, derived.chunks_by_file, options, options.root_used(root))
            chunks = [chunk for chunk, _ in picked]
            source = np.fromiter((origin for _, origin in picked), np.int64, len(picked))
            id_ranks = id_order_ranks([chunk.chunk_id for chunk in chunks])
            bm25 = _bm25(chunks, id_ranks, options)
        by_stem: dict[str, list[int]] = {}
        stems: dict[str, list[int]] = {}  # a file's chunks are adjacent: one stem per file
        for i, chunk in enumerate(chunks):
            path = chunk.file_path
            found = stems.get(path)
            if found is None:
                found = stems[path] = by_stem.setdefault(text.file_stem(path), [])
            found.append(i)
        return cls(chunks, source, id_ranks, bm25, by_stem)


def _bm25(chunks: Sequence[Chunk], id_ranks: IntArray, options: CodeOptions) -> Bm25Index:
    """BM25 over each chunk's words expanded to identifier terms, plus its path terms.

    Words are counted per chunk in C (`Counter`), and each distinct word is expanded to
    its terms once for the whole corpus; the (chunk, term, count) entries are then laid
    out and summed by numpy, so the Python work per chunk is what a plain BM25 build does.
    """
    split = options.split_identifiers
    flat_words: list[str] = []
    flat_counts: list[int] = []
    per_doc = np.zeros(len(chunks), dtype=np.int64)
    for doc, chunk in enumerate(chunks):
        word_counts = Counter(text.words(chunk.content) if split else tokenize(chunk.content))
        per_doc[doc] = len(word_counts)
        flat_words.extend(word_counts.keys())
        flat_counts.extend(word_counts.values())
    word_ids = {word: i for i, word in enumerate(dict.fromkeys(flat_words))}
    term_ids: dict[str, int] = {}

    def term_id(term: str) -> int:
        found = term_ids.get(term)
        if found is None:
            found = term_ids[term] = len(term_ids)
        return found

    # Each distinct word's terms, laid out flat (`expansion[starts[w]:starts[w + 1]]`);
    # term ids are given in first-seen order, as `term_id` would give them one by one.
    expanded = list(map(_word_expansion(options), word_ids))
    flat_terms = [term for word_terms in expanded for term in word_terms]
    term_ids.update((term, i) for i, term in enumerate(dict.fromkeys(flat_terms)))
    expansion = list(map(term_ids.__getitem__, flat_terms))
    sizes = np.fromiter(map(len, expanded), np.int64, len(expanded))
    starts = np.zeros(len(word_ids) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    entry_words = np.fromiter(map(word_ids.__getitem__, flat_words), np.int64, len(flat_words))
    entry_counts = np.asarray(flat_counts, dtype=np.int64)
    entry_docs = np.repeat(np.arange(len(chunks), dtype=np.int64), per_doc)
    width = sizes[entry_words]
    docs = np.repeat(entry_docs, width)
    counts = np.repeat(entry_counts, width)
    # Position of each expanded entry inside its word's terms: 0, 1, ... per entry.
    firsts = np.repeat(starts[entry_words], width)
    offsets = np.arange(len(docs), dtype=np.int64) - np.repeat(np.cumsum(width) - width, width)
    terms = np.asarray(expansion, dtype=np.int64)[firsts + offsets] if len(docs) else firsts
    if options.path_terms:
        docs, terms, counts = _with_path_terms(chunks, options, term_id, docs, terms, counts)
    n_terms = max(len(term_ids), 1)
    keys, inverse = np.unique(docs * n_terms + terms, return_inverse=True)
    summed = np.bincount(inverse, weights=counts, minlength=len(keys)).astype(np.int64)
    key_docs = keys // n_terms
    return Bm25Index.from_term_counts(
        term_ids,
        keys % n_terms,
        summed,
        np.bincount(key_docs, minlength=len(chunks)).astype(np.int64),
        np.bincount(key_docs, weights=summed, minlength=len(chunks)).astype(np.int64),
        id_ranks,
    ).with_parameters(options.k1, options.b)


def _with_path_terms(
    chunks: Sequence[Chunk],
    options: CodeOptions,
    term_id: Callable[[str], int],
    docs: IntArray,
    terms: IntArray,
    counts: IntArray,
) -> tuple[IntArray, IntArray, IntArray]:
    """The entries with each chunk's path terms appended (made once per file; a file's
    chunks are consecutive, so each file's block is laid out by numpy at once)."""
    block_docs: list[IntArray] = []
    block_terms: list[IntArray] = []
    block_counts: list[IntArray] = []
    first = 0
    while first < len(chunks):
        path = chunks[first].file_path
        end = first + 1
        while end < len(chunks) and chunks[end].file_path == path:
            end += 1
        extra = _path_counts(path, options)
        ids = np.asarray([term_id(term) for term in extra], dtype=np.int64)
        tally = np.asarray(list(extra.values()), dtype=np.int64)
        block_docs.append(np.repeat(np.arange(first, end, dtype=np.int64), len(ids)))
        block_terms.append(np.tile(ids, end - first))
        block_counts.append(np.tile(tally, end - first))
        first = end
    return (
        np.concatenate([docs, *block_docs]),
        np.concatenate([terms, *block_terms]),
        np.concatenate([counts, *block_counts]),
    )


def _word_expansion(options: CodeOptions) -> Callable[[str], tuple[str, ...]]:
    """What one word of a chunk is indexed as under `options`."""
    if options.split_identifiers:
        return text.folded_identifier_terms if options.fold_plurals else text.identifier_terms
    if options.fold_plurals:
        return lambda word: (text.folded(word),)
    return lambda word: (word,)


def _path_counts(path: str, options: CodeOptions) -> Counter[str]:
    return text.path_terms(path, split=options.split_identifiers, fold=options.fold_plurals)


def _cut(
    stored: Sequence[Chunk],
    by_file: dict[str, list[int]],
    options: CodeOptions,
    root: str | None,
) -> list[tuple[Chunk, int]]:
    """The chunks to rank, file by file in store order, each with the stored chunk it
    comes from."""
    picked: list[tuple[Chunk, int]] = []
    size = options.max_chunk_lines
    # A corpus with no code file at all (documentation only) keeps every file: leaving
    # it empty would answer nothing.
    only_code = options.code_files_only and any(text.code_file(path) for path in by_file)
    for path, members in by_file.items():
        if only_code and not text.code_file(path):
            continue
        if options.chunks == "stored":
            pieces = [(stored[i], i, i) for i in members]
        else:
            pieces = _non_overlapping(stored, members, options)
            if root is not None:
                pieces = _attach_leading_comments(
                    sorted(
                        [*pieces, *_gaps(stored, members, root, path)],
                        key=lambda piece: piece[0].start_line,
                    )
                )
        if options.code_files_only:
            pieces = [piece for piece in pieces if piece[0].content.strip()]
        if size > 0 and options.chunks == "tiled":
            pieces = _merged(stored, pieces, size)
        for chunk, origin, _outer in pieces:
            if size > 0:
                picked.extend((_named(part), origin) for part in _windows(chunk, size))
            else:
                picked.append((_named(chunk), origin))
    return picked


def _named(chunk: Chunk) -> Chunk:
    """`chunk` with its id and token estimate, when it was cut as a draft (`_piece`)."""
    if chunk.chunk_id:
        return chunk
    return _piece(chunk, chunk.start_line, chunk.end_line, chunk.content)


Piece = tuple[Chunk, int, int]
"""A chunk to rank, the stored chunk its vector comes from, and the outermost stored
chunk it lies in."""


def _merged(stored: Sequence[Chunk], pieces: list[Piece], size: int) -> list[Piece]:
    """Consecutive pieces of one outermost chunk joined while they span at most `size`
    lines, so a class's short methods and the lines between them are read together."""
    merged: list[Piece] = []
    group: list[Piece] = []
    outer_lines: dict[int, list[str]] = {}

    def flush() -> None:
        if len(group) == 1:
            merged.append(group[0])
        elif group:
            outer = group[0][2]
            parent = stored[outer]
            first, last = group[0][0].start_line, group[-1][0].end_line
            lines = outer_lines.get(outer)
            if lines is None:
                lines = outer_lines[outer] = parent.content.split("\n")
            start = max(first, parent.start_line)
            body = "\n".join(lines[start - parent.start_line : last - parent.start_line + 1])
            if first < start:  # a comment attached before the outer chunk's first line
                lead = group[0][0].content.split("\n")[: start - first]
                body = "\n".join([*lead, body])
            joined = _piece(parent, first, last, body)
            if parent.language == PLAINTEXT:  # cut at definitions: the first one names it
                joined = attrs.evolve(joined, kind=group[0][0].kind)
            merged.append((joined, outer, outer))
        group.clear()

    for piece in pieces:
        if group and (
            piece[2] != group[0][2] or piece[0].end_line - group[0][0].start_line + 1 > size
        ):
            flush()
        group.append(piece)
    flush()
    return merged


def _gaps(stored: Sequence[Chunk], members: list[int], root: str, path: str) -> list[Piece]:
    """The file's runs of lines no stored chunk covers (imports, constants, type aliases,
    top-level statements), read from the corpus and protected like a strict store.

    Only when every stored chunk of the file is still where the file has it: a file
    changed since indexing, or protected differently, gets no gaps.
    """
    real_root = _real_root(root)
    target = os.path.realpath(os.path.join(real_root, path))
    if os.path.commonpath([real_root, target]) != real_root:
        return []  # a stored path that leads out of the corpus is never read
    try:
        with open(target, encoding="utf-8", errors="replace") as f:
            raw = f.read()
    except (OSError, ValueError):
        return []
    # Protecting only the uncovered runs costs a fraction of protecting the whole file;
    # when a stored chunk differs from the raw file (a secret redacted inside it), the
    # whole file is protected first, as the store's build did.
    lines = raw.split("\n")
    protect_runs = all(_still_at(stored[i], lines) for i in members)
    if not protect_runs:
        lines = protect_text(raw, STRICT, path).split("\n")
        if not all(_still_at(stored[i], lines) for i in members):
            return []
    # Line i is covered when more chunks start at or before it than end before it.
    starts = np.fromiter((stored[i].start_line for i in members), np.int64, len(members))
    ends = np.fromiter((stored[i].end_line for i in members), np.int64, len(members))
    depth = np.cumsum(
        np.bincount(starts, minlength=len(lines) + 2)[: len(lines) + 2]
        - np.bincount(ends + 1, minlength=len(lines) + 2)[: len(lines) + 2]
    )
    uncovered_mask = np.zeros(len(lines) + 2, dtype=np.int8)
    uncovered_mask[1 : len(lines) + 1] = depth[1 : len(lines) + 1] <= 0
    edges = np.flatnonzero(np.diff(uncovered_mask))
    # (first, end) line numbers, end exclusive: a run opens where the mask rises.
    runs = [(int(a) + 1, int(b) + 1) for a, b in zip(edges[::2], edges[1::2], strict=True)]
    if protect_runs and runs:
        # The runs protected as one text (one call per file): lines from two runs side
        # by side can only make the redactor see more, never less.
        uncovered = [text_line for first, end in runs for text_line in lines[first - 1 : end - 1]]
        protected = protect_text("\n".join(uncovered), STRICT, path).split("\n")
        if len(protected) != len(uncovered):
            return []  # redaction that moves lines would misplace the runs: none
        taken = 0
        for first, end in runs:
            lines[first - 1 : end - 1] = protected[taken : taken + end - first]
            taken += end - first
    pieces: list[Piece] = []
    for first, end in runs:
        span = _trimmed(lines[first - 1 : end - 1], first)
        if span is not None:
            body, start, last = span
            pieces.append((_gap_chunk(path, start, last, body), NO_SOURCE, -start))
    return pieces


@functools.lru_cache(maxsize=16)
def _real_root(root: str) -> str:
    return os.path.realpath(root)


_COMMENT_LINE = re.compile(r"^\s*(?://|/\*|\*|#(?:\s|#|!|\[|$)|@|--|;;|$)")
"""A line that annotates what follows: a comment in the common syntaxes, a decorator or
attribute (`@route`, `#[derive]`), or blank. A C directive (`#define`) is not one."""


def _attach_leading_comments(pieces: list[Piece]) -> list[Piece]:
    """Move the comment lines that end a gap into the definition right after it: a
    doc comment or decorator describes the code it precedes, and read apart from it
    matches queries about that code without pointing at it."""
    attached: list[Piece] = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        following = pieces[i + 1] if i + 1 < len(pieces) else None
        chunk = piece[0]
        if (
            piece[1] == NO_SOURCE
            and following is not None
            and following[1] != NO_SOURCE
            and following[0].start_line > chunk.end_line
        ):
            lines = chunk.content.split("\n")
            cut = len(lines)
            while cut > 0 and _COMMENT_LINE.match(lines[cut - 1]):
                cut -= 1
            while cut < len(lines) and not lines[cut].strip():
                cut += 1  # blank lines after the code stay out of the comment
            if cut < len(lines):
                first = chunk.start_line + cut
                head = _trimmed(lines[:cut], chunk.start_line)
                if head is not None:
                    body, start, end = head
                    attached.append((_gap_chunk(chunk.file_path, start, end, body), *piece[1:]))
                target = following[0]
                # Blank lines trimmed off the gap still sit between it and the definition.
                between = [""] * (target.start_line - chunk.end_line - 1)
                body = "\n".join([*lines[cut:], *between, target.content])
                joined = attrs.evolve(
                    target,
                    chunk_id=chunk_id(target.file_path, first, target.end_line, body.encode()),
                    start_line=first,
                    content=body,
                    token_count=estimate_tokens(body),
                )
                attached.append((joined, following[1], following[2]))
                i += 2
                continue
        attached.append(piece)
        i += 1
    return attached


def _still_at(chunk: Chunk, lines: list[str]) -> bool:
    """Whether the file's lines still hold `chunk` where the store says: as many lines,
    the chunk's first line ending its first line and its last line starting its last."""
    if chunk.end_line > len(lines) or chunk.start_line < 1:
        return False
    first, _, rest = chunk.content.partition("\n")
    if chunk.content.count("\n") != chunk.end_line - chunk.start_line:
        return False
    if not rest:
        return first in lines[chunk.start_line - 1]
    last = rest.rpartition("\n")[2]
    return lines[chunk.start_line - 1].endswith(first) and lines[chunk.end_line - 1].startswith(
        last
    )


NO_SOURCE = -1
"""The source of a chunk no stored chunk holds (a gap): it has no vector."""


def _gap_chunk(path: str, first: int, last: int, body: str) -> Chunk:
    return Chunk(
        chunk_id=chunk_id(path, first, last, body.encode("utf-8")),
        file_path=path,
        start_line=first,
        end_line=last,
        chunk_type="module",
        kind="module",
        language="",
        content=body,
        token_count=estimate_tokens(body),
    )


def _contains(outer: Chunk, inner: Chunk) -> bool:
    return outer.start_line <= inner.start_line and inner.end_line <= outer.end_line


def _non_overlapping(
    stored: Sequence[Chunk], members: list[int], options: CodeOptions
) -> list[Piece]:
    """One file's outermost chunks in line order; with `chunks = "tiled"`, each cut at
    the nested chunks it holds (recursively) into pieces that share no line. With
    `grammar_chunks`, a whole-file chunk of Go, Java or C++ is cut at the definitions
    its grammar finds, the same way."""
    tiled = options.chunks == "tiled"
    order = sorted(members, key=lambda i: (stored[i].start_line, -stored[i].end_line, i))
    outermost: list[tuple[int, list[int]]] = []
    for i in order:
        if outermost and _contains(stored[outermost[-1][0]], stored[i]):
            outermost[-1][1].append(i)
        else:
            outermost.append((i, []))
    pieces: list[Piece] = []
    for i, nested in outermost:
        if tiled and nested:
            pieces.extend((chunk, origin, i) for chunk, origin in _tile(stored, i, nested))
        elif (
            tiled
            and options.grammar_chunks
            and stored[i].language == PLAINTEXT
            and (parsed := _tiled_by_grammar(stored[i])) is not None
        ):
            pieces.extend((chunk, i, i) for chunk in parsed)
        elif options.split_unparsed and stored[i].language == PLAINTEXT:
            pieces.extend((chunk, i, i) for chunk in _at_definitions(stored[i]))
        else:
            pieces.append((stored[i], i, i))
    return pieces


_DEFINITION_KEYWORD = re.compile(
    r"^(?: {0,4}|\t)(?:(?:export|public|private|protected|internal|static|final|abstract|"
    r"async|pub(?:\([a-z]+\))?|inline|virtual|extern|override|open|sealed|data|unsafe|"
    r"constexpr|friend)\s+)*"
    r"(?:func|type|class|struct|interface|enum|def|fn|impl|trait|module|namespace|object|"
    r"record|fun|function|union|typedef|template|protocol|extension|macro_rules!)\b"
)
_FUNCTION_HEADER = re.compile(
    r"^(?: {0,4}|\t)(?!(?:return|if|else|for|while|switch|case|do|throw|delete|new|goto|"
    r"using|sizeof|co_return|co_await|co_yield|yield|await|defer|go|assert)\b)"
    r"(?:[A-Za-z_][\w:<>,]*[*&]*\s+[*&]*)+~?[A-Za-z_][\w:]*\s*\([^;=]*$"
)
"""A line that starts a definition at low indentation (at most four columns or one
tab), in any of the common languages: a definition keyword after modifiers (`func`,
`type`, `class`, `struct`, `impl`, `fn`, ...), or a C-like function header (a return
type, a name, an opening parenthesis; no `=` and no `;` after it)."""

_ATTACHED_LINE = re.compile(r"^\s*(?://|/\*|\*|#(?:\s|#|!|\[|$)|@|--|;;)")
"""A comment, decorator or attribute line: stays with the definition below it."""


def _at_definitions(chunk: Chunk) -> list[Chunk]:
    """A whole-file chunk of a language the chunker does not parse, cut before each
    line that starts a definition (with the comment lines right above it), so each
    piece holds one definition, whose first line names it for the definition boost."""
    lines = chunk.content.split("\n")
    cuts = [0]
    for i, line in enumerate(lines):
        if i == 0 or not (_DEFINITION_KEYWORD.match(line) or _FUNCTION_HEADER.match(line)):
            continue
        start = i
        while start > cuts[-1] and _ATTACHED_LINE.match(lines[start - 1]):
            start -= 1
        if start > cuts[-1]:
            cuts.append(start)
    if len(cuts) == 1:
        return [chunk]
    pieces: list[Chunk] = []
    for first, end in zip(cuts, [*cuts[1:], len(lines)], strict=True):
        span = _trimmed(lines[first:end], chunk.start_line + first)
        if span is not None:
            body, start, last = span
            pieces.append(attrs.evolve(_piece(chunk, start, last, body), kind=DEFINITION))
    return pieces


def _tiled_by_grammar(whole: Chunk) -> list[Chunk] | None:
    """A whole-file chunk tiled at the definitions its language's grammar finds (the
    way stored definition chunks tile their outer chunk); None when no grammar reads
    the file or it holds no definition."""
    found = grammars.definitions(whole.file_path, whole.content)
    if not found:
        return None
    lines = whole.content.split("\n")
    local = [whole]
    for definition in found:
        body = "\n".join(lines[definition.first : definition.last + 1])
        first, last = whole.start_line + definition.first, whole.start_line + definition.last
        piece = _piece(whole, first, last, body, draft=True)
        local.append(attrs.evolve(piece, kind=definition.kind))
    nested = sorted(range(1, len(local)), key=lambda j: (local[j].start_line, -local[j].end_line))
    return [chunk for chunk, _ in _tile(local, 0, nested)]


DEFINITION = "definition"
"""The node kind of a piece cut at a definition line of an unparsed file: not "module",
so its first line may name what it defines."""


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
    """Lines `first..last` of `parent` as a piece, blank lines at either end left out,
    unless they hold no word."""
    span = _trimmed(lines[first - parent.start_line : last - parent.start_line + 1], first)
    if span is None:
        return []
    body, first, last = span
    return [(_piece(parent, first, last, body, draft=True), origin)]


_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")
"""What makes a piece worth ranking: at least one character of a word."""


def _trimmed(lines: list[str], first: int) -> tuple[str, int, int] | None:
    """`lines` (the first being line `first`) without blank lines at either end, with
    the line numbers of what is left; None when no word is left."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    body = "\n".join(lines[start:end])
    if _WORD_CHAR.search(body) is None:
        return None
    return body, first + start, first + end - 1


def _piece(parent: Chunk, first: int, last: int, body: str, *, draft: bool = False) -> Chunk:
    """Lines `first` to `last` of `parent`, holding `body`. A `draft` is cut without its
    id and token estimate yet: most pieces between a class's methods are joined with
    their neighbours (`_merged`) and never ranked alone, so `_named` hashes only the
    pieces that are."""
    return Chunk(
        chunk_id="" if draft else chunk_id(parent.file_path, first, last, body.encode("utf-8")),
        file_path=parent.file_path,
        start_line=first,
        end_line=last,
        chunk_type=parent.chunk_type,
        kind=parent.kind,
        language=parent.language,
        content=body,
        token_count=0 if draft else estimate_tokens(body),
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
        if _WORD_CHAR.search(body) is None:
            continue
        first = chunk.start_line + offset
        last = min(first + size - 1, chunk.end_line)
        windows.append(_piece(chunk, first, last, body))
    return windows


_CACHE: weakref.WeakKeyDictionary[
    RetrievalIndex, dict[tuple[CodeOptions, str | None], CodeIndex]
] = weakref.WeakKeyDictionary()


def code_index(index: Index, options: CodeOptions, root: str | None = None) -> CodeIndex:
    """The code index of `index` under `options` (gap chunks read below `root`): derived
    on first use, then cached with the index's derived data (rebuilt whenever that is)."""
    derived = retrieval_index(index)
    per_options = _CACHE.setdefault(derived, {})
    key = (options, options.root_used(root))
    found = per_options.get(key)
    if found is None:
        found = per_options[key] = CodeIndex.build(derived, options, key[1])
    return found
