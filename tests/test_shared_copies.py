"""Helpers that live in more than one package agree with each other.

Why it exists: cce-fixtures, cce-metrics and cce-retrieval are each usable alone, and
cce-fixtures and cce-retrieval do not depend on each other, so a few small helpers are
kept as copies rather than imported across that boundary
(docs/architecture.md#copies-kept-on-purpose). Nothing inside one package can see the
other copies; this workspace-level test can, and fails the day they part:

- the Rust `White_Space` set and `rust_trim` of cce_fixtures and of cce_retrieval;
- `rust_lines` of cce_fixtures and of cce_metrics;
- the atomic file writers of cce_retrieval (`write_atomic`) and of cce_metrics' TREC
  files (`write_run`, `write_qrels`): the same bytes, no temporary left, and a failed
  write keeps the previous file;
- the input file readers of cce_retrieval and cce_fixtures (`read_input_file`): the same
  bytes, or the same refusal, for a regular file, one over the limit, a FIFO and a device;
  and the names their refusals give each kind of file (`file_type_name`), every kind.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cce_fixtures.input_file as fixtures_input
import cce_fixtures.rust_text as fixtures_text
import cce_metrics.tokens as metrics_tokens
import cce_retrieval.file_kinds as retrieval_file_kinds
import cce_retrieval.parity.text as retrieval_text
import cce_retrieval.store.fileio as retrieval_fileio
from cce_metrics.trec import format_qrels, format_run, write_qrels, write_run
from cce_retrieval import write_atomic

# Python's `str.isspace` is the White_Space property plus the four ASCII separators
# U+001C-U+001F, which Rust does not trim; that gives a third, independent spelling.
_WHITE_SPACE = frozenset(
    char for char in map(chr, range(sys.maxunicode + 1)) if char.isspace()
) - frozenset("\x1c\x1d\x1e\x1f")

# Characters near the edge of the set: separators and format characters that are not
# White_Space, so a copy that grew or lost one shows up.
_NEAR_MISSES = "\x1c\x1d\x1e\x1f\u180e\u200b\u200c\u200d\u2060\ufeff\x00"

_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(sorted(_WHITE_SPACE)),
        st.sampled_from(_NEAR_MISSES),
        st.characters(),
    ),
    max_size=40,
)

_PROPERTY = settings(max_examples=300, derandomize=True, deadline=None, database=None)


def test_the_white_space_sets_are_one_set() -> None:
    assert frozenset(fixtures_text._RUST_WHITE_SPACE) == retrieval_text.RUST_WHITESPACE
    assert retrieval_text.RUST_WHITESPACE == _WHITE_SPACE
    assert len(_WHITE_SPACE) == 25


@_PROPERTY
@given(_TEXT)
def test_rust_trim_is_the_same_in_fixtures_and_retrieval(text: str) -> None:
    assert fixtures_text.rust_trim(text) == retrieval_text.rust_trim(text)


@_PROPERTY
@given(st.text(alphabet=st.one_of(st.sampled_from("\r\n\u2028\x0b\x0c\x85"), st.characters())))
def test_rust_lines_is_the_same_in_fixtures_and_metrics(text: str) -> None:
    assert fixtures_text.rust_lines(text) == metrics_tokens.rust_lines(text)


@pytest.mark.parametrize(
    "text",
    ["", "\n", "a", "a\n", "a\r\n", "a\rb", "\r\n\r\n", "a\n\nb\n", "a\u2028b\x85c\r"],
)
def test_rust_lines_anchors(text: str) -> None:
    assert fixtures_text.rust_lines(text) == metrics_tokens.rust_lines(text)


_RUN = {"q2": {"d3": 0.25, "d1": 1.5}, "q1": {"d9": -0.125}}
_QRELS = {"q1": {"d9": 2, "d1": 0}, "q2": {"d3": 1}}

# (what is written, the TREC writer, its formatter): each TREC writer beside
# `write_atomic` of the text its formatter makes.
_TREC_WRITERS: list[tuple[str, Callable[[Path], None], Callable[[], str]]] = [
    ("run", lambda path: write_run(path, _RUN, "tag"), lambda: format_run(_RUN, "tag")),
    ("qrels", lambda path: write_qrels(path, _QRELS), lambda: format_qrels(_QRELS)),
]


def _write_with_retrieval(path: Path, text: str) -> None:
    write_atomic(str(path), text.encode("utf-8"))


@pytest.mark.parametrize(("kind", "write_trec", "format_trec"), _TREC_WRITERS)
def test_both_writers_leave_the_same_bytes_and_no_temporary(
    tmp_path: Path, kind: str, write_trec: Callable[[Path], None], format_trec: Callable[[], str]
) -> None:
    (tmp_path / "metrics").mkdir()
    (tmp_path / "retrieval").mkdir()
    for directory in ("metrics", "retrieval"):
        # Written twice: the second write replaces a file that is already there.
        (tmp_path / directory / kind).write_bytes(b"previous\n")
    write_trec(tmp_path / "metrics" / kind)
    _write_with_retrieval(tmp_path / "retrieval" / kind, format_trec())

    written = (tmp_path / "metrics" / kind).read_bytes()
    assert written == (tmp_path / "retrieval" / kind).read_bytes()
    assert written == format_trec().encode("utf-8")
    assert os.listdir(tmp_path / "metrics") == [kind]
    assert os.listdir(tmp_path / "retrieval") == [kind]


@pytest.mark.parametrize("failing", ["fsync", "replace"])
@pytest.mark.parametrize("writer", ["metrics", "retrieval"])
def test_a_failed_write_keeps_the_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str, writer: str
) -> None:
    path = tmp_path / "run"
    path.write_bytes(b"previous\n")

    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, fail)
    with pytest.raises(OSError, match="No space left"):
        if writer == "metrics":
            write_run(path, _RUN)
        else:
            _write_with_retrieval(path, format_run(_RUN))
    monkeypatch.undo()

    assert path.read_bytes() == b"previous\n"
    assert os.listdir(tmp_path) == ["run"]


def _read_outcome(
    read: Callable[[str, int, str], bytes], path: str
) -> tuple[str, bytes | str | None, int | None]:
    try:
        return ("read", read(path, 16, "fixture files"), None)
    except OSError as error:
        return (type(error).__name__, error.strerror, error.errno)


def test_the_input_file_readers_agree(tmp_path: Path) -> None:
    (tmp_path / "small").write_bytes(b"0123456789abcdef")
    (tmp_path / "large").write_bytes(b"0123456789abcdefg")
    (tmp_path / "empty").write_bytes(b"")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "dir").mkdir()
    names = ["small", "large", "empty", "fifo", "zero", "dir", "missing"]
    for name in names:
        path = str(tmp_path / name)
        ours = _read_outcome(retrieval_fileio.read_input_file, path)
        theirs = _read_outcome(fixtures_input.read_input_file, path)
        assert ours == theirs, name
    assert _read_outcome(fixtures_input.read_input_file, str(tmp_path / "fifo")) == (
        "RefusedInputError",
        "not a regular file (a FIFO); give a regular file",
        errno.EINVAL,
    )
    assert fixtures_input.MAX_FIXTURE_BYTES == 1 << 30


@pytest.mark.parametrize(
    "kind",
    [
        stat.S_IFREG,
        stat.S_IFDIR,
        stat.S_IFCHR,
        stat.S_IFBLK,
        stat.S_IFIFO,
        stat.S_IFSOCK,
        stat.S_IFLNK,
    ],
)
def test_the_file_kind_names_agree(kind: int) -> None:
    mode = kind | 0o644
    assert retrieval_file_kinds.file_type_name(mode) == fixtures_input.file_type_name(mode)
