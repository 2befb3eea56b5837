"""Named backend configurations, external runs, results/qrels files and backend plugins."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from cce_retrieval import HashEmbedder, Index, Query
from cce_retrieval.rank import backends as registry

REPO = Path(__file__).parents[3]
GOLDEN = Path(__file__).parent / "golden" / "code.report.json"
PLUGIN_SRC = Path(__file__).parent / "data" / "cce-example-backend" / "src"

CONFIG = """\
[backends.hybrid-nograph]
use = "hybrid"
graph = false
[backends.bm25-b04]
use = "bm25"
b = 0.4
"""

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


def report(out: str) -> dict[str, dict[str, object]]:
    return {entry["backend"]: entry for entry in json.loads(out)["backends"]}


def per_query(entry: dict[str, object]) -> dict[str, dict[str, object]]:
    rows = entry["per_query"]
    assert isinstance(rows, list)
    return {row["id"]: row for row in rows}


# --- named configurations ---------------------------------------------------------------


def test_configured_names_run_and_b_changes_a_length_sensitive_query(
    workspace: Path, run_cce: RunCce
) -> None:
    (workspace / "cce.toml").write_text(CONFIG, encoding="utf-8")
    fixtures = str(workspace / "code.jsonl")
    code, out, err = run_cce("relevance", fixtures, "--compare", "hybrid,hybrid-nograph")
    assert code == 0, err
    code, out, err = run_cce("relevance", fixtures, "--compare", "hybrid,hybrid-nograph", "--json")
    assert code == 0, err
    assert json.loads(out)["compare"]["b"] == "hybrid-nograph"
    code, out, err = run_cce("relevance", fixtures, "--backend", "bm25,bm25-b04", "--json")
    assert code == 0, err
    backends = report(out)
    assert "config" not in backends["bm25"]
    assert backends["bm25-b04"]["config"] == {"b": 0.4, "use": "bm25"}
    # The query hits the 12-line README chunk and the 10-line cache function; with less
    # length normalisation the README's higher term counts win and the relevant
    # function drops to rank 2.
    reference = per_query(backends["bm25"])["code-cache-expiry-span"]
    flatter = per_query(backends["bm25-b04"])["code-cache-expiry-span"]
    assert (reference["mrr"], flatter["mrr"]) == ("1.000000", "0.500000")


def test_a_config_file_that_is_not_used_leaves_the_report_unchanged(
    run_cce: RunCce, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    explicit = tmp_path / "cce.toml"
    explicit.write_text(CONFIG, encoding="utf-8")
    code, out, err = run_cce(
        "relevance", "eval/relevance/code.jsonl", "--json", "--config", str(explicit)
    )
    assert code == 0, err
    assert out == GOLDEN.read_text(encoding="utf-8")


def test_pyproject_tool_cce_is_found_from_a_parent_directory(
    workspace: Path, run_cce: RunCce
) -> None:
    (workspace.parent / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.cce.backends.flat]\nuse = "bm25"\nb = 0.0\n',
        encoding="utf-8",
    )
    code, out, err = run_cce("relevance", str(workspace / "code.jsonl"), "--backend", "flat")
    assert code == 0, err
    assert "flat" in out


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[backends.x]\nuse = "bm25"\nk3 = 1\n',
            "[backends.x]: unknown parameter `k3` for backend 'bm25'; valid keys: k1, b",
        ),
        ('[backends.x]\nuse = "bm25"\nb = "high"\n', "[backends.x]: `b` must be a number"),
        ('[backends.x]\nuse = "bm25"\nb = 2.0\n', "[backends.x]: `b` must be at most 1, not 2.0"),
        (
            "[backends.x]\nuse = 3\n",
            "[backends.x]: key `use` must name a registered backend; valid choices: bm25, vector",
        ),
        ('[backends.bm25]\nuse = "bm25"\n', "'bm25' is a registered backend"),
        ("[backend.x]\n", "unknown table or key `backend`; valid keys: backends"),
        ("[backends.x\n", "invalid TOML"),
        (
            '[backends.x]\nuse = "hybrid"\nrrf_k = 0\n',
            "[backends.x]: `rrf_k` must be greater than 0, not 0.0",
        ),
    ],
)
def test_config_errors_name_file_table_key_and_choices(
    workspace: Path, run_cce: RunCce, toml: str, message: str
) -> None:
    config = workspace / "cce.toml"
    config.write_text(toml, encoding="utf-8")
    # Asking for a configured name is what makes the discovered file read.
    code, out, err = run_cce("relevance", str(workspace / "code.jsonl"), "--backend", "x")
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {config}") and message in err, err


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b'[backends.x]\nuse = "bm25"\n# caf\xe9\n',
            ": line 3: not valid UTF-8 (byte 0xe9); TOML files are UTF-8, so re-save it as UTF-8",
        ),
        (
            b"a = " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
            ": invalid TOML: arrays or tables nested too deeply to read; flatten the nesting",
        ),
    ],
    ids=["latin-1", "deep"],
)
def test_a_config_file_that_cannot_be_read_as_toml_is_an_error(
    workspace: Path, run_cce: RunCce, data: bytes, message: str
) -> None:
    config = workspace / "cce.toml"
    config.write_bytes(data)
    code, out, err = run_cce("relevance", str(workspace / "code.jsonl"), "--backend", "x")
    assert (code, out, err) == (1, "", f"error: {config}{message}\n")


def test_unknown_backend_lists_configured_names(workspace: Path, run_cce: RunCce) -> None:
    (workspace / "cce.toml").write_text(CONFIG, encoding="utf-8")
    code, _, err = run_cce("relevance", str(workspace / "code.jsonl"), "--backend", "bm26")
    assert code == 2
    assert "expected one of bm25, vector, hybrid" in err and "hybrid-nograph, bm25-b04" in err


def test_cce_search_takes_a_configured_backend(
    workspace: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "cce.toml").write_text(CONFIG, encoding="utf-8")
    corpus = workspace.parent / "corpus" / "sample"
    store = workspace / "index.json"
    assert run_cce("index", str(corpus), "--store", str(store), "--no-metrics")[0] == 0
    monkeypatch.chdir(workspace)
    search = (
        "search",
        "cache get drops an expired entry",
        "--store",
        str(store),
        "--no-metrics",
        "--json",
    )
    code, plain, err = run_cce(*search, "--backend", "bm25")
    assert code == 0, err
    code, flatter, err = run_cce(*search, "--backend", "bm25-b04")
    assert code == 0, err
    first = [row["file_path"] for row in json.loads(plain)["results"]]
    second = [row["file_path"] for row in json.loads(flatter)["results"]]
    assert first[0] == "cache.py" and second[0] == "README.md"
    code, default, _ = run_cce(*search)
    code, hybrid, _ = run_cce(*search, "--backend", "hybrid", "--top-k", "10")
    assert json.loads(default)["results"] == json.loads(hybrid)["results"][:10]


# --- external runs ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["bm25", "vector", "hybrid"])
@pytest.mark.parametrize("form", ["run", "trec"])
def test_results_read_back_with_run_score_like_the_backend(
    workspace: Path, run_cce: RunCce, backend: str, form: str
) -> None:
    fixtures = str(workspace / "code.jsonl")
    results = str(workspace / f"r.{form}")
    code, direct, err = run_cce(
        "relevance",
        fixtures,
        "--backend",
        backend,
        "--results",
        results,
        "--results-format",
        form,
        "--json",
    )
    assert code == 0, err
    code, replayed, err = run_cce(
        "relevance", fixtures, "--run", f"mine={results}", "--backend", "mine", "--json"
    )
    assert code == 0, err
    assert err == ""
    assert per_query(report(replayed)["mine"]) == per_query(report(direct)[backend])


def test_run_file_lines_start_with_the_documented_header(workspace: Path, run_cce: RunCce) -> None:
    results = workspace / "r.jsonl"
    fixtures = str(workspace / "code.jsonl")
    run_cce("relevance", fixtures, "--backend", "bm25,hybrid", "--results", str(results))
    lines = results.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {
        "corpus": f"{workspace}/../corpus/sample",
        "embedder": "hash",
        "schema": "cce.run/v1",
    }
    first = json.loads(lines[1])
    assert (first["backend"], first["id"], first["k"]) == ("bm25", "code-load-config", 5)
    assert set(first["results"][0]) == {
        "chunk_id",
        "end_line",
        "file_path",
        "kind",
        "matches",
        "rank",
        "score",
        "start_line",
    }
    assert len(lines) == 1 + 2 * 11
    # Two backends in one file: a reader must say which one it wants.
    code, _, err = run_cce("relevance", fixtures, "--run", f"x={results}", "--backend", "x")
    assert code == 1 and "select one with --run x=" in err
    code, out, err = run_cce(
        "relevance", fixtures, "--run", f"x={results}#hybrid", "--backend", "x,hybrid"
    )
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.startswith(("  x ", "  hybrid "))]
    assert len(rows) == 4  # the score table and the token table
    assert rows[0][1:] == rows[1][1:] and rows[2][1:] == rows[3][1:]  # x replays hybrid


def test_cases_missing_from_a_run_score_empty_with_a_warning(
    workspace: Path, run_cce: RunCce
) -> None:
    run = workspace / "partial.trec"
    run.write_text(
        "code-load-config Q0 config.py:9-18 1 2.5 mine\ncode-lru-evict Q0 cache.py 1 1.0 mine\n",
        encoding="utf-8",
    )
    code, out, err = run_cce(
        "relevance",
        str(workspace / "code.jsonl"),
        "--run",
        f"mine={run}",
        "--compare",
        "bm25,mine",
        "--json",
    )
    assert code == 0, err
    assert err.startswith(
        f"warning: backend mine ({run}): 9 cases without results (e.g. code-env-overrides, "
        "code-backoff, code-job-interface); they score as empty result lists\n"
    )
    rows = per_query(report(out)["mine"])
    assert rows["code-load-config"]["mrr"] == "1.000000"
    assert rows["code-lru-evict"]["first_relevant_rank"] == 1  # a whole-file docno
    assert rows["code-backoff"]["mrr"] == "0.000000"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("q Q0 a.py 1\n", "line 1: expected 6 fields"),
        ("q Q0 a.py one 1.0 t\n", "line 1: rank must be an integer"),
        ("q Q0 a.py 1 nan t\n", "is not a finite number"),
        ('{"schema":"other"}\n', "line 1: the header's `schema` is 'other'"),
        ('{"schema":"cce.run/v1"}\n{"backend":"b","id":3}\n', "line 2: `id` must be a string"),
    ],
)
def test_bad_run_files_name_file_line_and_cause(
    workspace: Path, run_cce: RunCce, content: str, message: str
) -> None:
    run = workspace / "bad.run"
    run.write_text(content, encoding="utf-8")
    code, out, err = run_cce(
        "relevance", str(workspace / "code.jsonl"), "--run", f"r={run}", "--backend", "r"
    )
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {run}") and message in err, err


def test_export_qrels_lists_expected_files(workspace: Path, run_cce: RunCce) -> None:
    qrels = workspace / "q.txt"
    fixtures = str(workspace / "code.jsonl")
    assert run_cce("relevance", fixtures, "--export-qrels", str(qrels))[0] == 0
    lines = qrels.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "code-load-config 0 config.py 1"
    assert all(len(line.split()) == 4 for line in lines)


# --- plugins ------------------------------------------------------------------------------


@pytest.fixture
def example_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Install tests/data/cce-example-backend for this test: a .dist-info on sys.path."""
    site = tmp_path / "site"
    info = site / "cce_example_backend-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cce-example-backend\nVersion: 0.1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[cce.backends]\nexample = cce_example_backend:SPEC\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(PLUGIN_SRC))
    registry.load_plugins(force=True)
    yield
    registry.BACKENDS.pop("example", None)
    sys.modules.pop("cce_example_backend", None)


