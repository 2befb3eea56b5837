"""An example `cce.embedders` plugin: a text's vector is how often each letter occurs.

It exists to show (and test) the embedder plugin protocol of docs/backends.md#embedders:
the entry point names an `EmbedderSpec`, whose factory returns an object with `name`,
`model`, `embed` and `try_embed_batch`. Its counts are not unit length on purpose: cce
scales every non-hash vector itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cce_retrieval import Embedder, EmbedderSpec

LETTERS = "abcdefghijklmnopqrstuvwxyz"


class LetterCounts:
    """26 numbers per text: the count of each ASCII letter, case folded."""

    name = "letters"
    model = "ascii-26"

    def embed(self, text: str) -> list[float]:
        folded = text.lower()
        return [float(folded.count(letter)) for letter in LETTERS]

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed(text) for text in texts]


def _factory(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
    del model, environ  # one fixed model, no settings
    return LetterCounts()


SPEC = EmbedderSpec("letters", "letter counts (an example plugin)", _factory)
