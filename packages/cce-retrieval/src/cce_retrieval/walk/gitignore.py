"""`.gitignore` reading and matching with the semantics of `ignore` 0.4.23 / globset 0.4.18.

Why it exists: the reference walker decides which files are indexed with ripgrep's `ignore`
crate, whose dialect is not git's (e.g. `{a,b}` braces are alternations, an invalid glob
drops just its own line, `**` glued to other characters means `*`). Off-the-shelf Python
matchers (`pathspec`, `fnmatch`) diverge on exactly those lines, so this module hand-ports
the two pieces that matter (docs/index-store.md#gitignore-rules):

* `parse_gitignore` — the line reader (`GitignoreBuilder::add_line`): comments, trailing
  whitespace, `\\!`/`\\#` escapes, whitelist `!`, anchoring `/`, directory-only `/`, the
  implicit `**/` prefix and the `/**` → `/**/*` rewrite;
* `glob_to_regex` — globset's parser and regex translator (literal separators, backslash
  escapes, classes, nested `{}` alternation, the three `**` forms), producing a *bytes*
  regex exactly like globset's `(?-u)` regex, so `?` consumes one byte of a non-ASCII name.

A `Gitignore` answers one question for one directory: does any of its patterns match this
path (relative to the directory), and if so, is the last matching one a whitelist? The
walker chains these per directory and lets the nearest file with a match decide.

Matching runs on RE2 (`google-re2`, Latin-1 mode so every byte is one character), not on
Python's backtracking `re`: a hostile line such as `**********a` against a long name takes
exponential time under backtracking, while RE2 is linear in the path length, the same
guarantee globset gets from Rust's `regex`. Runs of `*` are also collapsed to one
`[^/]*`, which matches the same language with a smaller program. See
docs/hostile-input.md#gitignore-globs.

`.gitignore` files are read only when they are regular files no larger than
`MAX_GITIGNORE_BYTES`; a FIFO, a device (or a symlink to one) or an oversized file raises
`GitignoreReadError`, which the walker counts as a walk error instead of blocking or
exhausting memory.

Known divergence (documented, not reproduced): the crate also parses the `.gitignore` files
of every directory *above* the walk root (it never applies them), and a glob-compile error
there is reported as one walk error. This port never looks above the root, so such an error
is not counted.
"""

from __future__ import annotations

import enum
import errno
import os
import stat
from typing import Protocol, cast

import attrs
import re2  # type: ignore[import-untyped]

from cce_retrieval.parity.text import rust_trim_end

MAX_GITIGNORE_BYTES = 8 * 1024 * 1024
"""Largest `.gitignore` read; a bigger one is a walk error (real ones are a few KiB)."""


MAX_GLOB_CHARS = 65536
"""Longest glob compiled; a longer `.gitignore` line is dropped like an invalid one (RE2
would spend its memory budget on it and log about it on stderr)."""


class GlobError(ValueError):
    """A glob that globset refuses to compile; the `.gitignore` line is dropped."""


class GitignoreReadError(OSError):
    """A `.gitignore` that is not a regular file or is larger than `MAX_GITIGNORE_BYTES`."""


class BytesMatcher(Protocol):
    """A compiled byte pattern: `match` anchors at the start, like `re.Pattern.match`."""

    @property
    def pattern(self) -> bytes: ...

    def match(self, data: bytes) -> object | None: ...


def _re2_options() -> object:
    options = re2.Options()
    # Latin-1: the pattern's `\xNN` escapes and `[^/]` each stand for one byte, exactly
    # like a `re` bytes pattern and globset's `(?-u)` regex.
    options.encoding = re2.Options.Encoding.LATIN1
    options.log_errors = False  # a refused program is reported as a GlobError, not on stderr
    return cast(object, options)


_RE2_OPTIONS = _re2_options()


def compile_regex(regex: str) -> BytesMatcher:
    """Compile a `glob_to_regex` result for linear-time matching of path bytes.

    RE2 spells end-of-text `\\z` where `re` spells it `\\Z`; every literal in the regex is
    a `\\xNN` escape, so the only `\\Z` are the terminators. Raises `GlobError` when RE2
    refuses the program (e.g. one past its memory budget).
    """
    try:
        compiled = re2.compile(regex.replace("\\Z", "\\z").encode("ascii"), _RE2_OPTIONS)
    except re2.error as err:
        raise GlobError(f"pattern too complex: {err}") from err
    return cast(BytesMatcher, compiled)


