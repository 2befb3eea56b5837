"""`cce search`: hybrid search over a persisted store (docs/retrieval.md#cce-search).

Why it exists: the command a person (or a script, with `--json`) runs against an index.
It resolves the store path, picks the query embedder from the name recorded in the store
(refusing a store whose embedder fails its health check, such as a server that is down,
rather than mixing embedding spaces), runs the hybrid pipeline, logs one `search`
metrics event (fail-open, docs/retrieval.md#search-events) and prints the results in the
reference's exact human or JSON layout. The ranking itself is
`cce_retrieval.rank.hybrid`'s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Sequence

import attrs

from cce_cli.errors import CliError
from cce_cli.evaluation.indexes import capitalize, open_store, remote_problem
from cce_cli.formats.event_log import append_event
from cce_cli.output import display_text, write_stdout
from cce_retrieval import (
    EmbeddingSpaceError,
    QueryVectorError,
    format6,
    resolve_store_path,
    rust_trim,
    search_counted,
    vectorless_query,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cce_retrieval import (
        EmbedderSpec,
        EmbedderUnavailable,
        Index,
        QueryEmbedder,
        SearchResult,
    )

DEFAULT_TOP_K = 10
LOW_CONFIDENCE_THRESHOLD = 0.30
SNIPPET_CHARS = 80
_UNSIGNED = re.compile(r"\+?[0-9]+", re.ASCII)


def _unsigned(text: str) -> int:
    """An unsigned integer like Rust's `usize` parser (an optional `+`, then digits)."""
    if not _UNSIGNED.fullmatch(text):
        raise argparse.ArgumentTypeError(f"invalid digit found in string: {text!r}")
    return int(text)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", metavar="QUERY", help="the search text (may be empty)")
    parser.add_argument(
        "positional_dir",
        metavar="DIR",
        nargs="?",
        help="search DIR/.cce/index.json (like --dir)",
    )
    parser.add_argument("--dir", dest="dir", metavar="DIR", help="search DIR/.cce/index.json")
    parser.add_argument("--store", metavar="PATH", help="search this store file (wins over --dir)")
    parser.add_argument("--top-k", dest="top_k", type=_unsigned, default=DEFAULT_TOP_K, metavar="N")
    parser.add_argument("--no-graph", dest="no_graph", action="store_true")
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.add_argument("--no-metrics", dest="no_metrics", action="store_true")
    parser.add_argument(
        "--backend",
        metavar="NAME",
        help="rank with this registered or configured backend instead of the cce search "
        "pipeline (results cut to --top-k)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="named backend configurations (default: cce.toml found from the current directory)",
    )


def store_refusal(spec: EmbedderSpec, failure: EmbedderUnavailable) -> str:
    """The one-line refusal for a store whose embedder fails its health check.

    The reference's wording (for Ollama) when nothing answered; the real cause otherwise.
    """
    return (
        f"this index was built with the {spec.name} embedder but "
        f"{remote_problem(spec, failure)} "
        f"\u2014 refusing to search across mismatched embedding spaces. "
        f"{capitalize(spec.remedy)}, or re-index with the default hash embedder "
        "(`cce index <dir>`)."
    )


_TERMINAL_CONTROLS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
GRAPH_LABEL = "  [graph: related file]"


def snippet(content: str) -> str:
    """First line, cut to 80 code points, then trimmed of Rust whitespace (cut, then trim)."""
    return rust_trim(content.split("\n", 1)[0][:SNIPPET_CHARS])


def _safe_snippet(text: str) -> str:
    # Code may hold ESC sequences or bidi overrides in string literals; shown raw they
    # would restyle or reorder the terminal. Tabs stay (ordinary in code).
    return _TERMINAL_CONTROLS.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def render_human(
    results: Sequence[SearchResult], query_id: str | None, ranked: int | None = None
) -> str:
    """The human listing; rows after the first `ranked` are labelled as graph expansion.

    File names are shown with `display_text` and snippets with terminal controls
    escaped (docs/hostile-input.md#printing). The query id is printed for matching the
    metrics log; there is no feedback command to advertise.
    """
    lines: list[str] = []
    if not results:
        lines.append("(no results)")
    for position, r in enumerate(results):
        label = GRAPH_LABEL if ranked is not None and position >= ranked else ""
        lines.append(
            f"{r.rank:>2}. [{format6(r.score)}] {display_text(r.file_path)}:"
            f"{r.start_line}-{r.end_line} ({r.chunk_type}/{r.kind}){label}"
        )
        lines.append(f"    {_safe_snippet(snippet(r.content))}")
    if query_id is not None:
        lines.append(f"query-id: {query_id}")
    return "".join(line + "\n" for line in lines)


