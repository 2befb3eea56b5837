"""Deterministic benchmark queries drawn from a corpus's own chunks.

Why it exists: latency and relevance benchmarks need realistic queries that hit the
corpus. Each query is built from a function or class name of a chunk (its identifier
split into words, plus a neighbouring word from the body), chosen with a fixed seed so
every run and machine measures the same workload.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from cce_retrieval.model import Chunk

_NAME = re.compile(r"(?:def|class|function|fn|struct)\s+([A-Za-z_][A-Za-z0-9_]*)")
_WORD = re.compile(r"[A-Za-z]{4,}")


def name_of(chunk: Chunk) -> str | None:
    match = _NAME.search(chunk.content)
    return match.group(1) if match else None


def make_queries(chunks: Sequence[Chunk], count: int, seed: int = 7) -> list[tuple[str, Chunk]]:
    """`count` (query, source chunk) pairs; the query names the chunk in plain words."""
    rng = random.Random(seed)
    named = [c for c in chunks if c.chunk_type != "module" and name_of(c)]
    picked = rng.sample(named, min(count, len(named)))
    queries: list[tuple[str, Chunk]] = []
    for chunk in picked:
        name = name_of(chunk) or ""
        words = [w for w in re.split(r"_+|(?<=[a-z])(?=[A-Z])", name) if w]
        body_words = _WORD.findall(chunk.content[len(name) :])
        if body_words:
            words.append(rng.choice(body_words))
        queries.append((" ".join(w.lower() for w in words), chunk))
    return queries
