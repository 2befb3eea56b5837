"""Hostile corpora for the walk: pathological globs, special-file `.gitignore`s, odd names.

Each test builds one way a crafted tree could hang the walk, exhaust memory or merge
files, and pins what the walk does instead (docs/hostile-input.md).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval.walk.gitignore import (
    MAX_GITIGNORE_BYTES,
    MAX_GLOB_CHARS,
    GitignoreReadError,
    GlobError,
    compile_regex,
    glob_to_regex,
    parse_gitignore,
    read_regular_file,
)
from cce_retrieval.walk.walker import display_names, walk

# --- globs: linear-time matching, same answers as the backtracking engine --------------


def test_star_run_line_with_a_long_name_finishes(tmp_path: Path) -> None:
    # Under backtracking `re` this line against this name does not finish in hours.
    (tmp_path / ".gitignore").write_text("*" * 40 + "a\n")
    (tmp_path / ("b" * 240 + ".py")).write_text("x = 1\n")
    (tmp_path / "ba").write_text("x = 1\n")
    result = walk(str(tmp_path))
    assert [f.rel_path for f in result.files] == [".gitignore", "b" * 240 + ".py"]


def test_many_stars_separated_by_literals_match_in_linear_time() -> None:
    gitignore = parse_gitignore(("*a" * 60 + "b\n").encode())
    assert gitignore.matched(b"a" * 4000, is_dir=False).value == "none"
    assert gitignore.matched(b"a" * 60 + b"b", is_dir=False).value == "ignore"


def test_star_runs_collapse_to_one() -> None:
    assert glob_to_regex("a" + "*" * 5000 + "b") == glob_to_regex("a*b")


def test_overlong_glob_is_a_glob_error(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(GlobError, match="longer than"):
        glob_to_regex("{a,b}" * (MAX_GLOB_CHARS // 5 + 1))
    gitignore = parse_gitignore(("{a,b}" * 20_000 + "\nkept.txt\n").encode())
    assert [p.original for p in gitignore.patterns] == ["kept.txt"]
    assert capfd.readouterr().err == ""


def test_long_but_allowed_globs_compile_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    for glob in ("a" * 60_000, "{a,b}" * 12_000, "[ab]" * 15_000, "*a" * 30_000):
        compile_regex(glob_to_regex(glob))
    assert capfd.readouterr().err == ""


_GLOB_CHARS = st.sampled_from(list("ab/*?[]{},!-\\.é^"))
_PATH_BYTES = st.sampled_from([b"a", b"b", b"/", b".", b"-", b"\xc3\xa9", b"\xff", b"]"])


@settings(max_examples=600, deadline=None)
@given(
    glob=st.text(_GLOB_CHARS, max_size=9),
    paths=st.lists(st.lists(_PATH_BYTES, max_size=8).map(b"".join), min_size=1, max_size=6),
)
def test_re2_agrees_with_backtracking_re(glob: str, paths: list[bytes]) -> None:
    try:
        source = glob_to_regex(glob)
    except GlobError:
        return
    backtracking = re.compile(source.encode("ascii"))
    linear = compile_regex(source)
    for path in paths:
        assert (backtracking.match(path) is None) == (linear.match(path) is None), (glob, path)


@pytest.mark.parametrize(
    ("line", "path", "ignored"),
    [
        ("*.py", b"src/a.py", True),
        ("*.py", b"src/a.pyc", False),
        ("/build", b"build", True),
        ("doc/**/*.md", b"doc/x/y/z.md", True),
        ("[!a]*.txt", b"b.txt", True),
        ("[!a]*.txt", b"a.txt", False),
        ("{foo,bar}.rs", b"x/bar.rs", True),
        ("?.bin", b"\xff.bin", True),
        ("?.bin", b"\xc3\xa9.bin", False),  # `?` is one byte, as in globset
    ],
)
def test_ordinary_lines_match_as_before(line: str, path: bytes, ignored: bool) -> None:
    gitignore = parse_gitignore(f"{line}\n".encode())
    pattern = gitignore.patterns[0]
    old = re.compile(pattern.source.encode("ascii")).match(path) is not None
    assert old is ignored
    assert (gitignore.matched(path, is_dir=False).value == "ignore") is ignored


# --- .gitignore that is not a regular file ----------------------------------------------


def test_fifo_gitignore_is_a_walk_error_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "a.py").write_text("x = 1\n")
    result = walk(str(tmp_path))
    assert [f.rel_path for f in result.files] == ["a.py"]
    assert (result.walk_errors, result.gitignore_errors) == (1, 1)


def test_gitignore_symlink_to_dev_zero_is_a_walk_error(tmp_path: Path) -> None:
    os.symlink("/dev/zero", tmp_path / ".gitignore")
    (tmp_path / "a.py").write_text("x = 1\n")
    result = walk(str(tmp_path))
    assert [f.rel_path for f in result.files] == ["a.py"]
    assert result.walk_errors == 1


def test_oversized_gitignore_is_a_walk_error(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_bytes(b"#" * (MAX_GITIGNORE_BYTES + 1))
    (tmp_path / "a.py").write_text("x = 1\n")
    result = walk(str(tmp_path))
    assert (result.walk_errors, result.gitignore_errors) == (1, 1)


def test_gitignore_at_the_limit_is_read(tmp_path: Path) -> None:
    body = b"a.py\n"
    (tmp_path / ".gitignore").write_bytes(body + b"#" * (MAX_GITIGNORE_BYTES - len(body)))
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    result = walk(str(tmp_path))
    assert [f.rel_path for f in result.files] == ["b.py"]
    assert result.walk_errors == 0


def test_reading_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    # The corpus-file path: a regular file swapped for a FIFO after `scandir` saw it.
    os.mkfifo(tmp_path / "swapped.py")
    with pytest.raises(GitignoreReadError):
        read_regular_file(os.fsencode(tmp_path / "swapped.py"), 1024)


def test_a_file_that_grew_past_the_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x" * 11)
    with pytest.raises(GitignoreReadError):
        read_regular_file(os.fsencode(tmp_path / "a.py"), 10)
    assert read_regular_file(os.fsencode(tmp_path / "a.py"), 11) == b"x" * 11


# --- non-UTF-8 names ----------------------------------------------------------------------


def _touch(root: Path, name: bytes) -> None:
    with open(os.path.join(os.fsencode(root), name), "wb") as handle:
        handle.write(b"x = 1\n")


def test_non_utf8_names_that_would_merge_stay_distinct(tmp_path: Path) -> None:
    for name in (b"x\xff.py", b"x\xfe.py", "x\ufffd.py".encode()):
        _touch(tmp_path, name)
    result = walk(str(tmp_path))
    assert [f.rel_path for f in result.files] == ["x\\xfe.py", "x\\xff.py", "x\ufffd.py"]
    assert result.walk_errors == 0


def test_a_lone_non_utf8_name_keeps_the_reference_spelling(tmp_path: Path) -> None:
    _touch(tmp_path, b"x\xff.py")
    os.mkdir(os.path.join(os.fsencode(tmp_path), b"d\xfe"))
    _touch(tmp_path / "d\udcfe", b"y.py")
    assert [f.rel_path for f in walk(str(tmp_path)).files] == ["d\ufffd/y.py", "x\ufffd.py"]


def test_escaped_name_clashing_with_a_literal_name_is_a_walk_error(tmp_path: Path) -> None:
    for name in (b"x\xff.py", b"x\\xff.py", "x\ufffd.py".encode()):
        _touch(tmp_path, name)
    result = walk(str(tmp_path))
    assert [f.rel_path for f in result.files] == ["x\\xff.py", "x\ufffd.py"]
    assert result.walk_errors == 1


def test_display_names_is_identity_on_utf8() -> None:
    names = [b"a.py", "é.py".encode(), b"a\\xff"]
    assert display_names(names) == {n: n.decode() for n in names}
