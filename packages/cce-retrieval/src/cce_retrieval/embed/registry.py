"""The embedder registry: every embedder an index can be built with, by name.

Why it exists: the embedder's name is persisted in the store and decides, at query
time, which embedder must embed the query (never mixing embedding spaces). So every
command asks this one table rather than checking names itself: each embedder is one
`EmbedderSpec` here, with its name, help, a factory that creates it (for indexing, or for
querying a store that recorded a model), whether its vectors have a fixed dimension,
and whether it needs a reachable server. See docs/architecture.md#how-to-add-an-embedder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from cce_retrieval.embed.hashing import EMBED_DIM, Embedder, HashEmbedder
from cce_retrieval.embed.spec import CheckedEmbedder, EmbedderFactory, EmbedderSpec
from cce_retrieval.model import Index

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "CheckedEmbedder",
    "EmbedderConfigError",
    "EmbedderFactory",
    "EmbedderSpec",
    "EmbeddingSpaceError",
    "check_embedder",
    "check_query_vector",
    "create_embedder",
    "embedder_model",
    "embedder_names",
    "embedder_spec",
    "load_embedder_plugins",
    "non_unit_vectors_notice",
    "query_embedder",
    "register_embedder",
    "unavailable_embedder",
]

DEFAULT_EMBEDDER = "hash"


class EmbedderConfigError(ValueError):
    """An embedder name or setting that cannot be used; `str()` names the valid choices."""


class EmbeddingSpaceError(ValueError):
    """A query that would be embedded by another embedder, model or dimension than the index."""


def check_embedder(embedder: object) -> None:
    """The embedder's health check, when it has one (`CheckedEmbedder`); the hash
    embedder, which cannot fail, has none."""
    if isinstance(embedder, CheckedEmbedder):
        embedder.check()


def _hash(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
    del model, environ  # the hash embedder has neither a model nor settings
    return HashEmbedder()


def _ollama(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
    # Imported on use: the HTTP embedders bring http.client, email and ssl, about 50 ms
    # of every start of a command that embeds with the hash embedder.
    from cce_retrieval.embed.ollama import OllamaEmbedder

    embedder = OllamaEmbedder.from_env() if environ is None else OllamaEmbedder.from_env(environ)
    if model:
        embedder.model = model
    return embedder


def _openai(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
    from cce_retrieval.embed.openai import OpenAIEmbedder

    embedder = OpenAIEmbedder.from_env(environ)
    if model:
        embedder.model = model
    return embedder


def _model2vec(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
    # Imported on use: the module is small, but what it loads (model2vec) is not.
    from cce_retrieval.embed.errors import EmbedderModelMissing
    from cce_retrieval.embed.model2vec_static import MODEL_ENV, Model2VecEmbedder

    env = os.environ if environ is None else environ
    name = model or env.get(MODEL_ENV)
    if not name:
        # No default: a default name would mean a download the user never asked for.
        raise EmbedderModelMissing(
            "the model2vec embedder needs a model: pass --model NAME_OR_PATH (a local "
            f"model directory, or a name model2vec can load) or set {MODEL_ENV}",
            "model2vec",
            MODEL_ENV,
        )
    return Model2VecEmbedder(name)


EMBEDDERS: dict[str, EmbedderSpec] = {
    "hash": EmbedderSpec(
        "hash",
        "FNV-1a token hashing into 256 buckets (offline, the default)",
        _hash,
        EMBED_DIM,
        unit_vectors=True,
    ),
    "ollama": EmbedderSpec(
        "ollama",
        "a local Ollama server's /api/embed (CCE_OLLAMA_URL, CCE_OLLAMA_MODEL)",
        _ollama,
        remote=True,
        model_env="CCE_OLLAMA_MODEL",
        server="Ollama",
    ),
    "openai": EmbedderSpec(
        "openai",
        "an OpenAI-compatible /v1/embeddings server (CCE_OPENAI_URL, CCE_OPENAI_MODEL, "
        "key in CCE_OPENAI_API_KEY or OPENAI_API_KEY)",
        _openai,
        remote=True,
        model_env="CCE_OPENAI_MODEL",
    ),
    "model2vec": EmbedderSpec(
        "model2vec",
        "a model2vec static model run in process (--model NAME_OR_PATH or "
        "CCE_MODEL2VEC_MODEL; needs the model2vec extra)",
        _model2vec,
        model_env="CCE_MODEL2VEC_MODEL",
        server="the model2vec model",
        remedy="make the model loadable",
    ),
}
"""Registered embedders in listing order."""


_plugins_loaded = False


def load_embedder_plugins(force: bool = False) -> None:
    """Register every installed `cce.embedders` entry point once (names already taken
    win, so a plugin cannot replace a built-in)."""
    global _plugins_loaded
    if _plugins_loaded and not force:
        return
    _plugins_loaded = True
    # Imported on use: reading entry points costs a start that never needs a plugin.
    from cce_retrieval.embed.plugins import embedder_entry_points, plugin_embedder_spec

    for entry in embedder_entry_points():
        if entry.name not in EMBEDDERS:
            EMBEDDERS[entry.name] = plugin_embedder_spec(entry)


def register_embedder(spec: EmbedderSpec, replace: bool = False) -> None:
    """Add `spec`; EmbedderConfigError when the name is taken and `replace` is false."""
    if spec.name in EMBEDDERS and not replace:
        raise EmbedderConfigError(f"embedder {spec.name!r} is already registered")
    EMBEDDERS[spec.name] = spec


def embedder_names() -> tuple[str, ...]:
    """Every registered embedder name: the built-ins first, then plugins by name."""
    load_embedder_plugins()
    return tuple(EMBEDDERS)


def _registered(name: str) -> EmbedderSpec | None:
    """The spec registered as `name`, built in or from a plugin; None when there is none."""
    spec = EMBEDDERS.get(name)
    if spec is None:
        # Plugins are looked for only for a name the built-ins lack: a hash store's
        # queries never pay for reading the installed packages' entry points.
        load_embedder_plugins()
        spec = EMBEDDERS.get(name)
    return spec


def embedder_spec(name: str, *, fallback: bool = False) -> EmbedderSpec:
    """The spec registered as `name`.

    With `fallback`, an unknown name means the default hash embedder (what a store with
    an unrecognised `embedder` field and `cce index --embedder <other>` have always
    meant); without it, an unknown name is an EmbedderConfigError listing the choices.
    """
    spec = _registered(name)
    if spec is not None:
        return spec
    if fallback:
        return EMBEDDERS[DEFAULT_EMBEDDER]
    raise EmbedderConfigError(f"unknown embedder {name!r}; expected one of {', '.join(EMBEDDERS)}")


def create_embedder(
    name: str,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    fallback: bool = False,
) -> Embedder:
    """A new embedder `name` (with `model`, else its default); see `embedder_spec`."""
    return embedder_spec(name, fallback=fallback).factory(model, environ)


def embedder_model(embedder: object) -> str | None:
    """The model an embedder embeds with, or None for one without models (hash)."""
    model = getattr(embedder, "model", None)
    return model if isinstance(model, str) else None


def query_embedder(index: Index, environ: Mapping[str, str] | None = None) -> Embedder:
    """The embedder that embeds queries against `index`: the one its store records.

    The recorded model is used; when the environment names another model for that
    embedder, the query would land in another embedding space, so it is refused with an
    EmbeddingSpaceError naming both. An unrecognised recorded name means hash (the
    reference's rule) only for a store hash could have made; one that records a model
    or a dimension, or holds vectors hash cannot make, was built by an embedder that is
    not available here (a plugin not installed), and is refused by name
    (EmbeddingSpaceError): its vectors would be compared with hash vectors.
    """
    missing = unavailable_embedder(index)
    if missing is not None:
        raise EmbeddingSpaceError(missing)
    spec = embedder_spec(index.embedder, fallback=True)
    env = os.environ if environ is None else environ
    recorded = index.embedder_model
    asked = env.get(spec.model_env) if spec.model_env else None
    if recorded is not None and asked is not None and asked != recorded:
        raise EmbeddingSpaceError(
            f"the store was built with {spec.name} model {recorded!r} but {spec.model_env} "
            f"asks for {asked!r}; unset {spec.model_env} or re-index with {asked!r}"
        )
    return spec.factory(recorded, environ)


def unavailable_embedder(index: Index) -> str | None:
    """Why `index` cannot be queried here, when its recorded embedder is not registered
    and the store is not one hash could have made; None otherwise."""
    if _registered(index.embedder) is not None:
        return None
    width = int(index.embeddings.shape[1]) if index.embeddings.ndim == 2 else 0
    if index.embedder_model is None and index.embedding_dim is None and width in (0, EMBED_DIM):
        return None  # what an unknown name has always meant: hash
    made = "" if index.embedder_model is None else f" (model {index.embedder_model!r})"
    return (
        f"the store was built with the {index.embedder!r} embedder{made}, which is not "
        f"available here (no built-in or installed plugin has that name; known: "
        f"{', '.join(EMBEDDERS)}), so its queries cannot be embedded in the store's space; "
        f"install the plugin that provides {index.embedder!r}, or re-index with "
        "`cce index <dir>`"
    )


_NOTICE_ROWS = 1024
"""How many chunk vectors `non_unit_vectors_notice` looks at: enough to tell an old
store from a new one, cheap on a store of any size."""


def non_unit_vectors_notice(index: Index) -> str | None:
    """A warning when a store's chunk vectors should be unit length and are not.

    Stores built before every non-hash vector was scaled to unit length rank chunks by
    their vectors' length as much as by their direction. Their first rows tell; all-zero
    rows (empty inputs) say nothing. None for hash stores and unit vectors.
    """
    if embedder_spec(index.embedder, fallback=True).unit_vectors:
        return None
    import numpy as np

    matrix = index.embeddings
    if not isinstance(matrix, np.ndarray) or matrix.ndim != 2 or matrix.shape[0] == 0:
        return None
    rows = np.asarray(matrix[:_NOTICE_ROWS], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    norms = norms[norms > 0.0]
    if norms.size == 0 or bool(np.all(np.abs(norms - 1.0) <= 1e-6)):
        return None
    return (
        f"warning: this store's {index.embedder} vectors are not unit length (it was built "
        "before cce scaled them), so rankings favour long vectors; re-index it with "
        f"`cce index <dir> --embedder {index.embedder}`"
    )


def check_query_vector(index: Index, vector: Sequence[float]) -> None:
    """Refuse a query vector whose length differs from the dimension the store records.

    An empty vector (a query-time embedding failure, already warned about) passes: it
    disables vector recall for that query, as in the reference.
    """
    dim = index.embedding_dim
    if dim is not None and vector and len(vector) != dim:
        raise EmbeddingSpaceError(
            f"the store holds {dim}-dimensional {index.embedder} vectors "
            f"(model {index.embedder_model!r}) but the query embedding has {len(vector)} "
            "dimensions; query with the model the store was built with"
        )
