"""`cce index --embedder model2vec --model PATH` and its store, with a model made in the test."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

pytest.importorskip("model2vec")
pytest.importorskip("tokenizers")

WORD = re.compile(r"\w+|[^\w\s]+")


def tiny_model(directory: Path, texts: list[str], dim: int = 12) -> Path:
    """A word-level `StaticModel` over the words of `texts` (random vectors), saved."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    words = sorted({word for text in texts for word in WORD.findall(text)})
    vocab = {"[UNK]": 0, **{word: i + 1 for i, word in enumerate(words)}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    vectors = np.random.default_rng(3).standard_normal((len(vocab), dim)) * 25.0
    StaticModel(vectors.astype(np.float32), tokenizer).save_pretrained(directory)
    return directory


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A corpus, a fixture file over it and a model whose vocabulary covers both."""
    root = tmp_path / "src"
    root.mkdir()
    texts = {
        "alpha.py": "def alpha():\n    return parse_config(path)\n",
        "beta.py": "def beta():\n    return render_page(template)\n",
        "gamma.py": "def gamma():\n    return open_socket(port)\n",
    }
    for name, text in texts.items():
        (root / name).write_text(text, encoding="utf-8")
    fixtures = tmp_path / "f.jsonl"
    cases = [("parse config", "alpha.py"), ("render page", "beta.py")]
    fixtures.write_text(
        '{"schema":"cce.relevance/v1"}\n'
        + "".join(json.dumps({"query": q, "expected": [e]}) + "\n" for q, e in cases),
        encoding="utf-8",
    )
    model = tiny_model(tmp_path / "model", [*texts.values(), *(q for q, _ in cases)])
    return root, fixtures, model


def test_index_then_relevance_with_a_model_made_here(
    project: tuple[Path, Path, Path], run_cce: RunCce
) -> None:
    root, fixtures, model = project
    code, out, err = run_cce(
        "index", str(root), "--embedder", "model2vec", "--model", str(model), "--no-metrics"
    )
    assert code == 0, err
    assert err == f"using model2vec embedder ({model})\n"
    assert "  embedder          : model2vec\n" in out
    store = root / ".cce" / "index.json"
    head = store.read_bytes()[:300]
    expected = json.dumps(str(model))
    assert f'"embedder":"model2vec","embedder_model":{expected},"embedding_dim":12'.encode() in head

    code, out, err = run_cce("relevance", str(fixtures), "--store", str(store), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["embedder"] == "model2vec"
    code, out, err = run_cce("search", "parse config", "--store", str(store), "--no-metrics")
    assert code == 0, err
    assert "alpha.py" in out

    # The model gone: refused with the cause, not ranked without vectors.
    model.rename(model.with_name("moved"))
    code, out, err = run_cce("search", "parse config", "--store", str(store), "--no-metrics")
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: this index was built with the model2vec embedder but the model2vec model's "
        f"health check at {model} failed (model2vec could not load model"
    )
    assert err.endswith(
        "Make the model loadable, or re-index with the default hash embedder (`cce index <dir>`).\n"
    )


def test_model2vec_errors_are_one_line(
    project: tuple[Path, Path, Path],
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    root, _, model = project
    code, out, err = run_cce("index", str(root), "--embedder", "model2vec", "--no-metrics")
    assert (code, out) == (1, "")
    assert err.startswith("error: the model2vec embedder needs a model: pass --model")

    missing = tmp_path / "gone"
    code, out, err = run_cce("index", str(root), "--embedder", "model2vec", "--model", str(missing))
    assert (code, out) == (1, "")
    assert err == (
        "error: model2vec embedder selected but the model2vec model's health check at "
        f"{missing} failed (model2vec could not load model '{missing}': no such directory); "
        "make the model loadable or index with the default hash embedder\n"
    )

    code, out, err = run_cce("index", str(root), "--model", str(model), "--no-metrics")
    assert (code, out, err) == (2, "", "error: the hash embedder has no model; drop --model\n")

    monkeypatch.setitem(sys.modules, "model2vec", None)  # as if the extra were not installed
    code, out, err = run_cce("index", str(root), "--embedder", "model2vec", "--model", str(model))
    assert (code, out) == (1, "")
    assert err.startswith("error: the model2vec embedder needs the model2vec package; install")
    assert "pip install 'cce-retrieval[model2vec]'" in err


def test_empty_files_and_unknown_words_are_noted_not_fatal(
    project: tuple[Path, Path, Path], run_cce: RunCce
) -> None:
    """docs/retrieval.md#vectors-with-no-direction: no vector is a note, not an error."""
    root, _, model = project
    (root / "__init__.py").write_text("", encoding="utf-8")
    (root / "py.typed").write_text("", encoding="utf-8")
    code, out, err = run_cce(
        "index", str(root), "--embedder", "model2vec", "--model", str(model), "--no-metrics"
    )
    assert code == 0, err
    assert "  total chunks      : 5\n" in out
    assert err.splitlines()[1] == (
        "note: 2 of 5 chunks have no vector (the model2vec embedder gave them no direction: "
        "an empty file, or only words its model does not know); the vector signal never "
        "returns them, the lexical one still does"
    )
    store = str(root / ".cce" / "index.json")
    note = (
        "note: the query has no vector (the model2vec embedder gave it no direction); the "
        "vector signal ranks nothing for it, only its words rank\n"
    )
    code, out, err = run_cce("search", "xylophone", "--store", store, "--no-metrics")
    assert (code, out, err) == (0, "(no results)\n", note)
    code, out, err = run_cce(
        "search", "xylophone quartz", "--backend", "vector", "--store", store, "--no-metrics"
    )
    assert (code, out, err) == (0, "(no results)\n", note)
    code, out, err = run_cce("search", "parse config", "--store", store, "--no-metrics")
    assert code == 0 and err == "" and "alpha.py" in out


# Far over the moment a refusal takes: only a hang reaches it.
_DEADLINE_SECONDS = 60


def _cce(*args: str) -> subprocess.CompletedProcess[str]:
    """cce in its own process (a hang ends at the deadline instead of the suite's)."""
    return subprocess.run(
        [sys.executable, "-m", "cce_cli", *args],
        capture_output=True,
        text=True,
        timeout=_DEADLINE_SECONDS,
        stdin=subprocess.DEVNULL,
    )


def test_a_model_file_that_is_a_fifo_is_refused_not_waited_on(
    project: tuple[Path, Path, Path], run_cce: RunCce
) -> None:
    """docs/hostile-input.md#special-files-as-inputs: model files are inputs too."""
    root, _, model = project
    code, _, err = run_cce(
        "index", str(root), "--embedder", "model2vec", "--model", str(model), "--no-metrics"
    )
    assert code == 0, err
    weights = model / "model.safetensors"
    weights.unlink()
    os.mkfifo(weights)
    cause = (
        f"model2vec could not load model '{model}': {weights} is not a regular file (a FIFO); "
        "give a model directory of regular files"
    )
    done = _cce("index", str(root), "--embedder", "model2vec", "--model", str(model))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "error: model2vec embedder selected but the model2vec model's health check at "
        f"{model} failed ({cause}); make the model loadable or index with the default hash "
        "embedder\n"
    )
    store = str(root / ".cce" / "index.json")
    done = _cce("search", "parse config", "--store", store, "--no-metrics")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("error: this index was built with the model2vec embedder")
    assert cause in done.stderr and done.stderr.count("\n") == 1
