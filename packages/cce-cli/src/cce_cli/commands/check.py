"""`cce check FIXTURES...`: find the labels of a fixture set that point at nothing.

Why it exists: a fixture set is checked against the corpus it labels, not only against
its grammar (that is `cce-fixtures validate`). This command owns the edge: its
arguments, which index each file is checked against (`--store`, `--dir`, else the
header corpus, each built or loaded once), the file- and corpus-level problems, and
the two output formats. The anchor analysis is `cce_cli.evaluation.anchor_check`; the contract
and lint checks come from `cce_fixtures`. Documented in
docs/relevance.md#checking-fixtures-against-the-corpus.

Output: one line per problem on stdout, `FILE:LINE: [warning: ]case ID: anchor "...":
problem; suggestion` (text), or one `cce.check/v1` JSON document (`--format json`).
Exit status: 0 when there is no error (warnings alone pass, unless `--strict`), 1 when
there is one, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

import attrs

from cce_cli.commands.build_options import add_build_options, add_protection_argument, build_options
from cce_cli.errors import CliError
from cce_cli.evaluation.anchor_check import CorpusFacts, Problem, fixture_problems
from cce_cli.evaluation.building import BuildOptions, cache_root
from cce_cli.evaluation.corpus_checks import stale_store_message, store_corpus_root
from cce_cli.evaluation.corpus_paths import corpus_path, unusable_corpus
from cce_cli.evaluation.indexes import build_or_fail
from cce_cli.formats import input_files
from cce_cli.output import display_text, write_stdout
from cce_fixtures import (
    FixtureSet,
    decode_fixture_bytes,
    find_problems,
    lint_fixtures,
    parse_fixtures,
)
from cce_retrieval import HashEmbedder, StoreError, describe_os_error, load_store

__all__ = ["CHECK_SCHEMA", "CheckRequest", "check_fixtures", "configure", "run"]

CHECK_SCHEMA = "cce.check/v1"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce check`'s arguments; `--dir` and `--store` conflict (exit 2)."""
    parser.add_argument(
        "fixtures",
        nargs="+",
        metavar="FIXTURES",
        help="cce.relevance/v1 NDJSON files, or cce.suite/v1 manifests (every member)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--dir", metavar="DIR", help="corpus directory for every file (overrides the header)"
    )
    source.add_argument(
        "--store", metavar="PATH", help="a persisted store file, e.g. <root>/.cce/index.json"
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default text)"
    )
    parser.add_argument(
        "--strict", action="store_true", help="fail (exit 1) on warnings as well as errors"
    )
    add_build_options(parser)
    add_protection_argument(parser, None)


@attrs.define
class _Corpora:
    """Every index the run needs, built or loaded at most once."""

    corpus: str | None
    """`--dir`: the corpus every fixture file is checked against."""
    store: str | None
    """`--store`: the persisted store every fixture file is checked against."""
    build: BuildOptions
    built: dict[str, CorpusFacts | Problem] = attrs.Factory(dict)
    # Problems of a corpus rather than of a fixture file (a stale store), said once.
    notes: list[Problem] = attrs.Factory(list)
    # A suite member's fixture file is checked against the member's own corpus.
    member_corpora: dict[str, str] = attrs.Factory(dict)

    def facts_for(self, file: str, fixture_set: FixtureSet) -> CorpusFacts | Problem:
        if file in self.member_corpora:
            return self._cached(self.member_corpora[file], file, None, self._build)
        if self.store is not None:
            return self._cached(self.store, file, None, self._load_store)
        if self.corpus is not None:
            return self._cached(self.corpus, file, None, self._build)
        if fixture_set.corpus is None:
            return Problem(
                file,
                None,
                "error",
                'no corpus: pass --dir <corpus> or declare "corpus" in the fixture header',
            )
        unusable = unusable_corpus(fixture_set.corpus)
        if unusable is not None:
            return Problem(file, 1, "error", unusable)
        return self._cached(corpus_path(file, fixture_set.corpus), file, 1, self._build)

    def _cached(
        self,
        location: str,
        file: str,
        header_line: int | None,
        make: Callable[[str], CorpusFacts | Problem],
    ) -> CorpusFacts | Problem:
        key = os.path.realpath(location)
        if key not in self.built:
            self.built[key] = make(location)
        found = self.built[key]
        if isinstance(found, Problem):
            # Each file that uses a broken corpus says so, on its own header line.
            return attrs.evolve(found, file=file, line=header_line)
        return found

    def _build(self, directory: str) -> CorpusFacts | Problem:
        if not os.path.isdir(directory):
            return Problem(
                "", None, "error", f"corpus {display_text(directory)} is not a directory"
            )
        index = build_or_fail(directory, HashEmbedder(), build=self.build).index
        if not index.chunks:
            shown = display_text(directory)
            return Problem("", None, "error", f"corpus {shown} resolves to no indexable files")
        return CorpusFacts.of(index, directory)

    def _load_store(self, store: str) -> CorpusFacts | Problem:
        try:
            index = load_store(store)
        except StoreError as error:
            raise CliError(str(error)) from None
        stale = stale_store_message(store)
        if stale is not None:
            self.notes.append(Problem(store, None, "warning", stale))
        return CorpusFacts.of(index, store_corpus_root(store))


