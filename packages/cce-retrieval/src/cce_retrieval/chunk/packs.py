"""The six language packs of the code index and the file-extension → pack resolution.

Why it exists: the reference decides which grammar parses a file, and which node types
become chunks, from a fixed registry (`src/packs/*.rs`, docs/index-store.md#language-packs).
This module owns that registry: pack names, extensions, the exact node-type sets, the
pinned grammars, and one tree-sitter parser per pack, created on first use and reused
(no incremental parsing). Everything unclaimed is plaintext; there is no content sniffing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import attrs
import tree_sitter
import tree_sitter_c
import tree_sitter_javascript
import tree_sitter_python
import tree_sitter_ruby
import tree_sitter_rust
import tree_sitter_typescript

from cce_retrieval.parity.text import ascii_lower


@attrs.frozen(slots=True)
class LanguagePack:
    """One registered language: its `language` name, extensions and chunk node types."""

    name: str
    extensions: tuple[str, ...]
    function_types: frozenset[str]
    class_types: frozenset[str]


_SCRIPT_FUNCTIONS: Final = frozenset(
    {"function_declaration", "method_definition", "arrow_function", "function_expression"}
)

PACKS: Final[tuple[LanguagePack, ...]] = (
    LanguagePack(
        name="python",
        extensions=(".py",),
        function_types=frozenset({"function_definition"}),
        class_types=frozenset({"class_definition"}),
    ),
    LanguagePack(
        name="javascript",
        extensions=(".js", ".jsx", ".mjs", ".cjs"),
        function_types=_SCRIPT_FUNCTIONS,
        class_types=frozenset({"class_declaration"}),
    ),
    LanguagePack(
        name="ruby",
        extensions=(".rb",),
        function_types=frozenset({"method", "singleton_method"}),
        class_types=frozenset({"class", "module"}),
    ),
    LanguagePack(
        name="rust",
        extensions=(".rs",),
        function_types=frozenset({"function_item"}),
        class_types=frozenset(
            {"struct_item", "enum_item", "trait_item", "impl_item", "union_item"}
        ),
    ),
    LanguagePack(
        name="typescript",
        extensions=(".ts", ".tsx"),
        function_types=_SCRIPT_FUNCTIONS,
        class_types=frozenset({"class_declaration", "interface_declaration", "enum_declaration"}),
    ),
    LanguagePack(
        name="c",
        extensions=(".c", ".h"),
        function_types=frozenset({"function_definition"}),
        class_types=frozenset({"struct_specifier", "union_specifier", "enum_specifier"}),
    ),
)
"""All packs in registration order (the order `cce packs` lists them)."""

PACK_SET: Final = "c,javascript,python,ruby,rust,typescript"
"""The pack names, sorted and comma-joined, as the reference records them."""

_PACK_BY_EXTENSION: Final[dict[str, LanguagePack]] = {
    extension: pack for pack in PACKS for extension in pack.extensions
}

# The reference pins these grammar versions; `.tsx` deliberately uses the plain TypeScript
# grammar (not `language_tsx`), so JSX parses as error-recovered TypeScript there too.
_GRAMMARS: Final[dict[str, Callable[[], object]]] = {
    "python": tree_sitter_python.language,
    "javascript": tree_sitter_javascript.language,
    "ruby": tree_sitter_ruby.language,
    "rust": tree_sitter_rust.language,
    "typescript": tree_sitter_typescript.language_typescript,
    "c": tree_sitter_c.language,
}

_languages: dict[str, tree_sitter.Language] = {}
_parsers: dict[str, tree_sitter.Parser] = {}


def extension_of(path: str) -> str | None:
    """The ASCII-lowercased extension of the last path component, dot included.

    Both `/` and `\\` separate components; a dot at index 0 (a dotfile) or no dot means
    no extension; a trailing dot is the extension `"."`.
    """
    basename_start = max(path.rfind("/"), path.rfind("\\")) + 1
    basename = path[basename_start:]
    dot = basename.rfind(".")
    if dot <= 0:
        return None
    return ascii_lower(basename[dot:])


def pack_for_path(path: str) -> LanguagePack | None:
    """The pack that claims `path` by extension, or None for plaintext."""
    extension = extension_of(path)
    if extension is None:
        return None
    return _PACK_BY_EXTENSION.get(extension)


def language_for(pack: LanguagePack) -> tree_sitter.Language:
    """The pinned tree-sitter grammar of `pack` (loaded once)."""
    language = _languages.get(pack.name)
    if language is None:
        language = tree_sitter.Language(_GRAMMARS[pack.name]())
        _languages[pack.name] = language
    return language


def parser_for(pack: LanguagePack) -> tree_sitter.Parser:
    """The one parser of `pack`, created on first use and reused for every file."""
    parser = _parsers.get(pack.name)
    if parser is None:
        parser = tree_sitter.Parser(language_for(pack))
        _parsers[pack.name] = parser
    return parser
