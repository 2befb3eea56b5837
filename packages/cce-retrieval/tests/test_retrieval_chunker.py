"""Chunker, language-pack and chunk-id tests: the spec's chunk tables, anchors and properties.

Covers docs/index-store.md#chunking (pack resolution, pre-order emission, node-type sets and their
observed consequences, the module fallback line rule), docs/index-store.md (chunk_id, token_count),
the docs/index-store.md#conformance-document sample table and docs/index-store.md#chunking anchors,
the deep-nesting guarantees, the chunker properties, and that the query fast path finds exactly the
nodes of the cursor walk.
"""

from __future__ import annotations

import hashlib
import os
import re
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cce_retrieval.chunk.chunker import (
    FileChunks,
    chunk_file,
    chunk_id,
    preorder_matches_by_query,
    preorder_matches_by_walk,
)
from cce_retrieval.chunk.imports import IMPORT_NODE_TYPES
from cce_retrieval.chunk.packs import (
    PACK_SET,
    PACKS,
    extension_of,
    pack_for_path,
    parser_for,
)
from cce_retrieval.model import Chunk

Row = tuple[str, int, int, str, str, str, int]


ReadReference = Callable[..., str]


@pytest.fixture(scope="session")
def read_reference(reference_path: Callable[..., Path]) -> ReadReference:
    """`read_reference(*parts)`: the text of a reference data file (skips when absent)."""

    def read(*parts: str) -> str:
        # Bytes, not text mode: universal newlines would turn CRLF into LF and move lines.
        return reference_path(*parts).read_bytes().decode("utf-8")

    return read


def row(chunk: Chunk) -> Row:
    return (
        chunk.file_path,
        chunk.start_line,
        chunk.end_line,
        chunk.chunk_type,
        chunk.kind,
        chunk.chunk_id,
        chunk.token_count,
    )


def conformance_order(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda item: (item[0], item[1], item[5]))


# --------------------------------------------------------------------------- packs


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a/B.RB", ".rb"),
        ("x.TSX", ".tsx"),
        (".gitignore", None),
        ("noext", None),
        ("foo.", "."),
        ("dir.d/file", None),
        ("dir\\sub.py\\x.C", ".c"),
        ("a.tar.gz", ".gz"),
        ("src/.env.local", ".local"),
    ],
)
def test_extension_of(path: str, expected: str | None) -> None:
    assert extension_of(path) == expected


def test_packs_registration_order_and_extensions() -> None:
    assert [(pack.name, pack.extensions) for pack in PACKS] == [
        ("python", (".py",)),
        ("javascript", (".js", ".jsx", ".mjs", ".cjs")),
        ("ruby", (".rb",)),
        ("rust", (".rs",)),
        ("typescript", (".ts", ".tsx")),
        ("c", (".c", ".h")),
    ]
    assert ",".join(sorted(pack.name for pack in PACKS)) == PACK_SET


def test_node_type_sets_are_exact_and_disjoint() -> None:
    by_name = {pack.name: pack for pack in PACKS}
    script_functions = {
        "function_declaration",
        "method_definition",
        "arrow_function",
        "function_expression",
    }
    assert by_name["python"].function_types == {"function_definition"}
    assert by_name["python"].class_types == {"class_definition"}
    assert by_name["javascript"].function_types == script_functions
    assert by_name["javascript"].class_types == {"class_declaration"}
    assert by_name["typescript"].function_types == script_functions
    assert by_name["typescript"].class_types == {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
    }
    assert by_name["ruby"].function_types == {"method", "singleton_method"}
    assert by_name["ruby"].class_types == {"class", "module"}
    assert by_name["rust"].function_types == {"function_item"}
    assert by_name["rust"].class_types == {
        "struct_item",
        "enum_item",
        "trait_item",
        "impl_item",
        "union_item",
    }
    assert by_name["c"].function_types == {"function_definition"}
    assert by_name["c"].class_types == {"struct_specifier", "union_specifier", "enum_specifier"}
    for pack in PACKS:
        assert not pack.function_types & pack.class_types


