"""Every file's outcome in walk order: cache hits read here while workers compute the rest.

Why it exists: after a small edit most files are cache hits and the edited ones cost
little wall time of their own; a cold build spreads files over worker processes. Either
way outcomes are reassembled in walk order, each file's store text goes on to the store
stream as soon as every file before it is in, and its terms are numbered as they arrive.
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Final

import attrs

from cce_retrieval.build.cache import (
    BuildCache,
    EncodedOutcome,
    FileOutcome,
    SparseRows,
)
from cce_retrieval.build.files import FileTask, file_outcome_task, packed_outcome_task
from cce_retrieval.build.processes import (
    become_helper,
    forks_without_garbage,
    interrupts_deferred,
    pool_context,
    widen_pipes,
)
from cce_retrieval.build.spool import PieceSpool
from cce_retrieval.build.terms import TermNumbering
from cce_retrieval.embed.hashing import EMBED_DIM
from cce_retrieval.model import (
    FloatMatrix,
)
from cce_retrieval.protect.strict import REFERENCE
from cce_retrieval.store.write import StoreStream
from cce_retrieval.walk.walker import WalkedFile

ProgressCallback = Callable[[int, int], None]
"""Called as `progress(files_done, files_total)` while files are redacted and chunked."""


_PARALLEL_MIN_BYTES: Final = 1 << 18
"""Below this much text to chunk, starting worker processes costs more than it saves."""


def default_jobs() -> int:
    """Worker processes for a build: the CPUs this process may run on, at most 8."""
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        available = os.cpu_count() or 1
    return max(1, min(available, 8))


@attrs.frozen
class FileSettings:
    """What a build does to every file, besides the file itself: the arguments of
    `file_outcome` that do not change from one file to the next."""

    protect: bool
    embed_hash: bool
    cache: BuildCache | None
    protection: str = REFERENCE
    store_text: bool = True

    def task(self, walked_file: WalkedFile, key: bytes | None) -> FileTask:
        """The worker task of one file (its cache key, when there is a cache)."""
        return (
            walked_file.rel_path,
            walked_file.text,
            self.protect,
            self.embed_hash,
            self.cache,
            self.protection,
            self.store_text,
            key,
        )


def collect_outcomes(
    files: Sequence[WalkedFile],
    settings: FileSettings,
    *,
    jobs: int,
    keys: Sequence[bytes] = (),
    progress: ProgressCallback | None = None,
    stream: StoreStream | None = None,
    numbering: TermNumbering | None = None,
) -> tuple[list[FileOutcome], PieceSpool, list[FloatMatrix | SparseRows | None]]:
    """Every file's outcome in walk order: from the cache where it has it, else computed.

    Also each file's embedding rows: the outcome's matrix, or the cells a worker sent
    (then the outcome itself carries no matrix).

    Each outcome's store text is moved into the returned spool as it arrives (the
    outcomes keep none), so the largest output of a big build is not held on the heap.
    `keys` are the files' cache keys (`BuildCache.key`), when there is a cache.

    With a `stream` (begun), each piece goes on to it as soon as every piece before it
    is in, and leaves the spool; once the stream fails, the pieces stay in the spool.
    With a `numbering`, each file's terms are numbered as soon as every file before it
    is in.
    """
    total = len(files)
    cache = settings.cache
    assert cache is None or len(keys) == total
    entry_keys: list[bytes | None] = list(keys) if cache is not None else [None] * total
    collected = _Collected(total, progress, stream, numbering)
    # Files with no entry at all are computed by workers while the entries there are
    # read here: after a small edit, the edited files cost little wall time of their own.
    absent = [
        i for i, key in enumerate(entry_keys) if key is None or cache is None or not cache.has(key)
    ]
    workers = min(jobs, len(absent))
    parallel = (
        workers
        and jobs > 1
        and sum(len(files[i].text) for i in absent) >= _PARALLEL_MIN_BYTES
        and (workers > 1 or len(absent) < total)
    )
    pool: concurrent.futures.ProcessPoolExecutor | None = None
    try:
        results: Iterator[tuple[FileOutcome, SparseRows | None] | EncodedOutcome] = iter(())
        if parallel:
            tasks = [settings.task(files[i], entry_keys[i]) for i in absent]
            # The first task forks the workers; a Ctrl-C before the pool is whole (and
            # held here, where the `finally` shuts it down) would leave them where no
            # shutdown reaches (`interrupts_deferred`).
            with interrupts_deferred(), forks_without_garbage():
                pool = _worker_pool(workers)
                results = pool.map(packed_outcome_task, tasks, chunksize=4)
        late = _read_hits(settings, entry_keys, set(absent), collected)
        if progress is not None:
            progress(collected.done, total)
        if pool is not None:
            cells: SparseRows | None
            for i, result in zip(absent, results, strict=True):
                if isinstance(result, EncodedOutcome):
                    read = with_entry_text(result)
                    if read is None:
                        late.append(i)  # its entry is gone already: made again here
                        continue
                    outcome, cells = read.decode()
                else:
                    outcome, cells = result
                collected.finish(i, outcome, cells)
        else:
            late = sorted([*absent, *late])
        for i in late:
            collected.finish(i, file_outcome_task(settings.task(files[i], entry_keys[i])))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return collected.result()


class _Collected:
    """The outcomes collected so far, in walk order, and what each arrival sets off: its
    store text into the spool (and on to the stream), its terms numbered, progress."""

    def __init__(
        self,
        total: int,
        progress: ProgressCallback | None,
        stream: StoreStream | None,
        numbering: TermNumbering | None,
    ) -> None:
        self.total = total
        self.outcomes: list[FileOutcome | None] = [None] * total
        self.texts = PieceSpool(total)
        self.sparse: dict[int, SparseRows] = {}
        self.done = 0
        self._numbered = 0
        self._progress = progress
        self._stream = stream
        self._numbering = numbering

    def finish(
        self, i: int, outcome: FileOutcome, cells: SparseRows | None = None, report: bool = True
    ) -> None:
        if cells is not None:
            self.sparse[i] = cells
        self.outcomes[i] = self._take_text(i, outcome)
        self.done += 1
        while self._numbering is not None and self._numbered < self.total:
            ready = self.outcomes[self._numbered]
            if ready is None or ready.terms is None:
                break  # a file without counts stops it: BM25 then numbers them itself
            self._numbering.number(ready.terms)
            self._numbered += 1
        if report and self._progress is not None:
            self._progress(self.done, self.total)

    def _take_text(self, i: int, outcome: FileOutcome) -> FileOutcome:
        if outcome.store_text is None:
            return outcome
        self.texts.put(i, outcome.store_text)
        stream = self._stream
        if stream is not None:
            while not stream.failed and stream.pieces < self.total:
                piece = self.texts.get(stream.pieces)
                if piece is None or not stream.add(piece):
                    break
                self.texts.forget(stream.pieces - 1)
        return attrs.evolve(outcome, store_text=None)

    def result(self) -> tuple[list[FileOutcome], PieceSpool, list[FloatMatrix | SparseRows | None]]:
        complete = [outcome for outcome in self.outcomes if outcome is not None]
        assert len(complete) == self.total
        rows = [self.sparse.get(i) or outcome.embeddings for i, outcome in enumerate(complete)]
        return complete, self.texts, rows


def _worker_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """A pool of `workers` helper processes (`become_helper`), its pipes widened."""
    pool = concurrent.futures.ProcessPoolExecutor(
        workers,
        mp_context=pool_context(),
        initializer=become_helper,
        initargs=(os.getpid(),),
    )
    widen_pipes(pool)
    return pool


def _read_hits(
    settings: FileSettings,
    entry_keys: Sequence[bytes | None],
    absent: set[int],
    collected: _Collected,
) -> list[int]:
    """Collect every file the cache holds (not reported as progress one by one); the
    files whose entry turned out unreadable are returned, to be made here."""
    cache = settings.cache
    late: list[int] = []
    for i, key in enumerate(entry_keys):
        if key is None or i in absent:
            continue
        assert cache is not None
        hit = None
        cells = None
        if settings.embed_hash:
            found = cache.get_sparse(key, settings.store_text)
            # Hash rows are EMBED_DIM wide; anything else was not made by this build.
            if found is not None and (found[1].width == EMBED_DIM or found[1].rows == 0):
                hit, cells = found
        else:
            hit = cache.get(key, settings.store_text)
        if hit is None:
            late.append(i)
        else:
            collected.finish(i, hit, cells, report=False)
    return late


def with_entry_text(result: EncodedOutcome) -> EncodedOutcome | None:
    """A worker's `result` with its store text, read from the entry the worker wrote
    when it was left there (`packed_outcome_task`); None if it can no longer be read."""
    place = result.text_in_entry
    if result.store_text is not None or place is None:
        return result
    text = place.read()
    return None if text is None else attrs.evolve(result, store_text=text)