def test_plugin_is_listed_configured_and_compared(
    example_plugin: None, workspace: Path, run_cce: RunCce
) -> None:
    (workspace / "cce.toml").write_text(
        '[backends.example-two]\nuse = "example"\nmin_overlap = 2\n', encoding="utf-8"
    )
    code, listing, err = run_cce("backends", str(workspace))
    assert code == 0, err
    assert "example: chunks ranked by how many query words they contain\n" in listing
    assert "    min_overlap (int, default 1, in [1, inf]): query words a chunk must contain\n" in (
        listing
    )
    assert "example-two: use example, min_overlap=2\n" in listing
    fixtures = str(workspace / "code.jsonl")
    code, out, err = run_cce("relevance", fixtures, "--compare", "bm25,example", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["compare"]["b"] == "example"
    example = report(out)["example"]
    assert 0.0 < float(str(example["mrr"])) <= 1.0
    code, out, err = run_cce("relevance", fixtures, "--backend", "example-two", "--json")
    assert code == 0, err
    assert report(out)["example-two"]["config"] == {"min_overlap": 2, "use": "example"}
    (workspace / "cce.toml").write_text(
        '[backends.bad]\nuse = "example"\nmin_overlap = 0\n', encoding="utf-8"
    )
    code, _, err = run_cce("relevance", fixtures, "--backend", "bad")
    assert code == 1 and "`min_overlap` must be at least 1" in err


def test_plugin_results_without_fields_are_an_error(example_plugin: None) -> None:
    spec = registry.BackendSpec("broken", "returns junk", (), lambda values: _Junk(), adapt=True)
    registry.register_backend(spec)
    try:
        backend = registry.create_backend("broken")
        with pytest.raises(registry.BackendConfigError, match="result 1 has no `file_path`"):
            backend.search(Index(embedder="hash", chunks=[]), Query("q", HashEmbedder()), 3)
    finally:
        registry.BACKENDS.pop("broken", None)


class _Junk:
    name = "broken"

    def search(self, index: object, query: object, k: int) -> Sequence[dict[str, object]]:
        return [{"score": 1.0}]


# --- a configured embedder ----------------------------------------------------------------


class _LengthEmbedder:
    """Two-dimensional vectors from the text length: a space unlike the hash embedder's."""

    name = "lengths"
    model = "len-2"

    def embed(self, text: str) -> list[float]:
        return [float(len(text)), 1.0]

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed(text) for text in texts]


