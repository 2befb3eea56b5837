"""A `cce index` killed at any moment never leaves a cache or sidecar trusted wrongly.

Each round edits the corpus (so entries and sidecars of earlier rounds describe other
bytes), starts `cce index` with the build cache and two workers, SIGKILLs it after a
random delay, and then checks what a later run would trust: the store (if any) is
whole, the sidecar-backed load equals parsing `index.json`, and a cached build equals
an uncached one. Finished runs at the end check the cache's store record: trusted only
for the same files and the store it names. The delays come from a seeded generator, so
failures reproduce.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from cce_cli.evaluation.building import CACHE_DIR_ENV
from cce_retrieval import build_index, load_index, serialize_index
from cce_retrieval.build.cache import BuildCache, CacheSalt
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.store import sidecar
from cce_retrieval.store.sidecar import digests, load_store

SAMPLE = Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"


def make_corpus(root: Path, stdlib_packages: tuple[str, ...]) -> None:
    shutil.copytree(SAMPLE, root)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for package in stdlib_packages:
        shutil.copytree(
            stdlib / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )


def check_nothing_is_trusted_wrongly(root: Path, store: Path, cache_dir: Path) -> None:
    if store.exists():
        # Writes are atomic: a store that exists is a whole one, and the sidecar, if it
        # is used at all, must describe exactly these bytes.
        parsed = load_index(str(store))
        assert serialize_index(load_store(str(store))) == serialize_index(parsed)
    cache = BuildCache(str(cache_dir / "build"), CacheSalt.for_build(True, HashEmbedder()))
    cached = build_index(str(root), HashEmbedder(), cache=cache)
    expected = serialize_index(build_index(str(root), HashEmbedder()).index)
    assert serialize_index(cached.index) == expected
    # The chunk text kept in the entries is what `cce index` writes: it must match too.
    assert serialize_index(cached.index, cached.store_chunks) == expected


def kill_rounds(tmp_path: Path, rounds: int, max_delay: float, packages: tuple[str, ...]) -> None:
    root = tmp_path / "corpus"
    make_corpus(root, packages)
    store = tmp_path / "out" / "index.json"
    cache_dir = tmp_path / "cache"
    env = {**os.environ, CACHE_DIR_ENV: str(cache_dir)}
    command = [sys.executable, "-m", "cce_cli", "index", str(root), "--store", str(store)]
    command += ["--no-metrics", "--jobs", "2", "--no-progress"]
    rng = random.Random(20261201)
    edited = root / "cache.py"
    original = edited.read_text()
    for number in range(rounds):
        edited.write_text(original + f"\n# round {number}\n")
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.0, max_delay))
        process.send_signal(signal.SIGKILL)
        process.wait()
        check_nothing_is_trusted_wrongly(root, store, cache_dir)
    finished = subprocess.run(command, env=env, capture_output=True, check=False)
    assert finished.returncode == 0, finished.stderr
    expected = serialize_index(build_index(str(root), HashEmbedder()).index)
    assert store.read_bytes() == expected
    assert serialize_index(load_store(str(store))) == expected
    # Whatever killed runs left in the sidecar (staged parts, other digests) is gone.
    digest = sidecar.file_sha256(str(store))[0]
    leftovers = [p.name for p in Path(sidecar.sidecar_dir(str(store))).iterdir()]
    assert [name for name in leftovers if not name.startswith(digest)] == []
    # The finished run recorded its store in the cache. The same files again find it in
    # place; the files of a killed round (never recorded) build; and back to the recorded
    # files, whose store is no longer the one on disk, build again.
    last = edited.read_text()
    for text in (last, original + "\n# round 0\n", last):
        edited.write_text(text)
        again = subprocess.run(command, env=env, capture_output=True, check=False)
        assert again.returncode == 0, again.stderr
        expected = serialize_index(build_index(str(root), HashEmbedder()).index)
        assert store.read_bytes() == expected
        assert serialize_index(load_store(str(store))) == expected


@pytest.fixture
def digests_remembered_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every load here records the store's digest by its file status, even for a store
    written a moment ago, so the next round's replaced store tests that record too."""
    monkeypatch.setattr(digests, "_SETTLED_NS", 0)


@pytest.mark.usefixtures("digests_remembered_at_once")
def test_killed_index_quick(tmp_path: Path) -> None:
    kill_rounds(tmp_path, rounds=3, max_delay=1.5, packages=("json",))


@pytest.mark.slow
@pytest.mark.usefixtures("digests_remembered_at_once")
def test_killed_index_at_many_moments(tmp_path: Path) -> None:
    kill_rounds(tmp_path, rounds=20, max_delay=4.0, packages=("json", "email", "asyncio"))
