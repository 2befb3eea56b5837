"""SHA-256 digests of a store and of its sidecar's parts, hashed once per file state and
remembered beside the sidecar.

Why it exists: a sidecar is used only for the store bytes it was made from, and only
while every part still holds the bytes it was written with; hashing a large store, or
a hundred megabytes of parts, on every `cce search` would cost what the sidecar saves.
So each digest is remembered with the file's status (device, inode, size, modification
and change times) once that status has settled, and the file is hashed again whenever
its status differs (docs/index-store.md#sidecar).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping
from typing import Final

import attrs

from cce_retrieval.store.fileio import (
    input_too_large,
    open_input_file,
    read_input_file,
    write_atomic,
)
from cce_retrieval.store.paths import MAX_STORE_BYTES
from cce_retrieval.store.sidecar.parts import SIDECAR_SCHEMA, sidecar_dir

_STATUS_SUFFIX: Final = ".status.json"

_MAX_RECORD_BYTES: Final = 16 << 20
"""The most read of a digest's status record or a sidecar's verified-parts record (a few
hundred bytes each); one that is larger, or not a regular file, is not trusted."""


_HASH_BLOCK: Final = 1 << 22


def file_sha256(path: str) -> tuple[str, int]:
    """(SHA-256 hex, size) of a store file, read in blocks. Raises OSError, and
    `RefusedInputError` for a path that is not a regular file or holds more than a store
    may (a FIFO would block the open, `/dev/zero` would be hashed forever)."""
    digest = hashlib.sha256()
    size = 0
    with open_input_file(path, MAX_STORE_BYTES, "stores") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
            size += len(block)
            if size > MAX_STORE_BYTES:
                raise input_too_large(path, MAX_STORE_BYTES, "stores")
    return digest.hexdigest(), size


_SETTLED_NS: Final = 2_000_000_000
"""A store must have been untouched this long before it was hashed for the digest to be
remembered by its file status (below): a write in the same clock tick as the hash could
otherwise leave the status unchanged."""


def _status(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def remembered_digest(directory: str, st: os.stat_result) -> str | None:
    """The digest recorded for a store with exactly this file status, if any.

    Replacing a store (a rename) gives it a new inode, and writing it in place changes
    its change time, which no program can set back; so an equal status means the bytes
    are the ones that were hashed, as git trusts its index for unchanged files.
    """
    status = _status(st)
    try:
        entries = [e.path for e in os.scandir(directory) if e.name.endswith(_STATUS_SUFFIX)]
    except OSError:
        return None
    for entry in entries:
        try:
            record = json.loads(read_input_file(entry, _MAX_RECORD_BYTES, "sidecar records"))
        except (OSError, ValueError, RecursionError):  # RecursionError: hostile nesting
            continue
        if (
            isinstance(record, dict)
            and record.get("status") == status
            and isinstance(record.get("sha256"), str)
            and os.path.basename(entry) == record["sha256"] + _STATUS_SUFFIX
        ):
            return str(record["sha256"])
    return None


def _remember_digest(directory: str, digest: str, st: os.stat_result, hashed_at_ns: int) -> None:
    """Record `digest` for the store's status `st`, when that status is settled."""
    if hashed_at_ns - max(st.st_mtime_ns, st.st_ctime_ns) < _SETTLED_NS:
        return
    record = {"schema": SIDECAR_SCHEMA, "sha256": digest, "status": _status(st)}
    with contextlib.suppress(OSError):
        write_atomic(
            os.path.join(directory, digest + _STATUS_SUFFIX), json.dumps(record).encode("utf-8")
        )


@attrs.frozen(slots=True)
class _FileDigest:
    """A store file's SHA-256 and the status it had; `hashed_at_ns` is set when the digest
    was computed now (not remembered) from a file that did not change while read."""

    sha256: str
    status: os.stat_result
    hashed_at_ns: int | None

    def remember(self, directory: str) -> None:
        """Record the digest for this status (`_remember_digest`), if it was just made."""
        if self.hashed_at_ns is not None:
            _remember_digest(directory, self.sha256, self.status, self.hashed_at_ns)


def file_digest(path: str, directory: str) -> _FileDigest:
    """The digest of the store at `path`: remembered for its status, else hashed. Raises
    OSError."""
    before = os.stat(path)
    remembered = remembered_digest(directory, before)
    if remembered is not None:
        return _FileDigest(remembered, before, None)
    hashed_at = time.time_ns()
    digest, _ = file_sha256(path)
    changed = _status(os.stat(path)) != _status(before)
    # Changed while being read: the digest is not recorded, and the next run hashes again.
    return _FileDigest(digest, before, None if changed else hashed_at)


