"""Byte pieces kept in order, in memory up to a bound and in an unnamed temporary file
beyond it.

Why it exists: the build makes each file's store text in its workers, and `cce index`
writes them all once the build is done. For the stdlib that is 170 MB, for a million
chunks 2.4 GB: held as Python bytes it would be the largest thing in the process. A
`PieceSpool` takes the pieces as they arrive, in any order, keeps them in memory while
they total less than `memory_limit`, then moves them to a temporary file (created
unlinked, so a killed build leaves nothing behind) and reads each back when asked.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import IO, Final

from cce_retrieval.store.positional import PositionalSequence

DEFAULT_MEMORY_LIMIT: Final = 256 << 20


class PieceSpool(PositionalSequence[bytes]):
    """`count` byte pieces, put once each by position, read back as a sequence.

    A position never put reads as None from `get` and makes the spool incomplete
    (`complete`); reading it through the sequence interface raises KeyError.
    """

    _noun = "piece"

    def __init__(self, count: int, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> None:
        self._count = count
        self._memory_limit = memory_limit
        self._in_memory: dict[int, bytes] = {}
        self._held = 0
        self._file: IO[bytes] | None = None
        self._at: dict[int, tuple[int, int]] = {}
        self._end = 0

    def put(self, position: int, piece: bytes) -> None:
        if not 0 <= position < self._count:
            raise IndexError("piece position out of range")
        if position in self._in_memory or position in self._at:
            raise ValueError(f"piece {position} was already put")
        if self._file is None and self._held + len(piece) <= self._memory_limit:
            self._in_memory[position] = piece
            self._held += len(piece)
            return
        if self._file is None:
            # Lives as long as the spool; `close` (or collection) removes it.
            self._file = tempfile.TemporaryFile(prefix="cce-store-text-")  # noqa: SIM115
            for held_position, held in self._in_memory.items():
                self._append(held_position, held)
            self._in_memory = {}
            self._held = 0
        self._append(position, piece)

    def _append(self, position: int, piece: bytes) -> None:
        assert self._file is not None
        self._file.write(piece)
        self._at[position] = (self._end, len(piece))
        self._end += len(piece)

    def get(self, position: int) -> bytes | None:
        piece = self._in_memory.get(position)
        if piece is not None or self._file is None:
            return piece
        place = self._at.get(position)
        if place is None:
            return None
        self._file.flush()
        start, length = place
        return os.pread(self._file.fileno(), length, start)

    def forget(self, position: int) -> None:
        """Drop the piece at `position` (taken elsewhere, e.g. written to its file): its
        memory is freed and the spool is no longer `complete`."""
        piece = self._in_memory.pop(position, None)
        if piece is not None:
            self._held -= len(piece)
        self._at.pop(position, None)

    @property
    def complete(self) -> bool:
        """Every position has its piece."""
        return len(self._in_memory) + len(self._at) == self._count

    @property
    def spilled(self) -> bool:
        """The pieces live in the temporary file (they outgrew the memory limit)."""
        return self._file is not None

    def close(self) -> None:
        """Drop every piece (and the temporary file)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._in_memory = {}
        self._at = {}

    def __len__(self) -> int:
        return self._count

    def _item(self, position: int) -> bytes:
        piece = self.get(position)
        if piece is None:
            raise KeyError(position)
        return piece

    def __iter__(self) -> Iterator[bytes]:
        for position in range(self._count):
            yield self[position]

    def __del__(self) -> None:
        self.close()
