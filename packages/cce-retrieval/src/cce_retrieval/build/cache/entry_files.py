"""Opening a cache entry file: a regular file of bounded size, never followed, never waited on.

Why it exists: the cache can make a build faster, never fail it, and anything can sit at
an entry's path: a symlink to `/dev/zero` (read whole, it exhausts memory), a FIFO (an
ordinary open waits for a writer forever), a directory, a file of gigabytes. Every read
of an entry goes through `open_entry`, which opens without following a symlink and
without blocking, and keeps the file only when `fstat` says it is a regular file no
larger than `MAX_ENTRY_BYTES`; anything else is a miss. A write replaces whatever is
there by a rename, which never follows a link (docs/index-store.md#build-cache).
"""

from __future__ import annotations

import os
import stat
from typing import Final

MAX_ENTRY_BYTES: Final = 1 << 30
"""The largest entry file read (1 GiB, the default bound of the whole cache). No entry
is written larger (`BuildCache._write`), so a larger file at an entry's path is not one."""

_OPEN_FLAGS: Final = (
    os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
)


def open_entry(path: str) -> tuple[int, int] | None:
    """A read-only descriptor of the entry file at `path` and its size, or None when
    there is none, it cannot be opened, or it is not a regular file of at most
    `MAX_ENTRY_BYTES` (a symlink, FIFO, socket, device or directory). The caller closes
    the descriptor."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
        os.close(fd)
        return None
    return fd, info.st_size


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to `limit` bytes from `fd`'s current offset (fewer only at the end of the file),
    so a file that grows while it is read is never read past the bound. Callers size
    `limit` from the file's status, so one read usually takes it all. Raises OSError."""
    pieces: list[bytes] = []
    left = limit
    while left > 0:
        piece = os.read(fd, left)
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)
