"""The model2vec embedder: a static embedding model run in the cce process.

Why it exists: measuring semantic retrieval should not need a server. A model2vec
`StaticModel` embeds a text by averaging token vectors, on the CPU, thousands of chunks
a second, from a directory of three files. This module owns loading it (a local
directory offline, or a name through model2vec's own loading and cache), embedding in
the build's batches, and saying why it cannot: the optional package missing (an
`EmbedderMisconfigured` that says how to install it) or a model that does not load (an
`EmbedderUnavailable` naming it).

A local model directory is input like any file a command reads: before model2vec
opens it, every file in it (and in the folders directly inside it) must be a regular
file once symlinks are followed, so a FIFO named `model.safetensors` is refused instead
of blocking the command (docs/hostile-input.md#special-files-as-inputs).

`model2vec` is imported on first use only: it brings `tokenizers`, `safetensors` and
the Hugging Face hub client, which no command that does not use this embedder should
pay for.
"""

from __future__ import annotations

import itertools
import os
import stat
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import numpy as np

from cce_retrieval.embed.errors import EmbedderMisconfigured, EmbedderUnavailable
from cce_retrieval.embed.hashing import EmbedError
from cce_retrieval.file_kinds import file_type_name

if TYPE_CHECKING:
    from model2vec import StaticModel

MODEL_ENV: Final = "CCE_MODEL2VEC_MODEL"
INSTALL_HINT: Final = (
    "install the optional model2vec package: pip install 'cce-retrieval[model2vec]' "
    "(in this repository: uv sync --extra model2vec)"
)


def model_identity(model: str) -> str:
    """How a model is recorded in a store: a local directory as its absolute path (so a
    store is queried with the same model from any directory), any other name as given."""
    return os.path.abspath(model) if os.path.isdir(model) else model


def special_model_file(directory: str) -> str | None:
    """Why the local model `directory` cannot be read safely: its first entry (at its
    top level or one folder down, where model2vec's layouts keep their files) that is
    neither a regular file nor a folder once symlinks are followed, named with its kind;
    None when there is none.

    Checked by `stat`, which never blocks on a FIFO, before the loader opens anything. A
    link that leads nowhere is left to the loader, which names it."""
    top = _entry_modes(directory)
    folders = [path for path, mode in top if stat.S_ISDIR(mode)]
    # The folders are listed lazily, only once the top level holds nothing special.
    nested = itertools.chain.from_iterable(map(_entry_modes, folders))
    for path, mode in itertools.chain(top, nested):
        if not stat.S_ISDIR(mode) and not stat.S_ISREG(mode):
            return _not_regular(path, mode)
    return None


def _entry_modes(folder: str) -> list[tuple[str, int]]:
    """Each entry of `folder` by name, with its mode once symlinks are followed; those
    that cannot be listed or followed are left out (the loader names them)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    modes = []
    for entry in entries:
        try:
            modes.append((entry.path, os.stat(entry.path).st_mode))
        except OSError:
            continue
    return modes


def _not_regular(path: str, mode: int) -> str:
    return (
        f"{path} is not a regular file ({file_type_name(mode)}); give a model directory of "
        "regular files"
    )


class Model2VecEmbedder:
    """Embeds with a model2vec `StaticModel` loaded in process; name `"model2vec"`."""

    name = "model2vec"

    def __init__(self, model: str) -> None:
        self.model = model_identity(model)
        self._static: StaticModel | None = None

    def __repr__(self) -> str:
        return f"Model2VecEmbedder(model={self.model!r})"

    @property
    def location(self) -> str:
        """Where its vectors come from: the model's path or name."""
        return self.model

    def _load(self) -> StaticModel:
        if self._static is not None:
            return self._static
        try:
            from model2vec import StaticModel
        except ImportError:
            raise EmbedderMisconfigured(
                f"the model2vec embedder needs the model2vec package; {INSTALL_HINT}"
            ) from None
        if os.path.isabs(self.model) and not os.path.exists(self.model):
            # A path, not a hub name: say so rather than relay the hub's name rules.
            raise EmbedError(f"model2vec could not load model {self.model!r}: no such directory")
        special = special_model_file(self.model) if os.path.isdir(self.model) else None
        if special is not None:
            raise EmbedError(f"model2vec could not load model {self.model!r}: {special}")
        try:
            # force_download=False: a name already in model2vec's cache loads offline.
            self._static = StaticModel.from_pretrained(self.model, force_download=False)
        except Exception as err:  # any loader failure means "cannot load"
            raise EmbedError(
                f"model2vec could not load model {self.model!r}: {type(err).__name__}: {err}"
            ) from None
        return self._static

    def check(self) -> None:
        """Load the model: `EmbedderMisconfigured` without the package,
        `EmbedderUnavailable` when the model does not load."""
        try:
            self._load()
        except EmbedderMisconfigured:
            raise
        except EmbedError as err:
            raise EmbedderUnavailable(self.model, err) from None

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; raises `EmbedError` when the model fails."""
        if not texts:
            return []
        model = self._load()
        try:
            # No worker processes: the build already batches, and a forked pool inside a
            # build's own workers would only multiply memory.
            matrix = model.encode(list(texts), use_multiprocessing=False)
        except Exception as err:  # the model's failure, reported as such
            raise EmbedError(
                f"model2vec model {self.model!r} failed to embed: {type(err).__name__}: {err}"
            ) from None
        rows = np.asarray(matrix, dtype=np.float64).reshape(len(texts), -1)
        return [[float(value) for value in row] for row in rows]

    def embed(self, text: str) -> list[float]:
        """Query-time embedding that never raises: on failure warn on stderr, return `[]`."""
        try:
            return self.try_embed_batch([text])[0]
        except EmbedError as err:
            print(f"warning: {err}; vector recall disabled for this query", file=sys.stderr)
            return []
