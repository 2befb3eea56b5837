"""What the code-aware backends read in text and paths: identifier-splitting terms, path
terms, query shapes, definitions and the path classes a ranking demotes.

Why it exists: code is searched by the parts of its identifiers (`parse config` should
find `parse_config` and `ParseConfig`), by its file and folder names, and by the place a
name is defined; the plain word tokenizer of the reference BM25 sees none of that. This
module owns those text rules, language-agnostic and free of any index, so the derived
index (`cce_retrieval.rank.code.index`) and the ranking (`.ranker`) share one definition
and the tests can pin each rule alone (docs/ranking.md).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections import Counter
from collections.abc import Iterable

__all__ = [
    "QUERY_STOPWORDS",
    "TermCounts",
    "code_file",
    "defines",
    "embedded_symbols",
    "file_stem",
    "folded",
    "folded_identifier_terms",
    "identifier_terms",
    "path_class",
    "path_parts",
    "path_terms",
    "query_acronyms",
    "query_keywords",
    "query_terms",
    "stem_matches",
    "symbol_name",
    "symbol_query",
]

TermCounts = Counter[str]


def _case_keeping_table() -> bytes:
    table = bytearray(b" " * 256)
    for byte in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_":
        table[byte] = byte
    return bytes(table)


_WORD_BYTES = _case_keeping_table()

# One part of a camelCase / PascalCase word: an acronym before a capitalised word
# (`HTTP` in `HTTPServer`), a capitalised or lowercase run, an acronym, or digits.
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def words(text: str) -> list[str]:
    """The runs of ASCII `[A-Za-z0-9_]` in `text`, case kept (the reference's word rule)."""
    return text.encode("utf-8", "surrogatepass").translate(_WORD_BYTES).decode("ascii").split()


@functools.lru_cache(maxsize=1 << 18)
def identifier_terms(word: str) -> tuple[str, ...]:
    """`word` lowercased, the same without its leading and trailing underscores, then its
    snake_case or camelCase parts when it has two or more.

    The whole word is kept so an exact identifier still matches best (it is rarer than
    its parts, so BM25 weighs it more); `HandlerStack` gives `handlerstack`, `handler`,
    `stack`. Edge underscores only mark a name private or special, so they do not hide
    the name: `__getattr__` also gives `getattr`, and `_safeParse` gives `safeparse`,
    `safe`, `parse`.
    """
    if word.isalpha() and word.islower():
        return (word,)  # one lowercase part (most words): nothing to split
    lower = word.lower()
    core = word.strip("_")
    if not core:
        return ()
    if "_" in core:
        parts = [part for part in core.lower().split("_") if part]
    else:
        parts = [part.lower() for part in _CAMEL_PART.findall(core)]
    whole = (lower,) if len(core) == len(word) else (lower, core.lower())
    return (*whole, *parts) if len(parts) >= 2 else whole


@functools.lru_cache(maxsize=1 << 18)
def folded(term: str) -> str:
    """`term` without a plural or third-person `s` (Harman's S-stemmer): `errors` and
    `handles` read as `error` and `handle`, `dependencies` as `dependency`; `-aes`,
    `-ees` and `-oes` lose the s only; `-ss`, `-us` and terms of three letters or fewer
    stay as they are. Chunks and queries are read the same way, so a word matches its
    other number without a dictionary."""
    if len(term) <= 3 or not term.endswith("s"):
        return term
    if term.endswith("ies") and not term.endswith(("eies", "aies")):
        return term[:-3] + "y"
    if term.endswith("es") and not term.endswith(("aes", "ees", "oes")):
        return term[:-1]
    if term.endswith(("us", "ss")):
        return term
    return term[:-1]


@functools.lru_cache(maxsize=1 << 18)
def folded_identifier_terms(word: str) -> tuple[str, ...]:
    """`identifier_terms(word)` read through `folded`, each term once."""
    found = identifier_terms(word)
    if not any(term[-1] == "s" for term in found):
        return found  # nothing to fold (most words)
    return tuple(dict.fromkeys(map(folded, found)))


def query_terms(text: str, *, fold: bool = False) -> list[str]:
    """The query's identifier terms, each once, in first-occurrence order; `fold` reads
    each through `folded`."""
    expand = folded_identifier_terms if fold else identifier_terms
    return list(dict.fromkeys(term for word in words(text) for term in expand(word)))


def file_stem(path: str) -> str:
    """The file name without its last extension, lowercased (`app/UserService.ts` ->
    `userservice`)."""
    name = posixpath.basename(path)
    stem, _ = posixpath.splitext(name)
    return (stem or name).lower()


def _folders(path: str) -> list[str]:
    return [part for part in posixpath.dirname(path).split("/") if part not in ("", ".", "..")]


def path_terms(
    path: str, folders: int = 3, *, split: bool = True, fold: bool = False
) -> TermCounts:
    """Terms of the file stem (counted twice: the name is the best summary of a file)
    and of the last `folders` folder names, identifier-split when `split`, read through
    `folded` when `fold`."""

    def terms(part: str) -> Iterable[str]:
        for word in words(part):
            if split:
                yield from folded_identifier_terms(word) if fold else identifier_terms(word)
            else:
                yield folded(word.lower()) if fold else word.lower()

    counts: TermCounts = Counter()
    name = posixpath.basename(path)
    for term in terms(posixpath.splitext(name)[0] or name):
        counts[term] += 2
    for folder in _folders(path)[-folders:] if folders else []:
        for term in terms(folder):
            counts[term] += 1
    return counts


@functools.lru_cache(maxsize=1 << 14)
def path_parts(path: str, *, fold: bool = False) -> frozenset[str]:
    """Identifier parts of the file stem and of its parent folder (what stem matching
    compares query words with), read through `folded` when `fold`."""
    name = posixpath.basename(path)
    stem = posixpath.splitext(name)[0] or name
    found = {term for word in words(stem) for term in identifier_terms(word)}
    folders = _folders(path)
    if folders:
        found.update(term for word in words(folders[-1]) for term in identifier_terms(word))
    return frozenset(map(folded, found) if fold else found)


QUERY_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has",
    "have", "how", "if", "in", "is", "it", "not", "of", "on", "or", "the", "to", "was",
    "what", "when", "where", "which", "who", "why", "with",
))  # fmt: skip


