"""Unit-length vectors for every embedder whose vectors are not unit by construction.

Why it exists: every ranking compares a query with a chunk by their dot product
(`cosine`), which is the cosine only when both have length 1. The hash embedder divides
by the norm itself and is left alone (its bytes are the reference's); a model server or
an in-process model returns vectors of whatever length it likes, and a long vector would
then win on its length alone. So the build scales each chunk vector of such an embedder
to length 1 before it is stored, and the ranking scales each query vector the same way
before comparing it. This module owns that arithmetic and the line between a vector
with no direction and a broken one. A vector of zeros only (a model2vec model's answer
for an empty file, or for words it does not know) has no direction: it is not an error
but "no vector", and the chunk or query is left to the lexical signal
(docs/retrieval.md#vectors-with-no-direction). A vector with NaN or an infinity, or whose
length underflows or overflows a float, cannot be scaled, and the caller reports it
naming the chunk or the query and the embedder.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from cce_retrieval.model import FloatMatrix


def unit_rows(matrix: FloatMatrix, lengths: Sequence[int] | None = None) -> int | None:
    """Divide each row of `matrix` by its Euclidean norm, in place.

    `lengths` gives each row's true length when rows are ragged (zero-padded); a row of
    length 0 is an empty embedding (an empty input) and stays as it is, and so does a row
    of zeros only (no direction: `directionless`). Returns the first row that cannot be
    scaled (non-finite, or a norm that underflows or overflows), leaving the matrix
    unchanged, or None when every other row was scaled.
    """
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        return None
    # Overflow (a norm past 1.8e308) and NaN are what this reports, not numpy warnings.
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    scaled = np.ones(matrix.shape[0], dtype=bool)
    if lengths is not None:
        scaled = np.asarray(lengths, dtype=np.int64) > 0
    scaled &= ~directionless(matrix)
    bad = scaled & ~(np.isfinite(norms) & (norms > 0.0))
    if bad.any():
        return int(np.flatnonzero(bad)[0])
    matrix[scaled] = matrix[scaled] / norms[scaled, np.newaxis]
    return None


def directionless(matrix: FloatMatrix) -> npt.NDArray[np.bool_]:
    """Per row of a 2-D `matrix`: whether it holds zeros only (no direction, so no vector).

    A NaN is not zero, so a row with one is never directionless: it stays an error."""
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        return np.ones(matrix.shape[0] if matrix.ndim else 0, dtype=bool)
    present: npt.NDArray[np.bool_] = (matrix != 0.0).any(axis=1)
    return ~present


def has_direction(vector: Sequence[float]) -> bool:
    """Whether `vector` has a non-zero value (the empty vector has none)."""
    return any(value != 0.0 for value in vector)


def why_not_unit(vector: Sequence[float]) -> str:
    """Why `vector` (one that `unit_rows` refused) has no unit-length version."""
    values = np.asarray(vector, dtype=np.float64)
    if not np.isfinite(values).all():
        return "it holds NaN or an infinity"
    if np.abs(values).max() < 1.0:
        return "its length underflows to zero (values too close to 0)"
    return "its length overflows a float (values near 1e308)"


def unit_vector(vector: Sequence[float]) -> list[float] | None:
    """`vector` scaled to length 1 (by the same arithmetic as `unit_rows`), None when it
    cannot be; the empty vector, and one with no direction, become the empty vector."""
    if not has_direction(vector):
        return []
    matrix = np.array([vector], dtype=np.float64)
    if unit_rows(matrix) is not None:
        return None
    return [float(value) for value in matrix[0]]
