"""Judging results against anchors: the judgment matrix and the file-level view of a case.

Why it exists: both the harness (evaluation/harness.py), which scores a run, and the
TREC export (formats/trec.py), which writes what cce judges so that trec_eval and
ir_measures reproduce its numbers, must judge a ranking the same way. The rule lives
here, below both, so the export cannot drift from the scoring.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from cce_fixtures import Anchor, Case
from cce_retrieval import SearchResult

__all__ = ["file_case", "judge"]


def judge(results: Sequence[SearchResult], anchors: Sequence[Anchor]) -> list[list[bool]]:
    """The judgment matrix: row i says which anchors result i matches."""
    return [[anchor.matches(result) for anchor in anchors] for result in results]


def _file_anchors(anchors: Sequence[Anchor], taken: Sequence[Anchor] = ()) -> tuple[Anchor, ...]:
    """Each distinct path of `anchors` once, as a path-only anchor; paths of `taken` and
    anchors without a path (`#kind`, which a path cannot test) are left out."""
    skip = {anchor.file_path for anchor in taken}
    paths = (a.file_path for a in anchors if a.file_path is not None and a.file_path not in skip)
    return tuple(Anchor(path, None, None) for path in dict.fromkeys(paths))


def file_case(case: Case) -> Case:
    """The case judged by files: its expected and secondary anchors' distinct paths."""
    expected = _file_anchors(case.expected)
    return attrs.evolve(case, expected=expected, secondary=_file_anchors(case.secondary, expected))
