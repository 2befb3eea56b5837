"""Property-based fuzzing of every parser that reads hostile input (`nox -s fuzz`).

Why it exists: fixture lines, `.gitignore` lines, store bytes and file names all come from
outside, and each must end in a value or the parser's own documented error, never a
traceback, a hang or a merged path. Hypothesis generates the inputs (structured ones
near the valid grammar, and raw bytes); the number of examples per property is bounded by
`CCE_FUZZ_EXAMPLES` (default 300), so a run takes a bounded time. These tests are marked
`slow` and live outside the packages' suites: plain `uv run nox` never runs them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cce_cli.main import main
from cce_cli.output import display_text
from cce_fixtures import FixtureError, find_problems, parse_fixtures
from cce_retrieval import HashEmbedder, StoreError, build_index, parse_index, serialize_index
from cce_retrieval.protect.redactor import redact
from cce_retrieval.protect.strict import strict_redact
from cce_retrieval.store.sidecar.parts import PART_ORDER, SPARSE_PARTS
from cce_retrieval.walk.gitignore import parse_gitignore
from cce_retrieval.walk.walker import walk

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("CCE_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,  # capsys is drained at the end of each example
    ],
)

# --- fixture lines ----------------------------------------------------------------------------

_JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 1000), st.floats(allow_nan=True), st.text(max_size=12)
)
_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_CASE_KEYS = st.sampled_from(["id", "query", "expected", "k", "tags", "secondary", "kind", "x"])
_CASE = st.dictionaries(_CASE_KEYS, _JSON, max_size=6)
_HEADER = st.fixed_dictionaries(
    {"schema": st.sampled_from(["cce.relevance/v1", "cce.relevance/v2", ""])},
    optional={"k": _JSON, "corpus": _JSON},
)


@st.composite
def fixture_text(draw: st.DrawFn) -> str:
    lines = [json.dumps(draw(_HEADER))]
    lines += [json.dumps(case) for case in draw(st.lists(_CASE, max_size=5))]
    lines += draw(st.lists(st.text(max_size=30), max_size=3))  # garbage lines
    draw(st.randoms()).shuffle(lines)
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines)


@FUZZ
@given(st.one_of(fixture_text(), st.text(max_size=200)))
def test_fixture_parsing_never_crashes(text: str) -> None:
    with contextlib.suppress(FixtureError):
        parse_fixtures(text)
    assert all(isinstance(problem, FixtureError) for problem in find_problems(text))


# --- .gitignore lines ---------------------------------------------------------------------------

_GLOB = st.text(st.sampled_from(list("ab*?[]{},!/\\-^#. \té")), max_size=40)
_PATH = st.lists(st.sampled_from([b"a", b"b", b"/", b".", b"\xff", b"\xc3\xa9", b"*"]), max_size=30)


@FUZZ
@given(
    lines=st.lists(st.one_of(_GLOB, st.text(max_size=20)), max_size=8),
    raw=st.binary(max_size=64),
    paths=st.lists(_PATH.map(b"".join), max_size=5),
)
def test_gitignore_parsing_and_matching_never_crash(
    lines: list[str], raw: bytes, paths: list[bytes]
) -> None:
    for data in ("\n".join(lines).encode("utf-8", "surrogatepass"), raw):
        gitignore = parse_gitignore(data)
        for path in paths:
            for is_dir in (False, True):
                gitignore.matched(path, is_dir)


# --- store bytes --------------------------------------------------------------------------------


def _valid_store() -> bytes:
    with tempfile.TemporaryDirectory() as root:
        Path(root, "a.py").write_text("import os\n\ndef f(x):\n    return x\n")
        Path(root, "b.js").write_text("function g() { return 1; }\n")
        return serialize_index(build_index(root, HashEmbedder()).index)


VALID_STORE = _valid_store()


@st.composite
def store_bytes(draw: st.DrawFn) -> bytes:
    data = bytearray(VALID_STORE)
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        if action == "flip" and position < len(data):
            data[position] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[position:]
        elif action == "insert":
            data[position:position] = draw(
                st.sampled_from([b"[" * 5000, b"NaN", b"1e999", b'"', b"-", b"{}", b"\xff"])
            )
        elif position < len(data):
            del data[position : position + draw(st.integers(1, 50))]
    return bytes(data)


@FUZZ
@given(st.one_of(store_bytes(), st.binary(max_size=300)))
def test_store_loading_never_crashes(data: bytes) -> None:
    try:
        index = parse_index(data, "fuzz.json")
    except StoreError:
        return
    serialize_index(index)  # whatever loads can be written back


# --- secret redaction ---------------------------------------------------------------------------


@FUZZ
@given(st.text(max_size=300))
def test_strict_redaction_never_crashes_and_is_idempotent(text: str) -> None:
    once, _ = strict_redact(redact(text), "f.sh")
    assert strict_redact(once, "f.sh")[0] == once


# --- file names -------------------------------------------------------------------------------

_NAME_BYTE = st.integers(1, 255).filter(lambda b: b != ord("/"))
_NAME = (
    st.lists(_NAME_BYTE, min_size=1, max_size=24)
    .map(bytes)
    .filter(lambda n: n not in (b".", b".."))
)


@settings(FUZZ, max_examples=max(20, EXAMPLES // 10))
@given(names=st.lists(_NAME, min_size=1, max_size=6, unique=True))
def test_walk_index_and_search_over_hostile_names(
    names: list[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    with tempfile.TemporaryDirectory() as root:
        raw_root = os.fsencode(root)
        for number, name in enumerate(names):
            with open(os.path.join(raw_root, name), "wb") as handle:
                handle.write(f"def function_{number}():\n    return {number}\n".encode())
        result = walk(root)
        paths = [walked.rel_path for walked in result.files]
        assert len(paths) == len(set(paths))  # never merged
        assert len({display_text(path) for path in paths}) == len(paths)
        assert main(["index", root, "--no-metrics"]) == 0
        assert main(["search", "function", root, "--no-metrics"]) == 0
        assert main(["search", "function", root, "--no-metrics", "--json"]) == 0
        capsys.readouterr()


# --- the sidecar's embedding cells ------------------------------------------------------------

_SIDECAR_CORPUS = {
    "cache.py": "class Cache:\n    def get(self, key):\n        return self.items[key]\n",
    "retry.py": "def retry(fn, tries=3):\n    for _ in range(tries):\n        fn()\n",
    "notes.md": "# Notes\n\nRing buffer push and pop.\n",
}


@pytest.fixture(scope="module")
def sidecar_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small hash store with its sidecar (written once; each example damages a copy)."""
    from cce_retrieval.store.sidecar import write_sidecar
    from cce_retrieval.store.write import write_store

    root = tmp_path_factory.mktemp("sidecar-corpus")
    for name, text in _SIDECAR_CORPUS.items():
        (root / name).write_text(text)
    index = build_index(str(root), HashEmbedder()).index
    store = root.parent / "sidecar-store" / "index.json"
    saved = write_store(index, str(store))
    write_sidecar(index, str(store), saved.sha256, saved.size)
    return store