def query_keywords(query: str, *, fold: bool = False) -> frozenset[str]:
    """Query words of three letters or more that are not stopwords, lowercased, read
    through `folded` when `fold`."""
    found = (
        word.lower()
        for word in words(query)
        if len(word) > 2 and word.lower() not in QUERY_STOPWORDS and not word.isdigit()
    )
    return frozenset(map(folded, found) if fold else found)


def query_acronyms(query: str, longest: int = 3) -> dict[str, int]:
    """Initials of 2 to `longest` consecutive query keywords, each with the number of
    words it stands for (`file system` -> `fs`: 2). Code abbreviates a concept in file
    names (`fs.c`, `sse.ts`, `ipc.rs`) that a question spells out; a stopword or a short
    word breaks the run."""
    found: dict[str, int] = {}
    run: list[str] = []
    for word in [*words(query), ""]:
        lower = word.lower()
        if len(word) > 2 and word.isalpha() and lower not in QUERY_STOPWORDS:
            run.append(lower)
            continue
        for size in range(2, longest + 1):
            for start in range(len(run) - size + 1):
                initials = "".join(part[0] for part in run[start : start + size])
                found[initials] = max(found.get(initials, 0), size)
        run = []
    return found


_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_QUALIFIED = re.compile(rf"^{_IDENT}(?:(?:::|\\|->|\.){_IDENT})+$")
_SINGLE = re.compile(rf"^{_IDENT}$")


def symbol_query(query: str) -> bool:
    """Whether the query is one identifier: namespace-qualified (`Sinatra::Base`,
    `app.route`), or one word with an underscore or a capital (`parse_config`,
    `Router`). A plain lowercase word (`session`) is read as natural language."""
    text = query.strip()
    if _QUALIFIED.match(text):
        return True
    if not _SINGLE.match(text):
        return False
    return "_" in text or any(ch.isupper() for ch in text)


def symbol_name(query: str) -> str:
    """The last identifier of a possibly qualified symbol query (`Sinatra::Base` ->
    `Base`)."""
    text = query.strip()
    for separator in ("::", "\\", "->", "."):
        if separator in text:
            return text.rsplit(separator, 1)[-1]
    return text


_EMBEDDED = re.compile(
    r"\b(?:[A-Z][a-z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*|[a-z][A-Za-z0-9]*[A-Z][A-Za-z0-9]+)\b"
)


def embedded_symbols(query: str) -> frozenset[str]:
    """camelCase and PascalCase identifiers inside a natural-language query."""
    return frozenset(_EMBEDDED.findall(query))


# Words that introduce a definition in common languages. Matched case-sensitively:
# `Module` in prose or `Class` in a call is not a definition.
_DEFINITION_WORDS = (
    "class", "module", "defmodule", "def", "interface", "struct", "enum", "trait",
    "type", "func", "function", "object", "abstract class", "data class", "fn", "fun",
    "package", "namespace", "protocol", "record", "typedef", "union",
)  # fmt: skip


