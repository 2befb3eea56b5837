"""Definitions in Go, Java and C++ files, found with their tree-sitter grammars for the
code index only.

Why it exists: the store's chunker parses the reference engine's six languages and keeps
every other file as one whole-file chunk, and the stores must stay exactly as they are.
The code index (`rank.code.index`) cuts chunks at their nested definitions; for a file
of a language the chunker does not parse, this module supplies those definitions. It
owns which extensions it reads, the grammar each one is parsed with, which syntax node
types count as a definition, and their line spans inside a whole-file chunk's text.
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
from collections.abc import Callable
from typing import Final, NamedTuple

import tree_sitter
import tree_sitter_cpp
import tree_sitter_go
import tree_sitter_java

from cce_retrieval.chunk.packs import extension_of

__all__ = ["Definition", "definitions"]


class _Grammar(NamedTuple):
    name: str
    language: Callable[[], object]
    definition_types: frozenset[str]


_GO: Final = _Grammar(
    "go",
    tree_sitter_go.language,
    frozenset({"function_declaration", "method_declaration", "type_declaration"}),
)
_JAVA: Final = _Grammar(
    "java",
    tree_sitter_java.language,
    frozenset(
        {
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "annotation_type_declaration",
            "method_declaration",
            "constructor_declaration",
        }
    ),
)
_CPP: Final = _Grammar(
    "cpp",
    tree_sitter_cpp.language,
    frozenset(
        {
            "function_definition",
            "class_specifier",
            "struct_specifier",
            "union_specifier",
            "enum_specifier",
        }
    ),
)

# `.h` is not here: the store's chunker claims it for C, so its chunks are parsed already.
_BY_EXTENSION: Final[dict[str, _Grammar]] = {
    ".go": _GO,
    ".java": _JAVA,
    **{ext: _CPP for ext in (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".ipp")},
}


class Definition(NamedTuple):
    """A definition's lines in the text it was parsed from (0-based, inclusive) and its
    syntax node type."""

    first: int
    last: int
    kind: str


@functools.cache
def _language(grammar: _Grammar) -> tuple[tree_sitter.Language, tree_sitter.Query]:
    """The grammar and a query that captures its definition nodes. The query matches in
    C: walking every node of a file in Python cost up to twice the rest of the code
    index's build."""
    language = tree_sitter.Language(grammar.language())
    pattern = "[" + " ".join(f"({kind})" for kind in sorted(grammar.definition_types)) + "] @d"
    return language, tree_sitter.Query(language, pattern)


_PARSERS = threading.local()
"""One parser per grammar and thread: a tree-sitter parser is not safe to share between
threads, and two code indexes may be derived at once (a cluster worker's threads)."""


def _parser(grammar: _Grammar) -> tuple[tree_sitter.Parser, tree_sitter.Query]:
    language, query = _language(grammar)
    parsers: dict[str, tree_sitter.Parser] = vars(_PARSERS).setdefault("by_name", {})
    parser = parsers.get(grammar.name)
    if parser is None:
        parser = parsers[grammar.name] = tree_sitter.Parser(language)
    return parser, query


_NEWLINE = re.compile(b"\n")


def definitions(path: str, content: str) -> list[Definition] | None:
    """The definitions in `content` (a whole file of `path`), in source order, an outer
    one before those inside it; None when no grammar reads the file's language.

    Line numbers come from byte offsets (a search over the text's newline offsets), not
    from the nodes' points, so a node's lines are exactly the lines its bytes are on.
    """
    grammar = _BY_EXTENSION.get(extension_of(path) or "")
    if grammar is None:
        return None
    parser, query = _parser(grammar)
    data = content.encode("utf-8")
    captured = tree_sitter.QueryCursor(query).captures(parser.parse(data).root_node)
    nodes = sorted(captured.get("d", ()), key=lambda node: (node.start_byte, -node.end_byte))
    newlines = [match.start() for match in _NEWLINE.finditer(data)]
    found: list[Definition] = []
    for node in nodes:
        start, end = node.start_byte, node.end_byte
        first = bisect.bisect_left(newlines, start)
        last = bisect.bisect_left(newlines, max(end - 1, start))
        found.append(Definition(first, last, node.type))
    return found