@FUZZ
@given(
    st.sampled_from(SPARSE_PARTS),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
)
def test_damaged_sidecar_embedding_cells_never_fail_a_query(
    sidecar_store: Path, part: str, flips: list[tuple[int, int]]
) -> None:
    """Bytes of a sparse embedding part overwritten in place, its size kept and the
    manifest's digest made to match (so only the reader's layout checks stand between
    them and a query): loading gives an index that every backend can query and that
    writes back, or the store parsed instead."""
    from cce_retrieval.rank.hybrid import bm25_only_search, search, vector_search
    from cce_retrieval.store.sidecar import load_store, sidecar_dir

    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch, "index.json")
        store.write_bytes(sidecar_store.read_bytes())
        copied = Path(sidecar_dir(str(store)))
        shutil.copytree(sidecar_dir(str(sidecar_store)), copied)
        target = next(copied.glob(f"*-{part}.npy"))
        data = bytearray(target.read_bytes())
        for offset, value in flips:
            data[offset % len(data)] = value
        target.write_bytes(bytes(data))
        # The manifest is made to vouch for the new bytes, as a writer that went wrong
        # would: only the layout checks are left to catch them.
        (manifest,) = [p for p in copied.glob("*.json") if len(p.name) == 69]
        document = json.loads(manifest.read_text())
        document["parts"][part]["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
        manifest.write_text(json.dumps(document))
        index = load_store(str(store))
        embedder = HashEmbedder()
        for query in ("cache get key", "retry tries", "ring buffer"):
            search(index, embedder, query, 5, True)
            vector_search(index, embedder.embed(query), 5)
            bm25_only_search(index, query, 5)
        serialize_index(index)


# --- every sidecar part, damaged in place -------------------------------------------------------


class _FixedQueries:
    """Query vectors for a dense store of width 8: a fixed function of the text."""

    def embed(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        vector = [b - 127.5 for b in digest[:8]]
        norm = sum(v * v for v in vector) ** 0.5
        return [v / norm for v in vector]


_QUERIES = ("cache get key", "retry tries", "ring buffer", "")


def _answers(index: object, embedder: object) -> list[object]:
    """Every registered backend's results for `_QUERIES` over `index`."""
    from cce_retrieval import Query, backend_names, create_backend

    answers: list[object] = []
    for name in backend_names():
        backend = create_backend(name)
        for text in _QUERIES:
            answers.append(backend.search(index, Query(text, embedder), 5))  # type: ignore[arg-type]
    return answers


@pytest.fixture(scope="module")
def sidecar_stores(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[Path, list[str], object, list[object]]]:
    """A sparse (hash) and a dense store, each with its sidecar: the store, its part
    names, the query embedder and every backend's answers from the parsed store."""
    import numpy as np

    from cce_retrieval import load_index
    from cce_retrieval.model import Index
    from cce_retrieval.store.sidecar import sidecar_dir, write_sidecar
    from cce_retrieval.store.write import write_store

    root = tmp_path_factory.mktemp("every-part-corpus")
    for name, text in _SIDECAR_CORPUS.items():
        (root / name).write_text(text)
    hashed = build_index(str(root), HashEmbedder()).index
    rows = len(hashed.chunks)
    dense = Index(
        embedder="ollama",
        chunks=list(hashed.chunks),
        embeddings=np.random.default_rng(7).uniform(-1, 1, (rows, 8)),
        file_imports=hashed.file_imports,
        file_tokens=hashed.file_tokens,
        embedder_model="m",
        embedding_dim=8,
    )
    stores: dict[str, tuple[Path, list[str], object, list[object]]] = {}
    for kind, index, embedder in (
        ("sparse", hashed, HashEmbedder()),
        ("dense", dense, _FixedQueries()),
    ):
        store = root.parent / f"every-part-{kind}" / "index.json"
        saved = write_store(index, str(store))
        write_sidecar(index, str(store), saved.sha256, saved.size)
        (manifest,) = Path(sidecar_dir(str(store))).glob("*.json")
        names = sorted(json.loads(manifest.read_text())["parts"])
        stores[kind] = (store, names, embedder, _answers(load_index(str(store)), embedder))
    return stores


_ALL_PARTS = [
    *(("sparse", name) for name in PART_ORDER if name != "embeddings_by_dim"),
    *(("dense", name) for name in PART_ORDER if not name.startswith("embedding_")),
]

_DAMAGE = st.one_of(
    st.tuples(
        st.just("overwrite"),
        st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=8),
    ),
    st.tuples(st.just("cut"), st.integers(0, 1 << 20)),
    st.tuples(st.just("extend"), st.binary(min_size=1, max_size=64)),
)


def _damage_in_place(part: Path, damage: tuple[str, object]) -> None:
    """Change `part` through its own inode: bytes overwritten, cut short or extended."""
    kind, how = damage
    size = part.stat().st_size
    with open(part, "r+b") as handle:
        if kind == "overwrite":
            assert isinstance(how, list)
            for offset, value in how:
                if size:
                    handle.seek(offset % size)
                    handle.write(bytes([value]))
        elif kind == "cut":
            assert isinstance(how, int)
            handle.truncate(how % size if size else 0)
        else:
            assert isinstance(how, bytes)
            handle.seek(0, os.SEEK_END)
            handle.write(how)


@FUZZ
@given(st.sampled_from(_ALL_PARTS), _DAMAGE, st.booleans())
def test_any_sidecar_part_damaged_in_place_never_changes_an_answer(
    sidecar_stores: dict[str, tuple[Path, list[str], object, list[object]]],
    which: tuple[str, str],
    damage: tuple[str, object],
    verified_before: bool,
) -> None:
    """Any part of a sparse or a dense store's sidecar overwritten, cut or extended in
    place, after the parts were verified and remembered or not: every backend answers
    exactly as from the parsed store (or the load refuses with a `StoreError`), and the
    index still writes back the store's bytes."""
    from cce_retrieval.store.sidecar import digests, load_store, sidecar_dir

    kind, name = which
    pristine, names, embedder, expected = sidecar_stores[kind]
    assert name in names
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch, "index.json")
        store.write_bytes(pristine.read_bytes())
        copied = Path(sidecar_dir(str(store)))
        shutil.copytree(sidecar_dir(str(pristine)), copied)
        if verified_before:
            # Parts count as settled at once, so their statuses are remembered now; the
            # load takes far longer than a clock tick, so the damage moves the change time.
            with mock.patch.object(digests, "_SETTLED_NS", 0):
                load_store(str(store))
            assert list(copied.glob("*.verified.json"))
        (manifest,) = [p for p in copied.glob("*.json") if len(p.name) == 69]
        part = copied / json.loads(manifest.read_text())["parts"][name]["file"]
        _damage_in_place(part, damage)
        try:
            index = load_store(str(store))
        except StoreError:
            return  # a clean refusal (the store itself is intact, so not expected)
        assert _answers(index, embedder) == expected
        assert serialize_index(index) == store.read_bytes()


