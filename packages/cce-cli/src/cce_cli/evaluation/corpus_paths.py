"""The corpus a fixture file's header names, resolved with Rust `Path` semantics.

Why it exists: a header's `corpus` is resolved against the fixture file's directory and
displayed exactly as the reference engine shows it (docs/harness.md#corpus-path): Rust's
`Path::parent` and `Path::join`, not `os.path`'s, decide trailing separators, `.`
components and an empty parent. `cce relevance`, `cce check` and `cce pool` all resolve
a header corpus the same way, here.
"""

from __future__ import annotations

from cce_cli.errors import CliError
from cce_cli.output import display_text

__all__ = ["corpus_path", "rust_join", "rust_parent", "unusable_corpus"]


def _trim_trailing(path: str) -> str:
    """Drop trailing separators and trailing `.` components, keeping a root or leading `.`."""
    while True:
        stripped = path.rstrip("/")
        if not stripped:
            return path[:1]  # "" stays "", an all-slash path is the root
        if stripped.endswith("/."):
            path = stripped[:-1]
            continue
        return stripped


def rust_parent(path: str) -> str | None:
    """Rust's `Path::parent` on a Unix path string, without any normalisation.

    None for "" and the root; otherwise the path minus its last component, with
    trailing separators and trailing `.` components dropped (`eval/./x` -> `eval`,
    where `os.path.dirname` would say `eval/.`).
    """
    body = _trim_trailing(path)
    if body in ("", "/"):
        return None
    cut = body.rfind("/")
    if cut < 0:
        return ""
    return _trim_trailing(body[: cut + 1])


def rust_join(base: str, tail: str) -> str:
    """Rust's `Path::join`: an absolute tail replaces the base, else one `/` between."""
    if tail.startswith("/") or not base:
        return tail
    if base.endswith("/"):
        return base + tail
    return f"{base}/{tail}"


def unusable_corpus(header_corpus: str) -> str | None:
    """Why a header's corpus can name no directory (it holds a NUL), else None."""
    if "\x00" not in header_corpus:
        return None
    return (
        f"the header's corpus {display_text(header_corpus)} holds a NUL character, which no "
        'path can; write the corpus directory in the header\'s "corpus" field'
    )


def corpus_path(fixtures: str, header_corpus: str) -> str:
    """The header corpus resolved against the fixture file's directory (not normalised).

    A corpus holding a NUL is a CliError naming the file's header line: no path can hold
    one, and the operating system's calls raise ValueError on it.
    """
    unusable = unusable_corpus(header_corpus)
    if unusable is not None:
        raise CliError(f"{display_text(fixtures)}: line 1: {unusable}")
    return rust_join(rust_parent(fixtures) or "", header_corpus)
