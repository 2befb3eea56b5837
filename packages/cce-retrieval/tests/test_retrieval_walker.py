"""The corpus walk: the docs/index-store.md#walking-the-tree anchors, pruning, symlinks, per-file
checks and counters."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_retrieval.walk.walker import MAX_FILE_BYTES, PRUNED_DIR_NAMES, WalkedFile, WalkResult, walk


def _write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return target


def _paths(result: WalkResult) -> list[str]:
    return [walked.rel_path for walked in result.files]


# --- docs/index-store.md#walking-the-tree anchors -------------------------------------


def test_anchor_pruned_dirs_big_and_binary_files(tmp_path: Path) -> None:
    _write(tmp_path, "keep.py")
    _write(tmp_path, ".git/config", "[core]\n")
    _write(tmp_path, "node_modules/foo/a.js", "x\n")
    _write(tmp_path, "__pycache__/c.pyc", "x\n")
    _write(tmp_path, ".hidden/secret.py")
    _write(tmp_path, "big.py", b"a" * (2 * 1024 * 1024 + 1))
    _write(tmp_path, "bin.dat", b"\xff\xfe\x00")
    result = walk(str(tmp_path))
    assert _paths(result) == ["keep.py"]
    assert result.skipped == 2


def test_anchor_jsonl_is_skipped(tmp_path: Path) -> None:
    _write(tmp_path, "keep.py")
    _write(tmp_path, "metrics_sample.jsonl", '{"a": 1}\n')
    result = walk(str(tmp_path))
    assert _paths(result) == ["keep.py"]
    assert result.skipped == 1


def test_anchor_sensitive_files_skipped_with_protection(tmp_path: Path) -> None:
    for name in ("keep.py", ".env", "id_rsa", "server.pem", ".env.example"):
        _write(tmp_path, name)
    result = walk(str(tmp_path))
    assert _paths(result) == [".env.example", "keep.py"]
    assert result.sensitive_skipped == 3
    assert result.skipped == 0


def test_anchor_sensitive_files_walked_without_protection(tmp_path: Path) -> None:
    _write(tmp_path, ".env", "A=1\n")
    _write(tmp_path, "id_rsa", "key\n")
    result = walk(str(tmp_path), protect=False)
    assert _paths(result) == [".env", "id_rsa"]
    assert result.sensitive_skipped == 0


def _gitignore_tree(root: Path, with_ignored_file: bool) -> None:
    _write(root, ".gitignore", "generated.ts\ncoverage/\n")
    _write(root, "app.ts", "export const a = 1;\n")
    if with_ignored_file:
        _write(root, "generated.ts", "export const g = 1;\n")
    _write(root, "coverage/lcov.ts", "c\n")
    _write(root, "src/.gitignore", "local.ts\n")
    _write(root, "src/main.ts", "main();\n")
    _write(root, "src/local.ts", "local();\n")


def test_anchor_gitignore_root_and_nested(tmp_path: Path) -> None:
    _gitignore_tree(tmp_path, with_ignored_file=True)
    result = walk(str(tmp_path))
    assert _paths(result) == [".gitignore", "app.ts", "src/.gitignore", "src/main.ts"]
    assert (result.skipped, result.sensitive_skipped, result.walk_errors) == (0, 0, 0)


def test_anchor_gitignored_file_on_disk_or_not_gives_identical_lists(tmp_path: Path) -> None:
    with_file, without_file = tmp_path / "with", tmp_path / "without"
    _gitignore_tree(with_file, with_ignored_file=True)
    _gitignore_tree(without_file, with_ignored_file=False)
    assert walk(str(with_file)) == walk(str(without_file))


def test_anchor_git_info_exclude_is_not_honoured(tmp_path: Path) -> None:
    _write(tmp_path, ".git/info/exclude", "machine_local.ts\n")
    _write(tmp_path, "machine_local.ts", "m\n")
    assert _paths(walk(str(tmp_path))) == ["machine_local.ts"]


def test_anchor_cce_store_dir_pruned(tmp_path: Path) -> None:
    _write(tmp_path, "app.ts", "a\n")
    _write(tmp_path, ".cce/store.ts", "s\n")
    assert _paths(walk(str(tmp_path))) == ["app.ts"]


def test_anchor_sorted_by_rel_path(tmp_path: Path) -> None:
    for rel in ("z/b.py", "a/c.py", "m.py"):
        _write(tmp_path, rel)
    assert _paths(walk(str(tmp_path))) == ["a/c.py", "m.py", "z/b.py"]


def test_anchor_backslash_in_name_is_a_distinct_path(tmp_path: Path) -> None:
    _write(tmp_path, "a/b.py", "one\n")
    _write(tmp_path, "a\\b.py", "two\n")
    assert walk(str(tmp_path)).files == (
        WalkedFile("a/b.py", "one\n"),
        WalkedFile("a\\b.py", "two\n"),
    )


# --- pruning ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PRUNED_DIR_NAMES))
def test_pruned_names_at_any_depth(tmp_path: Path, name: str) -> None:
    _write(tmp_path, f"{name}/top.py")
    _write(tmp_path, f"src/pkg/{name}/deep.py")
    _write(tmp_path, "src/pkg/kept.py")
    assert _paths(walk(str(tmp_path))) == ["src/pkg/kept.py"]


def test_pruning_is_case_sensitive(tmp_path: Path) -> None:
    _write(tmp_path, "Build/a.py")
    assert _paths(walk(str(tmp_path))) == ["Build/a.py"]


@pytest.mark.parametrize("root_name", ["build", ".x", "node_modules"])
def test_root_is_never_pruned(tmp_path: Path, root_name: str) -> None:
    root = tmp_path / root_name
    _write(root, "a.py")
    assert _paths(walk(str(root))) == ["a.py"]


def test_files_named_like_pruned_dirs_are_indexed(tmp_path: Path) -> None:
    _write(tmp_path, "build", "all:\n")
    _write(tmp_path, ".git", "gitdir: ../x\n")
    _write(tmp_path, "sub/dist", "d\n")
    assert _paths(walk(str(tmp_path))) == [".git", "build", "sub/dist"]


def test_dotfiles_are_walked_but_dotdirs_pruned(tmp_path: Path) -> None:
    _write(tmp_path, ".eslintrc.js", "module.exports = {};\n")
    _write(tmp_path, ".github/workflows/ci.yml", "on: push\n")
    assert _paths(walk(str(tmp_path))) == [".eslintrc.js"]


# --- symlinks and special files ------------------------------------------------------------


def test_symlinks_vanish_uncounted(tmp_path: Path) -> None:
    _write(tmp_path, "real/a.py")
    (tmp_path / "link_dir").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "link.py").symlink_to(tmp_path / "real" / "a.py")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing.py")
    result = walk(str(tmp_path))
    assert _paths(result) == ["real/a.py"]
    assert (result.skipped, result.sensitive_skipped, result.walk_errors) == (0, 0, 0)


def test_root_may_be_a_symlink_to_a_directory(tmp_path: Path) -> None:
    _write(tmp_path, "real/a.py")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert _paths(walk(str(tmp_path / "alias"))) == ["a.py"]


def test_fifo_and_socket_vanish(tmp_path: Path) -> None:
    _write(tmp_path, "a.py")
    os.mkfifo(tmp_path / "pipe")
    sock_path = str(tmp_path / "sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(sock_path)
        result = walk(str(tmp_path))
    finally:
        server.close()
    assert _paths(result) == ["a.py"]
    assert (result.skipped, result.walk_errors) == (0, 0)


# --- per-file checks ----------------------------------------------------------------------


def test_size_boundary_exactly_two_mib_kept_one_more_skipped(tmp_path: Path) -> None:
    assert MAX_FILE_BYTES == 2_097_152
    _write(tmp_path, "exact.txt", b"a" * MAX_FILE_BYTES)
    _write(tmp_path, "over.txt", b"a" * (MAX_FILE_BYTES + 1))
    result = walk(str(tmp_path))
    assert _paths(result) == ["exact.txt"]
    assert len(result.files[0].text) == MAX_FILE_BYTES
    assert result.skipped == 1


def test_non_utf8_content_is_skipped_but_nul_bytes_are_kept(tmp_path: Path) -> None:
    _write(tmp_path, "latin1.txt", "caf\xe9\n".encode("latin-1"))
    _write(tmp_path, "nul.txt", b"a\x00b\n")
    result = walk(str(tmp_path))
    assert result.files == (WalkedFile("nul.txt", "a\x00b\n"),)
    assert result.skipped == 1


def test_bom_and_crlf_are_kept(tmp_path: Path) -> None:
    _write(tmp_path, "a.py", b"\xef\xbb\xbfx = 1\r\ny = 2\r\n")
    assert walk(str(tmp_path)).files == (WalkedFile("a.py", "\ufeffx = 1\r\ny = 2\r\n"),)


def test_jsonl_extension_is_exact_and_case_sensitive(tmp_path: Path) -> None:
    _write(tmp_path, "a.jsonl", "{}\n")
    _write(tmp_path, "b.JSONL", "{}\n")
    _write(tmp_path, ".jsonl", "{}\n")
    _write(tmp_path, "c.jsonl.txt", "{}\n")
    result = walk(str(tmp_path))
    assert _paths(result) == [".jsonl", "b.JSONL", "c.jsonl.txt"]
    assert result.skipped == 1


def test_sensitive_is_checked_before_jsonl_and_size(tmp_path: Path) -> None:
    _write(tmp_path, "id_rsa", b"\xff" * (MAX_FILE_BYTES + 1))
    _write(tmp_path, "x.key.jsonl", "{}\n")
    _write(tmp_path, "y.jsonl.pem", "{}\n")
    result = walk(str(tmp_path))
    assert result.files == ()
    assert (result.sensitive_skipped, result.skipped) == (2, 1)


def test_jsonl_is_checked_before_size(tmp_path: Path) -> None:
    _write(tmp_path, "huge.jsonl", b"a" * (MAX_FILE_BYTES + 1))
    assert walk(str(tmp_path)).skipped == 1


def test_sensitive_file_is_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, ".env", "A=1\n")
    opened: list[object] = []
    real_open = open

    def spying_open(path: object, *args: object, **kwargs: object) -> object:
        opened.append(path)
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", spying_open)
    result = walk(str(tmp_path))
    assert result.sensitive_skipped == 1
    assert opened == []


def test_non_utf8_file_name_is_converted_lossily(tmp_path: Path) -> None:
    raw = os.path.join(os.fsencode(tmp_path), b"caf\xe9.py")
    with open(raw, "wb") as handle:
        handle.write(b"x\n")
    assert _paths(walk(str(tmp_path))) == ["caf\ufffd.py"]


def test_sorted_by_str_order_not_by_walk_order(tmp_path: Path) -> None:
    for rel in ("a-b/x.py", "a/x.py", "a.py", "B.py", "\u00e9.py"):
        _write(tmp_path, rel)
    assert _paths(walk(str(tmp_path))) == ["B.py", "a-b/x.py", "a.py", "a/x.py", "\u00e9.py"]


# --- errors ---------------------------------------------------------------------------------


def test_unreadable_subdirectory_counts_one_walk_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, "ok.py")
    _write(tmp_path, "locked/lost.py")
    real_scandir = os.scandir
    locked = os.fsencode(tmp_path / "locked")

    def failing_scandir(path: bytes) -> object:
        if path == locked:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", failing_scandir)
    result = walk(str(tmp_path))
    assert _paths(result) == ["ok.py"]
    assert (result.walk_errors, result.skipped) == (1, 0)


def test_missing_root_is_one_walk_error(tmp_path: Path) -> None:
    result = walk(str(tmp_path / "missing"))
    assert result == WalkResult((), 0, 0, 1)


def test_read_error_counts_as_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "a.py")
    _write(tmp_path, "b.py")
    real_open = os.open

    def failing_open(path: bytes, flags: int, *args: int) -> int:
        if isinstance(path, bytes) and path.endswith(b"b.py"):
            raise OSError(5, "I/O error")
        return real_open(path, flags, *args)

    monkeypatch.setattr("os.open", failing_open)
    result = walk(str(tmp_path))
    assert _paths(result) == ["a.py"]
    assert result.skipped == 1


# --- reference fixtures ---------------------------------------------------------------------


def test_reference_samples_walk_to_the_conformance_file_set(
    reference_path: Callable[..., Path],
) -> None:
    samples = reference_path("test", "fixture", "samples")
    conformance = json.loads(reference_path("conformance.json").read_text(encoding="utf-8"))
    expected = sorted({chunk["file_path"] for chunk in conformance["chunks"]})
    result = walk(str(samples))
    assert _paths(result) == expected
    assert (result.skipped, result.sensitive_skipped, result.walk_errors) == (0, 0, 0)


def test_reference_base_fixture_skips_its_jsonl_log(
    reference_path: Callable[..., Path],
) -> None:
    base = reference_path("test", "fixture", "base")
    result = walk(str(base))
    assert _paths(result) == ["README.md", "auth.py", "payments.py"]
    assert result.skipped == 1
