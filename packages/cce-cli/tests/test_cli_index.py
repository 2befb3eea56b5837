"""`cce index` and the metrics event log (docs/index-store.md#fingerprint,
docs/index-store.md#cce-index; docs/retrieval.md#search-events)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from cce_cli.commands import index as cmd_index
from cce_cli.formats import event_log as events
from cce_cli.main import main
from cce_retrieval import (
    BuildResult,
    EmbedderUnavailable,
    embedder_names,
    load_index,
    serialize_index,
)
from cce_retrieval.embed.ollama import OllamaUnreachable
from cce_retrieval.model import Index
from cce_retrieval.store import persist
from cce_retrieval.store.sidecar import load_store
from cce_retrieval.store.write import StoreStream, store_digest

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

BASE_STORE_SHA = "79b974d7821318cdc5bab689902a6047fd96428048c16d4fe7ee2494ce8d0660"
SAMPLES_STORE_SHA = "edba69d10907dedb74f9a4f29ba154d13ab59200ffb4b22c07243c4358a7ddcb"


@pytest.fixture
def reference_copy(tmp_path: Path, reference_path: Callable[..., Path]) -> Callable[[str], str]:
    """Copy the reference corpus `test/fixture/<name>` into tmp_path; return the copy's path."""

    def copy(name: str) -> str:
        target = tmp_path / name
        shutil.copytree(reference_path("test", "fixture", name), target)
        return str(target)

    return copy


def small_repo(root: Path) -> str:
    root.mkdir(parents=True, exist_ok=True)
    (root / "auth.py").write_text("import os\n\ndef login(user):\n    return user\n")
    (root / "app.py").write_text(
        "from auth import login\n\nclass App:\n    def run(self):\n        pass\n"
    )
    return str(root)


def without_elapsed(stdout: str) -> str:
    return re.sub(r"elapsed           : \d+\.\d{3}s\n", "elapsed           : Xs\n", stdout)


# --- summary and store ------------------------------------------------------------


def test_base_fixture_summary_store_and_fingerprint(
    run_cce: RunCce, reference_copy: Callable[[str], str]
) -> None:
    root = reference_copy("base")
    code, out, err = run_cce("index", root, "--no-metrics")
    assert code == 0, err
    store = os.path.join(root, ".cce", "index.json")
    assert without_elapsed(out) == (
        f"Indexed {root}\n"
        "  files indexed     : 3\n"
        "  files skipped     : 1\n"
        "  sensitive skipped : 0\n"
        "  total chunks      : 7\n"
        "  embedder          : hash\n"
        f"  store             : {store}\n"
        "  elapsed           : Xs\n"
    )
    assert err == ""
    data = Path(store).read_bytes()
    assert len(data) == 10_068
    assert hashlib.sha256(data).hexdigest() == BASE_STORE_SHA
    listing = sorted(os.listdir(os.path.dirname(store)))
    assert listing == ["fingerprint.json", "index.json", "index.json.sidecar", "sources.json"]
    fingerprint = json.loads(Path(root, ".cce", "fingerprint.json").read_bytes())
    assert fingerprint["store_sha256"] == BASE_STORE_SHA
    assert fingerprint["redaction"] is True and fingerprint["embedder"] == "hash"


def test_samples_store_digest_via_cli(
    tmp_path: Path, run_cce: RunCce, reference_copy: Callable[[str], str]
) -> None:
    root = reference_copy("samples")
    store = str(tmp_path / "custom" / "samples.json")
    code, out, _ = run_cce("index", root, "--store", store, "--no-metrics")
    assert code == 0
    assert f"  store             : {store}\n" in out
    data = Path(store).read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (28_924, SAMPLES_STORE_SHA)
    assert os.path.exists(str(tmp_path / "custom" / "samples.json.fingerprint.json"))
    assert os.path.exists(str(tmp_path / "custom" / "samples.json.sources.json"))


