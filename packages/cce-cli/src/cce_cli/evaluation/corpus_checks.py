"""What `cce relevance` checks before it scores: dead anchors and a stale store.

Why it exists: a score over an anchor that can never match, or over a store built from
files that have since changed, is a wrong number printed with full confidence. Before
scoring, `cce relevance` says so on stderr (stdout keeps its bytes), and `--strict`
refuses to score at all. This module owns those two checks and their wording, and
where a store's corpus lives; the analysis itself is `cce_cli.evaluation.anchor_check` and
`cce_retrieval.store.sources`. See docs/relevance.md#checking-fixtures-against-the-corpus.
"""

from __future__ import annotations

import os
import sys
from typing import Final

from cce_cli.errors import CliError
from cce_cli.evaluation.anchor_check import CorpusFacts, fixture_problems
from cce_cli.output import visible_controls
from cce_fixtures import FixtureSet
from cce_retrieval import Index, SourcesError, compare_sources, read_sources, sources_root

__all__ = [
    "MAX_DEAD_ANCHOR_LINES",
    "check_anchors",
    "check_store",
    "stale_store_message",
    "store_corpus_root",
]

MAX_DEAD_ANCHOR_LINES: Final = 10
_EXAMPLES: Final = 3


def _warn(message: str) -> None:
    print(f"warning: {visible_controls(message)}", file=sys.stderr)


def store_corpus_root(store: str) -> str | None:
    """The corpus directory of a store, when it can be found on disk.

    The store's source record names it; a store without one (built by an older
    version or another tool) is taken to live at `<root>/.cce/<name>`.
    """
    try:
        sources = read_sources(store)
        root = None if sources is None else sources_root(store, sources)
    except SourcesError:
        return None  # a record that cannot be trusted names no corpus
    if root is not None:
        return root if os.path.isdir(root) else None
    parent = os.path.dirname(os.path.abspath(store))
    if os.path.basename(parent) != ".cce":
        return None
    root = os.path.dirname(parent)
    return root if os.path.isdir(root) else None


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def stale_store_message(store: str) -> str | None:
    """Why the store is stale, or None when it is fresh or that cannot be told.

    It cannot be told when the store has no source record (an older store) or its
    corpus is not reachable from here; an unreadable record, or one whose corpus
    directory cannot be trusted (`sources_root`), is said so (and refused under
    `--strict`).
    """
    try:
        sources = read_sources(store)
        if sources is None:
            return None
        root = sources_root(store, sources)
    except SourcesError as error:
        return f"{error}; cannot tell whether the store is stale"
    if not os.path.isdir(root):
        return None
    staleness = compare_sources(sources, root)
    if not staleness.stale:
        return None
    examples = (*staleness.changed, *staleness.added, *staleness.removed)[:_EXAMPLES]
    return (
        f"store {store} is stale: {_count(len(staleness.changed), 'file')} changed, "
        f"{len(staleness.added)} added, {len(staleness.removed)} removed in {root} since it "
        f"was built (e.g. {', '.join(examples)}); run cce index {root} again"
    )


def check_store(store: str, strict: bool) -> None:
    """Warn (or, strict, refuse) when the store's corpus has changed since it was built."""
    message = stale_store_message(store)
    if message is None:
        return
    if strict:
        raise CliError(f"{message} (refusing the store with --strict)")
    _warn(message)


def check_anchors(
    fixtures: str, fixture_set: FixtureSet, index: Index, root: str | None, strict: bool
) -> None:
    """Warn about every anchor that matches no chunk (at most a screenful, then a count);
    with `strict`, refuse to score."""
    facts = CorpusFacts.of(index, root)
    # Dead anchors, and the file-level hint that the corpus itself may be the wrong one.
    dead = [
        problem
        for problem in fixture_problems(
            fixtures, fixture_set, facts, diagnose_limit=MAX_DEAD_ANCHOR_LINES
        )
        if (problem.severity == "error" and problem.anchor is not None) or problem.line is None
    ]
    if not dead:
        return
    for problem in dead[:MAX_DEAD_ANCHOR_LINES]:
        _warn(problem.text(label=False))
    hidden = len(dead) - MAX_DEAD_ANCHOR_LINES
    if hidden > 0:
        _warn(f"... and {_count(hidden, 'more dead anchor')}; cce check {fixtures} lists them all")
    if strict:
        raise CliError(
            f"{_count(len(dead), 'anchor')} in {fixtures} can never match; refusing to score "
            "with --strict (see the warnings above, or run cce check)"
        )