@pytest.mark.parametrize(
    ("path", "pack_name"),
    [
        ("a.py", "python"),
        ("a.jsx", "javascript"),
        ("a.MJS", "javascript"),
        ("a.cjs", "javascript"),
        ("a.tsx", "typescript"),
        ("x/y.h", "c"),
        ("a.md", None),
        ("a.pyi", None),
        ("a.cc", None),
        ("a.hpp", None),
        ("Makefile", None),
        (".py", None),
    ],
)
def test_pack_for_path(path: str, pack_name: str | None) -> None:
    pack = pack_for_path(path)
    assert (pack.name if pack else None) == pack_name


def test_one_parser_per_pack_is_reused() -> None:
    for pack in PACKS:
        assert parser_for(pack) is parser_for(pack)
    assert len({id(parser_for(pack)) for pack in PACKS}) == len(PACKS)


# --------------------------------------------------------------------------- chunk_id


def test_chunk_id_anchor_format_and_sensitivity() -> None:
    anchor = chunk_id("a.py", 1, 2, b"def f(): pass")
    assert anchor == "fd88a10941ff9519"
    assert anchor == chunk_id("a.py", 1, 2, b"def f(): pass")
    assert re.fullmatch(r"[0-9a-f]{16}", anchor)
    assert chunk_id("b.py", 1, 2, b"def f(): pass") != anchor
    assert chunk_id("a.py", 2, 2, b"def f(): pass") != anchor
    assert chunk_id("a.py", 1, 3, b"def f(): pass") != anchor


def test_chunk_id_hashes_only_the_first_100_content_bytes() -> None:
    # 99 ASCII bytes + a 3-byte character: the 100-byte prefix cuts it in half.
    content = ("x" * 99 + "你" + "tail").encode("utf-8")
    expected = hashlib.sha256(b"p.c:1:1:" + content[:100]).hexdigest()[:16]
    assert chunk_id("p.c", 1, 1, content) == expected
    assert chunk_id("p.c", 1, 1, content[:100] + b"other") == expected


# -------------------------------------------------- docs/index-store.md#chunking anchors


def test_markdown_is_one_plaintext_module_chunk() -> None:
    result = chunk_file("notes.md", "a\nb\n")
    assert result.imports == ()
    assert [(row(chunk), chunk.language) for chunk in result.chunks] == [
        (("notes.md", 1, 3, "module", "module", "70c48d3d17045733", 1), "plaintext")
    ]
    assert result.chunks[0].content == "a\nb\n"


def test_unclaimed_text_file_is_one_plaintext_module_chunk() -> None:
    result = chunk_file("data.txt", "just some text\nmore text\n")
    assert result == FileChunks(
        chunks=(
            Chunk(
                chunk_id="2db288701153fbf9",
                file_path="data.txt",
                start_line=1,
                end_line=3,
                chunk_type="module",
                kind="module",
                language="plaintext",
                content="just some text\nmore text\n",
                token_count=6,
            ),
        ),
        imports=(),
    )


def test_python_functions_and_classes() -> None:
    result = chunk_file("m.py", "def f():\n    pass\n\nclass C:\n    pass\n")
    assert [row(chunk) for chunk in result.chunks] == [
        ("m.py", 1, 2, "function", "function_definition", "0074c4e9e9af7673", 4),
        ("m.py", 4, 5, "class", "class_definition", "115ca47b6e3a88ea", 4),
    ]
    assert {chunk.language for chunk in result.chunks} == {"python"}
    assert result.chunks[0].content == "def f():\n    pass"


def test_statements_only_python_falls_back_with_pack_language() -> None:
    (chunk,) = chunk_file("s.py", "x = 1\ny = 2\n").chunks
    assert row(chunk) == ("s.py", 1, 3, "module", "module", "eccd7a2402eab630", 3)
    assert chunk.language == "python"


def test_empty_file() -> None:
    (chunk,) = chunk_file("e.txt", "").chunks
    assert row(chunk) == ("e.txt", 1, 1, "module", "module", "4e86fa9308df3dbe", 1)
    assert chunk.content == ""


@pytest.mark.parametrize(
    ("text", "tokens"), [("", 1), ("abcd", 1), ("abcde", 1), ("abcdefgh", 2), ("你好世界", 3)]
)
def test_token_count_is_a_quarter_of_the_utf8_bytes(text: str, tokens: int) -> None:
    (chunk,) = chunk_file("t.txt", text).chunks
    assert chunk.token_count == tokens


# -------------------------------------------- docs/index-store.md#module-fallback fallback