# --- the labeling and run-file readers, through the commands -----------------------------------

# Strings a reader must take as data: separators of the formats, spans, a lone surrogate
# (which only an escape in JSON can carry), credential shapes, and the empty string.
_TRICKY_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            " ",
            "a.py",
            "lib.rs",
            "a.py#function",
            "#",
            "@1-2",
            "a\udc80.py",
            "\ud800",
            "README.md",
            "function_definition",
            "DB_PASSWORD=hunter2hunter2",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
            "-----BEGIN RSA PRIVATE KEY-----",
        ]
    ),
)
_HOSTILE_LINE = st.one_of(
    st.integers(-2, 0),
    st.sampled_from([2**63, 2**64 - 1, 2**64, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.just("7"),
    st.none(),
)


def _mostly(valid: st.SearchStrategy[object], hostile: st.SearchStrategy[object]) -> Any:
    """`valid` seven times in eight, else `hostile`: inputs near the grammar stay near it, so
    one bad field at a time reaches the code behind the first check."""
    return st.integers(0, 7).flatmap(lambda n: hostile if n == 0 else valid)


_FUZZ_CORPUS = {
    "lib.rs": "fn parse(text: &str) -> u32 {\n    text.len() as u32\n}\n",
    "a.py": "def load_config(path):\n    return open(path).read()\n",
    "README.md": "# Project\n\nLoad the config, then parse it.\n",
}
_FUZZ_FIXTURES = (
    '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
    '{"id":"a","query":"load config","expected":["a.py@1-2"]}\n'
    '{"id":"b","query":"parse text","expected":["lib.rs#function_item"],"k":3}\n'
    '{"id":"c","query":"project readme","expected":[]}\n'
)


def _run_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`cce ARGV` in process: the exit status and stderr. An uncaught exception fails the
    property on its own; a status of 1 or 2 must come with an `error:` or usage line."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    err = capsys.readouterr().err
    event(f"exit status {code}")  # `--hypothesis-show-statistics` shows how many succeed
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err
    if code == 1:
        # A name from the file may hold a line break, so the `error:` need not end stderr.
        assert err.startswith("error: ") or "\nerror: " in err, err
    if code == 2:
        assert "error:" in err, err
    return code, err


@pytest.fixture(scope="module")
def labeled_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Fixtures (labeled and draft cases) beside their corpus and its store, made once."""
    root = tmp_path_factory.mktemp("labeling")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in _FUZZ_CORPUS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    (root / "fixtures.jsonl").write_text(_FUZZ_FIXTURES, encoding="utf-8")
    # `cce relevance` scores labeled cases only: the run files are read against these.
    labeled = "".join(
        line for line in _FUZZ_FIXTURES.splitlines(True) if '"expected":[]' not in line
    )
    (root / "labeled.jsonl").write_text(labeled, encoding="utf-8")
    assert main(["index", str(corpus), "--no-metrics", "--no-cache"]) == 0
    return root


_KINDS = st.sampled_from(["", "function_item", "function_definition", "module"])
_HOSTILE: dict[str, st.SearchStrategy[object]] = {
    "file_path": _TRICKY_TEXT,
    "start_line": _HOSTILE_LINE,
    "end_line": _HOSTILE_LINE,
    "kind": _TRICKY_TEXT,
    "judgment": _JSON,
    "use_kind": st.one_of(st.just(True), _JSON),
    "id": _TRICKY_TEXT,
    "query": _JSON,
    "rank": _JSON,
    "score": st.one_of(st.floats(), st.text(max_size=4)),
    "backend": _TRICKY_TEXT,
    "results": _JSON,
    "candidates": _JSON,
    "schema": _TRICKY_TEXT,
}


@st.composite
def _span(draw: st.DrawFn) -> tuple[int, int]:
    """Lines `a-b` within the corpus's files (a chunk may claim one line past the end)."""
    start = draw(st.integers(1, 6))
    return start, start + draw(st.integers(0, 4))


def _damage(draw: st.DrawFn, records: list[dict[str, object]]) -> None:
    """Up to two hostile edits, each one field of one record (or a span reversed), so a
    bad field meets code that a first error elsewhere would have kept it from."""
    for _ in range(draw(st.integers(0, 2))):
        if not records:
            return
        record = draw(st.sampled_from(records))
        keys = [key for key in record if key in _HOSTILE]
        if draw(st.integers(0, 3)) == 0 and "start_line" in record:
            record["start_line"], record["end_line"] = record["end_line"], record["start_line"]
            end = record["end_line"]
            if isinstance(end, int) and record["start_line"] == end:
                record["start_line"] = end + 1
        elif keys:
            key = draw(st.sampled_from(keys))
            record[key] = draw(_HOSTILE[key])


@st.composite
def _valid_result(draw: st.DrawFn) -> dict[str, object]:
    start, end = draw(_span())
    return {
        "rank": draw(st.integers(1, 5)),
        "file_path": draw(st.sampled_from(list(_FUZZ_CORPUS))),
        "start_line": start,
        "end_line": end,
        "score": draw(st.floats(0, 1)),
        "kind": draw(_KINDS),
    }


@st.composite
def cce_run_text(draw: st.DrawFn) -> str:
    """A valid cce.run/v1 file with a hostile field or two (or a broken header)."""
    header = draw(_mostly(st.just({"schema": "cce.run/v1", "corpus": "corpus"}), _JSON))
    records: list[dict[str, object]] = []
    results: list[dict[str, object]] = []
    for _ in range(draw(st.integers(0, 4))):
        hits = draw(st.lists(_valid_result(), max_size=4))
        results += hits
        records.append(
            {"backend": "x", "id": draw(st.sampled_from(["a", "b", "c"])), "results": hits}
        )
    _damage(draw, draw(st.sampled_from([records, results])))
    lines = [json.dumps(header), *(json.dumps(record) for record in records)]
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n{", "\n\n"]))


@st.composite
def trec_run_text(draw: st.DrawFn) -> str:
    """A valid TREC run (`qid Q0 docno rank score tag`) with a hostile field or two."""
    rows: list[dict[str, object]] = []
    for _ in range(draw(st.integers(0, 6))):
        start, end = draw(_span())
        rows.append(
            {
                "id": draw(st.sampled_from(["a", "b", "c"])),
                "file_path": draw(st.sampled_from(list(_FUZZ_CORPUS))),
                "start_line": start,
                "end_line": end,
                "rank": draw(st.integers(1, 9)),
                "score": "1.0",
                "whole": draw(st.integers(0, 5)) == 0,
            }
        )
    _damage(draw, rows)
    lines = []
    for row in rows:
        docno = str(row["file_path"])
        if not row["whole"]:
            docno += f":{row['start_line']}-{row['end_line']}"
        lines.append(f"{row['id']} Q0 {docno} {row['rank']} {row['score']} tag")
    if draw(st.integers(0, 7)) == 0:
        lines.append(" ".join(draw(st.lists(st.text(max_size=6), max_size=7))))
    return "\n".join(lines) + "\n"


def _run_file_bytes() -> st.SearchStrategy[bytes]:
    return st.one_of(
        cce_run_text().map(lambda text: text.encode("utf-8", "surrogatepass")),
        trec_run_text().map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.binary(max_size=200),
    )


@FUZZ
@given(data=_run_file_bytes(), command=st.sampled_from(["relevance", "pool"]))
def test_run_files_end_in_a_result_or_an_error(
    labeled_corpus: Path, capsys: pytest.CaptureFixture[str], data: bytes, command: str
) -> None:
    """A `--run` file of any bytes, through `cce relevance` and `cce pool` over a store."""
    store = str(labeled_corpus / "corpus" / ".cce" / "index.json")
    fixtures = str(labeled_corpus / "labeled.jsonl")
    with tempfile.TemporaryDirectory() as scratch:
        run = os.path.join(scratch, "run")
        Path(run).write_bytes(data)
        argv = [command, fixtures, "--store", store, "--run", f"x={run}"]
        if command == "relevance":
            argv += ["--backend", "x", "--results", os.path.join(scratch, "results.jsonl")]
        else:
            argv += ["--backends", "x", "-o", os.path.join(scratch, "judging.jsonl")]
        _run_command(argv, capsys)


@st.composite
def _valid_candidate(draw: st.DrawFn) -> dict[str, object]:
    start, end = draw(_span())
    candidate: dict[str, object] = {
        "file_path": draw(st.sampled_from(list(_FUZZ_CORPUS))),
        "start_line": start,
        "end_line": end,
        "kind": draw(_KINDS),
        "judgment": draw(st.sampled_from(["relevant", "secondary", "not", None])),
        "snippet": "",
    }
    if draw(st.booleans()):
        candidate["use_kind"] = draw(st.booleans())
    return candidate


@st.composite
def judging_text(draw: st.DrawFn) -> str:
    """A valid judged `cce.judging/v1` file with a hostile field or two, or a line of
    anything."""
    lines: list[dict[str, object]] = []
    candidates: list[dict[str, object]] = []
    for case_id in draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True)):
        judged = draw(st.lists(_valid_candidate(), max_size=5))
        candidates += judged
        lines.append(
            {"schema": "cce.judging/v1", "id": case_id, "query": "q", "candidates": judged}
        )
    _damage(draw, draw(st.sampled_from([lines, candidates])))
    text = [json.dumps(line) for line in lines]
    if draw(st.integers(0, 7)) == 0:
        text.append(draw(st.one_of(_JSON.map(json.dumps), st.text(max_size=20))))
    return "\n".join(text) + "\n"


@FUZZ
@given(
    st.one_of(
        judging_text().map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.binary(max_size=200),
    )
)
def test_judgments_end_in_valid_fixtures_or_an_error(
    labeled_corpus: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    """`cce pool --apply` of any judged file: fixtures the contract reads, or an error and
    the previous output untouched."""
    fixtures = str(labeled_corpus / "fixtures.jsonl")
    with tempfile.TemporaryDirectory() as scratch:
        judged = Path(scratch, "judged.jsonl")
        judged.write_bytes(data)
        out = Path(scratch, "out.jsonl")
        out.write_text("previous\n", encoding="utf-8")
        code, _ = _run_command(["pool", "--apply", str(judged), fixtures, "-o", str(out)], capsys)
        written = out.read_text(encoding="utf-8")
        if code == 0:
            fixture_set = parse_fixtures(written)
            assert not [problem for problem in find_problems(written) if "anchor" in str(problem)]
            assert all(case.expected for case in fixture_set.cases)
        else:
            assert written == "previous\n"


_EVENT = st.fixed_dictionaries(
    {
        "event": st.sampled_from(["search", "index", "searc"]),
        "query": st.one_of(_TRICKY_TEXT, _JSON),
        "ts": st.one_of(
            st.sampled_from(["2026-11-01T12:00:00Z", "2026-13-45T99:99:99Z", "", "2026"]),
            _JSON,
        ),
    },
    optional={"id": st.one_of(st.sampled_from(["e1", "e2"]), _JSON), "schema": _JSON},
)


@st.composite
def event_log_text(draw: st.DrawFn) -> str:
    lines = [json.dumps(event) for event in draw(st.lists(_EVENT, max_size=6))]
    lines += draw(st.lists(st.text(max_size=20), max_size=2))
    draw(st.randoms()).shuffle(lines)
    return "\n".join(lines)


@FUZZ
@given(
    data=st.one_of(
        event_log_text().map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.binary(max_size=200),
    ),
    since=st.one_of(
        st.none(),
        st.sampled_from(["2026-11-01", "2026-13-45", "2026-11-01T25:00", "2026-11-01T12:00Z"]),
        st.text(max_size=20),
    ),
    k=st.one_of(st.none(), st.sampled_from(["1", "0", str(2**64 - 1), str(2**64)])),
)
def test_event_logs_end_in_queries_or_an_error(
    capsys: pytest.CaptureFixture[str], data: bytes, since: str | None, k: str | None
) -> None:
    """`cce queries` over any log bytes: no credential printed or drafted, and a draft the
    fixture contract reads once its cases are judged."""
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch, "metrics.jsonl")
        log.write_bytes(data)
        draft = Path(scratch, "draft.jsonl")
        argv = ["queries", str(log), "--fixtures", str(draft)]
        argv += [] if since is None else [f"--since={since}"]
        argv += [] if k is None else ["--k", k]
        try:
            code = main(argv)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        captured = capsys.readouterr()
        event(f"exit status {code}")
        assert code in (0, 2), captured.err
        assert "Traceback" not in captured.err
        if code != 0:
            assert "error:" in captured.err and not draft.exists()
            return
        drafted = draft.read_text(encoding="utf-8")
        for secret in ("hunter2hunter2", "github_pat_", "PRIVATE KEY"):
            assert secret not in captured.out and secret not in drafted
        # Lines end at "\n" only, as the fixture contract reads them (a query may hold U+0085).
        header, *cases = drafted.rstrip("\n").split("\n")
        judged = [json.dumps({**json.loads(line), "expected": ["a.py"]}) for line in cases]
        if judged:
            parse_fixtures("\n".join([header, *judged]))
