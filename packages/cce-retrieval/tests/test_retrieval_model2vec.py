"""The in-process model2vec embedder, with a tiny model made in the test (no download)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from cce_retrieval import (
    EmbedderMisconfigured,
    EmbedderUnavailable,
    build_index,
    create_embedder,
    embedder_spec,
    vector_search,
)

pytest.importorskip("model2vec")
pytest.importorskip("tokenizers")

WORD = re.compile(r"\w+|[^\w\s]+")


def tiny_model(directory: Path, texts: list[str], dim: int = 16) -> Path:
    """A word-level `StaticModel` over the words of `texts`, random vectors of varied
    lengths, saved to `directory`."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    words = sorted({word for text in texts for word in WORD.findall(text)})
    vocab = {"[UNK]": 0, **{word: i + 1 for i, word in enumerate(words)}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((len(vocab), dim)) * rng.uniform(1, 40, (len(vocab), 1))
    StaticModel(vectors.astype(np.float32), tokenizer, normalize=False).save_pretrained(directory)
    return directory


def corpus(root: Path) -> list[str]:
    texts = []
    for i in range(6):
        text = f"def f{i}(value):\n    return value * {i} + {'total ' * i}\n"
        (root / f"m{i}.py").write_text(text, encoding="utf-8")
        texts.append(text)
    return texts


def test_a_model_made_here_embeds_unit_vectors_that_rank_by_cosine(tmp_path: Path) -> None:
    from model2vec import StaticModel

    root = tmp_path / "src"
    root.mkdir()
    texts = corpus(root)
    model_dir = tiny_model(tmp_path / "model", [*texts, "total value"])
    embedder = create_embedder("model2vec", str(model_dir))
    index = build_index(str(root), embedder).index
    assert (index.embedder, index.embedder_model, index.embedding_dim) == (
        "model2vec",
        str(model_dir),
        16,
    )
    stored = np.asarray(index.embeddings)
    assert np.allclose(np.linalg.norm(stored, axis=1), 1.0)
    static = StaticModel.from_pretrained(model_dir)
    raw = static.encode([chunk.content for chunk in index.chunks]).astype(np.float64)
    q = static.encode(["total value"]).astype(np.float64)[0]
    truth = raw @ q / (np.linalg.norm(raw, axis=1) * np.linalg.norm(q))
    results = vector_search(index, embedder.embed("total value"), len(index.chunks))
    assert [r.chunk_id for r in results] == [
        index.chunks[i].chunk_id for i in np.argsort(-truth, kind="stable")
    ]


def test_a_model_that_does_not_load_is_unavailable(tmp_path: Path) -> None:
    embedder = create_embedder("model2vec", str(tmp_path / "missing-model"), {})
    assert embedder_spec("model2vec").model_env == "CCE_MODEL2VEC_MODEL"
    with pytest.raises(EmbedderUnavailable) as caught:
        embedder.check()  # type: ignore[attr-defined]
    assert caught.value.where == str(tmp_path / "missing-model")
    assert "model2vec could not load model" in str(caught.value)
    assert embedder.embed("x") == []  # query time: a warning, no vector


def test_no_model_and_no_package_are_clean_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EmbedderMisconfigured, match="needs a model: pass --model"):
        create_embedder("model2vec", None, {})
    monkeypatch.setitem(sys.modules, "model2vec", None)  # as if the extra were not installed
    embedder = create_embedder("model2vec", "any-model", {})
    with pytest.raises(EmbedderMisconfigured, match=r"pip install 'cce-retrieval\[model2vec\]'"):
        embedder.check()  # type: ignore[attr-defined]