@pytest.mark.parametrize(
    ("path", "text", "end_line", "language"),
    [
        ("a.txt", "a\nb\n", 3, "plaintext"),
        ("a.txt", "abc", 1, "plaintext"),
        ("a.txt", "", 1, "plaintext"),
        ("a.txt", "a\r\nb\r\n", 3, "plaintext"),
        ("a.txt", "a\rb\rc", 1, "plaintext"),
        ("a.txt", "a\x0bb\x0cc\x1cd\x85e\u2028f\u2029g", 1, "plaintext"),
        ("a.py", "\n\n\n", 4, "python"),
        ("a.py", "# only a comment\r\n", 2, "python"),
        ("a.rs", "", 1, "rust"),
        ("a.c", "int x = 1;\n", 2, "c"),
        ("a.rb", "puts 1\r", 1, "ruby"),
    ],
)
def test_fallback_counts_only_line_feeds(
    path: str, text: str, end_line: int, language: str
) -> None:
    (chunk,) = chunk_file(path, text).chunks
    assert (chunk.start_line, chunk.end_line, chunk.kind, chunk.chunk_type) == (
        1,
        end_line,
        "module",
        "module",
    )
    assert chunk.language == language
    assert chunk.content == text


def test_syntax_errors_still_yield_surviving_chunks() -> None:
    (chunk,) = chunk_file("a.py", "def f(:\n  pass\n").chunks
    assert (chunk.kind, chunk.start_line, chunk.end_line) == ("function_definition", 1, 2)


def test_parsed_chunk_end_line_ignores_trailing_newlines() -> None:
    (chunk,) = chunk_file("a.py", "def f():\n    pass\n\n\n\n").chunks
    assert chunk.end_line == 2


def test_crlf_source_lines_and_content() -> None:
    (chunk,) = chunk_file("a.py", "x = 1\r\ndef f():\r\n    pass\r\n").chunks
    assert (chunk.start_line, chunk.end_line) == (2, 3)
    assert chunk.content == "def f():\r\n    pass"


def test_content_is_sliced_from_utf8_bytes() -> None:
    source = 'é = "你好"\ndef ñ():\n    return "😀"\n'
    (chunk,) = chunk_file("u.py", source).chunks
    assert chunk.content == 'def ñ():\n    return "😀"'
    assert chunk.token_count == len(chunk.content.encode("utf-8")) // 4


# --------------------------------------------- docs/index-store.md#language-packs consequences


def kinds(path: str, source: str) -> list[tuple[int, int, str]]:
    return [
        (chunk.start_line, chunk.end_line, chunk.kind) for chunk in chunk_file(path, source).chunks
    ]


def test_python_async_decorated_and_lambda() -> None:
    source = "async def f():\n    pass\n\n@dec\ndef g():\n    h = lambda x: x\n"
    result = chunk_file("a.py", source)
    assert kinds("a.py", source) == [
        (1, 2, "function_definition"),
        (5, 6, "function_definition"),
    ]
    assert result.chunks[0].content.startswith("async def f")
    assert result.chunks[1].content.startswith("def g():")


def test_javascript_arrows_everywhere_but_no_generators_or_class_expressions() -> None:
    source = (
        "function* gen() {}\n"
        "const a = [1].map((x) => x);\n"
        "const o = { k: () => 1 };\n"
        "class K { f = () => 2; m() {} }\n"
        "const E = class {};\n"
        "export default class { n() {} }\n"
        "const fe = function () {};\n"
    )
    assert kinds("a.js", source) == [
        (2, 2, "arrow_function"),
        (3, 3, "arrow_function"),
        (4, 4, "class_declaration"),
        (4, 4, "arrow_function"),
        (4, 4, "method_definition"),
        (6, 6, "method_definition"),
        (7, 7, "function_expression"),
    ]


def test_typescript_abstract_class_types_and_signatures() -> None:
    source = (
        "abstract class A {\n"
        "  m(): void {}\n"
        "}\n"
        "type T = number;\n"
        "declare function d(): void;\n"
        "interface I { s(): void; }\n"
        "export function e() {}\n"
        "enum En { A }\n"
    )
    result = chunk_file("a.ts", source)
    assert kinds("a.ts", source) == [
        (2, 2, "method_definition"),
        (6, 6, "interface_declaration"),
        (7, 7, "function_declaration"),
        (8, 8, "enum_declaration"),
    ]
    assert [chunk.chunk_type for chunk in result.chunks] == [
        "function",
        "class",
        "function",
        "class",
    ]
    assert result.chunks[2].content == "function e() {}"


