"""The cross-implementation conformance document (docs/index-store.md#conformance-document).

Why it exists: every port of CCE proves it chunks like the reference by emitting the
same chunk table for the same fixture directory. The table leaves out contents and
embeddings and sorts chunks by (file path, start line, chunk id), so it pins chunk
boundaries, kinds, ids and token counts independently of store order.
"""

from __future__ import annotations

import json
from typing import Final

from cce_retrieval.model import Index

CONFORMANCE_SPEC_VERSION: Final = "2.0"
IMPL_LANGUAGE: Final = "python"


def conformance_document(index: Index) -> str:
    """Pretty JSON (2-space indent) of the sorted chunk table, plus one trailing newline."""
    ordered = sorted(index.chunks, key=lambda c: (c.file_path, c.start_line, c.chunk_id))
    document = {
        "spec_version": CONFORMANCE_SPEC_VERSION,
        "impl_language": IMPL_LANGUAGE,
        "chunks": [
            {
                "file_path": chunk.file_path,
                "start_line": chunk.start_line,
                "end_line": chunk.end_line,
                "chunk_type": chunk.chunk_type,
                "kind": chunk.kind,
                "chunk_id": chunk.chunk_id,
                "token_count": chunk.token_count,
            }
            for chunk in ordered
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