def _fixture_files(paths: Sequence[str], corpora: _Corpora) -> list[str]:
    """The fixture files to check: each path as given, a suite manifest's members in its
    place (each checked against its member's corpus, git members checked out first)."""
    from cce_cli.formats.suite_manifest import looks_like_suite, read_manifest

    files: list[str] = []
    for path in paths:
        if not looks_like_suite(path):
            files.append(path)
            continue
        if corpora.corpus is not None or corpora.store is not None:
            raise CliError(
                f"{path} is a suite: its members name their corpora; drop --dir and --store",
                2,
            )
        from cce_cli.evaluation.corpora import member_corpus

        for member in read_manifest(path).members:
            corpora.member_corpora[member.fixtures] = member_corpus(member, cache_root())
            files.append(member.fixtures)
    return files


def _read(file: str) -> str | Problem:
    try:
        return decode_fixture_bytes(input_files.read_input(file, input_files.FIXTURES))
    except OSError as error:
        return Problem(file, None, "error", f"could not read fixtures: {describe_os_error(error)}")
    except UnicodeDecodeError as error:
        return Problem(
            file,
            None,
            "error",
            f"could not read fixtures: invalid UTF-8 at byte offset {error.start}",
        )


def check_file(file: str, corpora: _Corpora) -> list[Problem]:
    """Every problem of one fixture file: contract, lint, corpus, then anchors."""
    text = _read(file)
    if isinstance(text, Problem):
        return [text]
    contract = [
        Problem(file, problem.line, "error", problem.detail) for problem in find_problems(text)
    ]
    # Anchor paths are judged against the index below, more precisely than lint can.
    problems = contract + [
        Problem(file, finding.line, finding.severity, finding.message)
        for finding in lint_fixtures(text)
        if finding.rule != "anchor-path"
    ]
    if contract:
        # A set that does not parse cannot be checked against a corpus yet.
        return _in_line_order(problems)
    fixture_set = parse_fixtures(text)
    facts = corpora.facts_for(file, fixture_set)
    if isinstance(facts, Problem):
        problems.append(facts)
    else:
        problems.extend(fixture_problems(file, fixture_set, facts))
    return _in_line_order(problems)


def _in_line_order(problems: list[Problem]) -> list[Problem]:
    last = float("inf")
    return sorted(problems, key=lambda problem: last if problem.line is None else problem.line)


def _render_json(problems: Sequence[Problem]) -> str:
    document = {
        "schema": CHECK_SCHEMA,
        "errors": sum(problem.severity == "error" for problem in problems),
        "warnings": sum(problem.severity == "warning" for problem in problems),
        "problems": [attrs.asdict(problem) for problem in problems],
    }
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@attrs.frozen(slots=True)
class CheckRequest:
    """One `cce check`: the fixture files (or suite manifests), the one corpus or store
    every file is checked against (else each header's), the output format, whether
    warnings fail, and how corpora are built."""

    fixtures: tuple[str, ...]
    corpus: str | None = None
    """`--dir`."""
    store: str | None = None
    format: str = "text"
    strict: bool = False
    build: BuildOptions = attrs.field(factory=BuildOptions)


def check_request(args: argparse.Namespace) -> CheckRequest:
    """The check the parsed arguments ask for; `--protection` with `--store` is refused."""
    if args.store is not None and args.protection is not None:
        raise CliError(
            "--protection applies when check builds the corpus; a --store was protected "
            "when it was indexed",
            2,
        )
    return CheckRequest(
        tuple(str(file) for file in args.fixtures),
        corpus=None if args.dir is None else str(args.dir),
        store=None if args.store is None else str(args.store),
        format=args.format,
        strict=bool(args.strict),
        build=build_options(args),
    )


def run(args: argparse.Namespace) -> int:
    return check_fixtures(check_request(args))


def check_fixtures(request: CheckRequest) -> int:
    """Check every file; print the problems; 1 when any is an error (or, strict, any)."""
    corpora = _Corpora(request.corpus, request.store, request.build)
    problems: list[Problem] = []
    for file in _fixture_files(request.fixtures, corpora):
        problems.extend(check_file(file, corpora))
    problems.extend(corpora.notes)
    if request.format == "json":
        write_stdout(_render_json(problems))
    elif problems:
        write_stdout("".join(problem.text() + "\n" for problem in problems))
    errors = sum(problem.severity == "error" for problem in problems)
    warnings = len(problems) - errors
    if problems:
        print(f"cce check: {errors} error(s), {warnings} warning(s)", file=sys.stderr)
    return 1 if errors or (request.strict and warnings) else 0
