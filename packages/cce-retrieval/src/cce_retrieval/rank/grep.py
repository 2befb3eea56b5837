"""The `grep` baseline: what a coding agent does without an index (grep, then read whole files).

Why it exists: the cost metrics (`recall@NNNNt`, `first-hit-tokens`) mean most next to
the way agents search a repository they have not indexed: split the request into
keywords, grep each one, read the matching files whole, most keywords first. This
backend does exactly that, in pure Python, so a report can put any retriever's cost
beside it (docs/backends.md#grep). It is built in and opt-in: it never runs unless
named.

The rules (docs/backends.md#grep):

- Keywords: the query's words (a letter, then letters, digits or `_`), lower-cased,
  without the stopwords below or words of fewer than 3 characters, each kept once in
  query order. A query left with no keyword searches for its whole trimmed text.
- The searched files are the index's files. A file's text is read from the corpus on
  disk (`Query.corpus_root`) when it is known and still holds the index's chunks where
  they were, protected like the index (`file_text`); otherwise it is rebuilt from the
  index's chunks (lines no chunk covers are left empty), which is exact for a file
  stored as one whole-file chunk.
- A file matches a keyword when the keyword occurs in its lower-cased text (a
  case-insensitive fixed-string search). Files are ranked by how many distinct
  keywords they match, most first; ties go to the smaller path in code-point order.
  Files that match none are not returned.
- Each result is the whole file: lines 1 to the number of `\\n` plus one, type and kind
  `module`, the id a whole-file chunk of that text would have, and as score the number
  of distinct keywords matched.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from cce_retrieval.model import Chunk, Index
from cce_retrieval.parity.text import rust_trim
from cce_retrieval.protect.redactor import redact
from cce_retrieval.protect.strict import strict_redact

__all__ = [
    "MIN_KEYWORD_LENGTH",
    "MODULE_KIND",
    "STOPWORDS",
    "GrepCorpus",
    "corpus_texts",
    "file_text",
    "grep_rank",
    "keywords",
    "rebuilt_from_chunks",
]

MIN_KEYWORD_LENGTH: Final = 3
"""Words shorter than this are not searched for."""

_STOPWORD_TEXT: Final = """
    a about above after again all also am an and any are as at be because been before
    being between both but by can could did do does doing down during each either else
    few for from further had has have having he her here hers him his how if in into is
    it its itself just may me might more most much must my neither no nor not now of off
    on once only or other our ours out over own same she should so some such than that
    the their theirs them then there these they this those through too under until up
    upon very was we were what when where which while who whom whose why will with would
    yet you your
    """

STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())
"""English function words an agent would not grep for (question words included)."""

_WORD: Final = re.compile(r"[^\W\d_]\w*")
MODULE_KIND: Final = "module"


def keywords(query: str) -> tuple[str, ...]:
    """The query's keywords, lower-cased, in query order, each once (see the module rules)."""
    found: dict[str, None] = {}
    for word in _WORD.findall(query):
        lowered = word.lower()
        if len(lowered) >= MIN_KEYWORD_LENGTH and lowered not in STOPWORDS:
            found.setdefault(lowered, None)
    return tuple(found)


def _chunks_by_file(index: Index) -> dict[str, list[Chunk]]:
    by_file: dict[str, list[Chunk]] = {path: [] for path in index.file_tokens}
    for chunk in index.chunks:
        by_file.setdefault(chunk.file_path, []).append(chunk)
    return by_file


def rebuilt_from_chunks(chunks: Sequence[Chunk]) -> str:
    """A file's text as its chunks give it, line by line (the first chunk holding a line
    wins); lines no chunk covers stay empty."""
    lines: dict[int, str] = {}
    for chunk in chunks:
        for offset, line in enumerate(chunk.content.split("\n")):
            lines.setdefault(chunk.start_line + offset, line)
    if not lines:
        return ""
    return "\n".join(lines.get(number, "") for number in range(1, max(lines) + 1))


def _holds_chunks(text: str, chunks: Sequence[Chunk]) -> bool:
    """Whether every chunk's content lies within its own lines of `text`."""
    lines = text.split("\n")
    for chunk in chunks:
        if chunk.end_line > len(lines):
            return False
        if chunk.content not in "\n".join(lines[chunk.start_line - 1 : chunk.end_line]):
            return False
    return True


def file_text(root: str | None, path: str, chunks: Sequence[Chunk]) -> str:
    """The text `grep` searches and returns for one indexed file.

    From disk (UTF-8), protected first: the strict redaction when the index's chunks lie
    where they were in that text (an index built with either protection, whose file is
    unchanged), else the reference redaction under the same test (a default build whose
    chunks hold something strict protection would hide). Otherwise (no corpus, an
    unreadable or changed file, an index built without protection) the file is rebuilt
    from its chunks, so nothing comes back that the index does not hold.
    """
    if root:
        try:
            with open(os.path.join(root, path), "rb") as handle:
                raw = handle.read().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            raw = None
        if raw is not None:
            reference = redact(raw)
            stricter, _ = strict_redact(reference, path)
            for candidate in (stricter, reference):
                if _holds_chunks(candidate, chunks):
                    return candidate
    return rebuilt_from_chunks(chunks)


def corpus_texts(index: Index, corpus_root: str | None) -> dict[str, str]:
    """Every indexed file's text, by path (`file_text`)."""
    return {
        path: file_text(corpus_root, path, chunks)
        for path, chunks in _chunks_by_file(index).items()
    }


@attrs.frozen(slots=True)
class GrepCorpus:
    """One index's file texts, original and lower-cased, in path order."""

    index: Index
    root: str | None
    paths: tuple[str, ...]
    texts: Mapping[str, str]
    lowered: tuple[str, ...]


def grep_rank(
    texts: Mapping[str, str],
    query: str,
    k: int,
    *,
    paths: Sequence[str] | None = None,
    lowered: Sequence[str] | None = None,
) -> list[tuple[str, int]]:
    """(path, distinct keywords matched) of the best `k` files of `texts` for `query`.

    `paths` (the sorted paths of `texts`) and `lowered` (their texts lower-cased, in that
    order) may be given from a cache; they are computed otherwise.
    """
    terms = keywords(query) or (rust_trim(query).lower(),)
    terms = tuple(term for term in terms if term)
    if not terms or k < 1:
        return []
    if paths is None:
        paths = sorted(texts)
    folded = lowered if lowered is not None else [texts[path].lower() for path in paths]
    scored: list[tuple[int, str]] = []
    for path, text in zip(paths, folded, strict=True):
        matched = sum(1 for term in terms if term in text)
        if matched:
            scored.append((-matched, path))
    scored.sort()
    return [(path, -negated) for negated, path in scored[:k]]
