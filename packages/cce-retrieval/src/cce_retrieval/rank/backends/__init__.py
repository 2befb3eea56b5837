"""The backend registry: every retriever `cce relevance` can score, by name, with parameters.

Why it exists: a ranking change is measured by expressing it as a backend and comparing
it with another, so a backend is a registered name, a help text, typed parameters whose
defaults are the reference constants, and a factory. Names in help and error messages
come from the registry; the built-in `bm25`, `vector` and `hybrid` are its first entries
and, with default parameters, rank exactly like the reference. Installed packages add
backends through the `cce.backends` entry-point group (docs/backends.md#plugins).

The package's modules: `spec` (what a backend is), `builtin` (the reference's three),
`code` (the opt-in code-aware pair over `cce_retrieval.rank.code`), `grep` (the opt-in
no-index baseline over `cce_retrieval.rank.grep`), `plugins` (entry points and their
results checked) and `registry` (names to backends).
"""

from cce_retrieval.embed.registry import EmbeddingSpaceError
from cce_retrieval.rank.backends.builtin import check_embedding_space
from cce_retrieval.rank.backends.plugins import ENTRY_POINT_GROUP
from cce_retrieval.rank.backends.registry import (
    BACKENDS,
    Renamed,
    backend_names,
    backend_spec,
    create_backend,
    load_plugins,
    register_backend,
)
from cce_retrieval.rank.backends.spec import (
    Backend,
    BackendConfigError,
    BackendFactory,
    BackendSpec,
    Param,
    ParamValue,
    Query,
)

__all__ = [
    "BACKENDS",
    "ENTRY_POINT_GROUP",
    "Backend",
    "BackendConfigError",
    "BackendFactory",
    "BackendSpec",
    "EmbeddingSpaceError",
    "Param",
    "ParamValue",
    "Query",
    "Renamed",
    "backend_names",
    "backend_spec",
    "check_embedding_space",
    "create_backend",
    "load_plugins",
    "register_backend",
]
