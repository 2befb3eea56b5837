"""`.gitignore` line reading, globset translation and matching
(docs/index-store.md#gitignore-rules).

Unit tests drive `parse_gitignore` directly; the scoping rules that need directories
(nearest file decides, self-ignoring file, dir pruning) go through `walk` on tmp trees.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cce_retrieval.walk.gitignore import (
    GlobError,
    Match,
    glob_to_regex,
    parse_gitignore,
    parse_gitignore_line,
)
from cce_retrieval.walk.walker import walk


def _verdict(content: str | bytes, path: str, is_dir: bool = False) -> Match:
    data = content.encode("utf-8") if isinstance(content, str) else content
    return parse_gitignore(data).matched(path.encode("utf-8"), is_dir)


def _write(root: Path, rel: str, content: str = "x\n") -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content.encode("utf-8"))


def _walked(root: Path) -> list[str]:
    return [walked.rel_path for walked in walk(str(root)).files]


# --- line reading ---------------------------------------------------------------------


def test_plain_name_matches_at_any_depth() -> None:
    assert _verdict("foo.ts\n", "foo.ts") is Match.IGNORE
    assert _verdict("foo.ts\n", "a/b/foo.ts") is Match.IGNORE
    assert _verdict("foo.ts\n", "a/foo.tsx") is Match.NONE


def test_comment_lines_are_ignored() -> None:
    assert parse_gitignore(b"# foo\n").patterns == ()
    assert _verdict("# foo\n", "# foo") is Match.NONE


def test_leading_whitespace_is_significant_and_hash_not_at_start_is_literal() -> None:
    assert _verdict(" foo\n", " foo") is Match.IGNORE
    assert _verdict(" foo\n", "foo") is Match.NONE
    assert _verdict(" #foo\n", " #foo") is Match.IGNORE


def test_escaped_hash_and_bang_are_literals() -> None:
    assert _verdict("\\#foo\n", "#foo") is Match.IGNORE
    assert _verdict("\\!foo\n", "!foo") is Match.IGNORE
    assert _verdict("\\!foo\n", "foo") is Match.NONE


def test_trailing_whitespace_is_trimmed() -> None:
    assert _verdict("foo   \t\n", "foo") is Match.IGNORE
    assert _verdict("foo   \n", "foo   ") is Match.NONE


def test_trailing_backslash_space_keeps_the_space() -> None:
    assert _verdict("foo\\ \n", "foo ") is Match.IGNORE
    assert _verdict("foo\\ \n", "foo") is Match.NONE


def test_empty_and_blank_lines_add_nothing() -> None:
    assert parse_gitignore(b"\n   \n\r\n").patterns == ()


def test_crlf_line_endings() -> None:
    gitignore = parse_gitignore(b"a.txt\r\nb.txt\r\n")
    assert [p.glob for p in gitignore.patterns] == ["**/a.txt", "**/b.txt"]


def test_reading_stops_at_first_non_utf8_line() -> None:
    gitignore = parse_gitignore(b"kept.txt\nbad\xff.txt\nlost.txt\n")
    assert [p.original for p in gitignore.patterns] == ["kept.txt"]
    assert gitignore.matched(b"kept.txt", False) is Match.IGNORE
    assert gitignore.matched(b"lost.txt", False) is Match.NONE


def test_invalid_glob_line_is_dropped_rest_still_applies() -> None:
    content = "bad[\nafter.txt\n"
    assert [p.original for p in parse_gitignore(content.encode()).patterns] == ["after.txt"]
    assert _verdict(content, "after.txt") is Match.IGNORE


@pytest.mark.parametrize("glob", ["a[", "[z-a]", "a\\", "{a,b", "a}"])
def test_globs_that_fail_to_compile(glob: str) -> None:
    with pytest.raises(GlobError):
        glob_to_regex(glob)


def test_last_line_without_newline_is_read() -> None:
    assert _verdict("a\nlast", "last") is Match.IGNORE


# --- negation, anchoring, directory-only ----------------------------------------------


def test_negation_whitelists_after_an_ignore() -> None:
    content = "*.log\n!keep.log\n"
    assert _verdict(content, "x.log") is Match.IGNORE
    assert _verdict(content, "keep.log") is Match.WHITELIST


def test_last_matching_pattern_wins_within_a_file() -> None:
    assert _verdict("!keep.log\n*.log\n", "keep.log") is Match.IGNORE
    assert _verdict("*.log\n!keep.log\n", "keep.log") is Match.WHITELIST


def test_leading_slash_anchors_to_the_gitignore_directory() -> None:
    assert _verdict("/top.txt\n", "top.txt") is Match.IGNORE
    assert _verdict("/top.txt\n", "sub/top.txt") is Match.NONE


def test_negated_anchored_pattern() -> None:
    content = "*.txt\n!/top.txt\n"
    assert _verdict(content, "top.txt") is Match.WHITELIST
    assert _verdict(content, "sub/top.txt") is Match.IGNORE


def test_pattern_with_inner_slash_is_relative_to_the_gitignore() -> None:
    assert _verdict("a/b.txt\n", "a/b.txt") is Match.IGNORE
    assert _verdict("a/b.txt\n", "x/a/b.txt") is Match.NONE


def test_directory_only_pattern_skips_files() -> None:
    assert _verdict("out/\n", "out", is_dir=True) is Match.IGNORE
    assert _verdict("out/\n", "out", is_dir=False) is Match.NONE
    assert _verdict("out/\n", "deep/out", is_dir=True) is Match.IGNORE


def test_directory_only_pattern_is_skipped_so_an_earlier_one_decides() -> None:
    content = "!out\nout/\n"
    assert _verdict(content, "out", is_dir=False) is Match.WHITELIST
    assert _verdict(content, "out", is_dir=True) is Match.IGNORE


def test_escaped_trailing_slash_drops_the_backslash_too() -> None:
    pattern = parse_gitignore_line("foo\\/")
    assert pattern is not None
    assert (pattern.glob, pattern.is_dir_only) == ("**/foo", True)


def test_star_does_not_cross_slashes() -> None:
    assert _verdict("a/*.txt\n", "a/b.txt") is Match.IGNORE
    assert _verdict("a/*.txt\n", "a/b/c.txt") is Match.NONE
    assert _verdict("a/?.txt\n", "a/b.txt") is Match.IGNORE
    assert _verdict("a?b\n", "a/b") is Match.NONE


def test_question_mark_is_one_byte_like_globset() -> None:
    assert _verdict("?.txt\n", "e.txt") is Match.IGNORE
    assert _verdict("?.txt\n", "é.txt") is Match.NONE
    assert _verdict("??.txt\n", "é.txt") is Match.IGNORE


# --- ** forms --------------------------------------------------------------------------


def test_leading_double_star_matches_any_depth() -> None:
    assert _verdict("**/gen/x.ts\n", "gen/x.ts") is Match.IGNORE
    assert _verdict("**/gen/x.ts\n", "a/b/gen/x.ts") is Match.IGNORE


def test_trailing_double_star_matches_contents_not_the_directory() -> None:
    pattern = parse_gitignore_line("logs/**")
    assert pattern is not None and pattern.glob == "logs/**/*"
    assert _verdict("logs/**\n", "logs/a.txt") is Match.IGNORE
    assert _verdict("logs/**\n", "logs/deep/a.txt") is Match.IGNORE
    assert _verdict("logs/**\n", "logs", is_dir=True) is Match.NONE


def test_middle_double_star_matches_zero_or_more_directories() -> None:
    for path in ("a/b", "a/x/b", "a/x/y/b"):
        assert _verdict("a/**/b\n", path) is Match.IGNORE
    assert _verdict("a/**/b\n", "a/xb") is Match.NONE


def test_double_star_glued_to_text_acts_like_star() -> None:
    # globset's two ZERO_OR_MORE tokens, collapsed to one `[^/]*` (the same language).
    assert glob_to_regex("a**b") == glob_to_regex("a*b")
    assert _verdict("/a**b\n", "axxb") is Match.IGNORE
    assert _verdict("/a**b\n", "ax/xb") is Match.NONE


def test_lone_double_star_matches_everything() -> None:
    assert glob_to_regex("**") == "^.*\\Z"
    assert _verdict("**\n", "any/deep/path") is Match.IGNORE


# --- braces, classes, escapes -----------------------------------------------------------


def test_brace_alternation_is_supported() -> None:
    content = "*.{js,ts}\n"
    assert _verdict(content, "a.js") is Match.IGNORE
    assert _verdict(content, "src/a.ts") is Match.IGNORE
    assert _verdict(content, "a.py") is Match.NONE


def test_nested_braces_and_empty_branch() -> None:
    assert _verdict("/{a,{b,c}}\n", "c") is Match.IGNORE
    # Empty branches are dropped, so `{a,}` only matches `a`.
    assert _verdict("/x{a,}\n", "xa") is Match.IGNORE
    assert _verdict("/x{a,}\n", "x") is Match.NONE


def test_comma_outside_braces_is_literal() -> None:
    assert _verdict("a,b\n", "a,b") is Match.IGNORE


def test_character_classes() -> None:
    assert _verdict("file[0-9].txt\n", "file7.txt") is Match.IGNORE
    assert _verdict("file[0-9].txt\n", "filex.txt") is Match.NONE
    assert _verdict("file[!0-9].txt\n", "filex.txt") is Match.IGNORE
    assert _verdict("file[^0-9].txt\n", "file7.txt") is Match.NONE


def test_class_edge_members() -> None:
    assert _verdict("[]]\n", "]") is Match.IGNORE
    assert _verdict("[-a]\n", "-") is Match.IGNORE
    assert _verdict("[a-]\n", "-") is Match.IGNORE
    # globset extends the previous range: `[a-c-e]` is `[a-e]`.
    assert _verdict("[a-c-e]\n", "d") is Match.IGNORE


def test_backslash_escapes_glob_metacharacters() -> None:
    assert _verdict("\\*.txt\n", "*.txt") is Match.IGNORE
    assert _verdict("\\*.txt\n", "a.txt") is Match.NONE
    assert _verdict("\\{a,b\\}\n", "{a,b}") is Match.IGNORE


def test_matching_is_case_sensitive() -> None:
    assert _verdict("*.LOG\n", "a.log") is Match.NONE


# --- scoping through the walker -----------------------------------------------------------


def test_nearest_gitignore_with_a_match_decides(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*.log\n")
    _write(tmp_path, "sub/.gitignore", "!keep.log\n")
    _write(tmp_path, "sub/keep.log")
    _write(tmp_path, "sub/other.log")
    _write(tmp_path, "keep.log")
    assert _walked(tmp_path) == [".gitignore", "sub/.gitignore", "sub/keep.log"]


def test_nested_gitignore_patterns_are_relative_to_their_directory(tmp_path: Path) -> None:
    _write(tmp_path, "sub/.gitignore", "/only.txt\n")
    _write(tmp_path, "only.txt")
    _write(tmp_path, "sub/only.txt")
    _write(tmp_path, "sub/deeper/only.txt")
    assert _walked(tmp_path) == ["only.txt", "sub/.gitignore", "sub/deeper/only.txt"]


def test_gitignore_ignoring_itself_is_still_applied(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", ".gitignore\nsecret.txt\n")
    _write(tmp_path, "secret.txt")
    _write(tmp_path, "kept.txt")
    assert _walked(tmp_path) == ["kept.txt"]


def test_ignored_directory_is_pruned_and_negation_cannot_reach_inside(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "gen/\n!gen/keep.ts\n")
    _write(tmp_path, "gen/keep.ts")
    _write(tmp_path, "gen/other.ts")
    result = walk(str(tmp_path))
    assert [f.rel_path for f in result.files] == [".gitignore"]
    assert (result.skipped, result.sensitive_skipped, result.walk_errors) == (0, 0, 0)


def test_nested_git_directory_does_not_reset_parent_rules(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*.tmp\n")
    _write(tmp_path, "inner/.git/HEAD", "ref\n")
    _write(tmp_path, "inner/a.tmp")
    _write(tmp_path, "inner/a.py")
    assert _walked(tmp_path) == [".gitignore", "inner/a.py"]


def test_gitignore_above_the_root_is_not_honoured(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*.py\n")
    _write(tmp_path, "proj/a.py")
    assert _walked(tmp_path / "proj") == ["a.py"]


def test_gitignore_that_is_a_directory_is_harmless(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").mkdir()
    _write(tmp_path, "a.py")
    result = walk(str(tmp_path))
    assert [f.rel_path for f in result.files] == ["a.py"]
    assert result.walk_errors == 0


def test_non_utf8_names_are_matched_by_their_bytes(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "?.bin.txt\n")
    raw_name = os.path.join(os.fsencode(tmp_path), b"\xff.bin.txt")
    with open(raw_name, "wb") as handle:
        handle.write(b"x")
    assert _walked(tmp_path) == [".gitignore"]
