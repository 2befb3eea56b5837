"""`cce pool`: write a judging file from several backends, or apply a judged one.

Why it exists: this is the labeling edge (docs/labeling.md#pool). `cce pool FIXTURES
--backends A,B` runs every case (labeled or draft) through each backend over one index
and writes one `cce.judging/v1` line per case; `cce pool --apply JUDGED FIXTURES -o OUT`
turns the filled-in judgments into anchors. Draft fixtures (empty `expected`) are
accepted here, and only here, because judging them is the point. Pooling and merging
live in `cce_cli.labeling.pooling`; this module owns arguments, reading, and atomic writes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from cce_cli.commands.arguments import positive_int
from cce_cli.commands.build_options import add_build_options, add_protection_argument, build_options
from cce_cli.commands.output_paths import (
    evaluation_inputs,
    refuse_output_over_input,
    suite_member_outputs,
)
from cce_cli.errors import CliError
from cce_cli.evaluation import configurations as backend_config
from cce_cli.evaluation import corpus_checks, harness, run_checks
from cce_cli.evaluation.anchor_check import file_line_count
from cce_cli.evaluation.building import BuildOptions, cache_root
from cce_cli.evaluation.corpora import local_member_corpus, member_corpus
from cce_cli.evaluation.corpus_paths import corpus_path, rust_parent
from cce_cli.evaluation.indexes import open_store, remote_problem
from cce_cli.formats import external_runs as runs
from cce_cli.formats import input_files, json_text
from cce_cli.formats.suite_manifest import looks_like_suite, read_manifest
from cce_cli.labeling.pooling import (
    JudgedCase,
    JudgingError,
    apply_judgments,
    parse_judging,
    pool_candidates,
    render_judging_line,
)
from cce_cli.output import write_output, write_stdout
from cce_cli.runs.single import build_fixture_corpus, fixture_corpus
from cce_fixtures import (
    SCHEMA_ID,
    Case,
    FixtureError,
    FixtureSet,
    decode_fixture_bytes,
    parse_fixtures,
)
from cce_retrieval import (
    HashEmbedder,
    Index,
    QueryEmbedder,
    SearchResult,
    describe_os_error,
    protect_text,
)

__all__ = ["configure", "read_fixture_text", "run"]

DEFAULT_DEPTH = 10
_DRAFT_ANCHOR = "#__unjudged__"
_STRICT = "strict"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce pool`'s arguments."""
    parser.add_argument(
        "fixtures",
        metavar="FIXTURES",
        help="labeled or draft fixtures, or a cce.suite/v1 manifest (every member; judging "
        "ids are member/case-id, and --apply -o names a directory of member files)",
    )
    parser.add_argument(
        "--backends",
        metavar="A,B,...",
        default="bm25,vector,hybrid",
        help="backends whose top results are pooled (default: all three)",
    )
    parser.add_argument(
        "--depth",
        type=positive_int,
        default=DEFAULT_DEPTH,
        metavar="N",
        help=f"results taken from each backend per case (default {DEFAULT_DEPTH})",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="named backend configurations (default: cce.toml or pyproject.toml [tool.cce] "
        "beside the fixtures or above them)",
    )
    parser.add_argument(
        "--run",
        metavar="NAME=FILE",
        action="append",
        default=[],
        help="pool an external run (cce.run/v1 or TREC) as backend NAME; repeatable",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--dir", metavar="DIR", help="corpus directory (overrides the header)")
    source.add_argument("--store", metavar="STORE", help="a persisted store file")
    add_build_options(parser)
    add_protection_argument(parser, None)
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse to pool (exit 1) when a --run does not fit the corpus or the fixtures",
    )
    parser.add_argument(
        "--apply",
        metavar="JUDGED",
        help="turn this judged file into anchors for FIXTURES (needs -o)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="where to write (judging file, or with --apply the fixtures)",
    )


def read_fixture_text(path: str, kind: input_files.InputKind = input_files.FIXTURES) -> str:
    """The fixture file's text (or, with `kind`, a judged file's), or a CliError naming it."""
    what = "fixtures" if kind is input_files.FIXTURES else "judged file"
    try:
        return decode_fixture_bytes(input_files.read_input(path, kind))
    except OSError as error:
        raise CliError(f"could not read {what} {path}: {describe_os_error(error)}") from None
    except UnicodeDecodeError:
        raise CliError(
            f"could not read {what} {path}: stream did not contain valid UTF-8"
        ) from None


