"""`cce search` end to end (docs/retrieval.md#cce-search): store, errors, output, metrics."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import attrs
import numpy as np
import pytest

from cce_cli.commands.search import render_human, render_json, snippet
from cce_cli.main import SUBCOMMANDS, main
from cce_metrics.tokens import estimate_tokens
from cce_retrieval import build_index, save_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk, Index, SearchResult

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


@pytest.fixture(scope="module")
def base_index(reference_path: Callable[..., Path]) -> Index:
    return build_index(str(reference_path("test", "fixture", "base")), HashEmbedder()).index


@pytest.fixture
def store(base_index: Index, tmp_path: Path) -> Path:
    path = tmp_path / "repo" / ".cce" / "index.json"
    path.parent.mkdir(parents=True)
    save_index(base_index, str(path))
    return path


# --- errors ------------------------------------------------------------------------------


def test_missing_store(run_cce: RunCce, tmp_path: Path) -> None:
    missing = str(tmp_path / "nope" / "index.json")
    code, out, err = run_cce("search", "q", "--store", missing)
    assert code == 1 and out == ""
    assert err == (
        f"error: could not load store {missing}: No such file or directory (os error 2)\n"
    )


def test_missing_dir_names_the_default_store_path(run_cce: RunCce, tmp_path: Path) -> None:
    code, _, err = run_cce("search", "q", "--dir", str(tmp_path / "d"))
    assert code == 1
    assert err.startswith(f"error: could not load store {tmp_path / 'd' / '.cce' / 'index.json'}:")


def test_default_store_is_dot_cce(
    run_cce: RunCce, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cce("search", "q")
    assert code == 1
    assert err.startswith("error: could not load store ./.cce/index.json: ")


@pytest.mark.parametrize("damage", ["truncate", "junk"])
def test_damaged_store_is_an_error_not_a_crash(run_cce: RunCce, store: Path, damage: str) -> None:
    data = store.read_bytes()
    store.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"\x00\xff\xfe junk")
    code, out, err = run_cce("search", "hash", "--store", str(store))
    assert code == 1 and out == ""
    assert err.startswith(f"error: could not load store {store}: ")
    assert "Traceback" not in err


def test_negative_or_non_numeric_top_k_is_a_usage_error(store: Path) -> None:
    for bad in ("-1", "x", "1.5"):
        with pytest.raises(SystemExit) as exc:
            main(["search", "q", "--store", str(store), "--top-k", bad])
        assert exc.value.code == 2


# --- output ------------------------------------------------------------------------------


def test_human_output_matches_the_reference_example(run_cce: RunCce, store: Path) -> None:
    code, out, _ = run_cce(
        "search",
        "hash password",
        "--store",
        str(store),
        "--top-k",
        "2",
        "--no-graph",
        "--no-metrics",
    )
    assert code == 0
    assert out == (
        " 1. [0.878300] auth.py:3-4 (function/function_definition)\n"
        "    def hash_password(password):\n"
        " 2. [0.876031] auth.py:6-7 (function/function_definition)\n"
        "    def verify_password(password, digest):\n"
    )


def test_json_output_base_fixture(run_cce: RunCce, store: Path) -> None:
    code, out, _ = run_cce(
        "search",
        "hash password",
        "--dir",
        str(store.parent.parent),
        "--top-k",
        "5",
        "--no-graph",
        "--json",
        "--no-metrics",
    )
    assert code == 0
    document = json.loads(out)
    assert document["query_id"] is None
    assert [(r["chunk_id"], r["score"]) for r in document["results"]] == [
        ("e3539a6cc87df405", "0.878300"),
        ("1eb146037ad13f91", "0.876031"),
        ("0246f0f6eead83ee", "0.488935"),
        ("1f7fa885bdd90499", "0.485063"),
        ("6ab3d42cf9cebf0a", "0.481312"),
    ]
    assert out.startswith(
        '{\n  "query_id": null,\n  "results": [\n    {\n'
        '      "chunk_id": "e3539a6cc87df405",\n'
        '      "chunk_type": "function",\n'
        '      "end_line": 4,\n'
        '      "file_path": "auth.py",\n'
        '      "kind": "function_definition",\n'
        '      "rank": 1,\n'
        '      "score": "0.878300",\n'
        '      "start_line": 3\n'
        "    },\n"
    )
    assert out.endswith("}\n") and not out.endswith("\n\n")


def test_empty_query_prints_no_results_and_logs(run_cce: RunCce, store: Path) -> None:
    code, out, _ = run_cce("search", "", "--store", str(store))
    assert code == 0
    lines = out.split("\n")
    assert lines[0] == "(no results)"
    # The query id stays (it matches the metrics event); no feedback command is advertised.
    match = re.fullmatch(r"query-id: ([0-9a-f]{12})", lines[1])
    assert match is not None and lines[2:] == [""]
    event = json.loads((store.parent / "metrics.jsonl").read_text(encoding="utf-8"))
    assert event["id"] == match.group(1)
    assert event["empty"] is True and event["result_count"] == 0


def test_metrics_event_fields(run_cce: RunCce, store: Path, base_index: Index) -> None:
    code, out, _ = run_cce(
        "search", "hash password", "--store", str(store), "--top-k", "1", "--json"
    )
    assert code == 0
    document = json.loads(out)
    assert re.fullmatch(r"[0-9a-f]{12}", document["query_id"])
    # graph on: the main row plus two bonus rows from payments.py
    assert [r["chunk_id"] for r in document["results"]] == [
        "e3539a6cc87df405",
        "0246f0f6eead83ee",
        "eb1b9a4f766376e6",
    ]
    line = (store.parent / "metrics.jsonl").read_text(encoding="utf-8")
    assert line.endswith("\n") and line.count("\n") == 1
    event = json.loads(line)
    assert list(event) == sorted(event)
    assert event["id"] == document["query_id"]
    assert event["schema"] == "cce.metrics/v1" and event["event"] == "search"
    assert event["source"] == "cli" and event["embedder"] == "hash"
    assert event["query"] == "hash password" and event["top_k"] == 1
    assert event["graph_enabled"] is True and event["result_count"] == 3
    assert event["top_score"] == 0.8783001790889027
    assert event["mean_score"] == 0.8783001790889027 / 3
    assert event["empty"] is False and event["low_confidence"] is False
    # Whole-file estimates: auth.py is 282 bytes, payments.py 234 (estimate = bytes // 4).
    assert event["baseline_tokens"] == 282 // 4 + 234 // 4
    served = 0
    for chunk in base_index.chunks:
        if chunk.chunk_id in {r["chunk_id"] for r in document["results"]}:
            served += estimate_tokens(chunk.content)
    assert event["served_tokens"] == served
    assert event["tokens_saved"] == 128 - served
    assert event["savings_ratio"] == (128 - served) / 128
    assert isinstance(event["latency_ms"], float)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["ts"])


def test_failed_metrics_write_warns_and_nulls_the_id(run_cce: RunCce, store: Path) -> None:
    (store.parent / "metrics.jsonl").mkdir()
    code, out, err = run_cce("search", "hash", "--store", str(store), "--json", "--top-k", "1")
    assert code == 0
    assert json.loads(out)["query_id"] is None
    assert err.startswith(f"warning: could not write metrics to {store.parent / 'metrics.jsonl'}: ")


def test_render_json_goldens() -> None:
    def result(rank: int, score: float) -> SearchResult:
        return SearchResult(rank, "c" * 16, "a.py", 1, 2, "function", "k", score, "x")

    text = render_json([result(1, 0.5), result(2, 0.1234565)], None)
    assert '"score": "0.500000"' in text and '"score": "0.123457"' in text
    assert text.startswith('{\n  "query_id": null,\n')
    assert render_json([], "abcdef012345") == (
        '{\n  "query_id": "abcdef012345",\n  "results": []\n}\n'
    )


def test_render_human_rank_width_and_snippet_rule() -> None:
    content = "  \t" + "y" * 90 + "\nsecond line"
    row = SearchResult(10, "c" * 16, "p/a.rs", 3, 9, "class", "struct_item", 1.5, content)
    assert render_human([row], None) == (
        "10. [1.500000] p/a.rs:3-9 (class/struct_item)\n    " + "y" * 77 + "\n"
    )
    assert snippet("") == ""
    assert snippet("   \u3000\n") == ""
    assert snippet("abc\x1c ") == "abc\x1c"
    assert render_human([attrs.evolve(row, rank=1, content="")], "q" * 12).split("\n")[:2] == [
        " 1. [1.500000] p/a.rs:3-9 (class/struct_item)",
        "    ",
    ]


# --- ollama-built stores -------------------------------------------------------------------


class FakeOllama:
    """Loopback `/api/embed` that returns a fixed 3-dimensional vector per input."""

    def __init__(self) -> None:
        self.inputs: list[list[str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.inputs.append(body["input"])
                payload = json.dumps({"embeddings": [[1.0, 0.0, 0.0] for _ in body["input"]]})
                data = payload.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    fake = FakeOllama()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()
    fake.thread.join()


@pytest.fixture
def ollama_store(tmp_path: Path) -> Path:
    chunks = [
        Chunk(
            "00000000000000a1",
            "a.py",
            1,
            2,
            "function",
            "function_definition",
            "python",
            "def alpha(): pass",
            4,
        ),
        Chunk(
            "00000000000000b2",
            "b.py",
            1,
            2,
            "function",
            "function_definition",
            "python",
            "def beta(): pass",
            4,
        ),
    ]
    vectors = np.asarray([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float64)
    path = tmp_path / "ollama" / ".cce" / "index.json"
    path.parent.mkdir(parents=True)
    save_index(Index("ollama", chunks, vectors), str(path))
    return path


def test_ollama_store_with_unreachable_server_is_refused(
    run_cce: RunCce, ollama_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CCE_OLLAMA_URL", "http://127.0.0.1:1")
    code, out, err = run_cce("search", "alpha", "--store", str(ollama_store))
    assert code == 1 and out == ""
    assert err == (
        "error: this index was built with the ollama embedder but Ollama is unreachable at "
        "http://127.0.0.1:1 \u2014 refusing to search across mismatched embedding spaces. "
        "Start Ollama, or re-index with the default hash embedder (`cce index <dir>`).\n"
    )


def test_ollama_store_with_healthy_server(
    run_cce: RunCce,
    ollama_store: Path,
    fake_ollama: FakeOllama,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CCE_OLLAMA_URL", fake_ollama.url)
    monkeypatch.setenv("CCE_OLLAMA_MODEL", "fake-model")
    code, out, err = run_cce(
        "search", "beta", "--store", str(ollama_store), "--json", "--no-metrics"
    )
    assert code == 0 and err == ""
    assert fake_ollama.inputs == [["ping"], ["beta"]]
    results = json.loads(out)["results"]
    # a.py has cosine 1 with the fake query vector, but b.py is both a vector candidate
    # and the only BM25 hit for "beta", so its RRF share and keyword score win.
    assert [(r["chunk_id"], r["score"]) for r in results] == [
        ("00000000000000b2", "0.825000"),
        ("00000000000000a1", "0.622066"),
    ]
    assert [r["rank"] for r in results] == [1, 2]


def test_search_imports_only_what_it_runs(store: Path) -> None:
    # Start-up time is most of a search: the chunker, its grammars, the build cache, the
    # other commands' modules and (for a hash store) the HTTP embedders must stay unloaded.
    probe = (
        "import sys\n"
        "from cce_cli.main import main\n"
        f"code = main(['search', 'cache', '--store', {str(store)!r}, '--no-metrics'])\n"
        "heavy = ['cce_retrieval.build.pipeline', 'cce_retrieval.chunk.chunker',\n"
        "         'cce_retrieval.build.cache', 'cce_cli.commands.relevance',\n"
        "         'cce_cli.commands.index', 'cce_stats', 'tree_sitter',\n"
        "         'cce_retrieval.embed.ollama', 'cce_retrieval.embed.openai', 'http.client']\n"
        "print(code, [name for name in heavy if name in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines()[-1] == "0 []"


def test_help_still_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    listing = capsys.readouterr().out
    for name, _, help_text in SUBCOMMANDS:
        assert name in listing and help_text[:30] in listing
    with pytest.raises(SystemExit) as stop:
        main(["relevance", "--help"])
    assert stop.value.code == 0
    assert "--compare" in capsys.readouterr().out
