"""A store's sidecar part changed in place, at its recorded size: `cce search` and `cce
relevance --store` answer as from the undamaged store, and `cce index` writes the part
again (docs/index-store.md#sidecar, docs/hostile-input.md#stores)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_retrieval.store.sidecar import digests

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

QUERIES = ("evict least recently used cache entry", "exponential backoff delay")

# Each kind of damage on the parts where it used to fail a query or change its numbers
# (every part kind and damage is covered at the library level, test_retrieval_sidecar).
DAMAGED = [
    ("content", "0xff"),
    ("ids", "zeros"),
    ("bm25_freqs", "data zeroed"),
    ("bm25_docs", "data zeroed"),
    ("embedding_values", "one flipped byte"),
    ("numbers", "one flipped byte"),
    ("terms", "0xff"),
]


def _manifest(store: Path) -> Path:
    (manifest,) = [
        p
        for p in Path(f"{store}.sidecar").glob("*.json")
        if re.fullmatch(r"[0-9a-f]{64}\.json", p.name)
    ]
    return manifest


def _answers(store: Path, fixtures: Path, run_cce: RunCce) -> list[str]:
    """What the read commands print for this store (relevance without its timings)."""
    out: list[str] = []
    for query in QUERIES:
        code, stdout, err = run_cce("search", query, "--store", str(store), "--json")
        assert (code, err) == (0, "")
        found = json.loads(stdout)
        del found["query_id"]  # a new one for every search
        out.append(json.dumps(found))
    code, stdout, err = run_cce(
        "relevance", str(fixtures), "--store", str(store), "--format", "json"
    )
    assert code == 0 and "Traceback" not in err
    report = json.loads(stdout)
    report.pop("timing", None)
    out.append(json.dumps({k: v for k, v in report.items() if "elapsed" not in k}))
    return out


def _damage(part: Path, damage: str) -> None:
    data = bytearray(part.read_bytes())
    if damage == "0xff":
        data[:] = b"\xff" * len(data)
    elif damage == "zeros":
        data[:] = bytes(len(data))
    elif damage == "data zeroed":  # the `.npy` header (128 bytes here) still parses
        data[128:] = bytes(len(data) - 128)
    else:
        data[len(data) // 2] ^= 0x01
    with open(part, "r+b") as handle:
        handle.write(bytes(data))


@pytest.mark.parametrize("cache", ["cache", "no cache"])
@pytest.mark.parametrize(("name", "damage"), DAMAGED)
def test_a_damaged_sidecar_part_changes_no_answer_and_index_writes_it_again(
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    damage: str,
    cache: str,
    run_cce: RunCce,
) -> None:
    fixtures = workspace / "code.jsonl"
    corpus = workspace.parent / "corpus" / "sample"
    store = workspace.parent / "store" / "index.json"
    index = ["index", str(corpus), "--store", str(store), "--no-metrics"]
    index += ["--no-cache"] if cache == "no cache" else []
    assert run_cce(*index)[0] == 0
    expected = _answers(store, fixtures, run_cce)
    manifest = _manifest(store)
    document = json.loads(manifest.read_text())
    part = manifest.parent / document["parts"][name]["file"]
    pristine = part.read_bytes()

    _damage(part, damage)
    assert part.read_bytes() != pristine and part.stat().st_size == len(pristine)
    assert _answers(store, fixtures, run_cce) == expected
    _damage(part, damage)  # the read above wrote the sidecar again: damage it once more
    code, _, err = run_cce(*index)
    assert code == 0 and "Traceback" not in err
    assert _manifest(store) == manifest  # the same store bytes...
    assert part.read_bytes() == pristine  # ...and the damaged part written again
    assert digests.parts_hold_their_bytes(
        str(manifest.parent), document["store_sha256"], json.loads(manifest.read_text())["parts"]
    )
    assert _answers(store, fixtures, run_cce) == expected
