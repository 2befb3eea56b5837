"""Hybrid search (docs/retrieval.md#hybrid-search): RRF, intent, the fixture and penalty-corpus
anchors, and properties."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval import build_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk, Index, SearchResult
from cce_retrieval.parity.numeric import format6, score_key
from cce_retrieval.parity.text import ascii_lower, rust_split_whitespace
from cce_retrieval.parity.tokenizer import tokenize, unique_tokens
from cce_retrieval.rank.hybrid import (
    bm25_only_search,
    file_hints,
    is_code_lookup,
    rank_core,
    retrieval_index,
    rrf,
    search,
    search_with_vector,
    vector_search,
)

PENALTY_CORPUS = {
    "src/auth.py": (
        "def login(user, password):\n    return check(user, password)\n\n"
        'def check(user, password):\n    return user == "admin"\n'
    ),
    "tests/test_auth.py": (
        'from auth import login\n\ndef test_login():\n    assert login("u", "p")\n'
    ),
    "docs/guide.md": "# Login guide\nCall login(user, password) to sign in.\n",
    "src/planner.py": 'def plan_login():\n    return "plan"\n',
}


@pytest.fixture(scope="module")
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(scope="module")
def base(embedder: HashEmbedder, reference_path: Callable[..., Path]) -> Index:
    return build_index(str(reference_path("test", "fixture", "base")), embedder).index


@pytest.fixture(scope="module")
def penalty(embedder: HashEmbedder, tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("penalty")
    for rel, text in PENALTY_CORPUS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return build_index(str(root), embedder).index


def rows(results: Sequence[SearchResult]) -> list[tuple[int, str, str]]:
    return [(r.rank, r.chunk_id, format6(r.score)) for r in results]


def ids_scores(results: Sequence[SearchResult]) -> list[tuple[str, str]]:
    return [(r.chunk_id[:4], format6(r.score)) for r in results]


# --- docs/retrieval.md#fusion-and-scoring RRF --------------------------------------------


def test_rrf_anchors() -> None:
    assert rrf(0, 2, 1.0) == 1 / 60 + 1 / 62 == 0.03279569892473118
    assert format6(rrf(0, 2, 1.0)) == "0.032796"
    assert rrf(0, None, 1.0) == 1 / 60
    assert rrf(None, 0, 1.5) == 0.025
    assert rrf(None, None, 1.0) == 0.0 and rrf(None, None, 1.5) == 0.0


# --- docs/retrieval.md#intent intent -----------------------------------------------------

CODE_LOOKUP = [
    "where is the hash function",
    "class SessionManager",
    "auth.py login",
    "where is create_session",
    "where hash_password is defined",
    "render in app.tsx or util.ts",
    "main.python auth.py",
    "open util.ts",
    "find the parse function",
    "somewhere is x",
    "find functionality",
    "FILE.PY",
    "x.py\u00e9",
    "my.function",
    "lib.rs",
    ".jsx",
    "user defined",
    "a.java",
]
GENERAL = [
    "hash password",
    "process payment amount",
    "undefined variable error",
    "predefined constant list",
    "find malfunction reports",
    "well-defined",
    "x.py_",
    "the_function",
    "def2",
    "x.json",
    "where is",
    "defined here",
    "tab\tdefined",
    "b.javascript",
]


@pytest.mark.parametrize("query", CODE_LOOKUP)
def test_code_lookup_queries(query: str) -> None:
    assert is_code_lookup(query) is True


@pytest.mark.parametrize("query", GENERAL)
def test_general_queries(query: str) -> None:
    assert is_code_lookup(query) is False


def test_file_hints_keep_every_dotted_piece_lowercased() -> None:
    assert file_hints("Auth.PY? e.g. . x.json, plain") == ["auth.py?", "e.g.", ".", "x.json,"]
    # U+001C is not Rust whitespace: it stays inside the piece.
    assert file_hints("a.py\x1cb") == ["a.py\x1cb"]


# --- docs/retrieval.md#hybrid-search fixture test/fixture/base -----------------------------


def test_fixture_chunks_and_graph(base: Index) -> None:
    assert [(c.chunk_id, c.file_path, c.start_line, c.end_line) for c in base.chunks] == [
        ("6ab3d42cf9cebf0a", "README.md", 1, 3),
        ("e3539a6cc87df405", "auth.py", 3, 4),
        ("1eb146037ad13f91", "auth.py", 6, 7),
        ("fcc7617773d8f44d", "auth.py", 9, 11),
        ("1f7fa885bdd90499", "auth.py", 10, 11),
        ("eb1b9a4f766376e6", "payments.py", 3, 4),
        ("0246f0f6eead83ee", "payments.py", 6, 7),
    ]
    assert base.file_imports == {"auth.py": ["hashlib"], "payments.py": ["auth"]}
    assert retrieval_index(base).graph.edges == {("payments.py", "auth.py")}


def test_fixture_cosine_anchor(base: Index, embedder: HashEmbedder) -> None:
    cos = retrieval_index(base).cosines(embedder.embed("hash password")).tolist()
    assert cos[1] == 0.42640143271122083
    assert format6(cos[2]) == "0.408248"
    assert cos[0] == cos[3] == cos[4] == cos[5] == cos[6] == 0.0


HASH_PASSWORD_K5 = [
    ("e3539a6cc87df405", 0.8783001790889027),
    ("1eb146037ad13f91", 0.8760310363079828),
    ("0246f0f6eead83ee", 0.48893495067981874),
    ("1f7fa885bdd90499", 0.4850629673356946),
    ("6ab3d42cf9cebf0a", 0.4813119834710744),
]
PROCESS_PAYMENT_K5 = [
    ("eb1b9a4f766376e6", 0.8701446949071635),
    ("6ab3d42cf9cebf0a", 0.8490781399069198),
    ("0246f0f6eead83ee", 0.5669354838709677),
    ("1eb146037ad13f91", 0.4830952380952381),
    ("1f7fa885bdd90499", 0.479375),
]
CREATE_SESSION_K5 = [
    ("1f7fa885bdd90499", 0.8490562612162345),
    ("fcc7617773d8f44d", 0.8386285419718016),
    ("1eb146037ad13f91", 0.538732782369146),
    ("0246f0f6eead83ee", 0.4850629673356946),
    ("6ab3d42cf9cebf0a", 0.4813119834710744),
]


@pytest.mark.parametrize(
    ("query", "expected", "graph_matters"),
    [
        ("hash password", HASH_PASSWORD_K5, False),
        ("process payment amount", PROCESS_PAYMENT_K5, True),
        ("create session user", CREATE_SESSION_K5, False),
    ],
)
def test_fixture_top5_raw_doubles(
    base: Index,
    embedder: HashEmbedder,
    query: str,
    expected: list[tuple[str, float]],
    graph_matters: bool,
) -> None:
    results = search(base, embedder, query, 5, False)
    assert [(r.chunk_id, r.score) for r in results] == expected
    assert [r.rank for r in results] == [1, 2, 3, 4, 5]
    if not graph_matters:  # the only neighbours are already present
        assert search(base, embedder, query, 5, True) == results


def test_fixture_graph_bonus_rows(base: Index, embedder: HashEmbedder) -> None:
    assert rows(search(base, embedder, "process payment amount", 2, True)) == [
        (1, "eb1b9a4f766376e6", "0.870145"),
        (2, "6ab3d42cf9cebf0a", "0.849078"),
        (3, "1eb146037ad13f91", "0.000000"),
        (4, "1f7fa885bdd90499", "0.000000"),
    ]
    results = search(base, embedder, "hash password", 1, True)
    assert rows(results) == [
        (1, "e3539a6cc87df405", "0.878300"),
        (2, "0246f0f6eead83ee", "0.000000"),
        (3, "eb1b9a4f766376e6", "0.000000"),
    ]
    assert results[1].score == 0.0


def test_fixture_other_anchors(base: Index, embedder: HashEmbedder) -> None:
    lookup = search(base, embedder, "where is hash_password defined", 5, False)
    assert ids_scores(lookup) == [
        ("1eb1", "0.843042"),
        ("e353", "0.807582"),
        ("0246", "0.441721"),
        ("1f7f", "0.438548"),
        ("6ab3", "0.435476"),
    ]
    assert lookup[0].score == 0.8430421959121759 and lookup[1].score == 0.8075819672131147
    assert ids_scores(search(base, embedder, "auth.py login", 3, False)) == [
        ("1eb1", "0.816803"),
        ("1f7f", "0.808871"),
        ("6ab3", "0.801190"),
    ]
    assert ids_scores(search(base, embedder, "payments.py", 10, False)) == [
        ("0246", "0.825000"),
        ("eb1b", "0.786538"),
        ("1eb1", "0.736803"),
        ("1f7f", "0.728871"),
        ("6ab3", "0.721190"),
        ("e353", "0.713750"),
    ]
    assert ids_scores(
        search(base, embedder, "password digest user session payment", 10, False)
    ) == [
        ("1eb1", "0.889550"),
        ("e353", "0.846547"),
        ("6ab3", "0.837837"),
        ("1f7f", "0.819824"),
        ("0246", "0.555769"),
        ("eb1b", "0.552273"),
    ]
    assert ids_scores(search(base, embedder, "zzz qqq", 5, False)) == [
        ("0246", "0.745000"),
        ("1eb1", "0.736803"),
        ("1f7f", "0.728871"),
        ("6ab3", "0.721190"),
        ("e353", "0.713750"),
    ]


def test_fixture_empty_results(base: Index, embedder: HashEmbedder) -> None:
    for graph in (False, True):
        assert search(base, embedder, "", 5, graph) == []
        assert search(base, embedder, "   ", 5, graph) == []
        assert search(base, embedder, "hash password", 0, graph) == []


def test_fixture_bm25_only(base: Index) -> None:
    results = bm25_only_search(base, "hash password", 5)
    assert [(r.rank, r.chunk_id, r.score) for r in results] == [
        (1, "1eb146037ad13f91", 1.6072629371860319),
        (2, "e3539a6cc87df405", 1.5533451709226027),
    ]
    assert ids_scores(bm25_only_search(base, "process payment amount", 10)) == [
        ("eb1b", "2.446581"),
        ("6ab3", "1.987847"),
    ]
    assert bm25_only_search(base, "zzz qqq xxx", 5) == []
    assert bm25_only_search(base, "", 5) == []
    assert bm25_only_search(base, "hash password", 0) == []


def test_fixture_rank_core_with_empty_query_vector(base: Index) -> None:
    results = rank_core(base, [], "hash password", 5)
    assert [(r.chunk_id, r.score) for r in results[:1]] == [("1eb146037ad13f91", 0.825)]
    assert ids_scores(results) == [("1eb1", "0.825000"), ("e353", "0.816803")]
    assert all(r.rank == 0 for r in results)
    assert rank_core(base, [], "zzz qqq xxx", 5) == []


def test_vector_search_ranks_all_chunks(base: Index, embedder: HashEmbedder) -> None:
    results = vector_search(base, embedder.embed("hash password"), 3)
    assert [(r.rank, r.chunk_id) for r in results] == [
        (1, "e3539a6cc87df405"),
        (2, "1eb146037ad13f91"),
        (3, "0246f0f6eead83ee"),
    ]
    assert results[0].score == 0.42640143271122083
    # A token-less query: zero vector, every cosine 0, chunk-id order, never filtered.
    noise = vector_search(base, embedder.embed("???"), 10)
    assert [r.chunk_id for r in noise] == sorted(c.chunk_id for c in base.chunks)
    assert vector_search(base, [], 2)[0].chunk_id == "0246f0f6eead83ee"


# --- docs/retrieval.md#fusion-and-scoring penalty / graph corpus ---------------------------


def test_penalty_corpus_chunks(penalty: Index) -> None:
    assert [(c.chunk_id, c.file_path, c.start_line, c.end_line) for c in penalty.chunks] == [
        ("63be2b4844c6f950", "docs/guide.md", 1, 3),
        ("75f4b405624cb22c", "src/auth.py", 1, 2),
        ("e4ca0e8ed2b534e8", "src/auth.py", 4, 5),
        ("cc6285ffc41618f0", "src/planner.py", 1, 2),
        ("09ddfea312acfd41", "tests/test_auth.py", 3, 4),
    ]
    derived = retrieval_index(penalty)
    assert derived.graph.edges == {("tests/test_auth.py", "src/auth.py")}
    assert derived.bm25.n_docs == 5 and derived.bm25.avgdl == 6.8


def test_penalty_corpus_anchors(penalty: Index, embedder: HashEmbedder) -> None:
    login = search(penalty, embedder, "login password", 10, False)
    assert ids_scores(login) == [
        ("75f4", "0.901547"),
        ("e4ca", "0.834589"),
        ("63be", "0.723960"),
        ("09dd", "0.675296"),
        ("cc62", "0.449050"),
    ]
    assert login[0].score == 0.9015465544619743
    bonus = search(penalty, embedder, "login password", 1, True)
    assert ids_scores(bonus) == [("75f4", "0.901547"), ("09dd", "0.212500")]
    assert bonus[1].score == 0.21249999999999994
    assert ids_scores(search(penalty, embedder, "where is check defined", 3, False)) == [
        ("e4ca", "0.845833"),
        ("75f4", "0.834845"),
        ("09dd", "0.350839"),
    ]
    assert ids_scores(search(penalty, embedder, "auth.py user", 3, False)) == [
        ("e4ca", "0.873113"),
        ("75f4", "0.858470"),
        ("63be", "0.664505"),
    ]
    assert ids_scores(search(penalty, embedder, "sign in", 2, True)) == [
        ("63be", "0.702640"),
        ("75f4", "0.566935"),
        ("09dd", "0.000000"),
    ]


def test_penalty_corpus_bm25_and_empty_vector(penalty: Index) -> None:
    assert ids_scores(bm25_only_search(penalty, "login password", 10)) == [
        ("75f4", "1.208781"),
        ("63be", "1.155305"),
        ("09dd", "0.566249"),
        ("e4ca", "0.532588"),
    ]
    assert ids_scores(rank_core(penalty, [], "login password", 10)) == [
        ("75f4", "0.825000"),
        ("e4ca", "0.801190"),
        ("63be", "0.653443"),
        ("09dd", "0.647097"),
    ]


# --- A literal transcription of docs/retrieval.md#hybrid-search as a differential oracle, and
# properties -------------


def _naive_search(
    index: Index, qvec: list[float], query: str, top_k: int, graph: bool
) -> list[tuple[str, float]]:
    """docs/retrieval.md#hybrid-search written out the slow, obvious way (scalar cosine,
    per-document BM25 loop)."""
    chunks = index.chunks
    if not tokenize(query) or not chunks:
        return []
    emb = [index.embeddings[i].tolist() for i in range(len(chunks))]

    def cosine(a: Sequence[float], b: Sequence[float]) -> float:
        s = 0.0
        for i in range(min(len(a), len(b))):
            s += a[i] * b[i]
        return s

    weight = 1.5 if is_code_lookup(query) else 1.0
    cos_by = [0.0] * len(chunks)
    vrank: dict[int, int] = {}
    if qvec:
        ranked = sorted(
            ((i, cosine(qvec, emb[i])) for i in range(len(chunks))),
            key=lambda p: (-score_key(p[1]), chunks[p[0]].chunk_id),
        )
        for i, cos_value in ranked:
            cos_by[i] = cos_value
        for r, (i, _) in enumerate(ranked[: max(top_k * 3, 1)]):
            vrank[i] = r
    uq = unique_tokens(query)
    toks = [tokenize(c.content) for c in chunks]
    n = float(len(chunks))
    avgdl = sum(len(t) for t in toks) / len(chunks)
    bm: list[tuple[int, float]] = []
    for d, t in enumerate(toks):
        s = 0.0
        for q in uq:
            df = sum(1 for tt in toks if q in tt)
            freq = float(t.count(q))
            if df == 0 or freq == 0.0:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            denom = freq + 1.2 * (1.0 - 0.75 + 0.75 * float(len(t)) / avgdl)
            s += idf * (freq * 2.2) / denom
        if score_key(s) > 0:
            bm.append((d, s))
    bm.sort(key=lambda p: (-score_key(p[1]), chunks[p[0]].chunk_id))
    frank = {d: r for r, (d, _) in enumerate(bm[: top_k * 3])}
    hints = [ascii_lower(p) for p in rust_split_whitespace(query) if "." in p]
    cands = set(vrank) | set(frank)

    def fuse(i: int) -> float:
        v = 1.0 / (60.0 + vrank[i]) if i in vrank else 0.0
        return v + (weight * (1.0 / (60.0 + frank[i])) if i in frank else 0.0)

    max_rrf = max([0.0, *(fuse(i) for i in cands)])
    scored = []
    for i in cands:
        c = chunks[i]
        cos = cos_by[i] if i in vrank else (cosine(qvec, emb[i]) if qvec else 0.0)
        vs = 1.0 - min(max((1.0 - cos) / 2.0, 0.0), 1.0)
        content, path = ascii_lower(c.content), ascii_lower(c.file_path)
        hit = any(t in content for t in uq) or any(h in path for h in hints)
        ks = max(1.0 - (0.0 if hit else 2.0) / 5.0, 0.0)
        conf = 0.5 * vs + 0.4 * ks + 0.1 * 0.0
        nrrf = fuse(i) / max_rrf if score_key(max_rrf) != 0 else 0.0
        final = 0.5 * conf + (1.0 - 0.5) * nrrf
        if any(m in path for m in ("tests/", "test_", "docs/", "spec", "plan")):
            final *= 0.8
        scored.append((i, final))
    scored.sort(key=lambda p: (-score_key(p[1]), chunks[p[0]].chunk_id))
    kept: list[tuple[int, float]] = []
    per: dict[str, int] = {}
    for i, s in scored:
        if len(kept) >= top_k:
            break
        if per.get(chunks[i].file_path, 0) < 3:
            per[chunks[i].file_path] = per.get(chunks[i].file_path, 0) + 1
            kept.append((i, s))
    out = [(chunks[i].chunk_id, s) for i, s in kept]
    if graph and kept:
        files = sorted({chunk.file_path for chunk in chunks})
        edges: set[tuple[str, str]] = set()
        for importer in sorted(index.file_imports):
            for m in index.file_imports[importer]:
                stem = [p for p in files if p.rsplit("/", 1)[-1].rsplit(".", 1)[0] == m]
                if not stem:
                    stem = [p for p in files if p.endswith((m + ".py", m + ".js"))]
                if stem and stem[0] != importer:
                    edges.add((importer, stem[0]))
        kept_files = [chunks[i].file_path for i, _ in kept]
        nbrs: list[str] = []
        for top in dict.fromkeys(kept_files[:3]):
            around = sorted({b for a, b in edges if a == top} | {a for a, b in edges if b == top})
            for nb in around:
                if nb not in kept_files and nb not in nbrs:
                    nbrs.append(nb)
        seen = {(chunks[i].file_path, chunks[i].start_line, chunks[i].end_line) for i, _ in kept}
        for nb in nbrs[:2]:
            fc = [(i, cosine(qvec, emb[i]) if qvec else 0.0) for i in range(len(chunks))]
            fc = [p for p in fc if chunks[p[0]].file_path == nb]
            fc.sort(key=lambda p: (-score_key(p[1]), chunks[p[0]].chunk_id))
            for i, cos in fc[:2]:
                key = (chunks[i].file_path, chunks[i].start_line, chunks[i].end_line)
                if key in seen:
                    continue
                seen.add(key)
                out.append((chunks[i].chunk_id, max(cos, 0.0) * 0.85))
    return out


WORDS = ["auth", "login", "user", "pass", "hash", "plan", "tests", "x", "Session", "def"]
FILES = ["a.py", "b.py", "tests/test_a.py", "docs/b.md", "src/plan.js", "c.rs"]


@st.composite
def corpora(draw: st.DrawFn) -> Index:
    n = draw(st.integers(min_value=1, max_value=14))
    embedder = HashEmbedder()
    chunks = []
    for i in range(n):
        path = draw(st.sampled_from(FILES))
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=8)))
        start = draw(st.integers(min_value=1, max_value=3))
        cid = f"{draw(st.integers(min_value=0, max_value=2**20)):011x}{i:05x}"
        chunks.append(Chunk(cid, path, start, start + 1, "function", "k", "python", text, 1))
    chunks.sort(key=lambda c: c.file_path)
    imports = draw(
        st.dictionaries(st.sampled_from(FILES), st.lists(st.sampled_from(["a", "b", "plan"])))
    )
    matrix = np.asarray([embedder.embed(c.content) for c in chunks], dtype=np.float64)
    return Index("hash", chunks, matrix, imports)


queries = st.lists(st.sampled_from([*WORDS, "a.py", "where is", "zzz", "."]), max_size=4).map(
    " ".join
)


@settings(max_examples=60, deadline=None)
@given(corpora(), queries, st.integers(min_value=0, max_value=6), st.booleans())
def test_hybrid_equals_the_literal_transcription(
    index: Index, query: str, top_k: int, graph: bool
) -> None:
    qvec = HashEmbedder().embed(query)
    got = [(r.chunk_id, r.score) for r in search_with_vector(index, qvec, query, top_k, graph)]
    assert got == _naive_search(index, qvec, query, top_k, graph)
    empty_vector = [(r.chunk_id, r.score) for r in rank_core(index, [], query, top_k)]
    assert empty_vector == _naive_search(index, [], query, top_k, False)


@settings(max_examples=40, deadline=None)
@given(corpora(), queries, st.integers(min_value=0, max_value=6))
def test_main_rows_are_capped_sorted_and_deterministic(
    index: Index, query: str, top_k: int
) -> None:
    embedder = HashEmbedder()
    main = search(index, embedder, query, top_k, False)
    assert len(main) <= top_k
    per_file: dict[str, int] = {}
    for r in main:
        per_file[r.file_path] = per_file.get(r.file_path, 0) + 1
    assert all(count <= 3 for count in per_file.values())
    keys = [(-score_key(r.score), r.chunk_id) for r in main]
    assert keys == sorted(keys)
    with_graph = search(index, embedder, query, top_k, True)
    assert [(r.chunk_id, r.score) for r in with_graph[: len(main)]] == [
        (r.chunk_id, r.score) for r in main
    ]
    assert len(with_graph) <= len(main) + 4
    assert [r.rank for r in with_graph] == list(range(1, len(with_graph) + 1))
    assert search(index, embedder, query, top_k, True) == with_graph