def test_tsx_is_parsed_with_the_plain_typescript_grammar() -> None:
    source = "export const App = () => <div>hi</div>;\nfunction g() {\n  return 1;\n}\n"
    result = chunk_file("a.tsx", source)
    assert kinds("a.tsx", source) == [(1, 4, "arrow_function"), (2, 4, "function_expression")]
    assert {chunk.language for chunk in result.chunks} == {"typescript"}


def test_ruby_singleton_class_is_not_a_chunk_but_its_methods_are() -> None:
    source = (
        "class A\n  class << self\n    def s; end\n  end\n  def self.t; end\nend\nmodule M\nend\n"
    )
    assert kinds("a.rb", source) == [
        (1, 6, "class"),
        (3, 3, "method"),
        (5, 5, "singleton_method"),
        (7, 8, "module"),
    ]


def test_rust_trait_signatures_mod_and_macros() -> None:
    source = (
        "trait T {\n"
        "    fn sig(&self);\n"
        "    fn body(&self) {}\n"
        "}\n"
        "mod m {\n"
        "    fn inner() {}\n"
        "}\n"
        "macro_rules! mm { () => {} }\n"
        "union U { a: u32 }\n"
        "enum E { A }\n"
    )
    assert kinds("a.rs", source) == [
        (1, 4, "trait_item"),
        (3, 3, "function_item"),
        (6, 6, "function_item"),
        (9, 9, "union_item"),
        (10, 10, "enum_item"),
    ]


def test_c_struct_references_prototypes_and_trailing_semicolon() -> None:
    source = (
        "struct S;\n"
        "int f(int);\n"
        "struct P { int x; };\n"
        "typedef struct { int y; } Q;\n"
        "int g(struct Node *n) {\n"
        "    struct S s;\n"
        "    return 0;\n"
        "}\n"
        "union V { int a; };\n"
        "enum W { A };\n"
    )
    result = chunk_file("a.c", source)
    assert kinds("a.c", source) == [
        (1, 1, "struct_specifier"),
        (3, 3, "struct_specifier"),
        (4, 4, "struct_specifier"),
        (5, 8, "function_definition"),
        (5, 5, "struct_specifier"),
        (6, 6, "struct_specifier"),
        (9, 9, "union_specifier"),
        (10, 10, "enum_specifier"),
    ]
    contents = [chunk.content for chunk in result.chunks]
    assert contents[1] == "struct P { int x; }"
    assert contents[4] == "struct Node"


# --------------------------------------------------------------------------- reference corpora

SAMPLE_TABLE: list[Row] = [
    ("c.c", 3, 5, "class", "struct_specifier", "ebd4df588b8ce225", 7),
    ("c.c", 7, 7, "class", "struct_specifier", "2e676e753a19fde1", 2),
    ("c.c", 7, 9, "function", "function_definition", "bd2d22d0219c51fc", 13),
    ("javascript.js", 3, 5, "function", "function_declaration", "f4489b3ebdbda008", 15),
    ("javascript.js", 7, 11, "class", "class_declaration", "7a9ab68a9b7e83ca", 14),
    ("javascript.js", 8, 10, "function", "method_definition", "9db72353b886e6ab", 10),
    ("notes.md", 1, 3, "module", "module", "43bceef453598295", 11),
    ("python.py", 3, 4, "function", "function_definition", "be153275c6843f6d", 16),
    ("python.py", 6, 8, "class", "class_definition", "a6b1b4c6f840bd31", 16),
    ("python.py", 7, 8, "function", "function_definition", "ecbe3170743462d4", 11),
    ("ruby.rb", 3, 5, "function", "method", "d834029f4cbe3888", 11),
    ("ruby.rb", 7, 11, "class", "class", "5843ab577fefbd05", 18),
    ("ruby.rb", 8, 10, "function", "method", "69dc8697dc5b3397", 13),
    ("rust.rs", 3, 5, "function", "function_item", "57ccc3b7778f6eb5", 16),
    ("rust.rs", 7, 9, "class", "struct_item", "fb85f1570be695fd", 13),
    ("rust.rs", 11, 15, "class", "impl_item", "bc67a7b411040508", 18),
    ("rust.rs", 12, 14, "function", "function_item", "36ce4add58213d5c", 13),
    ("typescript.ts", 3, 5, "function", "function_declaration", "66da5aa8411dca94", 17),
    ("typescript.ts", 7, 9, "class", "interface_declaration", "d01f3257cc9cbe88", 9),
    ("typescript.ts", 11, 15, "class", "class_declaration", "45c58c3454407492", 19),
    ("typescript.ts", 12, 14, "function", "method_definition", "4bb316f09f9cb1cf", 14),
]
SAMPLE_FILES = [
    "c.c",
    "javascript.js",
    "notes.md",
    "python.py",
    "ruby.rb",
    "rust.rs",
    "typescript.ts",
]


