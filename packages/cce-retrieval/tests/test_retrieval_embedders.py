"""The embedder registry, and the embedding space a store records and enforces."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cce_retrieval import (
    EMBED_DIM,
    EmbedderConfigError,
    EmbeddingSpaceError,
    HashEmbedder,
    OllamaEmbedder,
    Query,
    build_index,
    create_backend,
    create_embedder,
    embedder_names,
    embedder_spec,
    non_unit_vectors_notice,
    parse_index,
    query_embedder,
    serialize_index,
)
from cce_retrieval.embed.registry import check_query_vector
from cce_retrieval.store.fingerprint import embed_dim


class ModelEmbedder:
    """An embedder with a model: 3-dimensional vectors."""

    name = "ollama"
    model = "tiny-3"

    def embed(self, text: str) -> list[float]:
        return [float(len(text)), 1.0, 0.5]

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed(t) for t in texts]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("def alpha():\n    return 1\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("def beta():\n    return 2\n", encoding="utf-8")
    return tmp_path


def test_registry_has_hash_first_and_falls_back_to_it() -> None:
    assert embedder_names()[:2] == ("hash", "ollama")
    assert embedder_spec("hash").fixed_dim == EMBED_DIM
    assert embedder_spec("HASHISH", fallback=True).name == "hash"
    with pytest.raises(EmbedderConfigError, match="expected one of hash, ollama"):
        embedder_spec("nope")
    assert isinstance(create_embedder("hash"), HashEmbedder)
    ollama = create_embedder("ollama", "m1", {"CCE_OLLAMA_URL": "http://127.0.0.1:1"})
    assert isinstance(ollama, OllamaEmbedder)
    assert (ollama.model, ollama.base_url) == ("m1", "http://127.0.0.1:1")


def test_hash_store_records_no_model(corpus: Path) -> None:
    index = build_index(str(corpus), HashEmbedder()).index
    assert index.embedder_model is None and index.embedding_dim is None
    data = serialize_index(index)
    assert data.startswith(b'{"spec_version":"1.0","embedder":"hash","chunks":[')
    assert b"embedder_model" not in data
    assert embed_dim(index) == EMBED_DIM


def test_model_store_round_trips_its_space(corpus: Path) -> None:
    index = build_index(str(corpus), ModelEmbedder()).index
    data = serialize_index(index)
    assert data.startswith(
        b'{"spec_version":"1.0","embedder":"ollama","embedder_model":"tiny-3",'
        b'"embedding_dim":3,"chunks":['
    )
    loaded = parse_index(data)
    assert (loaded.embedder_model, loaded.embedding_dim) == ("tiny-3", 3)
    assert serialize_index(loaded) == data


def test_another_model_in_the_environment_is_refused(corpus: Path) -> None:
    index = build_index(str(corpus), ModelEmbedder()).index
    with pytest.raises(EmbeddingSpaceError) as caught:
        query_embedder(index, {"CCE_OLLAMA_MODEL": "big-768"})
    assert "'tiny-3'" in str(caught.value) and "'big-768'" in str(caught.value)
    chosen = query_embedder(index, {})
    assert isinstance(chosen, OllamaEmbedder) and chosen.model == "tiny-3"


def test_a_query_vector_of_another_dimension_is_refused(corpus: Path) -> None:
    index = build_index(str(corpus), ModelEmbedder()).index
    check_query_vector(index, [1.0, 2.0, 3.0])
    check_query_vector(index, [])  # a failed query embedding only disables vector recall
    with pytest.raises(EmbeddingSpaceError, match="3-dimensional ollama vectors"):
        check_query_vector(index, [1.0] * 4)
    with pytest.raises(EmbeddingSpaceError, match="256 dimensions"):
        create_backend("vector").search(index, Query("alpha", HashEmbedder()), 3)
    with pytest.raises(EmbeddingSpaceError, match="'other'"):
        create_backend("hybrid", {"model": "other"}).search(index, Query("a", ModelEmbedder()), 3)


def test_a_store_whose_vectors_are_not_unit_is_noticed(corpus: Path) -> None:
    index = build_index(str(corpus), ModelEmbedder()).index
    assert non_unit_vectors_notice(index) is None  # built now: unit vectors
    assert non_unit_vectors_notice(build_index(str(corpus), HashEmbedder()).index) is None
    index.embeddings = np.asarray(index.embeddings) * 7.0  # as an older cce stored them
    notice = non_unit_vectors_notice(index)
    assert notice is not None and notice.startswith(
        "warning: this store's ollama vectors are not unit length"
    )
    assert notice.endswith("re-index it with `cce index <dir> --embedder ollama`")


class _HugeValues:
    """An in-process embedder whose vectors are finite but far past any real embedding:
    one value of 1e151 (its square, 1e302, still fits a double, so a unit length exists)."""

    name = "huge"
    model = "m"

    def embed(self, text: str) -> list[float]:
        return [1e151, 1.0]

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed(text) for text in texts]


def test_vector_values_beyond_the_bound_abort_the_build(tmp_path: Path) -> None:
    from cce_retrieval import BuildError

    (tmp_path / "a.py").write_text("def a():\n    return 1\n", encoding="utf-8")
    with pytest.raises(BuildError, match=r"magnitude over 1e\+150 .*nothing was written"):
        build_index(str(tmp_path), _HugeValues())
