"""An example `cce.backends` plugin: chunks ranked by how many query words they contain.

It exists to show (and test) the plugin protocol of docs/backends.md#plugins: the entry
point names a `BackendSpec` with typed parameters, the factory receives them, and the
backend returns plain mappings with file_path, start_line, end_line, kind and score.
"""

from __future__ import annotations

from collections.abc import Mapping

from cce_retrieval import BackendSpec, Index, Param, Query


class WordOverlap:
    """Score = number of distinct query words in the chunk (times `weight`)."""

    name = "example"

    def __init__(self, min_overlap: int, weight: float) -> None:
        self.min_overlap = min_overlap
        self.weight = weight

    def search(self, index: Index, query: Query, k: int) -> list[dict[str, object]]:
        words = {word for word in query.text.lower().split() if word.isidentifier()}
        scored = []
        for position, chunk in enumerate(index.chunks):
            text = chunk.content.lower()
            overlap = sum(1 for word in words if word in text)
            if overlap >= self.min_overlap:
                scored.append((-overlap, position, chunk))
        scored.sort(key=lambda row: (row[0], row[1]))
        return [
            {
                "file_path": chunk.file_path,
                "start_line": chunk.start_line,
                "end_line": chunk.end_line,
                "kind": chunk.kind,
                "score": -negative * self.weight,
            }
            for negative, _, chunk in scored[:k]
        ]


def make(params: Mapping[str, object]) -> WordOverlap:
    min_overlap = params["min_overlap"]
    weight = params["weight"]
    assert isinstance(min_overlap, int) and isinstance(weight, float)
    return WordOverlap(min_overlap, weight)


SPEC = BackendSpec(
    name="example",
    help="chunks ranked by how many query words they contain",
    params=(
        Param("min_overlap", int, 1, 1, None, help="query words a chunk must contain"),
        Param("weight", float, 1.0, 0.0, None, help="score per matching word"),
    ),
    factory=make,
)
