"""The store-text spool: pieces in order, in memory or spilled to an unnamed file, and a
build whose store text spills writes the same store bytes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cce_retrieval import build_index, serialize_index
from cce_retrieval.build import outcomes as build_outcomes
from cce_retrieval.build.spool import PieceSpool
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.store.write import write_store

SAMPLE = Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"


@pytest.mark.parametrize("limit", [1 << 20, 5])
def test_pieces_come_back_in_position_order(limit: int) -> None:
    spool = PieceSpool(4, memory_limit=limit)
    for position, piece in [(2, b"cc"), (0, b"a"), (3, b""), (1, b"bbb")]:
        spool.put(position, piece)
    assert spool.complete
    assert spool.spilled is (limit == 5)
    assert list(spool) == [b"a", b"bbb", b"cc", b""]
    assert spool[-1] == b"" and spool[1:3] == [b"bbb", b"cc"]
    with pytest.raises(ValueError, match="already put"):
        spool.put(0, b"again")
    spool.close()


def test_a_missing_piece_leaves_the_spool_incomplete() -> None:
    spool = PieceSpool(2, memory_limit=1)
    spool.put(1, b"xy")
    assert not spool.complete and spool.get(0) is None
    with pytest.raises(KeyError):
        spool[0]
    with pytest.raises(IndexError):
        spool.put(2, b"z")


def test_a_build_whose_store_text_spills_writes_the_same_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    expected = serialize_index(build_index(str(root), HashEmbedder(), store_text=False).index)
    spools: list[PieceSpool] = []

    def small_spool(count: int) -> PieceSpool:
        spools.append(PieceSpool(count, memory_limit=64))
        return spools[-1]

    monkeypatch.setattr(build_outcomes, "PieceSpool", small_spool)
    result = build_index(str(root), HashEmbedder())
    assert result.store_chunks is not None and spools and spools[0].spilled
    store = tmp_path / "index.json"
    write_store(result.index, str(store), result.store_chunks)
    assert store.read_bytes() == expected


@pytest.mark.parametrize("limit", [6, 4])
def test_a_forgotten_piece_frees_its_place_and_makes_the_spool_incomplete(limit: int) -> None:
    spool = PieceSpool(3, memory_limit=limit)
    for position, piece in enumerate((b"abc", b"de", b"f")):
        spool.put(position, piece)
    assert spool.complete
    spool.forget(0)
    spool.forget(0)  # twice is the same as once
    assert not spool.complete
    assert (spool.get(0), spool.get(1), spool.get(2)) == (None, b"de", b"f")
    if limit == 6:
        spool.put(0, b"abc")  # its memory was given back: it fits again
        assert spool.complete and not spool.spilled
