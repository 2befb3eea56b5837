"""The files a user names as input, and the most of each kind that is read.

Why it exists: every command that reads a file named on its command line (fixtures,
reports, run files, judgments, event logs, configuration, suite manifests, task lists)
must refuse what is not a regular file (`/dev/zero` behind a symlink grows memory
without bound, a FIFO blocks forever) and stop at a size no real file of that kind
reaches. The reading itself is `cce_retrieval.read_input_file` (non-blocking open,
`fstat` on the descriptor, bounded even if the file grows); this module owns the limit
of each kind and the reason for it, so a reader names its kind and nothing else.
See docs/hostile-input.md#special-files-as-inputs.
"""

from __future__ import annotations

from typing import Final

import attrs

from cce_retrieval import read_input_file

__all__ = [
    "CODE",
    "CONFIG",
    "EVENT_LOG",
    "FIXTURES",
    "JUDGMENTS",
    "REPORT",
    "RESULTS",
    "RUN",
    "SUITE_MANIFEST",
    "TASK_LIST",
    "InputKind",
    "read_input",
]


@attrs.frozen
class InputKind:
    """A kind of input file: its name in messages (plural) and the most bytes read of it."""

    plural: str
    limit: int


_GIB: Final = 1 << 30
_MIB: Final = 1 << 20

FIXTURES: Final = InputKind("fixture files", _GIB)
"""Hand-written or drafted NDJSON, a few hundred bytes per case: a million cases is a
few hundred MB, and parsing holds several times that."""

JUDGMENTS: Final = InputKind("judging files", _GIB)
"""A judging file repeats each case with its pooled results: a fixture file's size times
the pool depth, still far below 1 GiB for anything a person judges."""

REPORT: Final = InputKind("reports", _GIB)
"""A relevance report holds one row per case and backend (about 1 KB with the per-query
metrics): a million cases under three backends is about 3 GB only in theory; real
reports are MBs, and JSON parsing needs several times the file's size."""

RESULTS: Final = InputKind("results files", 4 * _GIB)
"""A `cce.run/v1` results file is one line per case with up to k results each."""

RUN: Final = InputKind("run files", 4 * _GIB)
"""A TREC run of 1,000 results for each of 7,000 queries (MS MARCO dev) is about 400 MB;
bigger benchmarks reach GBs, so run files get the largest of the text limits."""

EVENT_LOG: Final = InputKind("event logs", 4 * _GIB)
"""`.cce/metrics.jsonl` only grows (one line of a few hundred bytes per search); years
of heavy use stay well under 4 GiB."""

TASK_LIST: Final = InputKind("task lists", _GIB)
"""A semble benchmark task list: one JSON object per task, MBs in practice."""

CONFIG: Final = InputKind("configuration files", 16 * _MIB)
"""`cce.toml` / `pyproject.toml`: hand-written, kilobytes."""

SUITE_MANIFEST: Final = InputKind("suite manifests", 16 * _MIB)
"""A `cce.suite/v1` manifest lists members: kilobytes."""

CODE: Final = InputKind("code files", 64 * _MIB)
"""A corpus file read back to show code or count its lines: the index reads at most
2 MiB of one (docs/index-store.md), so 64 MiB is far past anything it chunked."""


def read_input(path: str, kind: InputKind) -> bytes:
    """The bytes of the regular file `path`, at most `kind.limit` of them; raises
    `OSError` (`cce_retrieval.RefusedInputError` for a FIFO, a device or a file over the
    limit, whose message says so and what to give instead)."""
    return read_input_file(path, kind.limit, kind.plural)