def test_a_backend_with_its_own_embedder_gets_its_own_index(
    workspace: Path, run_cce: RunCce
) -> None:
    from cce_retrieval import EMBEDDERS, EmbedderSpec, register_embedder

    register_embedder(EmbedderSpec("lengths", "test only", lambda model, env: _LengthEmbedder()))
    try:
        (workspace / "cce.toml").write_text(
            '[backends.vec-len]\nuse = "vector"\nembedder = "lengths"\n'
            '[backends.vec-bad]\nuse = "vector"\nembedder = "nope"\n',
            encoding="utf-8",
        )
        fixtures = str(workspace / "code.jsonl")
        code, out, err = run_cce("relevance", fixtures, "--config", str(workspace / "cce.toml"))
        assert code == 1 and "key `embedder` must name a registered embedder" in err
        (workspace / "cce.toml").write_text(
            '[backends.vec-len]\nuse = "vector"\nembedder = "lengths"\n', encoding="utf-8"
        )
        code, out, err = run_cce("relevance", fixtures, "--backend", "vector,vec-len", "--json")
        assert code == 0, err
        backends = report(out)
        assert backends["vec-len"]["config"] == {"embedder": "lengths", "use": "vector"}
        assert per_query(backends["vec-len"]) != per_query(backends["vector"])
    finally:
        EMBEDDERS.pop("lengths", None)


