"""`cce queries LOG...`: the distinct real queries in `metrics.jsonl` event logs.

Why it exists: labeling starts from what people actually searched for. This module owns
the command's arguments, reading the log files (a missing or unreadable log is an error
naming it), printing the queries most frequent first, and writing the optional draft
fixture file atomically. The counting and the draft live in `cce_cli.labeling.querylog`.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys

import attrs

from cce_cli.commands.arguments import positive_int
from cce_cli.commands.output_paths import refuse_output_over_input
from cce_cli.errors import CliError
from cce_cli.formats import input_files
from cce_cli.labeling.querylog import QueryLog, draft_fixtures, read_query_log
from cce_cli.output import write_output, write_stdout
from cce_fixtures import MAX_K
from cce_retrieval import describe_os_error, protect_text

__all__ = ["QueriesRequest", "configure", "list_queries", "looks_secret", "run"]

_SINCE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?Z?)?")
_SINCE_FORM = "a UTC date like 2026-11-01 or 2026-11-01T12:00:00Z"
_DRAFT_K = 5


def _since(text: str) -> str:
    """The date/time as the `YYYY-MM-DDTHH:MM:SSZ` stamp cce writes, so that comparing
    stamps as text is exact (`12:00Z` would sort after `12:00:30Z`)."""
    form = _SINCE.fullmatch(text)
    if form is None:
        raise argparse.ArgumentTypeError(f"expected {_SINCE_FORM}, got {text!r}")
    day, hour, minute, second = form.groups()
    stamp = f"{day}T{hour or '00'}:{minute or '00'}:{second or '00'}Z"
    try:
        datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a real date and time; expected {_SINCE_FORM}"
        ) from None
    return stamp


def _draft_k(text: str) -> int:
    """A case's k as the fixture contract accepts it: 1 to 2**64-1."""
    value = positive_int(text)
    if value > MAX_K:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer of at most {MAX_K} (a fixture's largest k), got {text!r}"
        )
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce queries`' arguments."""
    parser.add_argument("logs", metavar="LOG", nargs="+", help="metrics.jsonl event logs")
    parser.add_argument(
        "--min-count",
        type=positive_int,
        default=1,
        metavar="N",
        help="only queries searched at least N times (default 1)",
    )
    parser.add_argument(
        "--since", type=_since, metavar="DATE", help="only events at or after this UTC date/time"
    )
    parser.add_argument("--limit", type=positive_int, metavar="N", help="at most N queries")
    parser.add_argument(
        "--fixtures",
        metavar="FILE",
        help="also write a draft cce.relevance/v1 fixture file for judging",
    )
    parser.add_argument(
        "--corpus", metavar="DIR", help="the corpus the draft's header names (relative to FILE)"
    )
    parser.add_argument(
        "--k",
        type=_draft_k,
        default=_DRAFT_K,
        metavar="K",
        help=f"the k of every draft case (default {_DRAFT_K})",
    )


def looks_secret(query: str) -> bool:
    """True when strict secret protection would change the query: it holds a credential
    shape (strict protection runs the reference's first, so it catches every shape the
    default does and more)."""
    return protect_text(query, "strict") != query


def _read_log(path: str) -> list[bytes]:
    try:
        return input_files.read_input(path, input_files.EVENT_LOG).splitlines()
    except OSError as error:
        raise CliError(f"could not read event log {path}: {describe_os_error(error)}") from None


def _escape(text: str) -> str:
    """Control characters as escapes, so one query is always one printed line."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def render_queries(log: QueryLog) -> str:
    """One line per query: count, last seen, text."""
    return "".join(f"{q.count:>6}  {q.last_seen}  {_escape(q.text)}\n" for q in log.queries)


@attrs.frozen(slots=True)
class QueriesRequest:
    """One `cce queries`: the event logs, which queries count, and the optional draft
    fixture file (its corpus and every case's k)."""

    logs: tuple[str, ...]
    min_count: int = 1
    since: str | None = None
    """A `YYYY-MM-DDTHH:MM:SSZ` stamp (`--since`, normalised by the parser)."""
    limit: int | None = None
    fixtures: str | None = None
    corpus: str | None = None
    k: int = _DRAFT_K


def queries_request(args: argparse.Namespace) -> QueriesRequest:
    """The listing (and draft) the parsed arguments ask for."""
    return QueriesRequest(
        tuple(str(path) for path in args.logs),
        min_count=args.min_count,
        since=args.since,
        limit=args.limit,
        fixtures=None if args.fixtures is None else str(args.fixtures),
        corpus=args.corpus,
        k=args.k,
    )


def run(args: argparse.Namespace) -> int:
    return list_queries(queries_request(args))


def list_queries(request: QueriesRequest) -> int:
    """Read every log, print the queries, and write the draft when asked."""
    refuse_output_over_input([("--fixtures", request.fixtures)], list(request.logs))
    sources = [(path, _read_log(path)) for path in request.logs]
    log = read_query_log(
        sources,
        looks_secret,
        min_count=request.min_count,
        since=request.since,
        limit=request.limit,
    )
    for problem in log.problems[:5]:
        print(f"warning: {problem.path}:{problem.line}: {problem.reason}", file=sys.stderr)
    if len(log.problems) > 5:
        print(f"warning: {len(log.problems) - 5} more log lines skipped", file=sys.stderr)
    if log.secrets_dropped:
        print(
            f"note: {_count(log.secrets_dropped, 'distinct query', 'distinct queries')} "
            "dropped because they look like credentials",
            file=sys.stderr,
        )
    if request.fixtures is not None:
        draft = draft_fixtures(log.queries, request.corpus, request.k)
        try:
            write_output(request.fixtures, draft.encode("utf-8"))
        except OSError as error:
            raise CliError(
                f"could not write draft fixtures {request.fixtures}: {describe_os_error(error)}"
            ) from None
        print(
            f"wrote {_count(len(log.queries), 'draft case', 'draft cases')} to "
            f"{request.fixtures}; "
            "fill in each "
            '"expected" (or run cce pool) before scoring',
            file=sys.stderr,
        )
    write_stdout(render_queries(log))
    return 0
