"""`cce-fixtures validate` (and its pre-commit hook) with hostile files and streams.

A fixture path that is `/dev/zero` behind a symlink, a FIFO or `/dev/full` is refused
quickly instead of growing memory or blocking; a closed or full stdout ends as `cce`'s
does (docs/hostile-input.md#special-files-as-inputs, #output-streams-and-interrupts).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cce_fixtures.input_file import RefusedInputError, read_input_file

_VALID = '{"schema":"cce.relevance/v1"}\n{"query":"a","expected":["auth.py"]}\n'
_BROKEN = '{"schema":"cce.relevance/v1"}\n{"query":"a","expected":["a.py@0"]}\n'

# Far over the moment a refusal takes: only a hang reaches it.
_DEADLINE_SECONDS = 60

# The console script is what the pre-commit hook's `entry: cce-fixtures validate` runs.
_SCRIPT = str(Path(sys.executable).with_name("cce-fixtures"))
_ENTRY_POINTS = {
    "module": [sys.executable, "-m", "cce_fixtures"],
    "hook script": [_SCRIPT],
}


def _special(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"special-{kind}.jsonl"
    if kind == "zero-link":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/full")
    return path


@pytest.mark.parametrize("kind", ["zero-link", "fifo", "full-link"])
def test_a_special_file_is_refused_quickly(tmp_path: Path, kind: str) -> None:
    special = _special(tmp_path, kind)
    valid = tmp_path / "valid.jsonl"
    valid.write_text(_VALID)
    done = subprocess.run(
        [sys.executable, "-m", "cce_fixtures", "validate", str(special), str(valid)],
        capture_output=True,
        text=True,
        timeout=_DEADLINE_SECONDS,
        stdin=subprocess.DEVNULL,
    )
    described = "a FIFO" if kind == "fifo" else "a character device"
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == (
        f"{special}: could not read fixtures: not a regular file ({described}); "
        "give a regular file\n"
    )


def test_a_file_over_the_limit_or_growing_past_it_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"x" * 2048)
    with pytest.raises(RefusedInputError) as refused:
        read_input_file(str(path), 1024, "fixture files")
    assert refused.value.errno == errno.EFBIG
    assert refused.value.strerror == (
        "larger than 1 KiB, the most cce reads of fixture files; give a smaller file"
    )
    # fstat saw a small file; it grows before it is read: reading stops past the limit.
    path.write_bytes(b"y" * 10)
    real_fstat = os.fstat

    def fstat_then_grow(fd: int) -> os.stat_result:
        status = real_fstat(fd)
        with open(path, "ab") as grow:
            grow.write(b"z" * 4096)
        return status

    monkeypatch.setattr(os, "fstat", fstat_then_grow)
    with pytest.raises(RefusedInputError, match="larger than 1 KiB"):
        read_input_file(str(path), 1024, "fixture files")


@pytest.mark.parametrize("entry", sorted(_ENTRY_POINTS))
def test_a_closed_stdout_is_refused_before_any_work(tmp_path: Path, entry: str) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text(_BROKEN)
    closed = subprocess.run(
        [*_ENTRY_POINTS[entry], "validate", str(broken)],
        stdout=None,
        stderr=subprocess.PIPE,
        check=False,
        timeout=_DEADLINE_SECONDS,
        preexec_fn=lambda: os.close(1),
    )
    assert closed.returncode == 1
    assert closed.stderr == (
        b"error: stdout is closed; nothing was done (redirect it, e.g. > /dev/null)\n"
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("entry", sorted(_ENTRY_POINTS))
def test_a_full_stdout_is_an_error(tmp_path: Path, entry: str) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text(_BROKEN)
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [*_ENTRY_POINTS[entry], "validate", str(broken)],
            stdout=full,
            stderr=subprocess.PIPE,
            check=False,
            timeout=_DEADLINE_SECONDS,
        )
    assert done.returncode == 1
    assert done.stderr == (
        b"error: could not write to stdout: No space left on device (os error 28)\n"
    )
