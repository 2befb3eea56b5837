"""`cce import FORMAT ...`: turn another benchmark's files into a cce suite.

Why it exists: public code-search benchmarks ship their labels in formats of their own;
importing them once gives a `cce.suite/v1` manifest and one `cce.relevance/v1` fixture
file per repository, which cce reads like any hand-written set. This module owns the
command's arguments, one sub-command per format (`semble`), which repositories are
imported (`--only`, `--skip`), what happens when some do not convert (every problem is
named; `--keep-going` writes the others and exits 1), and the summary it prints (one
line per fixture file, then the manifest); the conversion and the writing live in
`cce_cli.formats.semble`. The module is not called `import`, a Python keyword.
Documented in docs/suites.md#importing-the-semble-benchmark.
"""

from __future__ import annotations

import argparse
import os
import sys

import attrs

from cce_cli.errors import CliError
from cce_cli.formats.git_url import has_credentials
from cce_cli.formats.semble import (
    MANIFEST_NAME,
    Conversion,
    Suite,
    convert_all,
    describe_failures,
    write_suite,
)
from cce_cli.output import visible_controls, write_stdout

__all__ = ["SembleImportRequest", "configure", "import_semble", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce import`'s formats and their arguments."""
    formats = parser.add_subparsers(dest="format", metavar="FORMAT")
    formats.required = True
    semble = formats.add_parser(
        "semble",
        help="the semble benchmark: annotations/<name>.json files plus a repositories file",
        description="write a cce.suite/v1 manifest (DIR/suite.toml) and one fixture file "
        "per repository (DIR/fixtures/<name>.jsonl) from the semble benchmark's files",
    )
    semble.add_argument(
        "annotations",
        metavar="ANNOTATIONS_DIR",
        help="directory of <name>.json task lists, one per repository",
    )
    semble.add_argument(
        "--repos",
        required=True,
        metavar="REPOS.json",
        help="the repositories: name, language, url, revision, benchmark_root",
    )
    semble.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="the suite directory to create; it must not exist or be empty",
    )
    semble.add_argument(
        "--only",
        metavar="NAMES",
        type=_names,
        default=(),
        help="import only these repositories (names separated by commas)",
    )
    semble.add_argument(
        "--skip",
        metavar="NAMES",
        type=_names,
        default=(),
        help="leave these repositories out (names separated by commas)",
    )
    semble.add_argument(
        "--keep-going",
        action="store_true",
        help="write the repositories that convert and name the others with their "
        "problems (exit 1 if any was left out)",
    )


def _names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError("give repository names separated by commas")
    return names


def _queries(count: int) -> str:
    return f"{count} quer{'y' if count == 1 else 'ies'}"


@attrs.frozen(slots=True)
class SembleImportRequest:
    """One `cce import semble`: the benchmark's annotations directory and repositories
    file, the suite directory to write, which repositories, and whether to write the
    others when some do not convert."""

    annotations: str
    repos: str
    output: str
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    keep_going: bool = False


def semble_request(args: argparse.Namespace) -> SembleImportRequest:
    """The import the parsed arguments ask for."""
    return SembleImportRequest(
        args.annotations,
        args.repos,
        args.output,
        only=tuple(getattr(args, "only", ()) or ()),
        skip=tuple(getattr(args, "skip", ()) or ()),
        keep_going=bool(getattr(args, "keep_going", False)),
    )


def run(args: argparse.Namespace) -> int:
    """Convert everything first, then write it all at once; list what was written."""
    return import_semble(semble_request(args))


def import_semble(request: SembleImportRequest) -> int:
    """`cce import semble`: 0 when every chosen repository was written; with
    `keep_going`, 1 after writing those that converted when others did not."""
    output = request.output
    if not output:
        raise CliError("-o needs a directory path: the suite directory to create", exit_code=2)
    conversion = convert_all(
        request.annotations,
        request.repos,
        only=request.only,
        skip=request.skip,
        checkout_for=_cached_checkout,
    )
    if conversion.failures and (not request.keep_going or not conversion.members):
        raise CliError(describe_failures(conversion.failures))
    suite = Suite(conversion.members)
    write_suite(suite, output)
    write_stdout(_summary(suite, output))
    _note_credentials(suite)
    if conversion.failures:
        _stderr_failures(conversion, output)
        return 1
    return 0


def _summary(suite: Suite, output: str) -> str:
    lines = []
    for member in suite.members:
        line = f"{member.fixtures}: {_queries(member.cases)}"
        if member.root_relative:
            count = member.root_relative
            line += f", {count} target{'' if count == 1 else 's'} read from the benchmark root"
        if member.outside_root:
            count = member.outside_root
            line += (
                f", {count} target{'' if count == 1 else 's'} outside the benchmark root kept "
                "as written (no search of the root finds "
                f"{'it' if count == 1 else 'them'})"
            )
        lines.append(line)
    total = sum(member.cases for member in suite.members)
    lines.append(
        f"{os.path.join(output, MANIFEST_NAME)}: {len(suite.members)} member(s), {_queries(total)}"
    )
    return "".join(line + "\n" for line in lines)


def _note_credentials(suite: Suite) -> None:
    stripped = [member.name for member in suite.members if has_credentials(member.git)]
    if stripped and sys.stderr is not None:
        print(
            f"note: the manifest holds the URLs of {', '.join(stripped)} without their "
            "credentials; a git credential helper supplies them when the suite is fetched",
            file=sys.stderr,
        )


def _stderr_failures(conversion: Conversion, output: str) -> None:
    if sys.stderr is None:
        return
    for failure in conversion.failures:
        for problem in failure.problems:
            print(f"error: {visible_controls(problem)}", file=sys.stderr)
    names = ", ".join(failure.name for failure in conversion.failures)
    count = len(conversion.failures)
    print(
        f"error: {count} repositor{'y' if count == 1 else 'ies'} not imported ({names}); "
        f"the other {len(conversion.members)} are written to {output}",
        file=sys.stderr,
    )


def _cached_checkout(url: str, revision: str, root: str | None) -> str | None:
    """A checkout of `url` at `revision` already in cce's cache (from `cce suite fetch`
    of an earlier import), clean and at its commit, to check targets against; None
    when there is none (targets are then read by their text alone)."""
    from cce_cli.evaluation.building import cache_root
    from cce_cli.evaluation.corpora import clean_cached_checkout
    from cce_cli.formats.suite_manifest import GitCorpus

    return clean_cached_checkout(GitCorpus(url, revision, root or ""), cache_root())
