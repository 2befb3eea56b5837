"""Chunks and queries an embedder gives no direction (docs/retrieval.md#vectors-with-no-direction).

A model2vec model answers an empty file, or text of words it does not know, with a
vector of zeros. Such a chunk has no vector: the build keeps going, the chunk is stored
with the empty vector, cosine rankings never return it and BM25 still does; such a
query gets nothing from the vector signal. The hash embedder keeps the reference's
rule (its zero vector is ranked at cosine 0). The model is made here, no download.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from cce_retrieval import (
    HashEmbedder,
    bm25_only_search,
    build_index,
    create_embedder,
    load_index,
    save_index,
    vector_search,
    vectorless_query,
)
from cce_retrieval.rank.hybrid import search_with_vector

pytest.importorskip("model2vec")
pytest.importorskip("tokenizers")

WORD = re.compile(r"\w+|[^\w\s]+")
KNOWN = "def parse_config(path):\n    return open(path).read()\n"
UNKNOWN = "xylophone quartz\n"  # not one word the model knows


def tiny_model(directory: Path, texts: list[str], dim: int = 8) -> Path:
    """A word-level `StaticModel` over the words of `texts` (random vectors), saved."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    words = sorted({word for text in texts for word in WORD.findall(text)})
    vocab = {"[UNK]": 0, **{word: i + 1 for i, word in enumerate(words)}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    vectors = np.random.default_rng(11).standard_normal((len(vocab), dim)) * 5.0
    StaticModel(vectors.astype(np.float32), tokenizer).save_pretrained(directory)
    return directory


@pytest.fixture
def corpus_and_model(tmp_path: Path) -> tuple[Path, Path]:
    """A corpus with an empty `__init__.py`, an empty `py.typed`, a file of unknown
    words and two files the model knows."""
    root = tmp_path / "src"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "py.typed").write_text("", encoding="utf-8")
    (root / "pkg" / "config.py").write_text(KNOWN, encoding="utf-8")
    (root / "pkg" / "render.py").write_text(
        "def render(page):\n    return page.read()\n", encoding="utf-8"
    )
    (root / "pkg" / "words.py").write_text(UNKNOWN, encoding="utf-8")
    model = tiny_model(tmp_path / "model", [KNOWN, (root / "pkg" / "render.py").read_text("utf-8")])
    return root, model


def test_empty_and_unknown_files_build_and_have_no_vector(
    corpus_and_model: tuple[Path, Path],
) -> None:
    root, model = corpus_and_model
    embedder = create_embedder("model2vec", str(model))
    built = build_index(str(root), embedder)
    index = built.index
    paths = [chunk.file_path for chunk in index.chunks]
    vectorless = {"pkg/__init__.py", "pkg/py.typed", "pkg/words.py"} & set(paths)
    assert "pkg/words.py" in vectorless and "pkg/__init__.py" in vectorless
    assert built.vectorless_chunks == sum(1 for p in paths if p in vectorless)
    assert index.embedding_lengths is not None and index.embedding_dim == 8
    for path, length in zip(paths, index.embedding_lengths, strict=True):
        assert (length == 0) == (path in vectorless), path

    everything = vector_search(index, embedder.embed("parse_config path"), len(paths))
    assert {r.file_path for r in everything} == set(paths) - vectorless
    assert len(everything) == len(paths) - built.vectorless_chunks
    # The lexical signal still finds the file of unknown words.
    assert [r.file_path for r in bm25_only_search(index, "xylophone", 5)] == ["pkg/words.py"]
    hybrid = search_with_vector(index, embedder.embed("xylophone"), "xylophone", 5, False)
    assert [r.file_path for r in hybrid] == ["pkg/words.py"]


def test_the_rule_survives_the_store(corpus_and_model: tuple[Path, Path], tmp_path: Path) -> None:
    root, model = corpus_and_model
    embedder = create_embedder("model2vec", str(model))
    store = tmp_path / "index.json"
    save_index(build_index(str(root), embedder).index, str(store))
    index = load_index(str(store))
    found = vector_search(index, embedder.embed("render page"), 10)
    assert found and not {r.file_path for r in found} & {"pkg/words.py", "pkg/__init__.py"}


def test_a_query_of_unknown_words_has_no_vector(corpus_and_model: tuple[Path, Path]) -> None:
    root, model = corpus_and_model
    embedder = create_embedder("model2vec", str(model))
    index = build_index(str(root), embedder).index
    qvec = embedder.embed("xylophone quartz")
    assert qvec and not any(qvec)  # the model's own answer: zeros
    assert vectorless_query(index, qvec) and vectorless_query(index, [])
    assert not vectorless_query(index, embedder.embed("parse_config"))
    assert vector_search(index, qvec, 10) == []
    # Hybrid ranks by the words alone: the same files as BM25's.
    lexical = {r.file_path for r in bm25_only_search(index, "quartz", 10)}
    assert {r.file_path for r in search_with_vector(index, qvec, "quartz", 10, False)} == lexical


def test_the_hash_embedder_keeps_the_reference_zero_vector(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    return 1\n", encoding="utf-8")
    (root / "empty.py").write_text("", encoding="utf-8")
    built = build_index(str(root), HashEmbedder())
    assert built.vectorless_chunks == 0
    index = built.index
    zero = [0.0] * 256
    assert not vectorless_query(index, zero)
    found = vector_search(index, zero, 10)
    assert len(found) == len(index.chunks)  # every chunk, at cosine 0, by chunk id
    assert [r.chunk_id for r in found] == sorted(c.chunk_id for c in index.chunks)


def test_a_query_says_whether_it_had_no_vector_without_embedding(
    corpus_and_model: tuple[Path, Path],
) -> None:
    from cce_retrieval import Query

    root, model = corpus_and_model
    embedder = create_embedder("model2vec", str(model))
    index = build_index(str(root), embedder).index
    unknown, known = Query("xylophone quartz", embedder), Query("parse_config", embedder)
    assert not unknown.has_no_vector(index)  # nothing embedded it yet
    bm25_only_search(index, unknown.text, 5)
    assert not unknown.has_no_vector(index)
    assert vector_search(index, unknown.vector(), 5) == []
    assert unknown.has_no_vector(index)
    assert vector_search(index, known.vector(), 5) and not known.has_no_vector(index)