class Match(enum.Enum):
    """Outcome of consulting one `.gitignore` for one path."""

    NONE = "none"
    IGNORE = "ignore"
    WHITELIST = "whitelist"


# --- globset tokens --------------------------------------------------------------------


class _Kind(enum.Enum):
    LITERAL = enum.auto()
    ANY = enum.auto()
    ZERO_OR_MORE = enum.auto()
    RECURSIVE_PREFIX = enum.auto()
    RECURSIVE_SUFFIX = enum.auto()
    RECURSIVE_ZERO_OR_MORE = enum.auto()
    CLASS = enum.auto()
    ALTERNATES = enum.auto()


@attrs.frozen(slots=True)
class _Token:
    kind: _Kind
    char: str = ""
    negated: bool = False
    ranges: tuple[tuple[str, str], ...] = ()
    alternates: tuple[tuple[_Token, ...], ...] = ()


_ANY = _Token(_Kind.ANY)
_ZERO_OR_MORE = _Token(_Kind.ZERO_OR_MORE)
_RECURSIVE_PREFIX = _Token(_Kind.RECURSIVE_PREFIX)
_RECURSIVE_SUFFIX = _Token(_Kind.RECURSIVE_SUFFIX)
_RECURSIVE_ZERO_OR_MORE = _Token(_Kind.RECURSIVE_ZERO_OR_MORE)


class _GlobParser:
    """A line-for-line port of globset's `Parser` (nested alternates, no unclosed classes)."""

    def __init__(self, glob: str) -> None:
        self._chars = glob
        self._next = 0
        self._prev: str | None = None
        self._cur: str | None = None
        self._alternates_stack: list[int] = []
        self._branches: list[list[_Token]] = [[]]

    def parse(self) -> tuple[_Token, ...]:
        while (c := self._bump()) is not None:
            if c == "?":
                self._push(_ANY)
            elif c == "*":
                self._parse_star()
            elif c == "[":
                self._parse_class()
            elif c == "{":
                self._alternates_stack.append(len(self._branches))
                self._branches.append([])
            elif c == "}":
                self._pop_alternate()
            elif c == ",":
                if self._alternates_stack:
                    self._branches.append([])
                else:
                    self._push(_Token(_Kind.LITERAL, char=","))
            elif c == "\\":
                escaped = self._bump()
                if escaped is None:
                    raise GlobError("dangling '\\'")
                self._push(_Token(_Kind.LITERAL, char=escaped))
            else:
                self._push(_Token(_Kind.LITERAL, char=c))
        if len(self._branches) > 1:
            raise GlobError("unclosed alternate group; missing '}'")
        return tuple(self._branches[0])

    def _bump(self) -> str | None:
        self._prev = self._cur
        if self._next < len(self._chars):
            self._cur = self._chars[self._next]
            self._next += 1
        else:
            self._cur = None
        return self._cur

    def _peek(self) -> str | None:
        return self._chars[self._next] if self._next < len(self._chars) else None

    def _push(self, token: _Token) -> None:
        self._branches[-1].append(token)

    def _pop_alternate(self) -> None:
        if not self._alternates_stack:
            raise GlobError("unopened alternate group; missing '{'")
        start = self._alternates_stack.pop()
        group = tuple(tuple(branch) for branch in self._branches[start:])
        del self._branches[start:]
        self._push(_Token(_Kind.ALTERNATES, alternates=group))

    def _parse_star(self) -> None:
        prev = self._prev
        if self._peek() != "*":
            self._push(_ZERO_OR_MORE)
            return
        self._bump()
        if not self._branches[-1]:
            following = self._peek()
            if following is not None and following != "/":
                self._push(_ZERO_OR_MORE)
                self._push(_ZERO_OR_MORE)
            else:
                self._push(_RECURSIVE_PREFIX)
                self._bump()
            return
        in_alternates = bool(self._alternates_stack)
        if prev != "/" and (not in_alternates or prev not in (",", "{")):
            self._push(_ZERO_OR_MORE)
            self._push(_ZERO_OR_MORE)
            return
        following = self._peek()
        if following is None:
            self._bump()
            is_suffix = True
        elif following in (",", "}") and in_alternates:
            is_suffix = True
        elif following == "/":
            self._bump()
            is_suffix = False
        else:
            self._push(_ZERO_OR_MORE)
            self._push(_ZERO_OR_MORE)
            return
        popped = self._branches[-1].pop()
        if popped.kind in (_Kind.RECURSIVE_PREFIX, _Kind.RECURSIVE_SUFFIX):
            self._push(popped)
        elif is_suffix:
            self._push(_RECURSIVE_SUFFIX)
        else:
            self._push(_RECURSIVE_ZERO_OR_MORE)

    def _parse_class(self) -> None:
        ranges: list[tuple[str, str]] = []
        negated = self._peek() in ("!", "^")
        if negated:
            self._bump()
        first = True
        in_range = False
        while True:
            c = self._bump()
            if c is None:
                raise GlobError("unclosed character class; missing ']'")
            if c == "]" and not first:
                break
            if c == "]" or (c == "-" and first):
                ranges.append((c, c))
            elif c == "-" and in_range:
                ranges[-1] = _extend_range(ranges[-1], c)
                in_range = False
            elif c == "-":
                in_range = True
            else:
                if in_range:
                    ranges[-1] = _extend_range(ranges[-1], c)
                else:
                    ranges.append((c, c))
                in_range = False
            first = False
        if in_range:
            ranges.append(("-", "-"))
        self._push(_Token(_Kind.CLASS, negated=negated, ranges=tuple(ranges)))


