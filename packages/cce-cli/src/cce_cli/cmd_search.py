"""`cce search`: hybrid search over a persisted store (retrieval spec §11).

Why it exists: the command a person (or a script, with `--json`) runs against an index.
It resolves the store path, picks the query embedder from the name recorded in the
store (refusing an ollama-built store when Ollama is down rather than mixing embedding
spaces), runs the hybrid pipeline, logs one `search` metrics event (fail-open) and
prints the results in the reference's exact human or JSON layout.

Owns: the argument surface, store resolution, the Ollama refusal, the metrics record of
§11.4 and both renderings. Ranking itself is `cce_retrieval.hybrid`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections.abc import Sequence

from cce_cli import backend_config
from cce_cli.errors import CliError
from cce_cli.events import append_event
from cce_cli.indexes import open_store
from cce_cli.output import write_stdout
from cce_metrics import estimate_tokens, seq_sum
from cce_retrieval import (
    BackendConfigError,
    EmbeddingSpaceError,
    Index,
    Query,
    QueryEmbedder,
    SearchResult,
    backend_spec,
    check_query_vector,
    format6,
    resolve_store_path,
    rust_trim,
    search_with_vector,
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
        help="only meaningful with --workspace (not supported); ignored",
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


def ollama_refusal(base_url: str) -> str:
    """The one-line refusal for an ollama-built store whose server does not answer."""
    return (
        f"this index was built with the ollama embedder but Ollama is unreachable at "
        f"{base_url} \u2014 refusing to search across mismatched embedding spaces. "
        f"Start Ollama, or re-index with the default hash embedder (`cce index <dir>`)."
    )


def snippet(content: str) -> str:
    """First line, cut to 80 code points, then trimmed of Rust whitespace (cut, then trim)."""
    return rust_trim(content.split("\n", 1)[0][:SNIPPET_CHARS])


def render_human(results: Sequence[SearchResult], query_id: str | None) -> str:
    lines: list[str] = []
    if not results:
        lines.append("(no results)")
    for r in results:
        lines.append(
            f"{r.rank:>2}. [{format6(r.score)}] {r.file_path}:{r.start_line}-{r.end_line} "
            f"({r.chunk_type}/{r.kind})"
        )
        lines.append(f"    {snippet(r.content)}")
    if query_id is not None:
        lines.append(
            f"query-id: {query_id}  \u00b7  rate with: cce feedback {query_id} "
            f"--helpful|--not-helpful"
        )
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
    """The `search` metrics record of §11.4 (schema, ts and id are added by `append_event`)."""
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


def _search_backend(
    args: argparse.Namespace, index: Index, embedder: QueryEmbedder, graph_enabled: bool
) -> list[SearchResult]:
    """`--backend NAME`: a registered or configured backend; `--no-graph` turns its
    `graph` parameter off when it has one."""
    config = backend_config.config_for(args.config, os.getcwd())
    name = backend_config.choose(str(args.backend), config)
    if len(name) != 1:
        raise CliError("--backend takes exactly one backend name")
    named = config.backends.get(name[0])
    base = named.use if named is not None else name[0]
    overrides: dict[str, object] = {}
    if not graph_enabled and backend_spec(base).param("graph") is not None:
        overrides["graph"] = False
    backend = backend_config.instantiate(name[0], config, None, overrides)
    try:
        return backend.search(index, Query(args.query, embedder), args.top_k)
    except (EmbeddingSpaceError, BackendConfigError) as error:
        raise CliError(str(error)) from None


def run(args: argparse.Namespace) -> int:
    store_path = resolve_store_path(args.store, args.dir)
    index, embedder = open_store(store_path, ollama_refusal)
    graph_enabled = not args.no_graph
    started = time.perf_counter()
    if args.backend is None:
        # `search` embeds and ranks; embedding first lets a vector of another dimension
        # than the store's be refused (the ranking is the same call sequence).
        qvec = embedder.embed(args.query)
        try:
            check_query_vector(index, qvec)
        except EmbeddingSpaceError as error:
            raise CliError(str(error)) from None
        results = search_with_vector(index, qvec, args.query, args.top_k, graph_enabled)
    else:
        results = _search_backend(args, index, embedder, graph_enabled)
    latency_ms = (time.perf_counter() - started) * 1000.0
    query_id: str | None = None
    if not args.no_metrics:
        record = search_event(index, args.query, args.top_k, graph_enabled, results, latency_ms)
        query_id = append_event(store_path, record)
    render = render_json if args.json else render_human
    write_stdout(render(results, query_id))
    return 0
