"""The `metrics.jsonl` event log that `cce index` and `cce search` append to.

Why it exists: both commands record one `cce.metrics/v1` event per run beside the
store (docs/index-store.md#index-events, docs/retrieval.md#search-events), with the same id scheme,
timestamp format, file location rule and byte format (compact JSON, keys sorted, floats printed
like the reference's serde_json). Writing is fail-open: a log that cannot be written
costs a stderr warning, never the command's result.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import math
import os
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Final

from cce_retrieval import describe_os_error, format_json_float

METRICS_SCHEMA: Final = "cce.metrics/v1"
METRICS_FILE_NAME: Final = "metrics.jsonl"

_event_counter = itertools.count()


def new_event_id() -> str:
    """First 12 hex chars of SHA-256 of `"<unix nanos>-<counter>-<pid>"` (unique per event)."""
    seed = f"{time.time_ns()}-{next(_event_counter)}-{os.getpid()}"
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:12]


def utc_timestamp(seconds: float | None = None) -> str:
    """`YYYY-MM-DDTHH:MM:SSZ` in UTC, whole seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def metrics_path(store_path: str) -> str:
    """`metrics.jsonl` in the store's directory, or in the CWD for a bare store file name."""
    return os.path.join(os.path.dirname(store_path), METRICS_FILE_NAME)


def encode_compact(value: object) -> str:
    """Compact JSON with object keys sorted and floats in serde_json's (ryu) layout."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot record the non-finite number {value!r}")
        return format_json_float(value)
    if isinstance(value, str):
        return encode_basestring(value)
    if isinstance(value, Mapping):
        items = sorted((str(k), v) for k, v in value.items())
        return (
            "{" + ",".join(encode_basestring(k) + ":" + encode_compact(v) for k, v in items) + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode_compact(v) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


class _NotALogFile(OSError):
    """The log path is a symlink or not a regular file; the event is not written."""


def _append_line(path: str, line: bytes) -> None:
    """Append one whole line to the log at `path`, or nothing at all.

    The log is never reached through a symlink (a committed `.cce/metrics.jsonl` link
    must not send queries elsewhere) and never opened unless it is a regular file (a FIFO
    would block). A short or failed write (a full disk) is cut back to the previous end,
    so no partial line can glue onto the next event.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags | os.O_CLOEXEC, 0o644)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _NotALogFile(errno.ELOOP, "it is a symlink; the log is never followed") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _NotALogFile(errno.EINVAL, "it is not a regular file")
        start = info.st_size
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)


def append_event(store_path: str, record: Mapping[str, object]) -> str | None:
    """Append `record` plus `schema`, `ts` and a fresh `id`; return the id, or None on failure.

    Fields already in `record` win over the defaults, except `id`, which is always new.
    On failure prints `warning: could not write metrics to <path>: <error>` to stderr.
    """
    event_id = new_event_id()
    event: dict[str, object] = {"schema": METRICS_SCHEMA, "ts": utc_timestamp()}
    event.update(record)
    event["id"] = event_id
    path = metrics_path(store_path)
    try:
        line = (encode_compact(event) + "\n").encode("utf-8")
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        _append_line(path, line)
    except _NotALogFile as err:
        print(f"warning: could not write metrics to {path}: {err.strerror}", file=sys.stderr)
        return None
    except OSError as err:
        print(
            f"warning: could not write metrics to {path}: {describe_os_error(err)}",
            file=sys.stderr,
        )
        return None
    except (TypeError, ValueError) as err:
        print(f"warning: could not write metrics to {path}: {err}", file=sys.stderr)
        return None
    return event_id


def git_head_sha(directory: str) -> str | None:
    """`git rev-parse HEAD` run in `directory`, or None if git or the repository is absent."""
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=10,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = completed.stdout.strip()
    if completed.returncode != 0 or not sha:
        return None
    return sha


def write_index_event(
    store_path: str,
    directory: str,
    *,
    chunks: int,
    files_indexed: int,
    sensitive_skipped: int,
    embedder: str,
    index_bytes: int,
    duration_ms: float,
) -> str | None:
    """Append the `index` event of docs/index-store.md#index-events for a store just written; the
    event id or None."""
    record: dict[str, object] = {
        "chunks": chunks,
        "duration_ms": duration_ms,
        "embedder": embedder,
        "event": "index",
        "files_indexed": files_indexed,
        "full": True,
        "index_bytes": index_bytes,
        "sensitive_skipped": sensitive_skipped,
        "sha": git_head_sha(directory),
        "source": "local",
    }
    return append_event(store_path, record)


__all__ = [
    "METRICS_SCHEMA",
    "append_event",
    "encode_compact",
    "git_head_sha",
    "metrics_path",
    "new_event_id",
    "utc_timestamp",
    "write_index_event",
]
