"""The chunks of a store's sidecar, each built from its columns when first read.

Why it exists: a query reads a few dozen chunks of tens of thousands (its candidates and
the rows it prints), yet building every `Chunk` of a 72,000-chunk store up front takes
most of `cce search`'s load time and grows with the store. `StoredChunks` is an immutable
sequence over the sidecar's memory-mapped columns (docs/index-store.md#sidecar): ids and
contents as one UTF-8 blob plus offsets, paths and kinds as tables plus codes, line
numbers and token counts as one integer matrix. A chunk is decoded on first access and
kept; iterating decodes them all once. Paths and ids can be read without building
chunks, which is all the derived structures of a query need.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator, Sequence

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.model import Chunk
from cce_retrieval.store.positional import PositionalSequence

Blob = mmap.mmap | bytes


@attrs.frozen(slots=True)
class StoredColumns:
    """The sidecar's columns of n chunks (lengths checked by the reader)."""

    ids: Blob
    ids_at: npt.NDArray[np.int64]
    """n + 1 byte offsets into `ids`."""
    content: Blob
    content_at: npt.NDArray[np.int64]
    numbers: npt.NDArray[np.int64]
    """(n, 3): start line, end line, token count."""
    path_codes: npt.NDArray[np.int32]
    kind_codes: npt.NDArray[np.int32]
    paths: tuple[str, ...]
    kinds: tuple[tuple[str, str, str], ...]
    """(chunk type, kind, language) per kind code."""


def _text(blob: Blob, start: int, end: int) -> str:
    return blob[start:end].decode("utf-8", "surrogatepass")


class _IdColumn(PositionalSequence[str]):
    __slots__ = ("_columns", "_n")
    _noun = "chunk"

    def __init__(self, columns: StoredColumns, n: int) -> None:
        self._columns, self._n = columns, n

    def __len__(self) -> int:
        return self._n

    def _item(self, position: int) -> str:
        at = self._columns.ids_at
        return _text(self._columns.ids, int(at[position]), int(at[position + 1]))


class StoredChunks(PositionalSequence[Chunk]):
    """An immutable sequence of the chunks held in `StoredColumns`, decoded lazily."""

    __slots__ = ("_all", "_columns", "_made", "_n")
    _noun = "chunk"

    def __init__(self, columns: StoredColumns) -> None:
        self._columns = columns
        self._n = int(columns.path_codes.shape[0])
        self._made: dict[int, Chunk] = {}
        self._all: list[Chunk] | None = None

    def __len__(self) -> int:
        return self._n

    def _item(self, position: int) -> Chunk:
        if self._all is not None:
            return self._all[position]
        chunk = self._made.get(position)
        if chunk is None:
            chunk = self._made[position] = self._decode(position)
        return chunk

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self.materialise())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredChunks | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compared by value, like a list

    def __reduce__(self) -> tuple[type[list[Chunk]], tuple[list[Chunk]]]:
        # Memory maps do not pickle; a copy sent to another process is a plain list.
        return list, (self.materialise(),)

    def __repr__(self) -> str:
        return f"StoredChunks({self._n} chunks)"

    def _decode(self, i: int) -> Chunk:
        c = self._columns
        chunk_type, kind, language = c.kinds[int(c.kind_codes[i])]
        start, end, tokens = (int(n) for n in c.numbers[i])
        return Chunk(
            _text(c.ids, int(c.ids_at[i]), int(c.ids_at[i + 1])),
            c.paths[int(c.path_codes[i])],
            start,
            end,
            chunk_type,
            kind,
            language,
            _text(c.content, int(c.content_at[i]), int(c.content_at[i + 1])),
            tokens,
        )

    def materialise(self) -> list[Chunk]:
        """Every chunk, decoded once (already decoded ones are reused)."""
        if self._all is not None:
            return self._all
        c = self._columns
        # `_decode` inlined over whole columns turned into Python ints at once: a call
        # per chunk through `_decode` (or a shared helper) makes this 10-15% slower,
        # and a million-chunk scoring run materialises every chunk. The two must build
        # the same chunk; the sidecar tests compare both with the parsed store.
        numbers = np.asarray(c.numbers).tolist()
        path_codes = np.asarray(c.path_codes).tolist()
        kind_codes = np.asarray(c.kind_codes).tolist()
        ids_at = np.asarray(c.ids_at).tolist()
        content_at = np.asarray(c.content_at).tolist()
        ids, content, paths, kinds, made = c.ids, c.content, c.paths, c.kinds, self._made
        chunks: list[Chunk] = []
        append = chunks.append
        for i in range(self._n):
            known = made.get(i)
            if known is not None:
                append(known)
                continue
            chunk_type, kind, language = kinds[kind_codes[i]]
            start, end, tokens = numbers[i]
            append(
                Chunk(
                    ids[ids_at[i] : ids_at[i + 1]].decode("utf-8", "surrogatepass"),
                    paths[path_codes[i]],
                    start,
                    end,
                    chunk_type,
                    kind,
                    language,
                    content[content_at[i] : content_at[i + 1]].decode("utf-8", "surrogatepass"),
                    tokens,
                )
            )
        self._all = chunks
        self._made = {}
        return chunks

    def file_path(self, i: int) -> str:
        """Chunk i's file path, without decoding the chunk."""
        return self._columns.paths[int(self._columns.path_codes[self.position(i)])]

    def chunk_ids(self) -> Sequence[str]:
        """The chunk ids in store order, as a view decoding one id per access."""
        return _IdColumn(self._columns, self._n)

    def indices_by_file(self) -> dict[str, list[int]]:
        """Each file's chunk indices in store order, from the path column alone."""
        codes = np.asarray(self._columns.path_codes)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(self._columns.paths) + 1))
        grouped = order.tolist()
        edges = bounds.tolist()
        return {
            path: grouped[edges[code] : edges[code + 1]]
            for code, path in enumerate(self._columns.paths)
            if edges[code + 1] > edges[code]
        }
