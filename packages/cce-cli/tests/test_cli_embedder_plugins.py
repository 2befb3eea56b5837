"""A `cce.embedders` plugin, installed for the test, used by `cce index` and `cce search`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from cce_retrieval import (
    EMBEDDERS,
    Embedder,
    EmbedderSpec,
    embedder_names,
    load_embedder_plugins,
    register_embedder,
)

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

PLUGIN_SRC = Path(__file__).parent / "data" / "cce-example-embedder" / "src"


def install(site: Path, entry: str) -> None:
    """A .dist-info on `site` declaring `entry` in the `cce.embedders` group."""
    info = site / "cce_example_embedder-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cce-example-embedder\nVersion: 0.1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[cce.embedders]\n{entry}\n", encoding="utf-8")


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary site directory on sys.path; the registry forgets its plugins after."""
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(PLUGIN_SRC))
    before = dict(EMBEDDERS)
    yield site
    EMBEDDERS.clear()
    EMBEDDERS.update(before)
    sys.modules.pop("cce_example_embedder", None)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    return 'aaaa'\n", encoding="utf-8")
    (root / "b.py").write_text("def beta():\n    return 'zzzz'\n", encoding="utf-8")
    return root


def test_a_plugin_embedder_indexes_and_answers_queries(
    plugin_site: Path, corpus: Path, run_cce: RunCce
) -> None:
    install(plugin_site, "letters = cce_example_embedder:SPEC")
    load_embedder_plugins(force=True)
    assert "letters" in embedder_names()
    code, out, err = run_cce("index", str(corpus), "--embedder", "letters", "--no-metrics")
    assert code == 0, err
    assert err == ""  # no health check to announce
    assert "  embedder          : letters\n" in out
    store = corpus / ".cce" / "index.json"
    assert (
        b'"embedder":"letters","embedder_model":"ascii-26","embedding_dim":26'
        in (store.read_bytes()[:200])
    )
    code, out, err = run_cce("search", "aaaa", "--store", str(store), "--no-metrics", "--json")
    assert code == 0, err
    assert json.loads(out)["results"][0]["file_path"] == "a.py"


def test_a_broken_plugin_is_listed_and_refused_in_one_line(
    plugin_site: Path, corpus: Path, run_cce: RunCce
) -> None:
    install(plugin_site, "broken = cce_example_embedder_missing:SPEC")
    load_embedder_plugins(force=True)
    assert "broken" in embedder_names()
    code, out, err = run_cce("index", str(corpus), "--embedder", "broken", "--no-metrics")
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: embedder plugin 'broken' (cce_example_embedder_missing:SPEC) failed to load: "
    )
    assert err.count("\n") == 1


def test_a_store_of_a_plugin_no_longer_installed_is_refused_by_name(
    plugin_site: Path, corpus: Path, run_cce: RunCce
) -> None:
    """docs/hostile-input.md#plugins: not queried with the hash embedder instead."""
    install(plugin_site, "letters = cce_example_embedder:SPEC")
    load_embedder_plugins(force=True)
    code, _, err = run_cce("index", str(corpus), "--embedder", "letters", "--no-metrics")
    assert code == 0, err
    store = str(corpus / ".cce" / "index.json")
    for info in plugin_site.iterdir():  # the plugin uninstalled
        for part in info.iterdir():
            part.unlink()
        info.rmdir()
    EMBEDDERS.pop("letters")
    load_embedder_plugins(force=True)
    assert "letters" not in embedder_names()
    expected = (
        "error: the store was built with the 'letters' embedder (model 'ascii-26'), which is "
        "not available here (no built-in or installed plugin has that name; known: hash, "
        "ollama, openai, model2vec), so its queries cannot be embedded in the store's space; "
        "install the plugin that provides 'letters', or re-index with `cce index <dir>`\n"
    )
    for command in (
        ("search", "aaaa", "--store", store, "--no-metrics"),
        ("search", "aaaa", "--store", store, "--no-metrics", "--backend", "vector"),
    ):
        assert run_cce(*command) == (1, "", expected)


def test_a_plugin_name_is_escaped_in_the_index_summary(
    plugin_site: Path, corpus: Path, run_cce: RunCce
) -> None:
    """docs/hostile-input.md#plugins: an OSC title and a right-to-left override stay inert."""
    del plugin_site  # restores the registry afterwards
    hostile = "x\x1b]0;pwned\x07\u202e"

    class Named:
        name = hostile

        def embed(self, text: str) -> list[float]:
            return [float(len(text)), 1.0]

        def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
            return [self.embed(text) for text in texts]

    def factory(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
        return Named()

    register_embedder(EmbedderSpec(hostile, "a hostile name", factory))
    code, out, err = run_cce("index", str(corpus), "--embedder", hostile, "--no-metrics")
    assert code == 0, err
    assert '  embedder          : "x\\u001b]0;pwned\\u0007\\u202e"\n' in out
    assert "\x1b" not in out + err and "\u202e" not in out + err
