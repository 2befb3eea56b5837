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
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cce_cli.main import main
from cce_cli.render.output import display_text
from cce_fixtures import FixtureError, find_problems, parse_fixtures
from cce_retrieval import HashEmbedder, StoreError, build_index, parse_index, serialize_index
from cce_retrieval.protect.redactor import redact
from cce_retrieval.protect.strict import strict_redact
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
_EMBEDDING_PARTS = ("embedding_starts", "embedding_rows", "embedding_values")


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
    st.sampled_from(_EMBEDDING_PARTS),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
)
def test_damaged_embedding_cells_never_fail_a_query(
    sidecar_store: Path, part: str, flips: list[tuple[int, int]]
) -> None:
    """Bytes of a sparse embedding part overwritten in place (its size kept, so only the
    reader's own checks stand between them and a query): loading gives an index that
    every backend can query and that writes back, or the store parsed instead."""
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
        index = load_store(str(store))
        embedder = HashEmbedder()
        for query in ("cache get key", "retry tries", "ring buffer"):
            search(index, embedder, query, 5, True)
            vector_search(index, embedder.embed(query), 5)
            bm25_only_search(index, query, 5)
        serialize_index(index)