def test_dir_is_displayed_as_typed(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_repo(tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo")
    code, out, _ = run_cce("index", ".", "--no-metrics")
    assert code == 0
    assert out.startswith("Indexed .\n")
    assert "  store             : ./.cce/index.json\n" in out


def test_fresh_process_round_trip(tmp_path: Path) -> None:
    root = small_repo(tmp_path / "repo")
    store = str(tmp_path / "store" / "index.json")
    indexed = subprocess.run(
        [sys.executable, "-m", "cce_cli", "index", root, "--store", store, "--no-metrics"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert indexed.returncode == 0, indexed.stderr
    assert "  total chunks      : 3\n" in indexed.stdout
    loader = (
        "import json, sys\n"
        "from cce_retrieval import load_index\n"
        "index = load_index(sys.argv[1])\n"
        "print(json.dumps([[c.file_path, c.start_line, c.end_line, c.chunk_id, c.content]"
        " for c in index.chunks] + [index.embeddings.tolist(), index.file_imports]))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", loader, store], capture_output=True, text=True, check=False
    )
    assert loaded.returncode == 0, loaded.stderr
    here = load_index(store)
    expected = [[c.file_path, c.start_line, c.end_line, c.chunk_id, c.content] for c in here.chunks]
    assert json.loads(loaded.stdout) == [
        *expected,
        here.embeddings.tolist(),
        {"app.py": ["auth"], "auth.py": ["os"]},
    ]
    assert [c.file_path for c in here.chunks] == ["app.py", "app.py", "auth.py"]


def indexed_small_repo(tmp_path: Path, run_cce: RunCce) -> tuple[str, Path]:
    """`small_repo`, indexed once into its default store; the root and the store path."""
    root = small_repo(tmp_path / "repo")
    assert run_cce("index", root, "--no-metrics")[0] == 0
    return root, Path(root, ".cce", "index.json")


def test_reindex_unchanged_is_byte_identical_and_removed_file_disappears(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    root, store = indexed_small_repo(tmp_path, run_cce)
    first = store.read_bytes()
    assert run_cce("index", root, "--no-metrics")[0] == 0
    assert store.read_bytes() == first
    os.remove(os.path.join(root, "app.py"))
    assert run_cce("index", root, "--no-metrics")[0] == 0
    assert {c.file_path for c in load_index(str(store)).chunks} == {"auth.py"}


def test_reindex_unchanged_keeps_the_sidecar_and_a_change_replaces_it(
    tmp_path: Path, run_cce: RunCce
) -> None:
    root = small_repo(tmp_path / "repo")
    store = Path(root, ".cce", "index.json")
    sidecar = Path(root, ".cce", "index.json.sidecar")
    assert run_cce("index", root, "--no-metrics", "--no-cache")[0] == 0

    def parts() -> dict[str, int]:
        # A status record may be added (the store's digest, remembered): not a part.
        return {p.name: p.stat().st_ino for p in sidecar.iterdir() if ".status" not in p.name}

    before = parts()
    assert run_cce("index", root, "--no-metrics", "--no-cache")[0] == 0
    # Same store bytes: the sidecar of that digest is already complete and stays as is.
    assert parts() == before
    assert serialize_index(load_store(str(store))) == store.read_bytes()
    Path(root, "auth.py").write_text("def logout(user):\n    return None\n")
    assert run_cce("index", root, "--no-metrics", "--no-cache")[0] == 0
    digest = hashlib.sha256(store.read_bytes()).hexdigest()
    assert {p.name.split("-")[0].split(".")[0] for p in sidecar.iterdir()} == {digest}
    assert serialize_index(load_store(str(store))) == store.read_bytes()


def test_a_first_index_does_not_hash_its_store_before_writing_it(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    # BM25's parts are staged while the build ends, which makes the sidecar directory
    # before the store is written (here, at once): only a manifest there is worth
    # hashing the store for.
    root = small_repo(tmp_path / "repo")
    sidecar = Path(root, ".cce", "index.json.sidecar")
    sidecar.mkdir(parents=True)
    hashed: list[bool] = []
    real_digest = store_digest

    def digest(*args: Any) -> Any:
        hashed.append(sidecar.is_dir())
        return real_digest(*args)

    monkeypatch.setattr(persist, "store_digest", digest)
    seen: list[bool] = []
    real_in_place = persist._store_in_place

    def in_place(*args: Any) -> Any:
        seen.append(sidecar.is_dir())
        return real_in_place(*args)

    monkeypatch.setattr(persist, "_store_in_place", in_place)
    assert run_cce("index", root, "--no-metrics", "--no-cache")[0] == 0
    assert (seen, hashed) == ([True], [])
    # With this store's manifest in place, the next build hashes its store and keeps it.
    status = Path(root, ".cce", "index.json").stat()
    assert run_cce("index", root, "--no-metrics", "--no-cache")[0] == 0
    assert (seen, hashed) == ([True, True], [True])
    assert Path(root, ".cce", "index.json").stat().st_ino == status.st_ino


def test_reindex_unchanged_leaves_the_store_file_as_it_is(tmp_path: Path, run_cce: RunCce) -> None:
    root = small_repo(tmp_path / "repo")
    store = Path(root, ".cce", "index.json")
    first = run_cce("index", root, "--no-metrics")
    status = store.stat()
    again = run_cce("index", root, "--no-metrics")
    assert (again[0], without_elapsed(again[1]), again[2]) == (
        first[0],
        without_elapsed(first[1]),
        first[2],
    )
    # Not rewritten (a rewrite renames a new file into place), yet described as written.
    after = store.stat()
    assert (after.st_ino, after.st_mtime_ns) == (status.st_ino, status.st_mtime_ns)
    fingerprint = json.loads(Path(root, ".cce", "fingerprint.json").read_text())
    assert hashlib.sha256(store.read_bytes()).hexdigest() in json.dumps(fingerprint)


def test_reindex_rewrites_a_store_file_changed_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    root, store = indexed_small_repo(tmp_path, run_cce)
    expected = store.read_bytes()
    with open(store, "r+b") as handle:  # the same size, other bytes
        handle.seek(expected.index(b"def ") + 4)
        handle.write(b"Z")
    assert store.read_bytes() != expected
    assert run_cce("index", root, "--no-metrics")[0] == 0
    assert store.read_bytes() == expected


def test_an_unchanged_reindex_removes_stale_temporaries_as_a_write_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    root, store = indexed_small_repo(tmp_path, run_cce)
    stale = store.parent / ".index.json.tmp.999999.0"  # left by a writer that is gone
    stale.write_bytes(b"partial")
    status = store.stat()
    assert run_cce("index", root, "--no-metrics")[0] == 0
    assert store.stat().st_ino == status.st_ino and not stale.exists()


def test_a_store_that_cannot_be_kept_is_written_after_all(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run_cce: RunCce,
) -> None:
    root, store = indexed_small_repo(tmp_path, run_cce)
    expected, status = store.read_bytes(), store.stat()

    def refuse(path: str) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(persist, "keep_in_place", refuse)
    assert run_cce("index", root, "--no-metrics")[0] == 0
    assert store.stat().st_ino != status.st_ino and store.read_bytes() == expected


def forbid_building(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make reading, chunking or embedding any file fail the test; the calls it refused."""
    from cce_retrieval.build import pipeline as build_module

    refused: list[int] = []

    def refuse(files: Sequence[object], *args: object, **kwargs: object) -> object:
        refused.append(len(files))
        raise AssertionError("the build ran")

    monkeypatch.setattr(build_module, "collect_outcomes", refuse)
    return refused


def side_files(root: str) -> dict[str, bytes]:
    """The bytes beside the store that an index writes, but for the event log."""
    directory = Path(root, ".cce")
    return {name: (directory / name).read_bytes() for name in ("fingerprint.json", "sources.json")}


def test_an_unchanged_reindex_with_a_store_record_builds_nothing(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = small_repo(tmp_path / "repo")
    # Strict protection would redact this; under --verbose the reused build repeats the
    # notice the first build printed, files named (the cache kept it), and is silent else.
    Path(root, "deploy.sh").write_text('export DB_PASSWORD="hunter2-hunter2"\n')
    store = Path(root, ".cce", "index.json")
    first = run_cce("index", root)
    written = side_files(root)
    status = store.stat()
    Path(root, ".cce", "fingerprint.json").unlink()  # written again, to the same bytes
    forbid_building(monkeypatch)
    again = run_cce("index", root, "--verbose")
    assert (again[0], without_elapsed(again[1]), again[2]) == (
        first[0],
        without_elapsed(first[1]),
        first[2],
    )
    assert "strict would also redact 1 secret(s)" in again[2] and "(in deploy.sh)" in again[2]
    quiet = run_cce("index", root)
    assert quiet[2] == "" and without_elapsed(quiet[1]) == without_elapsed(first[1])
    assert side_files(root) == written
    after = store.stat()
    assert (after.st_ino, after.st_mtime_ns) == (status.st_ino, status.st_mtime_ns)
    log = Path(root, ".cce", "metrics.jsonl").read_text()
    events = [json.loads(line) for line in log.splitlines()]
    moving = {"ts", "id", "duration_ms"}
    assert [{k: v for k, v in e.items() if k not in moving} for e in events[-2:]] == [
        {k: v for k, v in events[0].items() if k not in moving}
    ] * 2


def rewrite_store_record(cache_dir: Path, **changes: object) -> None:
    """Give the one store record in `cache_dir` other field values, with a valid digest
    (a record can be wrong without being damaged)."""
    (path,) = [p for p in cache_dir.rglob("*.entry") if p.read_bytes().startswith(b"CCESR001")]
    data = path.read_bytes()
    payload = json.dumps({**json.loads(data[120:]), **changes}).encode()
    header = bytearray(data[:120])  # magic, key, payload digest and length, text part
    header[40:72] = hashlib.sha256(payload).digest()
    header[72:80] = len(payload).to_bytes(8, "little")
    path.write_bytes(bytes(header) + payload)


@pytest.mark.parametrize(
    "change", ["edit a file", "remove the sidecar", "change the store", "miscount the chunks"]
)
def test_a_store_record_is_used_only_for_the_same_files_and_the_store_it_describes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    change: str,
    run_cce: RunCce,
) -> None:
    root, store = indexed_small_repo(tmp_path, run_cce)
    if change == "edit a file":
        Path(root, "auth.py").write_text("def logout(user):\n    return None\n")
    elif change == "remove the sidecar":
        shutil.rmtree(Path(root, ".cce", "index.json.sidecar"))
    elif change == "change the store":
        store.write_bytes(store.read_bytes().replace(b"def login", b"def LOGIN"))
    else:
        rewrite_store_record(Path(os.environ["CCE_CACHE_DIR"]), total_chunks=4)
    refused = forbid_building(monkeypatch)
    with pytest.raises(AssertionError, match="the build ran"):
        main(["index", root, "--no-metrics"])
    assert refused == [2]
    monkeypatch.undo()
    assert run_cce("index", root, "--no-metrics")[0] == 0
    expected = small_repo(tmp_path / "fresh")
    if change == "edit a file":
        Path(expected, "auth.py").write_text("def logout(user):\n    return None\n")
    assert run_cce("index", expected, "--no-metrics", "--no-cache")[0] == 0
    assert store.read_bytes() == Path(expected, ".cce", "index.json").read_bytes()
    assert serialize_index(load_store(str(store))) == store.read_bytes()


def test_without_the_cache_there_is_no_store_record(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = small_repo(tmp_path / "repo")
    assert run_cce("index", root, "--no-metrics", "--no-cache")[0] == 0
    cache_dir = Path(os.environ["CCE_CACHE_DIR"])
    assert not any(p.read_bytes().startswith(b"CCESR001") for p in cache_dir.rglob("*.entry"))
    refused = forbid_building(monkeypatch)
    with pytest.raises(AssertionError, match="the build ran"):
        main(["index", root, "--no-metrics"])
    assert refused == [2]


# --- errors ---------------------------------------------------------------------------


def test_missing_directory_exits_1(tmp_path: Path, run_cce: RunCce) -> None:
    missing = str(tmp_path / "nope")
    code, out, err = run_cce("index", missing)
    assert (code, out, err) == (1, "", f"error: not a directory: {missing}\n")
    assert not os.path.exists(missing)


def test_no_directory_exits_1(run_cce: RunCce) -> None:
    code, out, err = run_cce("index")
    assert (code, out) == (1, "")
    assert err == "error: index requires a directory\n"


def test_store_under_a_regular_file_exits_1(tmp_path: Path, run_cce: RunCce) -> None:
    root = small_repo(tmp_path / "repo")
    blocker = tmp_path / "blocker"
    blocker.write_text("keep me")
    store = str(blocker / "index.json")
    code, out, err = run_cce("index", root, "--store", store)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: could not write store {store}: Not a directory (os error 20)")
    assert blocker.read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["blocker", "repo"]


def test_failed_save_keeps_previous_store(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = small_repo(tmp_path / "repo")
    assert run_cce("index", root, "--no-metrics")[0] == 0
    store = Path(root, ".cce", "index.json")
    before = store.read_bytes()
    Path(root, "new.py").write_text("def new():\n    pass\n")

    def refuse(src: str, dst: str) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "replace", refuse)
    code, out, err = run_cce("index", root)
    monkeypatch.undo()
    assert (code, out) == (1, "")
    assert "Read-only file system (os error 30)" in err
    assert "previous store there is unchanged" in err
    assert store.read_bytes() == before
    listing = sorted(os.listdir(store.parent))
    assert listing == ["fingerprint.json", "index.json", "index.json.sidecar", "sources.json"]
    assert not Path(root, ".cce", "metrics.jsonl").exists()


def test_non_utf8_and_oversized_files_are_skipped(tmp_path: Path, run_cce: RunCce) -> None:
    root = small_repo(tmp_path / "repo")
    Path(root, "latin1.py").write_bytes(b"x = '\xe9'\n")
    Path(root, "big.txt").write_bytes(b"a" * (3 * 1024 * 1024))
    code, out, _ = run_cce("index", root, "--no-metrics")
    assert code == 0
    assert "  files indexed     : 2\n  files skipped     : 2\n" in out
    assert {c.file_path for c in load_index(os.path.join(root, ".cce", "index.json")).chunks} == {
        "app.py",
        "auth.py",
    }


# --- flags ------------------------------------------------------------------------------


def test_allow_secrets_warns_and_indexes_sensitive_files(tmp_path: Path, run_cce: RunCce) -> None:
    root = small_repo(tmp_path / "repo")
    Path(root, ".env").write_text("password = hunter2hunter2\n")
    code, out, err = run_cce("index", root, "--allow-secrets", "--no-metrics")
    assert code == 0
    assert err == (
        "warning: --allow-secrets set — secret protection is DISABLED; sensitive files will be "
        "indexed and secrets stored verbatim\n"
    )
    index = load_index(os.path.join(root, ".cce", "index.json"))
    assert "password = hunter2hunter2\n" in [c.content for c in index.chunks]
    fingerprint = json.loads(Path(root, ".cce", "fingerprint.json").read_bytes())
    assert fingerprint["redaction"] is False
    code, out, err = run_cce("index", root, "--no-metrics")
    assert "  sensitive skipped : 1\n" in out and err == ""


def test_unknown_embedder_name_means_hash(tmp_path: Path, run_cce: RunCce) -> None:
    root = small_repo(tmp_path / "repo")
    code, out, err = run_cce("index", root, "--embedder", "olama", "--no-metrics")
    assert code == 0
    assert "  embedder          : hash\n" in out
    # A typo does not go unnoticed: the fallback is said, with the names that would work.
    assert err == (
        "warning: unknown embedder 'olama'; indexing with the default hash embedder "
        f"(known embedders: {', '.join(embedder_names())})\n"
    )


class FakeOllama:
    base_url = "http://127.0.0.1:9"
    model = "tiny-embed"
    name = "ollama"

    def __init__(self, healthy: bool) -> None:
        self._healthy = healthy

    @classmethod
    def unhealthy(cls) -> FakeOllama:
        return cls(False)

    @classmethod
    def healthy_one(cls) -> FakeOllama:
        return cls(True)

    @property
    def location(self) -> str:
        return self.base_url

    def check(self) -> None:
        if not self._healthy:
            cause = OllamaUnreachable("ollama request failed: cannot connect")
            raise EmbedderUnavailable(self.base_url, cause)

    def embed(self, text: str) -> list[float]:
        return [float(len(text)), 1.0]

    def try_embed(self, text: str) -> list[float]:
        return self.embed(text)

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed(t) for t in texts]


def test_ollama_selection_is_case_insensitive_and_health_checked(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    ollama = pytest.importorskip("cce_retrieval.embed.ollama")
    root = small_repo(tmp_path / "repo")
    monkeypatch.setattr(ollama.OllamaEmbedder, "from_env", FakeOllama.unhealthy)
    code, out, err = run_cce("index", root, "--embedder", "OLLAMA")
    assert (code, out) == (1, "")
    assert err.startswith("error: ") and "http://127.0.0.1:9" in err
    assert not os.path.exists(os.path.join(root, ".cce"))

    monkeypatch.setattr(ollama.OllamaEmbedder, "from_env", FakeOllama.healthy_one)
    code, out, err = run_cce("index", root, "--embedder", "Ollama", "--no-metrics")
    assert code == 0
    assert err == "using ollama embedder (tiny-embed @ http://127.0.0.1:9)\n"
    assert "  embedder          : ollama\n" in out
    index = load_index(os.path.join(root, ".cce", "index.json"))
    assert index.embedder == "ollama" and index.embeddings.shape == (3, 2)
    fingerprint = json.loads(Path(root, ".cce", "fingerprint.json").read_bytes())
    assert fingerprint["embed_dim"] == 2


# --- metrics event --------------------------------------------------------------------


def test_index_event_shape(tmp_path: Path, run_cce: RunCce) -> None:
    root = small_repo(tmp_path / "repo")
    code, _, err = run_cce("index", root)
    assert code == 0 and err == ""
    store = Path(root, ".cce", "index.json")
    line = Path(root, ".cce", "metrics.jsonl").read_text(encoding="utf-8")
    assert line.endswith("\n") and line.count("\n") == 1
    event = json.loads(line)
    assert list(event) == sorted(event)
    assert set(event) == {
        "chunks",
        "duration_ms",
        "embedder",
        "event",
        "files_indexed",
        "full",
        "id",
        "index_bytes",
        "schema",
        "sensitive_skipped",
        "sha",
        "source",
        "ts",
    }
    assert event["event"] == "index" and event["schema"] == "cce.metrics/v1"
    assert event["chunks"] == 3 and event["files_indexed"] == 2
    assert event["full"] is True and event["source"] == "local" and event["embedder"] == "hash"
    assert event["index_bytes"] == store.stat().st_size
    assert event["sensitive_skipped"] == 0
    assert event["sha"] is None
    assert isinstance(event["duration_ms"], float) and event["duration_ms"] > 0
    assert re.fullmatch(r"[0-9a-f]{12}", event["id"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["ts"])
    assert " " not in line.replace("duration_ms", "")
    run_cce("index", root)
    lines = Path(root, ".cce", "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["id"] != event["id"]


def test_no_metrics_writes_no_event(tmp_path: Path, run_cce: RunCce) -> None:
    root = small_repo(tmp_path / "repo")
    assert run_cce("index", root, "--no-metrics")[0] == 0
    assert not os.path.exists(os.path.join(root, ".cce", "metrics.jsonl"))


def test_bare_store_name_puts_metrics_in_cwd(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = small_repo(tmp_path / "repo")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert run_cce("index", root, "--store", "index.json")[0] == 0
    listing = sorted(os.listdir(work))
    assert listing == [
        "fingerprint.json",
        "index.json",
        "index.json.sidecar",
        "metrics.jsonl",
        "sources.json",
    ]


def test_git_sha_is_recorded_inside_a_repository(tmp_path: Path, run_cce: RunCce) -> None:
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    root = small_repo(tmp_path / "repo")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    store = str(tmp_path / "out" / "index.json")
    assert run_cce("index", root, "--store", store)[0] == 0
    event = json.loads((tmp_path / "out" / "metrics.jsonl").read_text(encoding="utf-8"))
    assert event["sha"] == head


def test_side_file_failures_are_warnings(tmp_path: Path, run_cce: RunCce) -> None:
    root = small_repo(tmp_path / "repo")
    cce_dir = Path(root, ".cce")
    (cce_dir / "fingerprint.json").mkdir(parents=True)
    (cce_dir / "metrics.jsonl").mkdir()
    code, out, err = run_cce("index", root)
    assert code == 0
    assert out.startswith(f"Indexed {root}\n")
    lines = err.splitlines()
    assert lines[0].startswith("warning: could not write the store fingerprint: ")
    assert lines[1].startswith(
        f"warning: could not write metrics to {os.path.join(root, '.cce', 'metrics.jsonl')}: "
    )
    assert (cce_dir / "index.json").is_file()


# --- helpers of the summary and the event log ---------------------------------------------


def test_walk_errors_line_and_warning() -> None:
    result = BuildResult(
        index=Index(embedder="hash", chunks=[]),
        files_indexed=4,
        files_skipped=0,
        sensitive_skipped=0,
        walk_errors=2,
        total_chunks=9,
    )
    text = cmd_index.summary_lines("src/", "s.json", result, 1.23456)
    assert text == (
        "Indexed src/\n"
        "  files indexed     : 4\n"
        "  files skipped     : 0\n"
        "  sensitive skipped : 0\n"
        "  walk errors       : 2\n"
        "  total chunks      : 9\n"
        "  embedder          : hash\n"
        "  store             : s.json\n"
        "  elapsed           : 1.235s\n"
    )
    from cce_cli.evaluation.indexes import walk_error_warnings

    assert walk_error_warnings(1) == [
        "warning: 1 directory could not be read; files under them were NOT indexed — the index "
        "may be incomplete and may differ across machines"
    ]
    assert walk_error_warnings(3)[0].startswith("warning: 3 directories could not be read;")
    assert walk_error_warnings(2, 2) == [
        "warning: 2 .gitignore files could not be read (not a regular file, or larger than "
        "8 MiB) and were ignored; files they would have excluded were indexed"
    ]


def test_event_ids_and_paths() -> None:
    ids = {events.new_event_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[0-9a-f]{12}", i) for i in ids)
    assert events.metrics_path("a/b/index.json") == "a/b/metrics.jsonl"
    assert events.metrics_path("index.json") == "metrics.jsonl"
    assert events.utc_timestamp(0) == "1970-01-01T00:00:00Z"


def test_compact_encoding_sorts_keys_and_prints_floats_like_serde() -> None:
    record = {"b": 1e-05, "a": [True, None, "x\n"], "c": {"z": 2.0, "y": 1.5e16}}
    assert events.encode_compact(record) == (
        '{"a":[true,null,"x\\n"],"b":0.00001,"c":{"y":1.5e16,"z":2.0}}'
    )


def test_append_event_adds_schema_ts_and_id(tmp_path: Path) -> None:
    store = str(tmp_path / "deep" / "index.json")
    event_id = events.append_event(store, {"event": "search", "top_k": 10, "latency_ms": 0.5})
    assert event_id is not None
    event = json.loads((tmp_path / "deep" / "metrics.jsonl").read_text(encoding="utf-8"))
    assert event["id"] == event_id and event["schema"] == "cce.metrics/v1"
    assert event["event"] == "search" and event["latency_ms"] == 0.5 and "ts" in event


def test_append_event_fails_open(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    assert events.append_event(str(blocker / "index.json"), {"event": "x"}) is None
    err = capsys.readouterr().err
    assert err.startswith(f"warning: could not write metrics to {blocker / 'metrics.jsonl'}: ")


@pytest.mark.parametrize("route", ["streamed", "written"])
def test_a_failed_store_write_leaves_the_sidecar_as_it_was(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    """The sidecar's parts are staged while the store is written (streamed during the
    build, or written after it when the stream could not be opened); if the store is
    not saved, what was staged goes again and the previous sidecar stays the store's."""
    from cce_retrieval.store.paths import StoreError

    root = small_repo(tmp_path / "repo")
    assert run_cce("index", root, "--no-metrics")[0] == 0
    store = Path(root, ".cce", "index.json")
    sidecar_dir = Path(str(store) + ".sidecar")
    before = {p.name: p.read_bytes() for p in sidecar_dir.iterdir()}
    listing = sorted(os.listdir(store.parent))
    Path(root, "new.py").write_text("def new():\n    pass\n")

    def refuse(*args: object, **kwargs: object) -> object:
        raise StoreError("write", str(store), "No space left on device (os error 28)")

    if route == "streamed":
        monkeypatch.setattr(StoreStream, "commit", refuse)
    else:

        def cannot_open(stream: StoreStream, head: str) -> bool:
            stream.failed = True
            return False

        monkeypatch.setattr(StoreStream, "begin", cannot_open)
        monkeypatch.setattr(persist, "write_store", refuse)
    code, out, err = run_cce("index", root, "--no-metrics")
    assert (code, out) == (1, "")
    assert "No space left on device" in err and "previous store there is unchanged" in err
    assert {p.name: p.read_bytes() for p in sidecar_dir.iterdir()} == before
    assert load_store(str(store)).chunks == load_index(str(store)).chunks
    assert sorted(os.listdir(store.parent)) == listing  # no temporary file left either


def test_a_sidecar_that_could_not_be_staged_is_not_prepared_again(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cce_retrieval.store.sidecar import parts, staging

    root = small_repo(tmp_path / "repo")
    staged: list[int] = []
    prepared: list[int] = []
    real_stage = staging.stage_index_sidecar

    def refused(*args: object) -> object:
        staged.append(1)
        with pytest.raises(OSError):  # staging really fails, then the run goes on
            real_stage(*args)  # type: ignore[arg-type]
        raise OSError(30, "Read-only file system")

    def no_stager(*args: object) -> None:
        raise OSError(30, "Read-only file system")

    real_prepare = parts.prepare_sidecar

    def counted(index: Index) -> object:
        prepared.append(1)
        return real_prepare(index)

    monkeypatch.setattr(staging._Stager, "__init__", no_stager)
    monkeypatch.setattr(persist, "stage_index_sidecar", refused)
    monkeypatch.setattr(staging, "prepare_sidecar", counted)
    code, _, _ = run_cce("index", root, "--no-metrics")
    assert code == 0
    assert (staged, prepared) == ([1], [])
    assert not Path(root, ".cce", "index.json.sidecar").exists()
    monkeypatch.undo()
    store = os.path.join(root, ".cce", "index.json")
    assert load_store(store).chunks == load_index(store).chunks


def test_a_build_failing_after_bm25_started_leaves_no_staging_behind(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cce_retrieval import BuildError
    from cce_retrieval.build import pipeline as build_module
    from cce_retrieval.store import sidecar

    root = small_repo(tmp_path / "repo")
    started: list[sidecar.Bm25Staging] = []
    real_start = sidecar.start_bm25_staging

    def recorded(*args: object) -> sidecar.Bm25Staging:
        staging = real_start(*args)  # type: ignore[arg-type]
        started.append(staging)
        return staging

    def no_matrix(*args: object) -> None:
        raise BuildError("cannot put the embedding matrix together")

    monkeypatch.setattr(persist, "start_bm25_staging", recorded)
    monkeypatch.setattr(build_module, "stack_embeddings", no_matrix)
    code, out, err = run_cce("index", root, "--no-metrics")
    assert (code, out) == (1, "")
    assert "cannot put the embedding matrix together" in err
    assert len(started) == 1  # BM25 was under way when the build failed
    sidecar_dir = Path(root, ".cce", "index.json.sidecar")
    assert not sidecar_dir.exists() or not any(sidecar_dir.iterdir())
    assert not Path(root, ".cce", "index.json").exists()