def _extend_range(current: tuple[str, str], end: str) -> tuple[str, str]:
    # globset overwrites the end of the LAST range, so `[a-c-e]` is `[a-e]`.
    if end < current[0]:
        raise GlobError(f"invalid range; '{current[0]}' > '{end}'")
    return (current[0], end)


def _escaped_bytes(char: str) -> str:
    # globset escapes per UTF-8 byte (`\xNN` for non-ASCII); doing it for every byte keeps
    # Python's class syntax (`-`, `]`, `^`, `\`) out of the way.
    return "".join(f"\\x{byte:02x}" for byte in char.encode("utf-8"))


def _tokens_to_regex(tokens: tuple[_Token, ...]) -> str:
    parts: list[str] = []
    for token in tokens:
        kind = token.kind
        if kind is _Kind.LITERAL:
            parts.append(_escaped_bytes(token.char))
        elif kind is _Kind.ANY:
            parts.append("[^/]")
        elif kind is _Kind.ZERO_OR_MORE:
            # `[^/]*[^/]*` is `[^/]*`: collapsing keeps the program small for `****…`.
            if not parts or parts[-1] != "[^/]*":
                parts.append("[^/]*")
        elif kind is _Kind.RECURSIVE_PREFIX:
            parts.append("(?:/?|.*/)")
        elif kind is _Kind.RECURSIVE_SUFFIX:
            parts.append("/.*")
        elif kind is _Kind.RECURSIVE_ZERO_OR_MORE:
            parts.append("(?:/|/.*/)")
        elif kind is _Kind.CLASS:
            members = "".join(
                _escaped_bytes(low)
                if low == high
                else f"{_escaped_bytes(low)}-{_escaped_bytes(high)}"
                for low, high in token.ranges
            )
            parts.append(f"[{'^' if token.negated else ''}{members}]")
        else:
            # Empty branches are dropped (globset's `empty_alternates` is off), and a group
            # with no non-empty branch vanishes entirely.
            branches = [regex for branch in token.alternates if (regex := _tokens_to_regex(branch))]
            if branches:
                parts.append(f"(?:{'|'.join(branches)})")
    return "".join(parts)


def glob_to_regex(glob: str) -> str:
    """Translate a globset glob (`literal_separator`, backslash escapes) to a regex.

    The result is valid for `re.compile(result.encode("ascii"))` and for `compile_regex`,
    matching against path bytes; `\\Z` stands for Rust's `$` because Python's `$` also
    matches before a final newline. Raises `GlobError` where globset fails to build the glob.
    """
    if len(glob) > MAX_GLOB_CHARS:
        raise GlobError(f"glob longer than {MAX_GLOB_CHARS} characters")
    tokens = _GlobParser(glob).parse()
    if tokens == (_RECURSIVE_PREFIX,):
        return "^.*\\Z"
    return f"^{_tokens_to_regex(tokens)}\\Z"


# --- .gitignore files ------------------------------------------------------------------


