"""Embedders: the interface, FNV-1a-64, the default hash embedder and cosine
(docs/retrieval.md#embedders).

Why it exists: chunk vectors are persisted in the store and compared bit for bit with
the reference, so the hash embedder must reproduce `src/embedder.rs` exactly: every
token adds ±1 to bucket `fnv1a64(token) % 256` (sign from bit 63), then the vector is
divided element-wise by its Euclidean norm. Bucket values are small integers, so the
accumulation and the sum of squares are exact and independent of order; only `sqrt` and
the divisions round, and numpy's element-wise IEEE division rounds exactly like Python's.
The index-time fast path (`HashEmbedder.embed_matrix`) relies on that to build the whole
matrix at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from cce_retrieval.parity.tokenizer import tokenize_bytes

EMBED_DIM: Final = 256
"""Length of every hash embedding."""

_FNV_OFFSET: Final = 0xCBF29CE484222325
_FNV_PRIME: Final = 0x100000001B3
_MASK64: Final = 0xFFFFFFFFFFFFFFFF
_SIGN_BIT: Final = 1 << 63


MAX_VECTOR_VALUE: Final = 1e150
"""The largest magnitude an embedding value may have (docs/hostile-input.md#embedding-servers).

The product of two such values is at most 1e300, below the largest double (about
1.8e308), so a dot product or a squared norm of two vectors within the bound stays
finite for up to a hundred million dimensions; a value of 1e300 would make them
overflow to infinity and every score garbage. Real embeddings are of order 1.
"""


def out_of_range(values: Sequence[float]) -> bool:
    """Whether `values` holds NaN, an infinity or a magnitude over `MAX_VECTOR_VALUE`."""
    return not all(-MAX_VECTOR_VALUE <= value <= MAX_VECTOR_VALUE for value in values)


class EmbedError(Exception):
    """An index-time embedding failure; the build aborts and nothing is saved."""


class Embedder(Protocol):
    """What indexing and search need from an embedding backend."""

    @property
    def name(self) -> str:
        """The backend name persisted as the store's `embedder` field."""
        ...

    def embed(self, text: str) -> list[float]:
        """The query-time vector of `text`; never raises."""
        ...

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; raises EmbedError on failure."""
        ...


def fnv1a64(data: bytes) -> int:
    """FNV-1a 64-bit hash: xor each byte in, then multiply by the prime modulo 2**64."""
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & _MASK64
    return value


def _signed_bucket(token: bytes) -> int:
    """0..255 for a token adding +1 to bucket h % 256, 256..511 for one adding -1."""
    value = fnv1a64(token)
    return value % EMBED_DIM + (EMBED_DIM if value & _SIGN_BIT else 0)


class _SignedBucketMemo(dict[bytes, int]):
    """Token bytes → `_signed_bucket`, computed on first sight."""

    def __missing__(self, token: bytes) -> int:
        code = _signed_bucket(token)
        self[token] = code
        return code


class _TermCodeMemo(dict[str, int]):
    """Token text → its signed bucket, through the byte-keyed memo on first sight."""

    def __init__(self, codes: _SignedBucketMemo) -> None:
        super().__init__()
        self._codes = codes

    def __missing__(self, term: str) -> int:
        code = self._codes[term.encode("ascii")]
        self[term] = code
        return code


_MATRIX_BATCH_BYTES: Final = 1 << 24


class HashEmbedder:
    """The default, dependency-free embedder (`name = "hash"`).

    Memoises each token's signed bucket, because tokens repeat across chunks far more
    often than they are new.
    """

    def __init__(self) -> None:
        self._codes = _SignedBucketMemo()
        self._term_codes = _TermCodeMemo(self._codes)

    @property
    def name(self) -> str:
        return "hash"

    def embed(self, text: str) -> list[float]:
        """The unit-norm (or all-zero) 256-float vector of `text`."""
        counts = [0] * (2 * EMBED_DIM)
        codes = self._codes
        for token in tokenize_bytes(text.encode("utf-8", "surrogatepass")):
            counts[codes[token]] += 1
        buckets = [counts[i] - counts[i + EMBED_DIM] for i in range(EMBED_DIM)]
        # The sum of squares is an exact integer, so int arithmetic equals Rust's f64 loop.
        norm = math.sqrt(float(sum(bucket * bucket for bucket in buckets)))
        if norm > 0.0:
            return [bucket / norm for bucket in buckets]
        return [float(bucket) for bucket in buckets]

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """`embed` of each text, in order (the hash backend cannot fail)."""
        return [[float(value) for value in row] for row in self.embed_matrix(texts)]

    def embed_matrix(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """All vectors as one `(len(texts), 256)` float64 matrix, bit-identical to `embed`."""
        matrix = np.zeros((len(texts), EMBED_DIM), dtype=np.float64)
        first = 0
        while first < len(texts):
            end = first
            batch_bytes = 0
            codes: list[int] = []
            token_counts: list[int] = []
            while end < len(texts) and batch_bytes < _MATRIX_BATCH_BYTES:
                data = texts[end].encode("utf-8")
                batch_bytes += len(data)
                before = len(codes)
                codes.extend(map(self._codes.__getitem__, tokenize_bytes(data)))
                token_counts.append(len(codes) - before)
                end += 1
            matrix[first:end] = self._signed_sums(codes, token_counts)
            first = end
        # Entries are small integers, so squares and their sum are exact in float64, and
        # np.sqrt and element-wise division are the same IEEE operations as Python's.
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        nonzero = norms > 0.0
        matrix[nonzero] = matrix[nonzero] / norms[nonzero, np.newaxis]
        return matrix

    def term_codes(self, terms: Sequence[str]) -> npt.NDArray[np.int64]:
        """The signed bucket (0..511, see `_signed_bucket`) of each token, as an array."""
        return np.fromiter(
            map(self._term_codes.__getitem__, terms), dtype=np.int64, count=len(terms)
        )

    @staticmethod
    def matrix_from_term_counts(
        n_texts: int,
        entry_texts: npt.NDArray[np.int64],
        entry_codes: npt.NDArray[np.int64],
        entry_counts: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.float64]:
        """`embed_matrix` from each text's distinct tokens and counts, bit-identical.

        Entry e says: text `entry_texts[e]` holds a token of signed bucket
        `entry_codes[e]`, `entry_counts[e]` times. Each text's bucket sums are the same
        small integers `embed_matrix` counts token by token (exact in float64), so the
        normalised rows are the same bits; this is how a build that already counted
        tokens for BM25 embeds without tokenizing again.
        """
        width = 2 * EMBED_DIM
        slots = entry_texts * width + entry_codes
        sums = np.bincount(
            slots, weights=entry_counts.astype(np.float64), minlength=n_texts * width
        ).astype(np.float64, copy=False)  # float already (weighted); says so to the checker
        signed = sums.reshape(n_texts, width)
        matrix = signed[:, :EMBED_DIM] - signed[:, EMBED_DIM:]
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        nonzero = norms > 0.0
        matrix[nonzero] = matrix[nonzero] / norms[nonzero, np.newaxis]
        return matrix

    @staticmethod
    def _signed_sums(codes: list[int], token_counts: list[int]) -> npt.NDArray[np.int64]:
        """Per text, the +1/-1 sums of each bucket (integers, before normalising)."""
        width = 2 * EMBED_DIM
        owners = np.repeat(np.arange(len(token_counts), dtype=np.int64), token_counts)
        slots = owners * width + np.asarray(codes, dtype=np.int64)
        counts = np.bincount(slots, minlength=len(token_counts) * width)
        signed = counts.reshape(len(token_counts), width)
        return signed[:, :EMBED_DIM] - signed[:, EMBED_DIM:]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Plain dot product over the common prefix, accumulated left to right (no normalising).

    Vectors of different lengths are not an error; an empty side gives 0.0.
    """
    total = 0.0
    for index in range(min(len(a), len(b))):
        total += a[index] * b[index]
    return total


def check_vectors(vectors: Sequence[Sequence[float]], texts: Sequence[str], source: str) -> None:
    """Refuse what must never reach a store: NaN/infinite values, values beyond
    `MAX_VECTOR_VALUE`, or ragged dimensions.

    Empty vectors (the answer for empty inputs) have no dimension to agree on. Raises
    `EmbedError` naming the first offending input.
    """
    width: int | None = None
    for position, (vector, text) in enumerate(zip(vectors, texts, strict=True)):
        if not vector:
            if text:
                raise EmbedError(f"{source} returned an empty embedding for a non-empty input")
            continue
        if not all(math.isfinite(value) for value in vector):
            raise EmbedError(
                f"{source} returned a non-finite number (NaN or infinity) in embedding {position}"
            )
        if out_of_range(vector):
            raise EmbedError(
                f"{source} returned a value of magnitude over {MAX_VECTOR_VALUE:g} in embedding "
                f"{position}; its dot products would overflow"
            )
        if width is None:
            width = len(vector)
        elif len(vector) != width:
            raise EmbedError(
                f"{source} returned embeddings of different dimensions ({width} and "
                f"{len(vector)}, embedding {position})"
            )
