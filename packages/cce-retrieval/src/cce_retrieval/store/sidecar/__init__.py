"""The binary sidecar beside a store: what `index.json` holds, in formats made for loading.

Why it exists: parsing a large `index.json` (turning embedding text back into floats,
building a Python object per value) and rebuilding BM25 from every chunk's text costs
seconds per process, for a query that runs in milliseconds. `index.json` stays the
source of truth, byte-identical to the reference; this module keeps, beside it, the
same data and the derived BM25 statistics as numpy arrays and flat byte columns that
load by memory-mapping, so `cce search` reads only what a query touches.

Layout (docs/index-store.md#sidecar): a directory `<store>.sidecar/` holding, per store
digest `D` (the SHA-256 of the store's bytes), files `D-<part>.npy` / `D-<part>.bin`
and, written last, the manifest `D.json` naming every part with its byte size and
SHA-256. A sidecar is used only when the store's current bytes hash to `D` and every
part holds the recorded bytes (each part verified once per file state, `digests`);
otherwise the store is parsed the ordinary way and the sidecar rebuilt.
Each part is written atomically (temp file, fsync, rename) and parts of a digest never
change once written, so a run killed at any moment leaves either a complete sidecar
or one without a manifest, which is never trusted.

The package's modules: `parts` (what the sidecar holds, as bytes), `staging` (writing it
safely, BM25 in a forked child), `reading` (checking and loading it back) and `digests`
(the SHA-256 of the store file and of each part, remembered per file state).
"""

from cce_retrieval.store.sidecar.digests import file_sha256, store_holds
from cce_retrieval.store.sidecar.parts import (
    SIDECAR_SCHEMA,
    SidecarParts,
    prepare_sidecar,
    sidecar_dir,
)
from cce_retrieval.store.sidecar.reading import (
    current_sidecar_chunks,
    has_sidecar_manifest,
    load_store,
    sidecar_is_current,
)
from cce_retrieval.store.sidecar.staging import (
    Bm25Staging,
    StagedSidecar,
    remove_dead_staging,
    stage_index_sidecar,
    stage_sidecar,
    start_bm25_staging,
    write_sidecar,
)

__all__ = [
    "SIDECAR_SCHEMA",
    "Bm25Staging",
    "SidecarParts",
    "StagedSidecar",
    "current_sidecar_chunks",
    "file_sha256",
    "has_sidecar_manifest",
    "load_store",
    "prepare_sidecar",
    "remove_dead_staging",
    "sidecar_dir",
    "sidecar_is_current",
    "stage_index_sidecar",
    "stage_sidecar",
    "start_bm25_staging",
    "store_holds",
    "write_sidecar",
]