def chunk_samples(read_reference: ReadReference) -> dict[str, FileChunks]:
    return {
        name: chunk_file(name, read_reference("test", "fixture", "samples", name))
        for name in SAMPLE_FILES
    }


def test_sample_corpus_conformance_table(read_reference: ReadReference) -> None:
    by_file = chunk_samples(read_reference)
    store_order = [row(chunk) for name in SAMPLE_FILES for chunk in by_file[name].chunks]
    assert conformance_order(store_order) == SAMPLE_TABLE
    # Store order is pre-order: inside c.c the function at line 7 precedes the struct
    # in its parameter list; everywhere else it equals the conformance order.
    assert [item[4] for item in store_order[:3]] == [
        "struct_specifier",
        "function_definition",
        "struct_specifier",
    ]
    assert store_order[3:] == SAMPLE_TABLE[3:]
    languages = {
        chunk.file_path: chunk.language for result in by_file.values() for chunk in result.chunks
    }
    assert languages == {
        "c.c": "c",
        "javascript.js": "javascript",
        "notes.md": "plaintext",
        "python.py": "python",
        "ruby.rb": "ruby",
        "rust.rs": "rust",
        "typescript.ts": "typescript",
    }
    imports = {name: list(result.imports) for name, result in by_file.items() if result.imports}
    assert imports == {
        "c.c": ["stdlib"],
        "javascript.js": ["fs"],
        "python.py": ["os"],
        "ruby.rb": ["json"],
        "rust.rs": ["std"],
        "typescript.ts": ["fs"],
    }


def test_base_fixture_chunk_table(read_reference: ReadReference) -> None:
    names = ["README.md", "auth.py", "payments.py"]
    results = {
        name: chunk_file(name, read_reference("test", "fixture", "base", name)) for name in names
    }
    assert [row(chunk) for name in names for chunk in results[name].chunks] == [
        ("README.md", 1, 3, "module", "module", "6ab3d42cf9cebf0a", 11),
        ("auth.py", 3, 4, "function", "function_definition", "e3539a6cc87df405", 21),
        ("auth.py", 6, 7, "function", "function_definition", "1eb146037ad13f91", 20),
        ("auth.py", 9, 11, "class", "class_definition", "fcc7617773d8f44d", 23),
        ("auth.py", 10, 11, "function", "function_definition", "1f7fa885bdd90499", 16),
        ("payments.py", 3, 4, "function", "function_definition", "eb1b9a4f766376e6", 26),
        ("payments.py", 6, 7, "function", "function_definition", "0246f0f6eead83ee", 22),
    ]
    assert results["payments.py"].imports == ("auth",)


@pytest.mark.parametrize(
    ("name", "end_line", "expected_id", "tokens"),
    [
        ("deploy-checklist.md", 14, "864fcd4a075b5362", 115),
        ("rate-limiting.md", 12, "36ed6375cc3333e8", 107),
        ("retry-policy.md", 12, "c2c78bb742b178b3", 99),
        ("search-tuning.md", 12, "8789eff088cb92fd", 99),
    ],
)
def test_docs_corpus_markdown_is_never_heading_chunked(
    name: str, end_line: int, expected_id: str, tokens: int, read_reference: ReadReference
) -> None:
    text = read_reference("eval", "relevance", "docs-corpus", name)
    (chunk,) = chunk_file(name, text).chunks
    assert row(chunk) == (name, 1, end_line, "module", "module", expected_id, tokens)
    assert chunk.language == "plaintext"


# --------------------------------------------------------------------------- deep nesting


