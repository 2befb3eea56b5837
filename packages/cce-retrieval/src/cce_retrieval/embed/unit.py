"""Unit-length vectors for every embedder whose vectors are not unit by construction.

Why it exists: every ranking compares a query with a chunk by their dot product
(`cosine`), which is the cosine only when both have length 1. The hash embedder divides
by the norm itself and is left alone (its bytes are the reference's); a model server or
an in-process model returns vectors of whatever length it likes, and a long vector would
then win on its length alone. So the build scales each chunk vector of such an embedder
to length 1 before it is stored, and the ranking scales each query vector the same way
before comparing it. This module owns that arithmetic and its one failure: a vector with
no direction (all zeros), with NaN or an infinity, or whose length overflows a float
cannot be scaled, and the caller reports it naming the chunk or the query and the
embedder.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cce_retrieval.model import FloatMatrix


def unit_rows(matrix: FloatMatrix, lengths: Sequence[int] | None = None) -> int | None:
    """Divide each row of `matrix` by its Euclidean norm, in place.

    `lengths` gives each row's true length when rows are ragged (zero-padded); a row of
    length 0 is an empty embedding (an empty input) and stays as it is. Returns the first
    row that cannot be scaled (zero, non-finite, or a norm that overflows), leaving the
    matrix unchanged, or None when every row was scaled.
    """
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        return None
    # Overflow (a norm past 1.8e308) and NaN are what this reports, not numpy warnings.
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    scaled = np.ones(matrix.shape[0], dtype=bool)
    if lengths is not None:
        scaled = np.asarray(lengths, dtype=np.int64) > 0
    bad = scaled & ~(np.isfinite(norms) & (norms > 0.0))
    if bad.any():
        return int(np.flatnonzero(bad)[0])
    matrix[scaled] = matrix[scaled] / norms[scaled, np.newaxis]
    return None


def why_not_unit(vector: Sequence[float]) -> str:
    """Why `vector` (one that `unit_rows` refused) has no unit-length version."""
    values = np.asarray(vector, dtype=np.float64)
    if not np.isfinite(values).all():
        return "it holds NaN or an infinity"
    if not values.any():
        return "it is all zeros, so it has no direction"
    if np.abs(values).max() < 1.0:
        return "its length underflows to zero (values too close to 0)"
    return "its length overflows a float (values near 1e308)"


def unit_vector(vector: Sequence[float]) -> list[float] | None:
    """`vector` scaled to length 1 (by the same arithmetic as `unit_rows`), None when it
    cannot be; the empty vector stays empty."""
    if not vector:
        return []
    matrix = np.array([vector], dtype=np.float64)
    if unit_rows(matrix) is not None:
        return None
    return [float(value) for value in matrix[0]]