def _with_draft_anchors(text: str) -> tuple[str, set[str]]:
    """Draft cases (`"expected": []`) get a stand-in anchor so the contract parses them."""
    drafts: set[str] = set()
    lines = []
    for line in text.split("\n"):
        try:
            raw = json_text.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            raw = None
        if isinstance(raw, dict) and raw.get("expected") == [] and isinstance(raw.get("id"), str):
            drafts.add(raw["id"])
            raw["expected"] = [_DRAFT_ANCHOR]
            line = json.dumps(raw, ensure_ascii=False, separators=(",", ":"))
        lines.append(line)
    return "\n".join(lines), drafts


def _parse(path: str) -> tuple[FixtureSet, set[str], dict[str, dict[str, Any]]]:
    text, drafts = _with_draft_anchors(read_fixture_text(path))
    try:
        fixture_set = parse_fixtures(text)
    except FixtureError as error:
        raise CliError(f"{path}: {error}") from None
    raw_cases: dict[str, dict[str, Any]] = {}
    for line in text.split("\n"):
        raw = json_text.loads(line) if line.strip() else None
        if isinstance(raw, dict) and isinstance(raw.get("id"), str) and "query" in raw:
            if raw["id"] in drafts:
                raw["expected"] = []
            raw_cases[raw["id"]] = raw
    return fixture_set, drafts, raw_cases


@attrs.frozen(slots=True)
class PoolRequest:
    """One `cce pool`: what to pool (or, with `apply`, which judgments to merge) and
    where the result goes; a suite's member is this request with its own fixtures and
    corpus (`attrs.evolve`)."""

    fixtures: str
    backends: str = "bm25,vector,hybrid"
    depth: int = DEFAULT_DEPTH
    corpus: str | None = None
    store: str | None = None
    runs: tuple[str, ...] = ()
    config: str | None = None
    config_start: str | None = None
    strict: bool = False
    apply: str | None = None
    output: str | None = None
    build: BuildOptions = attrs.field(factory=BuildOptions)


def pool_request(args: argparse.Namespace) -> PoolRequest:
    """The pooling the parsed arguments ask for."""
    return PoolRequest(
        str(args.fixtures),
        backends=args.backends,
        depth=args.depth,
        corpus=None if args.dir is None else str(args.dir),
        store=None if args.store is None else str(args.store),
        runs=tuple(str(option) for option in args.run),
        config=None if args.config is None else str(args.config),
        strict=bool(args.strict),
        apply=None if args.apply is None else str(args.apply),
        output=None if args.output is None else str(args.output),
        build=build_options(args),
    )


def _index(request: PoolRequest, fixture_set: FixtureSet) -> tuple[Index, QueryEmbedder]:
    if request.store is not None:
        if request.build.protection is not None:
            raise CliError(
                "--protection applies when pool builds the corpus (--dir or the fixtures' "
                "corpus); a --store was protected when it was indexed",
                2,
            )
        return open_store(str(request.store), remote_problem)
    built = build_fixture_corpus(str(request.fixtures), request.corpus, fixture_set, request.build)
    return built[0], HashEmbedder()


def _write(path: str, text: str, what: str) -> None:
    try:
        write_output(path, text.encode("utf-8"))
    except OSError as error:
        raise CliError(f"could not write {what} {path}: {describe_os_error(error)}") from None


def _check_runs(
    request: PoolRequest,
    fixture_set: FixtureSet,
    external: dict[str, runs.ExternalRun],
) -> dict[str, int]:
    """Repair the runs' unambiguous paths in place and report their case ids; the number
    of problems per run."""
    root = corpus_checks.store_corpus_root(str(request.store)) if request.store else None
    if request.store is None:
        root = fixture_corpus(str(request.fixtures), request.corpus, fixture_set)
    normaliser = run_checks.PathNormaliser.for_root(root)
    problems: dict[str, int] = {}
    for name, loaded in list(external.items()):
        run, repaired, example = loaded.with_paths(normaliser)
        if repaired:
            print(run_checks.normalised_note(name, run.source, repaired, example), file=sys.stderr)
        findings = run_checks.case_findings(tuple(run.results), fixture_set.cases)
        run_checks.report(name, run.source, findings)
        problems[name] = sum(finding.count for finding in findings)
        external[name] = run
    return problems


def _pool(request: PoolRequest) -> int:
    lines = (
        _pool_suite(request) if looks_like_suite(str(request.fixtures)) else _pool_lines(request)
    )
    text = "".join(lines)
    if request.output is None:
        write_stdout(text)
    else:
        _write(str(request.output), text, "judging file")
        print(f"wrote {len(lines)} judging lines to {request.output}", file=sys.stderr)
    return 0