def test_deeply_nested_javascript_parens() -> None:
    depth = 100_000
    source = "function f() { return " + "(" * depth + "1" + ")" * depth + "; }\n"
    chunks = chunk_file("deep.js", source).chunks
    assert len(chunks) >= 1
    assert chunks[0].kind == "function_declaration"
    pack = pack_for_path("deep.js")
    assert pack is not None
    root = parser_for(pack).parse(source.encode()).root_node
    # The normative walk must survive the depth too (it is the query path's fallback).
    walked, _ = preorder_matches_by_walk(root, pack.function_types | pack.class_types, frozenset())
    queried = preorder_matches_by_query(root, pack)
    assert queried is not None
    assert [node.id for node in walked] == [node.id for node in queried[0]]
    assert len(walked) == len(chunks)


def test_deeply_nested_c_blocks() -> None:
    depth = 100_000
    source = "int main(void) " + "{" * depth + "}" * depth + "\n"
    chunks = chunk_file("deep.c", source).chunks
    assert len(chunks) >= 1
    assert chunks[0].kind == "function_definition"


def test_deeply_nested_ruby_ifs() -> None:
    depth = 50_000
    source = "def f\n" + "if true\n" * depth + "end\n" * depth + "end\n"
    chunks = chunk_file("deep.rb", source).chunks
    assert len(chunks) >= 1
    assert (chunks[0].kind, chunks[0].end_line) == ("method", 2 * depth + 2)


# --------------------------------------------------------------------------- properties

PYTHON_LINES = [
    "def f(a, b):",
    "async def g():",
    "class C(Base):",
    "class D:",
    "@decorator",
    "    return a",
    "    pass",
    "        x = lambda y: y",
    "    def method(self):",
    "        def inner(): pass",
    "import os.path",
    "from .pkg import thing",
    'x = "é你😀"',
    "if x:",
    "  (",
    ")",
    "def broken(:",
    "",
    "# comment",
]
JS_LINES = [
    "function f(a) {",
    "}",
    "class K extends B {",
    "  m() { return 1; }",
    "  f = () => 2;",
    "const a = (x) => x * 2;",
    "const o = { k: function () {} };",
    "import x from './mod';",
    "export default function () {}",
    "function* gen() {}",
    "if (a) { b(); }",
    "let s = `é${x}`;",
    "((((",
    "}}}",
    "",
]

TEXT_LINE_ENDINGS = st.sampled_from(["\n", "\r\n", "\r", ""])


def source_from(lines: list[str]) -> st.SearchStrategy[str]:
    return st.lists(
        st.tuples(st.sampled_from(lines), TEXT_LINE_ENDINGS, st.sampled_from(["", "  ", "\t"])),
        max_size=25,
    ).map(lambda parts: "".join(indent + line + end for line, end, indent in parts))