@functools.lru_cache(maxsize=512)
def _definition_patterns(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    escaped = re.escape(name)
    keywords = "|".join(re.escape(word) for word in _DEFINITION_WORDS)
    qualifier = rf"(?:{_IDENT}(?:\.|::))*"
    keyword_form = re.compile(
        rf"(?:^|(?<=\s))(?:{keywords})\s+{qualifier}{escaped}(?:\s|[<({{:\[;]|$)", re.MULTILINE
    )
    # A definition chunk whose first line names it before `(`: C functions and methods
    # of JavaScript classes, which no keyword introduces.
    # Nothing but a return type and modifiers before it: no `=`, call or member access.
    header_form = re.compile(rf"^[^=(.]*(?<![A-Za-z0-9_]){escaped}\s*\(")
    return keyword_form, header_form


def defines(content: str, kind: str, name: str) -> bool:
    """Whether a chunk of node kind `kind` defines `name`: a definition keyword before it
    anywhere in the chunk, or (for a definition chunk) its first line calling it."""
    keyword_form, header_form = _definition_patterns(name)
    if keyword_form.search(content) is not None:
        return True
    if kind == "module":
        return False
    first_line = content.lstrip("\n").split("\n", 1)[0]
    return header_form.search(first_line) is not None


def stem_matches(stem: str, name: str) -> bool:
    """Whether a lowercased file stem names `name` (lowercased): equal, equal without
    underscores, or equal after dropping a plural `s`."""
    bare = stem.replace("_", "").replace("-", "")
    return name in (stem, bare, stem.rstrip("s"), bare.rstrip("s"))


# Path classes a code search demotes: code that mostly uses or re-exports what a query
# looks for, rather than defining it.
_TEST_FOLDERS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testing"})
_EXAMPLE_FOLDERS = frozenset({"example", "examples", "_example", "_examples", "docs_src"})
_COMPAT_FOLDERS = frozenset({"compat", "_compat", "legacy"})
_DEMOTED_FOLDERS = _TEST_FOLDERS | _EXAMPLE_FOLDERS | _COMPAT_FOLDERS
_REEXPORT_FILES = frozenset({"__init__.py", "package-info.java"})
_TEST_NAME = re.compile(
    r"^(?:test_.*|.*_test|.*\.test|.*\.spec|.*_spec|.*Tests?|.*Spec|.*Suite|test_helpers?.*)$"
)


@functools.lru_cache(maxsize=1 << 14)
def path_class(path: str) -> tuple[bool, bool]:
    """(demoted, reexport): `demoted` for tests, examples and compatibility shims;
    `reexport` for package barrels (`__init__.py`) and TypeScript declaration stubs."""
    name = posixpath.basename(path)
    demoted = bool(set(_folders(path)) & _DEMOTED_FOLDERS)
    if not demoted and "." in name:
        base = name[: -len(".d.ts")] if name.endswith(".d.ts") else posixpath.splitext(name)[0]
        demoted = _TEST_NAME.match(base) is not None
    reexport = name in _REEXPORT_FILES or name.endswith(".d.ts")
    return demoted, reexport


# Extensions of documentation, configuration and data files: not code, so a code search
# leaves them out of its lexical index.
_NON_CODE_EXTENSIONS = frozenset((
    ".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc", ".asciidoc", ".org", ".rtf",
    ".tex", ".bib", ".po", ".pot", ".html", ".htm", ".json", ".json5", ".jsonc",
    ".jsonl", ".ndjson", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf",
    ".properties", ".lock", ".csv", ".tsv", ".psv", ".xml", ".svg", ".plist", ".env",
    ".editorconfig", ".gitignore", ".gitattributes", ".npmignore", ".dockerignore",
    ".mod", ".sum", ".work", ".map", ".snap", ".log", ".pem", ".crt", ".key", ".png",
    ".jpg", ".jpeg", ".gif", ".ico", ".pdf",
))  # fmt: skip


@functools.lru_cache(maxsize=1 << 14)
def code_file(path: str) -> bool:
    """Whether `path` names a code file: it has an extension, not one of documentation,
    configuration or data (`README`, `LICENSE`, `setup.cfg`, `package.json` are not)."""
    name = posixpath.basename(path)
    extension = posixpath.splitext(name)[1].lower()
    if not extension:
        return False
    return extension not in _NON_CODE_EXTENSIONS