def _pool_suite(request: PoolRequest) -> list[str]:
    """Every member's judging lines, in manifest order, case ids `member/case-id`; each
    member pooled over its own corpus (git members checked out first)."""
    for flag, given in (("--dir", request.corpus), ("--store", request.store)):
        if given is not None:
            raise CliError(f"{flag} does not apply to a suite: its members name their corpora", 2)
    if request.runs:
        raise CliError("--run does not apply to a suite's pool; pool its members one by one", 2)
    manifest = read_manifest(str(request.fixtures))
    wanted = backend_config.requested(request.backends, runs=request.runs)
    config = request.config or backend_config.config_for(None, manifest.path, wanted).path
    cache = cache_root()
    lines: list[str] = []
    for member in manifest.members:
        member_request = attrs.evolve(
            request,
            fixtures=member.fixtures,
            corpus=member_corpus(member, cache),
            config=config,
            config_start=manifest.path,
        )
        lines += _pool_lines(member_request, f"{member.name}/")
    return lines


def _pool_lines(request: PoolRequest, id_prefix: str = "") -> list[str]:
    """One fixture set's judging lines (case ids behind `id_prefix`)."""
    fixture_set, _, _ = _parse(str(request.fixtures))
    start = request.config_start or str(request.fixtures)
    wanted = backend_config.requested(request.backends, runs=request.runs)
    config = backend_config.config_for(request.config, start, wanted)
    external: dict[str, runs.ExternalRun] = {}
    for option in request.runs:
        name, path, selected = runs.parse_run_option(str(option))
        external[name] = runs.load_run(name, path, selected)
    names = backend_config.choose(request.backends, config, external, flag="--backends")
    index, embedder = _index(request, fixture_set)
    problems = _check_runs(request, fixture_set, external)
    backends = [backend_config.instantiate(name, config, external) for name in names]
    lines = []
    pooled: dict[str, list[list[SearchResult]]] = {name: [] for name in external}
    # Backends that read files (grep, plugins) read them under the corpus the pool ranks.
    root = corpus_checks.store_corpus_root(str(request.store)) if request.store else None
    if request.store is None:
        root = fixture_corpus(str(request.fixtures), request.corpus, fixture_set)
    corpus_root = None if root is None else os.path.abspath(root)
    for case in fixture_set.cases:
        query = harness.Query(case.query, embedder, case_id=case.id, corpus_root=corpus_root)
        ranked = [harness.run_backend(index, backend, query, request.depth) for backend in backends]
        for name, results in zip(names, ranked, strict=True):
            if name in pooled:
                pooled[name].append(results)
        shown = attrs.evolve(case, id=id_prefix + case.id) if id_prefix else case
        candidates = pool_candidates(ranked, request.depth, _snippet_protection(request))
        lines.append(render_judging_line(shown, candidates) + "\n")
    paths = run_checks.corpus_paths(index)
    for name, rankings in pooled.items():
        # Kinds and spans are not checked: draft cases have no anchors to need them.
        findings = run_checks.result_findings(
            fixture_set.cases, rankings, paths, anchors_checked=False
        )
        run_checks.report(name, external[name].source, findings)
        problems[name] += sum(finding.count for finding in findings)
    if request.strict:
        run_checks.refuse(problems)
    return lines


def _snippet_protection(request: PoolRequest) -> Callable[[str, str], str] | None:
    """Under strict protection, what a snippet's source text goes through before it is
    cut. The strict build has already redacted the index's text; redacting again (strict
    protection is idempotent) keeps the judging file, which people read and commit, safe
    whatever a backend returned as content."""
    if request.build.protection != _STRICT:
        return None
    return lambda text, path: protect_text(text, _STRICT, path)


def _relocated_corpus(fixtures: str, output: str, corpus: str) -> str:
    """The header corpus re-expressed relative to OUT's directory."""
    resolved = corpus_path(fixtures, corpus)
    if os.path.isabs(corpus):
        return corpus
    out_dir = rust_parent(output) or "."
    return os.path.relpath(resolved, out_dir)


def _apply(request: PoolRequest) -> int:
    if request.output is None:
        raise CliError("--apply needs -o OUT, the fixture file to write", exit_code=2)
    judged_path = str(request.apply)
    try:
        judged = parse_judging(judged_path, read_fixture_text(judged_path, input_files.JUDGMENTS))
    except JudgingError as error:
        raise CliError(str(error)) from None
    if not looks_like_suite(str(request.fixtures)):
        _apply_to(
            str(request.fixtures), judged_path, judged, str(request.output), request.corpus
        ).write()
        return 0
    # A suite's judging file holds `member/case-id` lines: each member's go to its own
    # fixture file, written as OUT/<member>.jsonl.
    manifest = read_manifest(str(request.fixtures))
    prefixes = [f"{member.name}/" for member in manifest.members]
    for stray in (j.id for j in judged if not j.id.startswith(tuple(prefixes))):
        print(f"warning: {judged_path}: case {stray!r} names no member", file=sys.stderr)
    try:
        os.makedirs(str(request.output), exist_ok=True)
    except OSError as error:
        raise CliError(f"could not make {request.output}: {describe_os_error(error)}") from None
    cache = cache_root()
    merged: list[_MergedFixtures] = []
    for member, prefix in zip(manifest.members, prefixes, strict=True):
        mine = tuple(
            attrs.evolve(j, id=j.id[len(prefix) :]) for j in judged if j.id.startswith(prefix)
        )
        output = os.path.join(str(request.output), f"{member.name}.jsonl")
        corpus = local_member_corpus(member, cache)
        merged.append(_apply_to(member.fixtures, judged_path, mine, output, corpus))
    # Every member's file parsed before the first is replaced: all are written, or none.
    for member_fixtures in merged:
        member_fixtures.write()
    return 0


