"""Side-by-side speed of today's commands against a baseline commit, and a scale run.

Why it exists: speed claims are ratios, and a ratio is only honest when both sides run
on the same machine, at the same moment, on the same corpus. This script materialises
the baseline commit's packages with `git archive` into `.bench/baseline-<commit>/` and
runs its CLI (same interpreter, same third-party packages, its own sources first on
`PYTHONPATH`) next to the current CLI, alternating the two, and prints each
measurement as `baseline / current`. It also checks that both sides printed and wrote
the same bytes, so a speed-up that changed an output is reported as a failure. Both
sides run with their bytecode compiled into `.bench/pycache`, as installed packages are
(`compile_bytecode`).

Measured (on the stdlib mirror of bench/corpus.py unless a directory is given):
- `cce index`, cold (empty build cache, fresh store directory): wall time, peak RSS, store
  bytes identical; then the same tree again into the same store (warm cache);
- `cce search` on the persisted store: end to end and peak RSS (first and warm run);
- `cce relevance --dir`: cold, second run, and after a one-file edit (on a copy);
- BM25 query time against rank-bm25 and bm25s (numpy backend) on the same tokens.

`--scale N` replicates the stdlib (hard links) to about N chunks and runs only the
current code: index, load, per-backend query latency (p50/p95) and scoring, each with
its peak RSS against the 8 GB bar. Timings are printed, never asserted in tests.

Each section first prints what creating a file costs in the scratch directory: a cold
stdlib build creates about 2,000 files (its cache entries), and on ext4 creating files
just after thousands were deleted costs about a millisecond each instead of tens of
microseconds (the inode allocator steps over recently freed inodes), which adds seconds
to the side that caches. So the bench deletes nothing between its runs, and a run
started right after deleting a large cache says so (docs/index-store.md#measuring-a-cold-build).
It also prints what filling new memory costs: on a virtual machine whose host takes
freed memory back at once (free page reporting), every page a process is given costs
ten times as much to touch the first time, which each side pays for every MB it uses
and writes.

Usage: `uv run python bench/bench_perf.py [--baseline COMMIT] [--repeat R]
[--scale N] [--skip-side-by-side] [DIR]`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import attrs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus import default_corpus, mirror_stdlib
from queries import make_queries

from cce_retrieval import load_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk, Index
from cce_retrieval.parity.tokenizer import tokenize, unique_tokens
from cce_retrieval.rank.hybrid import bm25_only_search, search, vector_search

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = "8d3e6bfb6ceffbc0b051d04ce0aa8baf18544299"
PACKAGES = ("cce-stats", "cce-fixtures", "cce-metrics", "cce-retrieval", "cce-cli")
LAUNCH = "import sys; from cce_cli.main import main; sys.exit(main(sys.argv[1:]))"
RSS_BAR_BYTES = 8 * 1024**3
SEARCH_QUERY = "parse command line arguments"
FIXTURE_CASES = 100
LATENCY_QUERIES = 100
BM25_QUERIES = 20
FILE_PROBE_COUNT = 200
SLOW_FILE_CREATION_S = 300e-6
MEMORY_PROBE_MB = 256
SLOW_FRESH_MEMORY_S_PER_MB = 1e-3
TOP_K = 10


@attrs.frozen
class Run:
    """One finished command: wall seconds, peak RSS bytes, stdout bytes."""

    seconds: float
    rss: int
    stdout: bytes


def materialise_baseline(commit: str) -> str:
    """`.bench/baseline-<commit>/packages/...` from `git archive` (reused across runs).

    Both sides are run from such trees (the current side from HEAD), with this
    interpreter's third-party packages."""
    dest = os.path.join(ROOT, ".bench", f"baseline-{commit[:12]}")
    marker = dest + ".complete"
    if not os.path.exists(marker):
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        archive = subprocess.run(
            ["git", "-C", ROOT, "archive", "--format=tar", commit, "packages"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
        with open(marker, "w", encoding="utf-8") as f:
            f.write(commit + "\n")
    return dest


BYTECODE = os.path.join(ROOT, ".bench", "pycache")


def compile_bytecode(trees: Sequence[str]) -> None:
    """Compile every module both sides import, into `.bench/pycache`.

    An installed package has its bytecode (pip compiles at install, and Python writes it
    on first import); without it each run compiles ~300 modules from source, about 0.5 s
    on a slow machine, which would hide what the commands themselves cost. Both sides get
    the same treatment; PYTHONDONTWRITEBYTECODE is dropped for the measured children.
    """
    import site
    import sysconfig

    dirs = {sysconfig.get_paths()["stdlib"], *site.getsitepackages(), *trees}
    env = {**os.environ, "PYTHONPYCACHEPREFIX": BYTECODE}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j0", *sorted(dirs)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,  # a file that does not compile (a test fixture) is not ours to fix
    )


class Cli:
    """One side's `cce`: the current sources, or a baseline tree put first on the path."""

    def __init__(self, label: str, source_root: str | None) -> None:
        self.label = label
        self.env = dict(os.environ)
        self.env.pop("PYTHONPATH", None)
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["PYTHONPYCACHEPREFIX"] = BYTECODE
        self.paths: list[str] = []
        if source_root is not None:
            self.paths = [os.path.join(source_root, "packages", p, "src") for p in PACKAGES]
            self.env["PYTHONPATH"] = os.pathsep.join(self.paths)

    def run(self, args: Sequence[str], env: Mapping[str, str] | None = None) -> Run:
        merged = {**self.env, **(env or {})}
        started = time.perf_counter()
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(
                [sys.executable, "-c", LAUNCH, *args],
                stdout=out,
                stderr=subprocess.PIPE,
                env=merged,
            )
            assert proc.stderr is not None
            err = proc.stderr.read()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            seconds = time.perf_counter() - started
            out.seek(0)
            stdout = out.read()
        if proc.returncode != 0:
            raise RuntimeError(f"{self.label} cce {' '.join(args)} failed: {err.decode()}")
        return Run(seconds, usage.ru_maxrss * 1024, stdout)


def mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


def sha(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def report(name: str, base: Run | None, cur: Run, same: bool | None, target: float | None) -> None:
    cells = f"  {name:<34} now {cur.seconds:7.2f} s {mb(cur.rss):>9}"
    if base is not None:
        ratio = base.seconds / cur.seconds
        cells += f"   was {base.seconds:7.2f} s {mb(base.rss):>9}   ratio {ratio:5.2f}x"
        if target is not None:
            cells += f" (target {target:g}x: {'met' if ratio >= target else 'NOT met'})"
    if same is not None:
        cells += "   bytes identical" if same else "   OUTPUT DIFFERS"
    print(cells, flush=True)


def best(runs: list[Run]) -> Run:
    return min(runs, key=lambda r: r.seconds)


def fixture_text(corpus: str, chunks: Sequence[Chunk]) -> str:
    lines = [json.dumps({"schema": "cce.relevance/v1", "corpus": corpus})]
    for i, (query, chunk) in enumerate(make_queries(list(chunks), FIXTURE_CASES)):
        anchor = chunk.file_path
        if i % 4 == 0:
            anchor = f"{chunk.file_path}@{chunk.start_line}-{chunk.end_line}"
        lines.append(json.dumps({"id": f"bench-{i:03d}", "query": query, "expected": [anchor]}))
    return "\n".join(lines) + "\n"


def file_creation_cost(directory: str) -> float:
    """Seconds per new file (create, write 1 KB, close) in a fresh subdirectory of
    `directory`; the probe's files are removed again."""
    probe = tempfile.mkdtemp(prefix="file-probe-", dir=directory)
    try:
        started = time.perf_counter()
        for number in range(FILE_PROBE_COUNT):
            with open(os.path.join(probe, f"{number}.entry"), "xb") as handle:
                handle.write(b"x" * 1024)
        return (time.perf_counter() - started) / FILE_PROBE_COUNT
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def fresh_memory_cost() -> float:
    """Seconds per MB to fill memory a process has just been given (the first touch of
    each page), measured on `MEMORY_PROBE_MB` MB in a child process: a child inherits
    its parent's peak RSS on Linux, so the probe must not raise this process's."""
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--memory-probe"],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(child.stdout)


def memory_probe_child() -> int:
    import mmap

    page = mmap.PAGESIZE
    with mmap.mmap(-1, MEMORY_PROBE_MB << 20) as region:
        started = time.perf_counter()
        for offset in range(0, len(region), page):
            region[offset] = 1
        print((time.perf_counter() - started) / MEMORY_PROBE_MB)
    return 0


def print_machine_state(scratch: str) -> None:
    """The load average, what creating a file costs where the runs write, and what
    touching new memory costs."""
    creating = file_creation_cost(scratch)
    print(f"   load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    warning = ""
    if creating > SLOW_FILE_CREATION_S:
        warning = " (slow: many files deleted here recently? the caching side pays it)"
    print(f"   creating a file in the scratch directory: {creating * 1e6:,.0f} µs{warning}")
    touching = fresh_memory_cost()
    warning = ""
    if touching > SLOW_FRESH_MEMORY_S_PER_MB:
        warning = " (slow: a VM whose host takes freed memory back? each side pays per MB it uses)"
    print(f"   filling new memory: {touching * 1e3:.2f} ms/MB{warning}")


def side_by_side(corpus: str, baseline: Cli, current: Cli, repeat: int, scratch: str) -> str:
    """Both sides alternately on `corpus`; returns the current side's last store."""
    print(f"\n== side by side: {baseline.label} vs {current.label} on {corpus}")
    print_machine_state(scratch)
    base_runs: list[Run] = []
    cur_runs: list[Run] = []
    for attempt in range(repeat):
        # Cold means nothing from an earlier attempt either: a fresh build cache and a
        # fresh store directory (an existing sidecar of the same bytes would be kept
        # rather than written, which a first index never gets).
        cold = {"CCE_CACHE_DIR": os.path.join(scratch, f"cache-cold-{attempt}")}
        base_store = os.path.join(scratch, f"base-{attempt}", ".cce", "index.json")
        cur_store = os.path.join(scratch, f"cur-{attempt}", ".cce", "index.json")
        base_runs.append(baseline.run(["index", corpus, "--store", base_store, "--no-metrics"]))
        cur_runs.append(
            current.run(["index", corpus, "--store", cur_store, "--no-metrics"], env=cold)
        )
    same = sha(base_store) == sha(cur_store)
    report("cce index (cold cache)", best(base_runs), best(cur_runs), same, 1.6)
    # Each attempt runs the two sides back to back, so its ratio shares the machine's
    # phase; the best of each side can come from different phases of a drifting machine.
    paired = [base.seconds / cur.seconds for base, cur in zip(base_runs, cur_runs, strict=True)]
    print(
        f"  {'':<34} each attempt's pair: {', '.join(f'{r:.2f}x' for r in paired)}"
        f" (median {statistics.median(paired):.2f}x)"
    )
    # The same tree again into the same store, with the cache the last attempt filled:
    # the repeat a CI job or a hook makes when nothing changed.
    base_again = baseline.run(["index", corpus, "--store", base_store, "--no-metrics"])
    cur_again = current.run(["index", corpus, "--store", cur_store, "--no-metrics"], env=cold)
    # The summary the same as the cold run's, but for its last line (the elapsed time).
    same_again = (
        sha(base_store) == sha(cur_store)
        and cur_again.stdout.splitlines()[:-1] == cur_runs[-1].stdout.splitlines()[:-1]
    )
    report("cce index (unchanged, again)", base_again, cur_again, same_again, None)

    # `--json`: the bytes the reference pins (the human listing now labels graph rows).
    search_args = ["search", SEARCH_QUERY, "--no-metrics", "--json", "--store"]
    base_search = [baseline.run([*search_args, base_store]) for _ in range(repeat)]
    first = current.run([*search_args, cur_store])
    warm = [current.run([*search_args, cur_store]) for _ in range(repeat)]
    outputs = {r.stdout for r in [*base_search, first, *warm]}
    report("cce search (first run)", best(base_search), first, len(outputs) == 1, None)
    report("cce search (persisted store)", best(base_search), best(warm), len(outputs) == 1, 10)
    print(f"  {'':<34} peak RSS {mb(best(warm).rss)} (bar 500 MB)")

    fixtures = os.path.join(scratch, "bench.jsonl")
    write_fixtures(cur_store, corpus, fixtures, "", current.env)
    copy = os.path.join(scratch, "corpus-copy")
    shutil.copytree(corpus, copy)
    cache = {"CCE_CACHE_DIR": os.path.join(scratch, "cache-relevance")}
    rel = ["relevance", fixtures, "--dir", copy]
    base_rel = [baseline.run(rel) for _ in range(repeat)]
    cold_rel = current.run(rel, env=cache)
    warm_rel = [current.run(rel, env=cache) for _ in range(repeat)]
    edited = edit_one_file(copy)
    base_edit = baseline.run(rel)
    edit_rel = current.run(rel, env=cache)
    print(f"  (edited {os.path.relpath(edited, copy)} for the last pair)")
    same_rel = len({r.stdout for r in [*base_rel, cold_rel, *warm_rel]}) == 1
    report("cce relevance --dir (cold cache)", best(base_rel), cold_rel, same_rel, None)
    report("cce relevance --dir (second run)", best(base_rel), best(warm_rel), same_rel, 4)
    report(
        "cce relevance --dir (one file edited)",
        base_edit,
        edit_rel,
        base_edit.stdout == edit_rel.stdout,
        3,
    )
    print(f"   load average at end: {os.getloadavg()[0]:.2f}")
    return cur_store


def write_fixtures(
    store: str, corpus: str, out: str, prefix: str, env: Mapping[str, str]
) -> dict[str, int]:
    """Fixture file from `store`'s chunks (paths prefixed), made in a child process.

    A child inherits its parent's peak RSS on Linux, so the benchmark process never
    loads a store itself; the child also returns the store's chunk count per file.
    """
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--fixture-child", store, corpus, out, prefix],
        check=True,
        capture_output=True,
        env=env,
    )
    counts: dict[str, int] = json.loads(child.stdout.decode())
    return counts


def fixture_child(store: str, corpus: str, out: str, prefix: str) -> int:
    chunks = [attrs.evolve(c, file_path=prefix + c.file_path) for c in load_index(store).chunks]
    with open(out, "w", encoding="utf-8") as f:
        f.write(fixture_text(corpus, chunks))
    print(json.dumps(Counter(c.file_path[len(prefix) :] for c in chunks)))
    return 0


def edit_one_file(root: str) -> str:
    """Append a comment to the largest Python file (a new inode: links stay untouched)."""
    candidates = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                candidates.append((os.path.getsize(path), path))
    _, path = max(candidates)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    os.unlink(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n# edited by the benchmark\n")
    return path


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def bm25_comparison(index: Index) -> None:
    """cce's BM25 against rank-bm25 and bm25s on the same tokens (scores of every doc)."""
    print("\n== BM25 against rank-bm25 and bm25s (same tokens, same k1/b)")
    workload = [q for q, _ in make_queries(index.chunks, BM25_QUERIES)]
    corpus_tokens = [tokenize(c.content) for c in index.chunks]
    bm25_only_search(index, workload[0], TOP_K)  # derived structures built once
    repeats = 20
    started = time.perf_counter()
    for _ in range(repeats):
        for query in workload:
            bm25_only_search(index, query, TOP_K)
    ours = (time.perf_counter() - started) / (repeats * len(workload))
    print(f"  cce bm25 (scored, ranked, top {TOP_K}): {ours * 1000:8.3f} ms/query")
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        print("  rank-bm25 not installed; skipped")
    else:
        oracle = BM25Okapi(corpus_tokens, k1=1.2, b=0.75)
        started = time.perf_counter()
        for query in workload:
            oracle.get_scores(unique_tokens(query))
        theirs = (time.perf_counter() - started) / len(workload)
        print(f"  rank-bm25 BM25Okapi (scores only):    {theirs * 1000:8.3f} ms/query", end="")
        print(f"   ratio {theirs / ours:6.1f}x")
    try:
        import bm25s
    except ImportError:
        print("  bm25s not installed; skipped")
        return
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene", backend="numpy")
    retriever.index(corpus_tokens, show_progress=False)
    vocab = retriever.vocab_dict
    queries = [[vocab[t] for t in unique_tokens(q) if t in vocab] for q in workload]
    started = time.perf_counter()
    for _ in range(repeats):
        for ids in queries:
            if not ids:
                continue
            scores = retriever.get_scores(ids)
            top = scores.argsort()[::-1][:TOP_K]
            del top
    theirs = (time.perf_counter() - started) / (repeats * len(workload))
    print(f"  bm25s numpy (scores + top {TOP_K}):       {theirs * 1000:8.3f} ms/query", end="")
    print(f"   ratio {theirs / ours:6.1f}x")


def latency_child(store: str) -> int:
    """Run inside a fresh process: load `store`, time each backend; print one JSON line."""
    from cce_cli.evaluation.indexes import open_store

    started = time.perf_counter()
    index, _ = open_store(store, lambda url, _failure: f"ollama unreachable at {url}")
    load_s = time.perf_counter() - started
    embedder = HashEmbedder()
    workload = [q for q, _ in make_queries(index.chunks, LATENCY_QUERIES)]
    started = time.perf_counter()
    search(index, embedder, workload[0], TOP_K, True)
    warm_s = time.perf_counter() - started
    backends: dict[str, Callable[[str], object]] = {
        "bm25": lambda q: bm25_only_search(index, q, TOP_K),
        "vector": lambda q: vector_search(index, embedder.embed(q), TOP_K),
        "hybrid": lambda q: search(index, embedder, q, TOP_K, True),
    }
    latencies: dict[str, list[float]] = {}
    for name, backend in backends.items():
        samples = []
        for query in workload:
            t0 = time.perf_counter()
            backend(query)
            samples.append((time.perf_counter() - t0) * 1000.0)
        latencies[name] = [percentile(samples, 0.5), percentile(samples, 0.95)]
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    record = {"load_s": load_s, "warm_s": warm_s, "latency_ms": latencies, "rss": rss}
    print(json.dumps(record))
    return 0


def scale_corpus(stdlib: str, target_chunks: int, chunks_per_file: Counter[str]) -> str:
    """Hard-linked copies of the stdlib mirror holding about `target_chunks` chunks."""
    per_copy = sum(chunks_per_file.values())
    dest = os.path.join(ROOT, ".bench", f"scale-{target_chunks}")
    marker = dest + ".complete"
    if os.path.exists(marker):
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    copies = target_chunks // per_copy
    remainder = target_chunks - copies * per_copy
    files = sorted(chunks_per_file)
    plan: list[tuple[int, list[str]]] = [(i, files) for i in range(copies)]
    if remainder:
        partial: list[str] = []
        total = 0
        for rel in files:
            if total >= remainder:
                break
            partial.append(rel)
            total += chunks_per_file[rel]
        plan.append((copies, partial))
    for number, rels in plan:
        for rel in rels:
            target = os.path.join(dest, f"copy{number:03d}", rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.link(os.path.join(stdlib, rel), target)
    with open(marker, "w", encoding="utf-8") as f:
        f.write(f"{target_chunks}\n")
    return dest


def scale_run(target: int, stdlib: str, current: Cli, scratch: str) -> None:
    print(f"\n== scale: about {target:,} chunks (current code only)")
    print_machine_state(scratch)
    probe = os.path.join(scratch, "probe", "index.json")
    env = {"CCE_CACHE_DIR": os.path.join(scratch, "cache-scale")}
    current.run(["index", stdlib, "--store", probe, "--no-metrics"], env=env)
    fixtures = os.path.join(scratch, "scale.jsonl")
    per_file = Counter(write_fixtures(probe, stdlib, fixtures, "copy000/", current.env))
    corpus = scale_corpus(stdlib, target, per_file)
    store = os.path.join(scratch, "scale", ".cce", "index.json")
    print(f"   corpus {corpus}; load average {os.getloadavg()[0]:.2f}", flush=True)
    built = current.run(["index", corpus, "--store", store, "--no-metrics"], env=env)
    summary = built.stdout.decode()
    chunks = next(line.split(":")[1].strip() for line in summary.splitlines() if "total" in line)
    print(f"  build     {built.seconds:8.1f} s  peak RSS {mb(built.rss)}  chunks {chunks}")
    print(f"  store     {mb(os.path.getsize(store))}")
    cli_search = current.run(["search", SEARCH_QUERY, "--store", store, "--no-metrics"])
    print(f"  search    {cli_search.seconds:8.2f} s  peak RSS {mb(cli_search.rss)} (end to end)")
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--latency-child", store],
        check=True,
        capture_output=True,
        env=current.env,
    )
    record = json.loads(child.stdout.decode().strip().splitlines()[-1])
    print(f"  load      {record['load_s']:8.2f} s  (+{record['warm_s']:.2f} s first query)")
    for name, (p50, p95) in record["latency_ms"].items():
        print(f"  {name:<8}  p50 {p50:8.2f} ms  p95 {p95:8.2f} ms")
    print(f"  latency process peak RSS {mb(record['rss'])}")
    scored = current.run(["relevance", fixtures, "--store", store])
    print(f"  score     {scored.seconds:8.1f} s  peak RSS {mb(scored.rss)} ({FIXTURE_CASES} cases)")
    peak = max(built.rss, cli_search.rss, record["rss"], scored.rss)
    verdict = "within" if peak <= RSS_BAR_BYTES else "ABOVE"
    print(f"  peak RSS {mb(peak)}: {verdict} the 8 GB bar; load average {os.getloadavg()[0]:.2f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", help="corpus directory (default: stdlib mirror)")
    parser.add_argument("--baseline", default=BASELINE, help="commit to compare against")
    parser.add_argument("--repeat", type=int, default=1, help="runs per side (best is kept)")
    parser.add_argument("--scale", type=int, default=0, metavar="N", help="also run at N chunks")
    parser.add_argument("--skip-side-by-side", action="store_true")
    parser.add_argument("--latency-child", metavar="STORE", help=argparse.SUPPRESS)
    parser.add_argument("--fixture-child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--memory-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_probe:
        return memory_probe_child()
    if args.latency_child:
        return latency_child(args.latency_child)
    if args.fixture_child:
        return fixture_child(*args.fixture_child)
    corpus = os.path.abspath(args.corpus) if args.corpus else default_corpus()
    head = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    # The committed HEAD, not the working tree: editing while a long run goes on is safe.
    current = Cli(f"current {head[:8]}", materialise_baseline(head))
    with tempfile.TemporaryDirectory(prefix="cce-bench-") as scratch:
        if not args.skip_side_by_side:
            baseline = Cli(f"baseline {args.baseline[:8]}", materialise_baseline(args.baseline))
            compile_bytecode([*baseline.paths, *current.paths])
            current_store = side_by_side(corpus, baseline, current, max(1, args.repeat), scratch)
        if args.scale:
            compile_bytecode(current.paths)
            stdlib = corpus if args.corpus else mirror_stdlib(default_corpus())
            scale_run(args.scale, stdlib, current, scratch)
        if not args.skip_side_by_side:  # last: it loads a store into this process
            bm25_comparison(load_index(current_store))
    return 0


if __name__ == "__main__":
    sys.exit(main())
