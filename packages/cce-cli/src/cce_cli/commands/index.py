"""`cce index DIR`: build a directory's index and persist it (docs/index-store.md#cce-index).

Why it exists: this is the command that turns a source tree into the store every read
command uses. It owns the user-facing contract: embedder selection, the
`--allow-secrets` warning, the byte-exact summary, the metrics event, and the error
cases (a missing directory, an aborted build or an unwritable store exit 1 and leave any
previous store untouched; fingerprint, source list and metrics failures are only
warnings). The work itself, in its order (build or find the recorded store in place →
store → fingerprint → source list → sidecar → the build cache's record of the store), is
one call to `cce_retrieval.persist_index`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import attrs

from cce_cli.commands.build_options import (
    add_build_options,
    add_protection_argument,
    add_verbose_argument,
    build_options,
)
from cce_cli.errors import CliError
from cce_cli.evaluation.building import BuildOptions
from cce_cli.evaluation.indexes import (
    embedder_failure,
    persist_or_fail,
    print_protection_notice,
    remote_problem,
    walk_error_warnings,
)
from cce_cli.formats.event_log import write_index_event
from cce_cli.output import display_text, visible_controls, write_stdout
from cce_retrieval import (
    DEFAULT_PROTECTION,
    BuildResult,
    CheckedEmbedder,
    Embedder,
    EmbedderMisconfigured,
    RecordedBuild,
    ascii_lower,
    embedder_model,
    embedder_names,
    embedder_spec,
    resolve_store_path,
)

ALLOW_SECRETS_WARNING = (
    "warning: --allow-secrets set — secret protection is DISABLED; "
    "sensitive files will be indexed and secrets stored verbatim"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", help="directory to index")
    parser.add_argument("--store", help="store path (default: DIR/.cce/index.json)")
    parser.add_argument(
        "--embedder",
        default="hash",
        help=f"one of {', '.join(embedder_names())} (default hash); any other name means hash",
    )
    parser.add_argument(
        "--model",
        metavar="NAME_OR_PATH",
        help="the embedder's model, instead of its environment variable (a model name, "
        "or a local model directory for an embedder that runs in process)",
    )
    parser.add_argument("--no-metrics", action="store_true", help="do not append to metrics.jsonl")
    parser.add_argument(
        "--allow-secrets",
        action="store_true",
        help="disable secret protection (sensitive files indexed, secrets kept verbatim)",
    )
    add_build_options(parser)
    add_protection_argument(parser, DEFAULT_PROTECTION)
    add_verbose_argument(parser)


def select_embedder(name: str, model: str | None = None) -> Embedder:
    """A registered embedder by case-insensitive name (any other name is hash, with a
    warning naming the registered ones, since a typo would otherwise go unnoticed), with
    `model` (`--model`) instead of its default; an embedder without models refuses one.

    An embedder with a health check is checked first and announced on stderr, its
    location's credentials redacted. One that does not answer is "unreachable", as in
    the reference; any other failure keeps its cause. The wording comes from the
    embedder's registration (`EmbedderSpec.server`, `remedy`, `health_check`).
    """
    folded = ascii_lower(name)
    if folded not in embedder_names():
        print(
            f"warning: unknown embedder {name!r}; indexing with the default hash embedder "
            f"(known embedders: {', '.join(embedder_names())})",
            file=sys.stderr,
        )
    spec = embedder_spec(folded, fallback=True)
    if model is not None and spec.model_env is None:
        raise CliError(f"the {spec.name} embedder has no model; drop --model", 2)
    try:
        embedder = spec.factory(model or None, None)
    except EmbedderMisconfigured as err:
        raise CliError(str(err)) from None
    if not isinstance(embedder, CheckedEmbedder):
        return embedder
    failure = embedder_failure(embedder)
    if failure is not None and failure.unreachable:
        raise CliError(
            f"{spec.name} embedder selected but {remote_problem(spec, failure)}; "
            f"{spec.remedy} or index with the default hash embedder"
        )
    if failure is not None:
        repair = "fix the server" if spec.remote else spec.remedy
        raise CliError(
            f"{spec.name} embedder selected but {remote_problem(spec, failure)}; "
            f"{repair} or index with the default hash embedder"
        )
    model = embedder_model(embedder) or ""
    where = f"{model} @ {embedder.location}" if spec.remote else embedder.location
    print(f"using {display_text(spec.name)} embedder ({visible_controls(where)})", file=sys.stderr)
    return embedder


def summary_lines(
    directory: str, store_path: str, result: BuildResult | RecordedBuild, elapsed: float
) -> str:
    """The stdout summary of docs/index-store.md#cce-index, labels padded to 18 columns."""
    rows = [
        ("files indexed", str(result.files_indexed)),
        ("files skipped", str(result.files_skipped)),
        ("sensitive skipped", str(result.sensitive_skipped)),
    ]
    if result.walk_errors > 0:
        rows.append(("walk errors", str(result.walk_errors)))
    rows += [
        ("total chunks", str(result.total_chunks)),
        ("embedder", display_text(result.embedder)),
        ("store", display_text(store_path)),
        ("elapsed", f"{elapsed:.3f}s"),
    ]
    heading = f"Indexed {display_text(directory)}\n"
    return heading + "".join(f"  {label:<18}: {value}\n" for label, value in rows)


