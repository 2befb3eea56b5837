"""Import graph resolution (docs/retrieval.md#import-graph) and the graph bonus's no-back-fill rule
(docs/retrieval.md#graph-expansion)."""

from __future__ import annotations

import numpy as np

from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk, Index
from cce_retrieval.parity.numeric import format6
from cce_retrieval.rank.graph import ImportGraph, file_stem
from cce_retrieval.rank.hybrid import search


def test_stem_rule() -> None:
    assert file_stem("pkg/sub/mod.py") == "mod"
    assert file_stem(".bashrc") == ""
    assert file_stem("a/foo.test.js") == "foo.test"
    assert file_stem("Makefile") == "Makefile"


def test_two_file_anchor() -> None:
    graph = ImportGraph.build(["auth.py", "payments.py"], {"payments.py": ["auth"]})
    assert graph.edges == {("payments.py", "auth.py")}
    assert graph.neighbors("auth.py") == ["payments.py"]
    assert graph.neighbors("payments.py") == ["auth.py"]
    assert graph.neighbors("unknown.py") == []


def test_nested_module_resolves_by_stem() -> None:
    graph = ImportGraph.build(["pkg/sub/mod.py", "main.py"], {"main.py": ["mod"]})
    assert graph.edges == {("main.py", "pkg/sub/mod.py")}


def test_unresolved_module_has_no_edge() -> None:
    graph = ImportGraph.build(["a.py"], {"a.py": ["numpy"]})
    assert graph.edges == frozenset()
    assert graph.neighbors("a.py") == []


def test_stem_match_is_extension_agnostic_and_first_in_sorted_order() -> None:
    graph = ImportGraph.build(["src/auth.py", "docs/auth.md", "m.py"], {"m.py": ["auth"]})
    assert graph.edges == {("m.py", "docs/auth.md")}


def test_raw_suffix_fallback_can_hit_another_name() -> None:
    graph = ImportGraph.build(["lib/oauth.py", "m.py"], {"m.py": ["auth"]})
    assert graph.edges == {("m.py", "lib/oauth.py")}
    graph = ImportGraph.build(["auth.py", "m.js"], {"m.js": ["th"]})
    assert graph.edges == {("m.js", "auth.py")}


def test_self_import_stops_resolution() -> None:
    # The stem match is the importer itself: no edge, and b/auth.py is NOT tried.
    graph = ImportGraph.build(["a/auth.py", "b/auth.py"], {"a/auth.py": ["auth"]})
    assert graph.edges == frozenset()


def test_neighbors_are_sorted_and_deduplicated() -> None:
    graph = ImportGraph.build(
        ["a.py", "b.py", "c.py"], {"c.py": ["a", "b", "a"], "a.py": ["c"], "b.py": ["c"]}
    )
    assert graph.neighbors("c.py") == ["a.py", "b.py"]
    assert graph.neighbors("a.py") == ["c.py"]


def test_graph_bonus_does_not_back_fill_a_skipped_duplicate_span() -> None:
    embedder = HashEmbedder()
    rows = [
        ("aaaa000000000001", "a.py", 1, 2, "def alpha(): return beta"),
        ("0000000000000001", "b.py", 1, 1, "class Q: def m(self): pass"),
        ("0000000000000002", "b.py", 1, 1, "def m(self): pass"),
        ("0000000000000003", "b.py", 3, 4, "def other(): pass"),
    ]
    chunks = [
        Chunk(cid, path, start, end, "function", "function_definition", "python", text, 1)
        for cid, path, start, end, text in rows
    ]
    embeddings = np.asarray([embedder.embed(c.content) for c in chunks], dtype=np.float64)
    index = Index("hash", chunks, embeddings, {"a.py": ["b"]})
    results = search(index, embedder, "alpha", 1, True)
    assert [(r.rank, r.chunk_id, format6(r.score)) for r in results] == [
        (1, "aaaa000000000001", "0.887500"),
        (2, "0000000000000001", "0.000000"),
    ]
    assert results[0].score == 0.8875
