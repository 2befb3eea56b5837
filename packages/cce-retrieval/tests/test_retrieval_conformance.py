"""The conformance document (docs/index-store.md#conformance-document)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from cce_retrieval import build_index
from cce_retrieval.chunk.conformance import conformance_document
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk, Index


def chunk(path: str, start: int, chunk_id: str, end: int = 9) -> Chunk:
    return Chunk(
        chunk_id=chunk_id,
        file_path=path,
        start_line=start,
        end_line=end,
        chunk_type="function",
        kind="function_definition",
        language="python",
        content="ignored",
        token_count=2,
    )


def test_document_layout_and_sort_order() -> None:
    index = Index(
        embedder="hash",
        chunks=[
            chunk("b.py", 10, "aa"),
            chunk("a.py", 7, "ff", end=7),
            chunk("a.py", 7, "0b", end=9),
            chunk("a.py", 12, "00"),
            chunk("Z.py", 1, "11"),
        ],
    )
    document = conformance_document(index)
    assert document.endswith("}\n") and not document.endswith("\n\n")
    parsed = json.loads(document)
    assert list(parsed) == ["spec_version", "impl_language", "chunks"]
    assert parsed["spec_version"] == "2.0"
    assert parsed["impl_language"] == "python"
    order = [(c["file_path"], c["start_line"], c["chunk_id"]) for c in parsed["chunks"]]
    assert order == [
        ("Z.py", 1, "11"),
        ("a.py", 7, "0b"),
        ("a.py", 7, "ff"),
        ("a.py", 12, "00"),
        ("b.py", 10, "aa"),
    ]
    assert list(parsed["chunks"][0]) == [
        "file_path",
        "start_line",
        "end_line",
        "chunk_type",
        "kind",
        "chunk_id",
        "token_count",
    ]
    assert '\n  "chunks": [\n    {\n      "file_path": "Z.py",\n' in document


def test_empty_index_document() -> None:
    document = conformance_document(Index(embedder="hash", chunks=[]))
    assert (
        document == '{\n  "spec_version": "2.0",\n  "impl_language": "python",\n  "chunks": []\n}\n'
    )


def test_samples_match_the_reference_document_except_language(
    reference_path: Callable[..., Path],
) -> None:
    samples = reference_path("test", "fixture", "samples")
    golden = reference_path("conformance.json")
    document = conformance_document(build_index(str(samples), HashEmbedder()).index)
    want = golden.read_text(encoding="utf-8").replace(
        '"impl_language": "rust"', '"impl_language": "python"', 1
    )
    assert document == want
    parsed = json.loads(document)
    assert len(parsed["chunks"]) == 21
    assert all(c["kind"] for c in parsed["chunks"])
    notes = [c for c in parsed["chunks"] if c["file_path"] == "notes.md"]
    assert [(c["chunk_type"], c["kind"], c["start_line"], c["end_line"]) for c in notes] == [
        ("module", "module", 1, 3)
    ]
