"""Real queries mined from `metrics.jsonl` event logs, for labeling.

Why it exists: queries people actually typed beat invented ones, and `cce search` already
records each one as a `search` event (docs/labeling.md#mine-the-log). This module owns
reading those logs tolerantly (a log is appended to by many runs and may hold a torn or
foreign line), counting distinct queries, dropping the ones that look like credentials,
and turning the survivors into a draft `cce.relevance/v1` fixture file whose case ids are
derived from the query text, so the same query gets the same id in every draft.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final

import attrs

from cce_cli.formats import json_text
from cce_fixtures import SCHEMA_ID as FIXTURE_SCHEMA

__all__ = [
    "LogProblem",
    "LoggedQuery",
    "QueryLog",
    "draft_case_id",
    "draft_fixtures",
    "read_query_log",
]

SEARCH_EVENT: Final = "search"
_SLUG_WORDS: Final = 5
_SLUG_CHARS: Final = 40


@attrs.frozen(slots=True)
class LoggedQuery:
    """One distinct query: how often it was searched and when it was last seen (UTC)."""

    text: str
    count: int
    last_seen: str


@attrs.frozen(slots=True)
class LogProblem:
    """A log line that was skipped, with where it stands and why."""

    path: str
    line: int
    reason: str


@attrs.frozen(slots=True)
class QueryLog:
    """Distinct queries, most frequent first, and what was left out and why."""

    queries: tuple[LoggedQuery, ...]
    secrets_dropped: int
    problems: tuple[LogProblem, ...]


def _search_events(
    path: str, lines: Iterable[bytes], problems: list[LogProblem], seen: set[str]
) -> Iterable[tuple[str, str]]:
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            event = json_text.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            problems.append(LogProblem(path, number, "not a JSON event (torn or foreign line)"))
            continue
        if not isinstance(event, dict) or event.get("event") != SEARCH_EVENT:
            continue
        event_id = event.get("id")
        if isinstance(event_id, str):
            # The same log given twice, or a copy of it, must not count a search twice.
            if event_id in seen:
                continue
            seen.add(event_id)
        query, stamp = event.get("query"), event.get("ts")
        if not isinstance(query, str) or not isinstance(stamp, str):
            problems.append(LogProblem(path, number, 'search event without "query" or "ts"'))
            continue
        if not _is_text(query):
            problems.append(
                LogProblem(path, number, "search query holds an unpaired surrogate escape")
            )
            continue
        yield query, stamp


def _is_text(value: str) -> bool:
    """False for a string holding an unpaired surrogate (a `\\ud800` escape in the log),
    which no draft fixture file could encode."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_query_log(
    sources: Sequence[tuple[str, Iterable[bytes]]],
    looks_secret: Callable[[str], bool],
    *,
    min_count: int = 1,
    since: str | None = None,
    limit: int | None = None,
) -> QueryLog:
    """Count the distinct non-blank queries of every `search` event in `sources`.

    `sources` are (display path, lines) pairs. A query is counted exactly as typed
    (surrounding whitespace removed); an event id seen before is skipped, so overlapping
    logs count each search once. Events stamped before `since` (an ISO-8601 UTC
    prefix such as `2026-11-01` or `2026-11-01T12:00:00Z`, compared as text, which is
    exact for the `YYYY-MM-DDTHH:MM:SSZ` stamps cce writes) are ignored. Queries for
    which `looks_secret` holds are dropped and counted, never returned. The order is
    count descending, then last seen descending, then the text, so it is stable.
    """
    problems: list[LogProblem] = []
    counts: dict[str, int] = {}
    last_seen: dict[str, str] = {}
    secrets: set[str] = set()
    seen_events: set[str] = set()
    for path, lines in sources:
        for query, stamp in _search_events(path, lines, problems, seen_events):
            text = query.strip()
            if not text or (since is not None and stamp < since):
                continue
            if text in secrets or looks_secret(text):
                secrets.add(text)
                continue
            counts[text] = counts.get(text, 0) + 1
            last_seen[text] = max(stamp, last_seen.get(text, stamp))
    ranked = sorted(
        (LoggedQuery(text, count, last_seen[text]) for text, count in counts.items()),
        key=lambda q: (-q.count, _descending(q.last_seen), q.text),
    )
    kept = tuple(q for q in ranked if q.count >= min_count)
    if limit is not None:
        kept = kept[:limit]
    return QueryLog(kept, len(secrets), tuple(problems))


def _descending(text: str) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in text)


def draft_case_id(query: str) -> str:
    """`q-<slug>-<hash8>`: readable, and the same for the same text in every draft."""
    words = re.findall(r"[a-z0-9]+", query.lower())[:_SLUG_WORDS]
    slug = "-".join(words)[:_SLUG_CHARS].strip("-")
    digest = hashlib.sha256(query.encode("utf-8")).hexdigest()[:8]
    return f"q-{slug}-{digest}" if slug else f"q-{digest}"


def draft_fixtures(queries: Sequence[LoggedQuery], corpus: str | None, k: int) -> str:
    """A draft fixture file: a header, then one case per query with `expected` left empty.

    The empty `expected` arrays are deliberate: the draft is for a judge to fill in (or
    for `cce pool` to gather candidates for), and `cce-fixtures validate` reports each
    one until it is judged.
    """
    header: dict[str, object] = {"schema": FIXTURE_SCHEMA}
    if corpus is not None:
        header["corpus"] = corpus
    lines = [json.dumps(header, ensure_ascii=False, separators=(",", ":"))]
    for query in queries:
        case = {"id": draft_case_id(query.text), "query": query.text, "expected": [], "k": k}
        lines.append(json.dumps(case, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines) + "\n"
