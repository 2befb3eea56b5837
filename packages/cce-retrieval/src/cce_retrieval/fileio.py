"""Atomic file replacement and the reference's display of OS errors.

Why it exists: a crash must never leave half a store, fingerprint or report behind, so
every file cce writes goes through `write_atomic` (temp file in the same directory,
fsync, rename); and messages about failed file operations read like the reference's
(`<strerror> (os error <n>)`), so they go through `describe_os_error`.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
from collections.abc import Iterable

_temp_sequence = itertools.count()


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data` so a reader only ever sees the old or the new bytes.

    Parents are created; the temp file `.<name>.tmp.<pid>.<seq>` lives in the same
    directory (rename is atomic only within one file system), is fsynced, takes the
    old file's permission bits, and is removed again if anything fails. Raises OSError.
    """
    write_atomic_parts(path, (data,))


def write_atomic_parts(path: str, parts: Iterable[bytes | memoryview]) -> None:
    """`write_atomic` of the concatenated `parts`, written as they are produced.

    Lets a large file be streamed (and hashed on the way) without ever holding all of
    its bytes at once; the replacement is still all-or-nothing.
    """
    directory, name = os.path.split(path)
    if directory:
        try:
            os.makedirs(directory, exist_ok=True)
        except FileExistsError as err:
            # Some parent is a regular file; say so rather than "File exists".
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory) from err
    temp = os.path.join(directory, f".{name}.tmp.{os.getpid()}.{next(_temp_sequence)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            for data in parts:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            old_mode = os.stat(path).st_mode
        except FileNotFoundError:
            old_mode = None
        if old_mode is not None:
            os.chmod(temp, stat.S_IMODE(old_mode))
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def describe_os_error(err: OSError) -> str:
    """Rust's `io::Error` display: `<strerror> (os error <n>)` when there is an errno."""
    if err.errno is not None and err.strerror:
        return f"{err.strerror} (os error {err.errno})"
    return str(err)