@attrs.frozen(slots=True)
class GitignorePattern:
    """One compiled `.gitignore` line."""

    original: str
    glob: str
    source: str  # the `glob_to_regex` text, kept so a file's patterns can be combined
    regex: BytesMatcher
    is_whitelist: bool
    is_dir_only: bool


@attrs.frozen(slots=True)
class Gitignore:
    """The patterns of one `.gitignore`, in file order, plus a one-shot any-match filter."""

    patterns: tuple[GitignorePattern, ...]
    any_pattern: BytesMatcher | None = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        combined: BytesMatcher | None = None
        if self.patterns:
            alternation = "|".join(f"(?:{p.source})" for p in self.patterns)
            try:
                combined = compile_regex(alternation)
            except GlobError:
                combined = None  # too big to combine: every pattern is tried instead
        object.__setattr__(self, "any_pattern", combined)

    def matched(self, rel_path: bytes, is_dir: bool) -> Match:
        """Match a path relative to this file's directory: the last applicable pattern wins.

        Directory-only patterns are skipped when the candidate is a file.
        """
        if not self.patterns:
            return Match.NONE
        if self.any_pattern is not None and self.any_pattern.match(rel_path) is None:
            return Match.NONE
        for pattern in reversed(self.patterns):
            if (is_dir or not pattern.is_dir_only) and pattern.regex.match(rel_path):
                return Match.WHITELIST if pattern.is_whitelist else Match.IGNORE
        return Match.NONE


def parse_gitignore_line(line: str) -> GitignorePattern | None:
    """Compile one line the way `GitignoreBuilder::add_line` does; None if it adds nothing.

    Raises `GlobError` for a line whose glob does not compile.
    """
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = rust_trim_end(line)
    if not line:
        return None
    original = line
    is_whitelist = False
    is_anchored = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
    else:
        if line.startswith("!"):
            is_whitelist = True
            line = line[1:]
        if line.startswith("/"):
            line = line[1:]
            is_anchored = True
    is_dir_only = False
    if line.endswith("/"):
        is_dir_only = True
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    glob = line
    if not is_anchored and "/" not in line and not (glob.startswith("**/") or glob == "**"):
        glob = f"**/{glob}"
    if glob.endswith("/**"):
        glob = f"{glob}/*"
    source = glob_to_regex(glob)
    return GitignorePattern(
        original, glob, source, compile_regex(source), is_whitelist, is_dir_only
    )


def parse_gitignore(data: bytes) -> Gitignore:
    """Parse a whole `.gitignore` file; invalid globs are dropped.

    Reading stops at the first line that is not valid UTF-8 (Rust's `BufRead::lines`
    errors there); `\\r\\n` and `\\n` both end a line.
    """
    patterns: list[GitignorePattern] = []
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    for index, raw in enumerate(raw_lines):
        ended_by_newline = index < len(raw_lines) - 1 or data.endswith(b"\n")
        if ended_by_newline and raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            break
        try:
            pattern = parse_gitignore_line(line)
        except GlobError:
            continue
        if pattern is not None:
            patterns.append(pattern)
    return Gitignore(tuple(patterns))


def read_regular_file(path: bytes, limit: int) -> bytes:
    """The bytes of `path` (symlinks followed) if it is a regular file of at most `limit` bytes.

    Opened non-blocking so a FIFO cannot stall the open; anything that is not a regular
    file (FIFO, socket, device such as `/dev/zero`) or grows past `limit` while being read
    raises `GitignoreReadError`; other failures raise the `OSError` from the system.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            # What reading a directory gives elsewhere: an ordinary, uncounted failure.
            raise IsADirectoryError(errno.EISDIR, "is a directory", os.fsdecode(path))
        if not stat.S_ISREG(mode):
            raise GitignoreReadError(errno.EINVAL, "not a regular file", os.fsdecode(path))
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise GitignoreReadError(
                    errno.EFBIG, f"larger than {limit} bytes", os.fsdecode(path)
                )
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_gitignore(path: bytes) -> Gitignore | None:
    """Read and parse a `.gitignore` (following symlinks, as `File::open` does).

    None when it cannot be opened or read, or contributes no pattern; raises
    `GitignoreReadError` when it is not a regular file or is too large.
    """
    try:
        data = read_regular_file(path, MAX_GITIGNORE_BYTES)
    except GitignoreReadError:
        raise
    except OSError:
        return None
    gitignore = parse_gitignore(data)
    return gitignore if gitignore.patterns else None