def _line_counter(corpus: str | None) -> Callable[[str], int | None]:
    """A corpus file's line count as the chunker numbers lines; None when unreadable."""
    counts: dict[str, int | None] = {}

    def count(path: str) -> int | None:
        if corpus is None:
            return None
        if path not in counts:
            try:
                data = input_files.read_input(os.path.join(corpus, path), input_files.CODE)
                counts[path] = file_line_count(data.decode("utf-8"))
            except (OSError, UnicodeDecodeError):
                counts[path] = None
        return counts[path]

    return count


@attrs.frozen(slots=True)
class _MergedFixtures:
    """A fixture file ready to replace `output`, already read back by the fixture contract,
    and what to say once it is written."""

    output: str
    text: str
    notes: tuple[str, ...]

    def write(self) -> None:
        _write(self.output, self.text, "fixtures")
        for note in self.notes:
            print(note, file=sys.stderr)


def _apply_to(
    fixtures: str,
    judged_path: str,
    judged: Sequence[JudgedCase],
    output: str,
    corpus_dir: str | None = None,
) -> _MergedFixtures:
    """Merge `judged` into the fixture file `fixtures`, for `output`; anchors end within
    the files of `corpus_dir`, else of the header's corpus. The merged text must parse as
    fixtures (every anchor read back), else nothing is written and the error says why."""
    fixture_set, drafts, raw_cases = _parse(fixtures)
    known = {case.id for case in fixture_set.cases}
    for stray in (j.id for j in judged if j.id not in known):
        print(f"warning: {judged_path}: case {stray!r} is not in {fixtures}", file=sys.stderr)
    cases = [
        case if case.id not in drafts else _without_draft_anchor(case) for case in fixture_set.cases
    ]
    corpus = corpus_dir
    if corpus is None and fixture_set.corpus is not None:
        corpus = corpus_path(fixtures, fixture_set.corpus)
    applied = apply_judgments(cases, judged, raw_cases, _line_counter(corpus))
    header: dict[str, Any] = {"schema": SCHEMA_ID}
    if fixture_set.corpus is not None:
        header["corpus"] = _relocated_corpus(fixtures, output, fixture_set.corpus)
    lines = [json.dumps(header, ensure_ascii=False, separators=(",", ":"))]
    lines += [json.dumps(row, ensure_ascii=False, separators=(",", ":")) for row in applied.cases]
    text = "\n".join(lines) + "\n"
    try:
        parse_fixtures(text)
    except FixtureError as error:
        raise CliError(
            f"{judged_path}: the fixtures merged from these judgments would not validate "
            f"({error}); fix the judgment behind that anchor. {output} is unchanged"
        ) from None
    notes = [
        f"warning: case {case_id}: {count} candidates still unjudged"
        for case_id, count in applied.unjudged.items()
    ]
    notes += [
        f"warning: case {where} also matches an overlapping candidate of the same kind "
        "that was judged otherwise; narrow its lines by hand"
        for where in applied.overlapping
    ]
    if applied.unlabeled:
        notes.append(
            f"warning: {len(applied.unlabeled)} cases have no relevant anchor yet and were left "
            f"out: {', '.join(applied.unlabeled)}"
        )
    notes.append(f"wrote {len(applied.cases)} cases ({applied.added} anchors added) to {output}")
    return _MergedFixtures(output, text, tuple(notes))


def _without_draft_anchor(case: Case) -> Case:
    return attrs.evolve(case, expected=tuple(a for a in case.expected if str(a) != _DRAFT_ANCHOR))


def run(args: argparse.Namespace) -> int:
    """Pool, or with --apply merge judgments into fixtures."""
    outputs = [("-o", args.output)]
    if args.apply is not None:
        outputs += suite_member_outputs(args, "-o")
    refuse_output_over_input(outputs, [*evaluation_inputs(args), args.apply])
    request = pool_request(args)
    return _apply(request) if request.apply is not None else _pool(request)
