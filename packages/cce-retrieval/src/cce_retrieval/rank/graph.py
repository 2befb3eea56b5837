"""The file import graph derived from `file_imports` (docs/retrieval.md#import-graph).

Why it exists: graph expansion (docs/retrieval.md#graph-expansion) appends chunks from files that
import, or are imported by, the top results. The graph is never persisted; the reference rebuilds it
on load by resolving each imported module name against the sorted distinct chunk paths,
with two quirky rules (extension-agnostic stem match first, then a raw `.py`/`.js` suffix
match) that decide which edges exist, so they are reproduced exactly here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def file_stem(path: str) -> str:
    """Name after the last `/`, minus everything from its last `.` (`.bashrc` → `""`)."""
    name = path[path.rfind("/") + 1 :]
    dot = name.rfind(".")
    return name if dot < 0 else name[:dot]


class ImportGraph:
    """Directed import edges (importer → imported file) with a symmetric neighbour view."""

    def __init__(self, edges: Iterable[tuple[str, str]]) -> None:
        self.edges: frozenset[tuple[str, str]] = frozenset(edges)
        adjacent: dict[str, set[str]] = {}
        for source, target in self.edges:
            adjacent.setdefault(source, set()).add(target)
            adjacent.setdefault(target, set()).add(source)
        self._neighbors = {path: sorted(paths) for path, paths in adjacent.items()}

    @classmethod
    def build(cls, files: Sequence[str], file_imports: Mapping[str, Sequence[str]]) -> ImportGraph:
        """Resolve every (file, module) pair; `files` are the distinct chunk paths (any order)."""
        sorted_files = sorted(set(files))
        first_by_stem: dict[str, str] = {}
        for path in sorted_files:
            first_by_stem.setdefault(file_stem(path), path)
        resolved: dict[str, str | None] = {}

        def resolve(module: str) -> str | None:
            # Resolution does not depend on the importer, so each module name is resolved once.
            if module not in resolved:
                target = first_by_stem.get(module)
                if target is None:
                    suffixes = (module + ".py", module + ".js")
                    target = next((p for p in sorted_files if p.endswith(suffixes)), None)
                resolved[module] = target
            return resolved[module]

        edges: set[tuple[str, str]] = set()
        for importer in sorted(file_imports):
            for module in file_imports[importer]:
                target = resolve(module)
                # A self-import yields no edge and no further candidate is tried.
                if target is not None and target != importer:
                    edges.add((importer, target))
        return cls(edges)

    def neighbors(self, path: str) -> list[str]:
        """Sorted union of the files `path` imports and the files importing it."""
        return list(self._neighbors.get(path, ()))