SOURCES = st.one_of(
    st.tuples(st.just("gen/m.py"), source_from(PYTHON_LINES)),
    st.tuples(st.just("gen/m.js"), source_from(JS_LINES)),
    st.tuples(st.just("gen/m.py"), st.text(max_size=300)),
    st.tuples(
        st.sampled_from(["gen/m.ts", "gen/m.rb", "gen/m.rs", "gen/m.c"]),
        source_from(JS_LINES + PYTHON_LINES),
    ),
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(SOURCES)
def test_chunker_properties(case: tuple[str, str]) -> None:
    path, text = case
    result = chunk_file(path, text)
    assert result == chunk_file(path, text)
    assert len(result.chunks) >= 1
    pack = pack_for_path(path)
    assert pack is not None
    last_line = text.count("\n") + 1
    source = text.encode("utf-8")
    spans: list[tuple[int, int]] = []
    for chunk in result.chunks:
        assert chunk.file_path == path
        assert chunk.language == pack.name
        assert 1 <= chunk.start_line <= chunk.end_line <= last_line
        content = chunk.content.encode("utf-8")
        assert content in source
        assert chunk.token_count == max(1, len(content) // 4)
        assert chunk.chunk_id == chunk_id(path, chunk.start_line, chunk.end_line, content)
        assert re.fullmatch(r"[0-9a-f]{16}", chunk.chunk_id)
        assert chunk.kind
        if chunk.kind == "module":
            assert result.chunks == (chunk,)
            assert chunk.content == text
            assert chunk.chunk_type == "module"
        else:
            expected_type = "class" if chunk.kind in pack.class_types else "function"
            assert chunk.chunk_type == expected_type
        spans.append((chunk.start_line, chunk.end_line))
    # A parent precedes its nested chunks: no later chunk starts on an earlier line, and
    # the order is exactly the reference's pre-order cursor walk.
    assert [start for start, _ in spans] == sorted(start for start, _ in spans)
    if result.chunks[0].kind != "module":
        root = parser_for(pack).parse(source).root_node
        walked, _ = preorder_matches_by_walk(
            root, pack.function_types | pack.class_types, frozenset()
        )
        assert [(chunk.kind, chunk.start_line, chunk.end_line) for chunk in result.chunks] == [
            (node.type, node.start_point[0] + 1, node.end_point[0] + 1) for node in walked
        ]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(SOURCES, st.sampled_from([pack.name for pack in PACKS]))
def test_query_fast_path_finds_exactly_the_walked_nodes(
    case: tuple[str, str], pack_name: str
) -> None:
    # Parse every generated source with every grammar: most are error-heavy trees.
    _, text = case
    (pack,) = [candidate for candidate in PACKS if candidate.name == pack_name]
    root = parser_for(pack).parse(text.encode("utf-8")).root_node
    walked = preorder_matches_by_walk(
        root, pack.function_types | pack.class_types, IMPORT_NODE_TYPES[pack.name]
    )
    queried = preorder_matches_by_query(root, pack)
    if queried is not None:
        assert [[node.id for node in nodes] for nodes in queried] == [
            [node.id for node in nodes] for nodes in walked
        ]


def test_query_fast_path_on_the_reference_samples(read_reference: ReadReference) -> None:
    for name in SAMPLE_FILES:
        pack = pack_for_path(name)
        if pack is None:
            continue
        text = read_reference("test", "fixture", "samples", name)
        root = parser_for(pack).parse(text.encode("utf-8")).root_node
        walked = preorder_matches_by_walk(
            root, pack.function_types | pack.class_types, IMPORT_NODE_TYPES[pack.name]
        )
        assert preorder_matches_by_query(root, pack) == walked


@pytest.mark.slow
def test_query_fast_path_matches_the_walk_on_the_python_standard_library() -> None:
    # The running interpreter's own stdlib: ~1,800 real files (a minute or so); every
    # file is also parsed with the C grammar to get error-heavy trees.
    stdlib = sysconfig.get_paths()["stdlib"]
    python_pack, c_pack = pack_for_path("x.py"), pack_for_path("x.c")
    assert python_pack is not None and c_pack is not None
    checked = 0
    for directory, subdirectories, files in os.walk(stdlib):
        subdirectories[:] = [name for name in subdirectories if name != "site-packages"]
        for name in files:
            if not name.endswith(".py"):
                continue
            with open(os.path.join(directory, name), "rb") as handle:
                source = handle.read()
            for pack in (python_pack, c_pack):
                root = parser_for(pack).parse(source).root_node
                walked = preorder_matches_by_walk(
                    root, pack.function_types | pack.class_types, IMPORT_NODE_TYPES[pack.name]
                )
                queried = preorder_matches_by_query(root, pack)
                assert queried is not None, name
                assert [[node.id for node in nodes] for nodes in queried] == [
                    [node.id for node in nodes] for nodes in walked
                ], name
            checked += 1
    assert checked > 100


def test_environment_does_not_leak_into_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    before = chunk_file("m.py", "def f():\n    pass\n")
    monkeypatch.setenv("PYTHONHASHSEED", "123")
    monkeypatch.chdir(os.path.dirname(__file__))
    assert chunk_file("m.py", "def f():\n    pass\n") == before


def test_a_pickled_chunk_comes_back_equal_with_every_protocol() -> None:
    """Workers send chunks to the building process by pickle (`Chunk.__reduce__`)."""
    import pickle

    chunk = Chunk(
        chunk_id="0123456789abcdef",
        file_path="pkg/é.py",
        start_line=3,
        end_line=9,
        chunk_type="function",
        kind="function_definition",
        language="python",
        content="def f():\n    return '\\ud800'\n",
        token_count=7,
    )
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(chunk, protocol=protocol))
        assert back == chunk
        assert type(back) is Chunk