@attrs.frozen(slots=True)
class IndexRequest:
    """One `cce index`: the directory, where its store goes, the embedder, whether
    secrets are protected and metrics logged, and how the build runs."""

    directory: str
    store: str | None = None
    embedder: str = "hash"
    model: str | None = None
    allow_secrets: bool = False
    no_metrics: bool = False
    build: BuildOptions = attrs.field(factory=BuildOptions)

    @property
    def protection(self) -> str:
        return self.build.protection or DEFAULT_PROTECTION


def index_request(args: argparse.Namespace) -> IndexRequest:
    """The indexing the parsed arguments ask for; a missing or unusable directory and
    contradicting protection flags are refused."""
    directory: str | None = args.dir
    if directory is None:
        raise CliError("index requires a directory")
    if not os.path.isdir(directory):
        raise CliError(f"not a directory: {directory}")
    request = IndexRequest(
        directory,
        store=args.store,
        embedder=args.embedder,
        model=args.model,
        allow_secrets=bool(args.allow_secrets),
        no_metrics=bool(args.no_metrics),
        build=build_options(args),
    )
    if request.allow_secrets and request.protection != DEFAULT_PROTECTION:
        raise CliError("--allow-secrets and --protection strict contradict each other", 2)
    return request


def _report(
    request: IndexRequest,
    store_path: str,
    result: BuildResult | RecordedBuild,
    index_bytes: int,
    started: float,
) -> int:
    """The metrics event, the summary and the warnings that end every `cce index`."""
    directory = request.directory
    if not request.no_metrics:
        write_index_event(
            store_path,
            directory,
            chunks=result.total_chunks,
            files_indexed=result.files_indexed,
            sensitive_skipped=result.sensitive_skipped,
            embedder=result.embedder,
            index_bytes=index_bytes,
            duration_ms=(time.perf_counter() - started) * 1000.0,
        )
    write_stdout(summary_lines(directory, store_path, result, time.perf_counter() - started))
    for warning in walk_error_warnings(result.walk_errors, result.gitignore_errors):
        print(warning, file=sys.stderr)
    notice = vectorless_notice(result.embedder, result.vectorless_chunks, result.total_chunks)
    if notice is not None:
        print(notice, file=sys.stderr)
    print_protection_notice(result, request.build.verbose)
    return 0


def vectorless_notice(embedder: str, vectorless: int, total: int) -> str | None:
    """The note for chunks the embedder gave no vector
    (docs/retrieval.md#vectors-with-no-direction); None when every chunk has one."""
    if vectorless <= 0:
        return None
    have = "chunk has" if vectorless == 1 else "chunks have"
    them = "it" if vectorless == 1 else "them"
    return (
        f"note: {vectorless} of {total} {have} no vector (the {display_text(embedder)} "
        f"embedder gave {them} no direction: an empty file, or only words its model does not "
        f"know); the vector signal never returns {them}, the lexical one still does"
    )


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    request = index_request(args)
    store_path = resolve_store_path(request.store, request.directory)
    embedder = select_embedder(request.embedder, request.model)
    protect = not request.allow_secrets
    if not protect:
        print(ALLOW_SECRETS_WARNING, file=sys.stderr)

    persisted = persist_or_fail(
        request.directory,
        embedder,
        store_path,
        protect,
        request.build,
        request.protection,
        _print_warning,
    )
    return _report(request, store_path, persisted.build, persisted.store.size, started)


def _print_warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)
