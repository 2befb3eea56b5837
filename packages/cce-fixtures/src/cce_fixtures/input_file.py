"""Reading a fixture file named on the command line, only if it is a regular file.

Why it exists: `cce-fixtures validate` (and its pre-commit hook) reads whatever path it is
given; `/dev/zero` behind a symlink would grow memory without bound and a FIFO would
block forever. `read_input_file` reads only a regular file, opened non-blocking so a FIFO
cannot stall the open, checked with `fstat` on the open descriptor, and never more than
`MAX_FIXTURE_BYTES`, even if the file grows while being read. It is a copy of
`cce_retrieval.read_input_file`, which this package cannot import
(docs/architecture.md#copies-kept-on-purpose; docs/hostile-input.md#special-files-as-inputs).
"""

from __future__ import annotations

import errno
import io
import os
import stat
from typing import Final

__all__ = ["MAX_FIXTURE_BYTES", "RefusedInputError", "read_input_file"]

MAX_FIXTURE_BYTES: Final = 1 << 30
"""Fixture files are NDJSON of a few hundred bytes per case: a million cases is a few
hundred MB, and parsing holds several times the file's size."""


class RefusedInputError(OSError):
    """An input that is not a regular file, or is larger than its limit; `strerror` says
    which, and what to give instead."""


def file_type_name(mode: int) -> str:
    """What a file of `mode` is, as a message names it: `a character device`, `a FIFO`."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def size_text(size: int) -> str:
    """`size` bytes in the largest binary unit that divides it: `1 GiB`, `8 MiB`, `100 bytes`."""
    for shift, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} bytes"


_READ_STEP = 1 << 24
"""Bytes asked for by each read after the first (which asks for the whole file)."""


def input_too_large(path: str, limit: int, what: str) -> RefusedInputError:
    """The refusal of an input larger than `limit` (`what`: the kind, plural)."""
    return RefusedInputError(
        errno.EFBIG,
        f"larger than {size_text(limit)}, the most cce reads of {what}; give a smaller file",
        path,
    )


def open_input_file(path: str, limit: int, what: str) -> io.FileIO:
    """`path` (symlinks followed) opened for reading, once it is known to be a regular
    file of at most `limit` bytes; the caller closes it.

    Opened non-blocking, so a FIFO cannot stall the open, and checked with `fstat` on the
    open descriptor: a FIFO, socket or device raises `RefusedInputError` (`not a regular
    file (a character device); give a regular file`), as does a file larger than `limit`
    (`what` names the kind of input, plural: `reports`). A directory raises
    `IsADirectoryError`, as `open` would; other failures raise the system's `OSError`.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    handle = io.FileIO(fd, "rb", closefd=True)
    try:
        mode = os.fstat(fd)
        if stat.S_ISDIR(mode.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode.st_mode):
            kind = file_type_name(mode.st_mode)
            raise RefusedInputError(
                errno.EINVAL, f"not a regular file ({kind}); give a regular file", path
            )
        if mode.st_size > limit:
            raise input_too_large(path, limit, what)
    except BaseException:
        handle.close()
        raise
    return handle


def read_input_file(path: str, limit: int, what: str) -> bytes:
    """The bytes of the regular file `path`, checked as `open_input_file` checks it and
    never read past `limit`, even if the file grows while being read (then
    `RefusedInputError` as for a file that was too large to begin with). A file read
    whole in one call is returned without a copy."""
    with open_input_file(path, limit, what) as handle:
        # One byte past the size fstat saw, so the end shows without a second
        # whole-size buffer; a file that grew is read on in steps, never past the limit.
        wanted = os.fstat(handle.fileno()).st_size + 1
        parts: list[bytes] = []
        total = 0
        while total <= limit:
            step = max(wanted - total, _READ_STEP) if parts else wanted
            chunk = handle.read(min(step, limit + 1 - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
    if total > limit:
        raise input_too_large(path, limit, what)
    return parts[0] if len(parts) == 1 else b"".join(parts)