def test_a_configuration_of_a_missing_plugin_fails_only_the_runs_that_use_it(
    workspace: Path, run_cce: RunCce
) -> None:
    (workspace / "cce.toml").write_text(
        CONFIG + '[backends.theirs]\nuse = "not-installed"\nweight = 2\n', encoding="utf-8"
    )
    fixtures = str(workspace / "code.jsonl")
    code, out, err = run_cce("relevance", fixtures, "--backend", "bm25-b04", "--json")
    assert code == 0, err
    assert "bm25-b04" in report(out)
    code, out, err = run_cce("relevance", fixtures, "--compare", "bm25,theirs")
    assert (code, out) == (1, "")
    assert "[backends.theirs]: key `use` names 'not-installed', which is neither" in err
    assert "install the package that provides it" in err
    code, listing, err = run_cce("backends", str(workspace))
    assert code == 0, err
    assert "theirs: use not-installed, unavailable: " in listing
    assert "bm25-b04: use bm25, b=0.4\n" in listing


def test_code_backends_are_listed_with_each_technique_and_its_range(
    workspace: Path, run_cce: RunCce
) -> None:
    code, listing, err = run_cce("backends", str(workspace))
    assert code == 0, err
    assert listing.index("hybrid:") < listing.index("\ncode:") < listing.index("\ncode-hybrid:")
    for line in (
        "    split_identifiers (bool, default true): ",
        '    chunks (str, default "tiled", one of "stored", "outermost", "tiled"): ',
        "    max_chunk_lines (int, default 25, in [0, inf]): ",
        "    repeat_decay (float, default 0.5, in [0, 1]): ",
        "    definition_boost (float, default 3.0, in [0, inf]): ",
        "    hash_vector (bool, default false): ",
    ):
        assert line in listing, line
    ablation = workspace / "ablation.toml"
    ablation.write_text('[backends.code-plain]\nuse = "code"\nchunks = "stored"\n')
    code, listing, err = run_cce("backends", "--config", str(ablation))
    assert code == 0, err
    assert 'code-plain: use code, chunks="stored"\n' in listing