def store_holds(store_path: str, store_sha256: str, store_size: int) -> bool:
    """Whether the file at `store_path` already holds exactly the bytes of this digest and
    size, so writing them again would change nothing; False on any doubt or OS error.

    Costs a stat when the sidecar directory remembers the digest for the file's status,
    else one read of the file (the digest is then remembered, once the file's status is
    settled, as `load_store` does)."""
    directory = sidecar_dir(store_path)
    try:
        if os.stat(store_path).st_size != store_size:
            return False
        found = file_digest(store_path, directory)
    except OSError:
        return False
    if found.sha256 != store_sha256 or found.status.st_size != store_size:
        return False
    found.remember(directory)
    return True


_VERIFIED_SUFFIX: Final = ".verified.json"


class _PartMismatch(Exception):
    """A part held another number of bytes than its manifest names when it was read."""


def _part_sha256(fd: int, size: int) -> str:
    """The SHA-256 of the `size` bytes of the open part `fd`; raises `_PartMismatch` when
    it holds another number of bytes (it grew or shrank while read)."""
    digest = hashlib.sha256()
    read = 0
    while block := os.read(fd, min(_HASH_BLOCK, size + 1 - read)):
        digest.update(block)
        read += len(block)
        if read > size:
            break
    if read != size:
        raise _PartMismatch
    return digest.hexdigest()


def _read_verified(directory: str, digest: str) -> dict[str, list[object]]:
    """The part statuses remembered as verified for the sidecar of `digest` (file name to
    status plus the part's digest); empty when there is no such record or it is damaged."""
    try:
        path = os.path.join(directory, digest + _VERIFIED_SUFFIX)
        record = json.loads(read_input_file(path, _MAX_RECORD_BYTES, "sidecar records"))
    except (OSError, ValueError, RecursionError):  # RecursionError: hostile nesting
        return {}
    if (
        not isinstance(record, dict)
        or record.get("sha256") != digest
        or not isinstance(record.get("parts"), dict)
    ):
        return {}
    return {str(k): v for k, v in record["parts"].items() if isinstance(v, list)}


def forget_verified_parts(directory: str, digest: str) -> None:
    """Drop what was remembered about the parts of `digest` (they are being replaced)."""
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(directory, digest + _VERIFIED_SUFFIX))


def parts_hold_their_bytes(
    directory: str, digest: str, parts: Mapping[str, Mapping[str, object]]
) -> bool:
    """Whether every part the manifest of `digest` names (`parts`: name to its `file`,
    byte size `bytes` and `sha256`) is a regular file holding exactly those bytes.

    A part whose status is the one remembered when it was last verified (with the same
    recorded digest) is not read; any other is hashed, and remembered once its status
    has settled (`_SETTLED_NS`) and did not change while it was read. So a normal open
    costs an open and an `fstat` per part; the first open after a write, or after a part
    changed on disk, reads the parts it has not verified yet. False on any doubt.
    """
    remembered = _read_verified(directory, digest)
    verified: dict[str, list[object]] = {}
    learned = False
    for part in parts.values():
        try:
            name, size, sha256 = str(part["file"]), part["bytes"], part["sha256"]
        except (KeyError, TypeError):
            return False
        if type(size) is not int or not isinstance(sha256, str) or os.sep in name:
            return False
        try:
            # A FIFO, a device or a part longer than recorded is refused before any read.
            handle = open_input_file(os.path.join(directory, name), size, "sidecar parts")
        except (OSError, ValueError):  # ValueError: a negative size, or a NUL in the name
            return False
        fd = handle.fileno()
        try:
            before = os.fstat(fd)
            if before.st_size != size:
                return False
            status: list[object] = [*_status(before), sha256]
            if remembered.get(name) == status:
                verified[name] = status
                continue
            hashed_at = time.time_ns()
            if _part_sha256(fd, size) != sha256:
                return False
            settled = hashed_at - max(before.st_mtime_ns, before.st_ctime_ns) >= _SETTLED_NS
            if settled and _status(os.fstat(fd)) == _status(before):
                verified[name] = status
                learned = True
        except (OSError, _PartMismatch):
            return False
        finally:
            handle.close()
    if learned:
        record = {"schema": SIDECAR_SCHEMA, "sha256": digest, "parts": verified}
        with contextlib.suppress(OSError):
            write_atomic(
                os.path.join(directory, digest + _VERIFIED_SUFFIX),
                json.dumps(record).encode("utf-8"),
            )
    return True
