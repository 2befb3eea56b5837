"""A read-only sequence defined by its length and one item per position.

Why it exists: the store's lazily decoded chunks, their id column and the build's
spool of store text are all sequences whose items are made on request. What makes
them sequences (negative indexes, bounds, slices as lists) is the same each time and
lives here (`PositionalSequence`); each subclass says only how long it is and how to
make one item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, TypeVar, overload

T = TypeVar("T")


class PositionalSequence(Sequence[T]):
    """`len(self)` items; `_item(position)` makes the one at 0 <= position < len."""

    __slots__ = ()
    _noun: ClassVar[str] = "item"
    """Named in the IndexError for a position out of range."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _item(self, position: int) -> T:
        raise NotImplementedError

    def position(self, i: int) -> int:
        """Index `i` (negative counts from the end) as a position; IndexError outside."""
        n = len(self)
        position = i + n if i < 0 else i
        if not 0 <= position < n:
            raise IndexError(f"{self._noun} index out of range")
        return position

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self._item(j) for j in range(*i.indices(len(self)))]
        return self._item(self.position(i))
