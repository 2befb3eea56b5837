"""Reading a sidecar back: the manifest, every part checked, and the index they hold.

Why it exists: a sidecar is trusted only when its manifest names this store's digest and
size, every part holds exactly the bytes whose size and SHA-256 the manifest records
(`digests.parts_hold_their_bytes`, which remembers parts it has verified) and what the
index's types promise (offsets in order, rows in range, finite values); anything else
distrusts it and the store is parsed instead, never mis-scored
(docs/index-store.md#sidecar).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
from typing import cast

import numpy as np
import numpy.typing as npt

from cce_retrieval.embed.hashing import MAX_VECTOR_VALUE
from cce_retrieval.model import EmbeddingMatrix, FloatMatrix, Index, SparseEmbeddings
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.derived import RetrievalIndex, prime
from cce_retrieval.rank.graph import ImportGraph
from cce_retrieval.store.chunks import StoredChunks, StoredColumns
from cce_retrieval.store.fileio import describe_os_error, read_input_file
from cce_retrieval.store.load import parse_index
from cce_retrieval.store.paths import MAX_STORE_BYTES, StoreError
from cce_retrieval.store.sidecar.digests import file_digest, parts_hold_their_bytes
from cce_retrieval.store.sidecar.parts import SIDECAR_SCHEMA, SPARSE_PARTS, sidecar_dir
from cce_retrieval.store.sidecar.staging import write_sidecar


def sidecar_is_current(store_path: str, store_sha256: str, store_size: int) -> bool:
    """Whether the sidecar beside `store_path` already describes a store with this digest
    and size, by the checks a reader makes: rewriting it would write the same bytes."""
    try:
        _read_manifest(sidecar_dir(store_path), store_sha256, store_size)
    except _Untrusted:
        return False
    return True


def has_sidecar_manifest(store_path: str) -> bool:
    """Whether the sidecar directory beside `store_path` holds any store's manifest.

    A directory listing: without one, no digest can be current (`sidecar_is_current`),
    so a caller need not hash a store to ask. Staging files alone (a sidecar being
    written, or BM25's parts staged early in this build) do not count.
    """
    try:
        names = os.listdir(sidecar_dir(store_path))
    except OSError:
        return False
    return any(_is_manifest_name(name) for name in names)


def _is_manifest_name(name: str) -> bool:
    digest, dot, suffix = name.partition(".")
    return (
        dot == "."
        and suffix == "json"
        and len(digest) == 64
        and all(c in "0123456789abcdef" for c in digest)
    )


def current_sidecar_chunks(store_path: str, store_sha256: str, store_size: int) -> int | None:
    """How many chunks the sidecar beside `store_path` holds when it is current for this
    digest and size (`sidecar_is_current`), else None."""
    try:
        chunks = _read_manifest(sidecar_dir(store_path), store_sha256, store_size).get("chunks")
    except _Untrusted:
        return None
    return chunks if type(chunks) is int else None


class _Untrusted(Exception):
    """The sidecar is missing, incomplete or of another store: parse `index.json`."""


def _read_manifest(directory: str, digest: str, size: int) -> dict[str, object]:
    path = os.path.join(directory, f"{digest}.json")
    try:
        manifest = json.loads(read_input_file(path, MAX_STORE_BYTES, "sidecar manifests"))
    except (OSError, ValueError, RecursionError) as err:  # RecursionError: hostile nesting
        raise _Untrusted from err
    if (
        not isinstance(manifest, dict)
        or manifest.get("schema") != SIDECAR_SCHEMA
        or manifest.get("store_sha256") != digest
        or manifest.get("store_size") != size
        or not isinstance(manifest.get("parts"), dict)
    ):
        raise _Untrusted
    # Every part is the bytes it was written with: a part changed in place, even to
    # bytes of the same size that still parse, would otherwise mis-score or fail a query.
    if not parts_hold_their_bytes(directory, digest, manifest["parts"]):
        raise _Untrusted
    return manifest


def _kind_triple(text: str) -> tuple[str, str, str]:
    chunk_type, kind, language = text.split("\0")
    return chunk_type, kind, language


def _check_columns(columns: StoredColumns, n: int) -> None:
    """Every column has n entries (n + 1 offsets) and every code names a table entry."""
    if not (
        columns.numbers.shape == (n, 3)
        and columns.path_codes.shape == (n,)
        and columns.kind_codes.shape == (n,)
        and columns.ids_at.shape == (n + 1,)
        and columns.content_at.shape == (n + 1,)
    ):
        raise _Untrusted
    if n and (
        int(columns.path_codes.max()) >= len(columns.paths)
        or int(columns.kind_codes.max()) >= len(columns.kinds)
        or int(columns.path_codes.min()) < 0
        or int(columns.kind_codes.min()) < 0
        or int(columns.ids_at[-1]) != len(columns.ids)
        or int(columns.content_at[-1]) != len(columns.content)
    ):
        raise _Untrusted


def _sidecar_index(directory: str, manifest: dict[str, object]) -> Index:
    parts = manifest["parts"]
    assert isinstance(parts, dict)

    def array(name: str) -> npt.NDArray[np.generic]:
        path = os.path.join(directory, str(parts[name]["file"]))
        try:
            loaded: npt.NDArray[np.generic] = np.load(path, mmap_mode="r", allow_pickle=False)
        except Exception as err:
            # A damaged header fails in numpy's header parser in many ways (ValueError,
            # SyntaxError, tokenize's TokenError on a NUL byte, ...): all mean distrust.
            raise _Untrusted from err
        return loaded

    def blob(name: str) -> mmap.mmap | bytes:
        path = os.path.join(directory, str(parts[name]["file"]))
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size == 0:
                    return b""
                return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as err:
            raise _Untrusted from err

    n = int(str(manifest["chunks"]))
    kinds = tuple(_kind_triple(str(k)) for k in manifest["kinds"])  # type: ignore[attr-defined]
    columns = StoredColumns(
        ids=blob("ids"),
        ids_at=array("ids_offsets"),  # type: ignore[arg-type]
        content=blob("content"),
        content_at=array("content_offsets"),  # type: ignore[arg-type]
        numbers=array("numbers"),  # type: ignore[arg-type]
        path_codes=array("path_codes"),  # type: ignore[arg-type]
        kind_codes=array("kind_codes"),  # type: ignore[arg-type]
        paths=tuple(str(p) for p in manifest["paths"]),  # type: ignore[attr-defined]
        kinds=kinds,
    )
    _check_columns(columns, n)
    chunks = StoredChunks(columns)
    rows = int(str(manifest["embedding_rows"]))
    width = int(str(manifest["embedding_width"]))
    if rows != n:  # a store holds one embedding per chunk
        raise _Untrusted
    embeddings: EmbeddingMatrix
    if "embeddings_by_dim" in parts:
        by_dim = array("embeddings_by_dim")
        if by_dim.shape != (width, rows) or by_dim.dtype != np.float64:
            raise _Untrusted
        embeddings = by_dim.T  # type: ignore[assignment]
    else:
        embeddings = _sparse_embeddings(rows, width, *(array(name) for name in SPARSE_PARTS))
    lengths = manifest["embedding_lengths"]
    model, dim = manifest["embedder_model"], manifest["embedding_dim"]
    index = Index(
        embedder=str(manifest["embedder"]),
        chunks=chunks,
        embeddings=embeddings,
        file_imports={str(k): list(v) for k, v in manifest["file_imports"].items()},  # type: ignore[attr-defined]
        file_tokens={str(k): int(v) for k, v in manifest["file_tokens"].items()},  # type: ignore[attr-defined]
        spec_version=str(manifest["spec_version"]),
        embedding_lengths=None if lengths is None else [int(x) for x in lengths],  # type: ignore[attr-defined]
        embedder_model=None if model is None else str(model),
        embedding_dim=None if dim is None else int(str(dim)),
    )
    terms_text = bytes(blob("terms")).decode("ascii")
    terms = terms_text.split("\n") if terms_text else []
    term_ids = dict(zip(terms, range(len(terms)), strict=True))
    if len(term_ids) != int(str(manifest["terms"])):
        raise _Untrusted
    id_ranks = array("id_ranks")
    bm25 = Bm25Index(
        term_ids,
        array("bm25_offsets"),  # type: ignore[arg-type]
        array("bm25_docs"),  # type: ignore[arg-type]
        array("bm25_freqs"),  # type: ignore[arg-type]
        array("bm25_doc_lengths"),  # type: ignore[arg-type]
        float(str(manifest["bm25_avgdl"])),
        id_ranks,  # type: ignore[arg-type]
    )
    if id_ranks.shape != (n,) or bm25.n_docs != n:
        raise _Untrusted
    raw_edges = manifest["graph_edges"]

    def graph() -> ImportGraph:
        return ImportGraph([(str(a), str(b)) for a, b in raw_edges])  # type: ignore[attr-defined]

    derived = RetrievalIndex(index, bm25, id_ranks, graph)  # type: ignore[arg-type]
    prime(index, derived)
    return index


def _sparse_embeddings(
    rows: int,
    width: int,
    starts: npt.NDArray[np.generic],
    cell_rows: npt.NDArray[np.generic],
    values: npt.NDArray[np.generic],
) -> SparseEmbeddings:
    """The sparse parts as a matrix, once they hold what `SparseEmbeddings` promises:
    offsets from 0 to the last cell, never decreasing, each dimension's rows in range
    and strictly ascending, and finite values. A part that breaks one would fail or
    mis-score a query, so the sidecar is distrusted here instead."""
    cells = int(values.shape[0]) if values.ndim == 1 else -1
    if (
        rows < 0
        or width < 0
        or starts.shape != (width + 1,)
        or starts.dtype != np.int64
        or values.dtype != np.float64
        or cell_rows.shape != (cells,)
        or cell_rows.dtype not in (np.dtype(np.uint32), np.dtype(np.int64))
    ):
        raise _Untrusted
    offsets = cast(npt.NDArray[np.int64], starts)
    chunk_rows = cast(npt.NDArray[np.integer], cell_rows)
    # Compared, never subtracted: a difference of int64 offsets can wrap around.
    if (
        int(offsets[0]) != 0
        or int(offsets[-1]) != cells
        or bool(np.any(offsets[1:] < offsets[:-1]))
    ):
        raise _Untrusted
    if cells and (int(chunk_rows.min()) < 0 or int(chunk_rows.max()) >= rows):
        raise _Untrusted
    if not bool(np.isfinite(values).all()):  # embeddings are finite; a nan would rank
        raise _Untrusted
    if values.size and float(np.abs(values).max()) > MAX_VECTOR_VALUE:  # and bounded
        raise _Untrusted
    ascending = chunk_rows[1:] > chunk_rows[:-1]
    firsts = offsets[1:-1]
    ascending[firsts[(firsts > 0) & (firsts < cells)] - 1] = True  # a new dimension begins
    if not bool(ascending.all()):
        raise _Untrusted
    return SparseEmbeddings(rows, width, offsets, chunk_rows, cast(FloatMatrix, values))


def load_store(path: str) -> Index:
    """The store at `path`, from its sidecar when that matches the store's bytes.

    The store is hashed unless its file status is the one recorded when it was last
    hashed (`remembered_digest`). When the sidecar does not match, `index.json` is
    parsed (any failure is the usual StoreError) and the sidecar rebuilt, best effort:
    a read-only directory just means no sidecar.
    """
    directory = sidecar_dir(path)
    try:
        found = file_digest(path, directory)
    except OSError as err:
        raise StoreError("load", path, describe_os_error(err)) from err
    try:
        manifest = _read_manifest(directory, found.sha256, found.status.st_size)
        index = _sidecar_index(directory, manifest)
    except (_Untrusted, KeyError, TypeError, ValueError, AttributeError):
        pass
    else:
        found.remember(directory)
        return index
    # The sidecar is keyed by the digest of exactly the bytes parsed here.
    try:
        data = read_input_file(path, MAX_STORE_BYTES, "stores")
    except OSError as err:
        raise StoreError("load", path, describe_os_error(err)) from err
    index = parse_index(data, path)
    with contextlib.suppress(OSError, ValueError):
        write_sidecar(index, path, hashlib.sha256(data).hexdigest(), len(data))
    return index
