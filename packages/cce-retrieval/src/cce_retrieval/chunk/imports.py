"""Per-language import extraction: the module names a file imports (docs/index-store.md#imports).

Why it exists: the import graph that boosts related files at search time is built from
these names, and the reference derives them with small, quirky text rules per pack
(Rust `pub use` → `pub`, the LAST string fragment of a JS source, Python relative
imports...). This module owns those rules. It works on the already-parsed tree's import
nodes, handed over in pre-order by the chunker, and returns the names in first-seen order
without empty strings or duplicates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from tree_sitter import Node

from cce_retrieval.parity.text import rust_trim, rust_trim_start

IMPORT_NODE_TYPES: Final[dict[str, frozenset[str]]] = {
    "python": frozenset({"import_statement", "import_from_statement"}),
    "javascript": frozenset({"import_statement"}),
    "typescript": frozenset({"import_statement"}),
    "ruby": frozenset({"call"}),
    "rust": frozenset({"use_declaration"}),
    "c": frozenset({"preproc_include"}),
}
"""Per pack, the (named) node types that can carry an import; everything else is ignored."""

_REQUIRE_METHODS: Final = frozenset({"require", "require_relative"})
_JS_QUOTES: Final = "'\"`"
_C_INCLUDE_DELIMITERS: Final = '<>"'


def _text(node: Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _first_dotted_component(dotted: str) -> str | None:
    for component in dotted.split("."):
        if component:
            return component
    return None


def _without_final_extension(name: str) -> str:
    dot = name.rfind(".")
    return name[:dot] if dot > 0 else name


def _last_segment_stem(path: str) -> str:
    return _without_final_extension(path.rsplit("/", 1)[-1])


def _python_names(node: Node, source: bytes) -> Iterable[str | None]:
    if node.type == "import_statement":
        for child in node.children:
            if child.type == "dotted_name":
                yield _first_dotted_component(_text(child, source))
            elif child.type == "aliased_import":
                first = child.child(0)
                if first is not None:
                    yield _first_dotted_component(_text(first, source))
    else:
        module = node.child_by_field_name("module_name")
        if module is not None:
            yield _first_dotted_component(_text(module, source))


def _script_names(node: Node, source: bytes) -> Iterable[str | None]:
    module_source = node.child_by_field_name("source")
    if module_source is None:
        return
    spec: str | None = None
    for child in module_source.children:
        if child.type == "string_fragment":
            spec = _text(child, source)
    if spec is None:
        spec = _text(module_source, source).strip(_JS_QUOTES)
    segments = [segment for segment in spec.split("/") if segment not in ("", ".", "..")]
    if not segments:
        return
    if segments[0].startswith("@") and len(segments) > 1:
        yield f"{segments[0]}/{segments[1]}"
    else:
        yield segments[0]


def _first_string_content(argument_list: Node) -> Node | None:
    cursor = argument_list.walk()
    while True:
        node = cursor.node
        if node is not None and node.type == "string_content":
            return node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return None


def _ruby_names(node: Node, source: bytes) -> Iterable[str | None]:
    method = node.child(0)
    if method is None or method.type != "identifier":
        return
    if _text(method, source) not in _REQUIRE_METHODS:
        return
    for child in node.children:
        if child.type == "argument_list":
            content = _first_string_content(child)
            if content is not None:
                yield _last_segment_stem(_text(content, source))
            return


def _rust_crate_prefix(text: str) -> str:
    end = 0
    for char in text:
        # Rust's char::is_alphanumeric; Python's isalnum agrees on every character a crate
        # path plausibly starts with (it only misses Other_Alphabetic combining marks).
        if not (char.isalnum() or char == "_"):
            break
        end += 1
    return text[:end]


def _rust_names(node: Node, source: bytes) -> Iterable[str | None]:
    text = rust_trim(_text(node, source))
    while text.startswith("use"):
        text = text[3:]
    text = rust_trim_start(text)
    yield _rust_crate_prefix(text.split("::", 1)[0])


def _c_names(node: Node, source: bytes) -> Iterable[str | None]:
    for child in node.children:
        if child.type in ("system_lib_string", "string_literal"):
            path = rust_trim(_text(child, source)).strip(_C_INCLUDE_DELIMITERS)
            yield _last_segment_stem(path)


_EXTRACTORS: Final[dict[str, Callable[[Node, bytes], Iterable[str | None]]]] = {
    "python": _python_names,
    "javascript": _script_names,
    "typescript": _script_names,
    "ruby": _ruby_names,
    "rust": _rust_names,
    "c": _c_names,
}


def imports_from_nodes(pack_name: str, nodes: Iterable[Node], source: bytes) -> tuple[str, ...]:
    """Import names of `pack_name` from its import nodes in pre-order, deduplicated.

    `nodes` are the named nodes whose type is in `IMPORT_NODE_TYPES[pack_name]`, in tree
    pre-order; `source` is the UTF-8 buffer that was parsed.
    """
    extract = _EXTRACTORS[pack_name]
    seen: dict[str, None] = {}
    for node in nodes:
        for name in extract(node, source):
            if name:
                seen.setdefault(name, None)
    return tuple(seen)
