"""Where a relevance report's numbers came from, so two reports are compared alike.

Why it exists: a diff of two reports scored on different fixture files or different
corpora compares apples with oranges, and nothing in the scores says so. This module
owns the `provenance` object that `cce relevance --provenance` adds to the JSON
report (the fixture file's SHA-256, a fingerprint of what was indexed, each backend's
resolved parameters, the embedder and the cce version), the hashes a suite report's
provenance records, and the check `cce diff` makes of two reports' fixture hashes.
Default reports carry no provenance: their bytes are pinned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cce_retrieval import Index

__all__ = [
    "cce_version",
    "corpus_sha256",
    "differing_fixtures",
    "file_sha256",
    "report_provenance",
]


def file_sha256(path: str) -> str | None:
    """SHA-256 hex of a file's bytes; None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def cce_version() -> str:
    """The installed cce-cli version ("unknown" when not installed as a package)."""
    from importlib import metadata

    try:
        return metadata.version("cce-cli")
    except metadata.PackageNotFoundError:
        return "unknown"


def corpus_sha256(index: Index) -> str:
    """A fingerprint of what was indexed: every chunk's path, lines, kind and content.

    It hashes the index rather than the directory, so it is the same for a corpus
    built in memory and for a store built from it, and it changes with anything that
    changes what a query can retrieve (a file, the chunker, the protection mode).
    """
    digest = hashlib.sha256()
    rows = sorted(
        (chunk.file_path, chunk.start_line, chunk.end_line, chunk.kind, chunk.content)
        for chunk in index.chunks
    )
    for row in rows:
        line = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
        digest.update(line.encode("utf-8", "surrogateescape") + b"\n")
    return digest.hexdigest()


def report_provenance(
    fixtures: str,
    index: Index,
    backends: Sequence[str],
    configs: Mapping[str, Mapping[str, object]],
    sources: Mapping[str, str],
    store: str | None,
) -> dict[str, Any]:
    """The `provenance` object of a `cce relevance --provenance` JSON report.

    `configs` holds the parameters of configured backends (a built-in or plugin run
    with its defaults has `{}`); `sources` names the file an external run came from.
    """
    resolved: dict[str, Any] = {}
    for name in backends:
        entry: dict[str, Any] = {"config": dict(configs.get(name, {}))}
        source = sources.get(name)
        if source is not None:
            entry["run"] = source
            entry["run_sha256"] = file_sha256(source.partition("#")[0])
        resolved[name] = entry
    provenance: dict[str, Any] = {
        "backends": resolved,
        "cce_version": cce_version(),
        "corpus_sha256": corpus_sha256(index),
        "embedder": index.embedder,
        "fixtures_sha256": file_sha256(fixtures),
    }
    if store is not None:
        provenance["store_sha256"] = file_sha256(store)
    return provenance


def _fixture_hashes(provenance: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fixture hashes a provenance records, by member ("" for a single report)."""
    if "fixtures_sha256" in provenance:
        return {"": provenance["fixtures_sha256"]}
    members = provenance.get("members")
    if isinstance(members, list):
        return {
            str(member.get("name")): member.get("fixtures_sha256")
            for member in members
            if isinstance(member, dict)
        }
    return None


def differing_fixtures(
    base: Mapping[str, Any] | None, head: Mapping[str, Any] | None
) -> list[str] | None:
    """Which fixture files differ between two reports' provenance ("" = the report's
    only one, else member names); None when either side records no fixture hash."""
    if base is None or head is None:
        return None
    a, b = _fixture_hashes(base), _fixture_hashes(head)
    if a is None or b is None:
        return None
    return sorted(name for name in set(a) | set(b) if a.get(name) != b.get(name))
