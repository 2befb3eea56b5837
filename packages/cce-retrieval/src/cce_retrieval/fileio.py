"""Atomic file replacement and the reference's display of OS errors.

Why it exists: a crash must never leave half a store, fingerprint or report behind, so
every file cce writes goes through `write_atomic` (temp file in the same directory,
fsync, rename); and messages about failed file operations read like the reference's
(`<strerror> (os error <n>)`), so they go through `describe_os_error`.

The rename replaces whatever is at the path, so the path is checked first: a symlink is
written *through* (the link stays, its target is replaced atomically, so a store shared by
links stays shared and current); anything that exists and is not a regular file (a
device such as `/dev/null`, a FIFO, a directory) is refused with `NotARegularFileError`.
Temporaries left by a writer that was killed (`.<name>.tmp.<pid>.<n>` whose process no
longer exists) are removed before each write. See docs/hostile-input.md#stores.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import itertools
import os
import stat
from collections.abc import Iterable

_temp_sequence = itertools.count()


class NotARegularFileError(OSError):
    """The path exists and is not a regular file (device, FIFO, socket, directory)."""


def _resolve_target(path: str) -> str:
    """The file a write to `path` replaces: `path`, or the end of its symlink chain."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        shown = path if target == path else f"{path} (-> {target})"
        raise NotARegularFileError(
            errno.EEXIST, f"{shown} exists and is {kind}; refusing to replace it", path
        )
    return target


def is_running(pid: int) -> bool:
    """Whether process `pid` exists (a writer whose temporary files must be left alone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def remove_stale_temporaries(directory: str, name: str) -> int:
    """Delete `.<name>.tmp.<pid>.<n>` files in `directory` whose writer is gone; the count.

    A temporary of a live process (this one, or a concurrent writer) is left alone.
    """
    prefix = f".{name}.tmp."
    removed = 0
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return 0
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        pid_text, _, sequence = entry[len(prefix) :].partition(".")
        if not (pid_text.isdigit() and sequence.isdigit()) or is_running(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, entry))
            removed += 1
    return removed


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data` so a reader only ever sees the old or the new bytes.

    Parents are created; the temp file `.<name>.tmp.<pid>.<seq>` lives in the same
    directory (rename is atomic only within one file system), is fsynced, takes the
    old file's permission bits, and is removed again if anything fails. A symlink is
    written through; a path that is not a regular file raises `NotARegularFileError`.
    Raises OSError.
    """
    write_atomic_parts(path, (data,))


def write_atomic_parts(
    path: str,
    parts: Iterable[bytes | memoryview],
    finisher: concurrent.futures.Executor | None = None,
) -> concurrent.futures.Future[None] | None:
    """`write_atomic` of the concatenated `parts`, written as they are produced.

    Lets a large file be streamed (and hashed on the way) without ever holding all of
    its bytes at once; the replacement is still all-or-nothing. A symlink is written
    through; a path that is not a regular file raises `NotARegularFileError`.

    With `finisher`, the last step (fsync, then rename into place) runs there and its
    future is returned, so the caller can go on while the disk catches up; `path` holds
    the new bytes only once that future is done (its exception is the write's error).
    """
    path = _resolve_target(path)
    directory, name = os.path.split(path)
    if directory:
        try:
            os.makedirs(directory, exist_ok=True)
        except FileExistsError as err:
            # Some parent is a regular file; say so rather than "File exists".
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory) from err
    remove_stale_temporaries(directory, name)
    temp = os.path.join(directory, f".{name}.tmp.{os.getpid()}.{next(_temp_sequence)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        for data in parts:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if finisher is not None:
        return finisher.submit(_sync_and_replace, fd, temp, path)
    _sync_and_replace(fd, temp, path)
    return None


def keep_in_place(path: str) -> None:
    """Settle a file left as it is because it already holds the bytes a write would put
    there: fail as the write would on a directory it cannot write in, sync the file's
    data, and remove stale temporaries of killed writers, as `write_atomic_parts` does.
    Raises OSError (then the caller writes after all)."""
    path = _resolve_target(path)
    directory, name = os.path.split(path)
    if not os.access(directory or ".", os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), directory or ".")
    with open(path, "rb") as handle:
        # Bytes put there by a writer that never synced are on disk before a fingerprint
        # (which is synced) vouches for them.
        os.fsync(handle.fileno())
    remove_stale_temporaries(directory, name)


def _sync_and_replace(fd: int, temp: str, path: str) -> None:
    """fsync and close `fd` (open on `temp`), then rename `temp` over `path`."""
    try:
        try:
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
    if isinstance(err, NotARegularFileError):
        return err.strerror or str(err)
    if err.errno is not None and err.strerror:
        return f"{err.strerror} (os error {err.errno})"
    return str(err)
