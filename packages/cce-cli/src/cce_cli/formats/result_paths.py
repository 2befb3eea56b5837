"""Repairing the two spellings of a result's path that name a corpus file unambiguously.

Why it exists: an external run (`cce_cli.formats.external_runs`) and a plugin's results
(`cce_cli.evaluation.run_checks`) are both read through it, so it sits below both.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

from cce_retrieval import SearchResult

__all__ = ["PathNormaliser"]


@attrs.frozen(slots=True)
class PathNormaliser:
    """Reads `./path` and `<corpus root>/path` as the store-relative `path`.

    Only these two spellings are repaired: each names exactly one file of the corpus,
    whatever else is true. Anything else is left for the checks to report.
    """

    roots: tuple[str, ...]

    @classmethod
    def for_root(cls, root: str | None) -> PathNormaliser:
        if root is None:
            return cls(())
        spellings = dict.fromkeys((os.path.abspath(root), os.path.realpath(root)))
        return cls(tuple(spelling.rstrip("/") + "/" for spelling in spellings))

    def normalise(self, path: str) -> str:
        if path.startswith("./"):
            while path.startswith("./"):
                path = path[2:].lstrip("/")
            return path
        for root in self.roots:
            if path.startswith(root) and len(path) > len(root):
                return path[len(root) :]
        return path

    def normalise_results(
        self, results: Sequence[SearchResult]
    ) -> tuple[tuple[SearchResult, ...], int]:
        """The results with their paths repaired, and how many were."""
        repaired = 0
        out: list[SearchResult] = []
        for hit in results:
            path = self.normalise(hit.file_path)
            if path != hit.file_path:
                repaired += 1
                hit = attrs.evolve(hit, file_path=path)
            out.append(hit)
        return tuple(out), repaired