def render_json(results: Sequence[SearchResult], query_id: str | None) -> str:
    rows = [
        {
            "chunk_id": r.chunk_id,
            "chunk_type": r.chunk_type,
            "end_line": r.end_line,
            "file_path": r.file_path,
            "kind": r.kind,
            "rank": r.rank,
            "score": format6(r.score),
            "start_line": r.start_line,
        }
        for r in results
    ]
    document = {"query_id": query_id, "results": rows}
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def search_event(
    index: Index,
    query: str,
    top_k: int,
    graph_enabled: bool,
    results: Sequence[SearchResult],
    latency_ms: float,
) -> dict[str, object]:
    """The `search` metrics record of docs/retrieval.md#search-events (schema, ts and id are added
    by `append_event`)."""
    from cce_metrics import estimate_tokens, seq_sum  # only when the event is logged

    baseline = sum(index.file_tokens.get(path, 0) for path in {r.file_path for r in results})
    served = sum(estimate_tokens(r.content) for r in results)
    saved = max(baseline - served, 0)
    top_score = results[0].score if results else 0.0
    score_total = seq_sum(r.score for r in results)
    return {
        "baseline_tokens": baseline,
        "embedder": index.embedder,
        "empty": not results,
        "event": "search",
        "graph_enabled": graph_enabled,
        "latency_ms": latency_ms,
        "low_confidence": bool(results) and top_score < LOW_CONFIDENCE_THRESHOLD,
        "mean_score": score_total / len(results) if results else 0.0,
        "query": query,
        "result_count": len(results),
        "savings_ratio": saved / baseline if baseline else 0.0,
        "served_tokens": served,
        "source": "cli",
        "tokens_saved": saved,
        "top_k": top_k,
        "top_score": top_score,
    }


@attrs.frozen(slots=True)
class SearchRequest:
    """One `cce search`: the query, the store it runs against, how many results, whether
    the graph boost applies, the backend (None: the cce search pipeline) and the output."""

    query: str
    store: str | None = None
    directory: str | None = None
    top_k: int = DEFAULT_TOP_K
    graph: bool = True
    as_json: bool = False
    no_metrics: bool = False
    backend: str | None = None
    config: str | None = None


def search_request(args: argparse.Namespace) -> SearchRequest:
    """The search the parsed arguments ask for; the directory given twice is refused."""
    if args.positional_dir is not None and args.dir is not None:
        raise CliError("give the directory once: either DIR or --dir", 2)
    return SearchRequest(
        args.query,
        store=args.store,
        directory=args.dir if args.dir is not None else args.positional_dir,
        top_k=args.top_k,
        graph=not args.no_graph,
        as_json=bool(args.json),
        no_metrics=bool(args.no_metrics),
        backend=args.backend,
        config=args.config,
    )


def _search_backend(
    request: SearchRequest, index: Index, embedder: QueryEmbedder, store_path: str
) -> list[SearchResult]:
    """`--backend NAME`: a registered or configured backend; `--no-graph` turns its
    `graph` parameter off when it has one. The query carries the store's corpus root, as
    `cce relevance` gives it (backends that read files, like `code`'s gap chunks)."""
    # Backend configuration (and the plugin entry points) only when a backend is asked for.
    from cce_cli.evaluation import configurations as backend_config
    from cce_cli.evaluation.corpus_checks import store_corpus_root
    from cce_retrieval import BackendConfigError, Query, backend_spec

    wanted = backend_config.requested(str(request.backend))
    config = backend_config.config_for(request.config, os.getcwd(), wanted)
    name = backend_config.choose(str(request.backend), config)
    if len(name) != 1:
        raise CliError("--backend takes exactly one backend name")
    named = config.backends.get(name[0])
    base = named.use if named is not None else name[0]
    overrides: dict[str, object] = {}
    if not request.graph and backend_spec(base).param("graph") is not None:
        overrides["graph"] = False
    backend = backend_config.instantiate(name[0], config, None, overrides)
    try:
        root = store_corpus_root(store_path)
        query = Query(
            request.query, embedder, corpus_root=None if root is None else os.path.abspath(root)
        )
        return backend.search(index, query, request.top_k)
    except (EmbeddingSpaceError, BackendConfigError, QueryVectorError) as error:
        raise CliError(str(error)) from None


class _RecordingEmbedder:
    """The store's query embedder, keeping the vectors it made: the command says when
    the query had none (docs/retrieval.md#vectors-with-no-direction)."""

    def __init__(self, embedder: QueryEmbedder) -> None:
        self._embedder = embedder
        self.vectors: list[Sequence[float]] = []

    def embed(self, text: str) -> list[float]:
        vector = self._embedder.embed(text)
        self.vectors.append(vector)
        return vector


def run(args: argparse.Namespace) -> int:
    request = search_request(args)
    store_path = resolve_store_path(request.store, request.directory)
    index, store_embedder = open_store(store_path, store_refusal)
    embedder = _RecordingEmbedder(store_embedder)
    graph_enabled = request.graph
    query, top_k = request.query, request.top_k
    started = time.perf_counter()
    ranked: int | None = None
    if request.backend is None:
        try:
            results, ranked = search_counted(index, embedder, query, top_k, graph_enabled)
        except (QueryVectorError, EmbeddingSpaceError) as err:
            raise CliError(str(err)) from None
    else:
        results = _search_backend(request, index, embedder, store_path)
    latency_ms = (time.perf_counter() - started) * 1000.0
    if embedder.vectors and vectorless_query(index, embedder.vectors[0]):
        print(
            f"note: the query has no vector (the {display_text(index.embedder)} embedder gave "
            "it no direction); the vector signal ranks nothing for it, only its words rank",
            file=sys.stderr,
        )
    query_id: str | None = None
    if not request.no_metrics:
        record = search_event(index, query, top_k, graph_enabled, results, latency_ms)
        query_id = append_event(store_path, record)
    if request.as_json:
        write_stdout(render_json(results, query_id))
    else:
        write_stdout(render_human(results, query_id, ranked))
    return 0
