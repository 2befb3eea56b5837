"""Atomic file replacement, bounded reading of input files, and the reference's display
of OS errors.

Why it exists: a crash must never leave half a store, fingerprint or report behind, so
every file cce writes goes through `write_atomic` (temp file in the same directory,
fsync, rename), or `AtomicFile` for one written over time; and messages about failed
file operations read like the reference's (`<strerror> (os error <n>)`), so they go
through `describe_os_error`. Build cache entries, which are verified when read, have a
lighter writer of their own; cce-metrics, which cannot import this package, writes TREC
files with a copy of the plain case (docs/architecture.md#copies-kept-on-purpose).

The rename replaces whatever is at the path, so the path is checked first: a symlink is
written *through* (the link stays, its target is replaced atomically, so a store shared by
links stays shared and current); anything that exists and is not a regular file (a
device such as `/dev/null`, a FIFO, a directory) is refused with `NotARegularFileError`.
Temporaries left by a writer that was killed (`.<name>.tmp.<pid>.<n>` whose process no
longer exists) are removed before each write. See docs/hostile-input.md#stores.

Reading has the mirror problem: a file a user names (a store, a report, a run file, a
fixture file) may be `/dev/zero` behind a symlink, which grows memory without bound, or
a FIFO, which blocks forever. `read_input_file` reads only a regular file, opened
non-blocking so a FIFO cannot stall the open, checked with `fstat` on the open
descriptor, and never more than its limit even if it grows while being read. cce-fixtures,
which cannot import this package, keeps a copy (docs/architecture.md#copies-kept-on-purpose;
docs/hostile-input.md#special-files-as-inputs).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import functools
import io
import itertools
import os
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import cast

from cce_retrieval.file_kinds import file_type_name

_temp_sequence = itertools.count()


class NotARegularFileError(OSError):
    """The path exists and is not a regular file (device, FIFO, socket, directory)."""


class RefusedInputError(OSError):
    """An input that is not a regular file, or is larger than its limit; `strerror` says
    which, and what to give instead."""


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
    replacement = AtomicFile(path)
    try:
        for data in parts:
            replacement.write((data,))
    except BaseException:
        replacement.discard()
        raise
    return replacement.commit(finisher)


_WRITEBACK_BYTES = 1 << 25
"""Bytes an `AtomicFile` lets pile up before it asks the kernel to start writing them."""


class AtomicFile:
    """A replacement of `path` written over time, `write_atomic_parts` in steps: the
    temporary file is made at once, written piece by piece, then renamed into place
    (`commit`) or removed (`discard`). Raises OSError as `write_atomic` does.

    A file written while other work goes on (a store streamed during its build) would
    otherwise leave all of its bytes for the final fsync to wait for: every 32 MB, the
    kernel is asked to start writing them back (`start_writeback`), without waiting.
    """

    def __init__(self, path: str) -> None:
        self.path = _resolve_target(path)
        directory, name = os.path.split(self.path)
        if directory:
            try:
                os.makedirs(directory, exist_ok=True)
            except FileExistsError as err:
                # Some parent is a regular file; say so rather than "File exists".
                raise NotADirectoryError(
                    errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory
                ) from err
        remove_stale_temporaries(directory, name)
        self.temp = os.path.join(directory, f".{name}.tmp.{os.getpid()}.{next(_temp_sequence)}")
        self._fd: int | None = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self.size = 0
        self._flushed = 0

    def write(self, parts: Sequence[bytes | memoryview]) -> None:
        """Append `parts`, in one system call where the kernel takes them all."""
        fd = self._open_fd()
        views = [memoryview(part) for part in parts if len(part)]
        while views:
            written = os.writev(fd, views) if len(views) > 1 else os.write(fd, views[0])
            self.size += written
            while views and written >= len(views[0]):
                written -= len(views[0])
                views.pop(0)
            if views and written:
                views[0] = views[0][written:]
        if self.size - self._flushed >= _WRITEBACK_BYTES:
            start_writeback(fd, self._flushed, self.size - self._flushed)
            self._flushed = self.size

    def commit(
        self, finisher: concurrent.futures.Executor | None = None
    ) -> concurrent.futures.Future[None] | None:
        """fsync, then rename over the path (on `finisher` when given: its future)."""
        fd = self._open_fd()
        self._fd = None
        if finisher is not None:
            return finisher.submit(_sync_and_replace, fd, self.temp, self.path)
        _sync_and_replace(fd, self.temp, self.path)
        return None

    def discard(self) -> None:
        """Remove the temporary file; the path keeps what it held. Safe to repeat."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(self.temp)

    def _open_fd(self) -> int:
        if self._fd is None:
            raise ValueError(f"{self.temp} was already committed or discarded")
        return self._fd


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start writing `length` bytes of `fd` from `offset` to disk, and
    return at once (Linux's `sync_file_range`); where that is missing, nothing. A later
    fsync then waits for less; it is still what makes the bytes durable."""
    sync_file_range = _sync_file_range()
    if sync_file_range is not None:
        sync_file_range(fd, offset, length, _SYNC_FILE_RANGE_WRITE)


_SYNC_FILE_RANGE_WRITE = 2


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    function.restype = ctypes.c_int
    return cast(Callable[[int, int, int, int], int], function)


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
    if isinstance(err, NotARegularFileError | RefusedInputError):
        return err.strerror or str(err)
    if err.errno is not None and err.strerror:
        return f"{err.strerror} (os error {err.errno})"
    return str(err)
