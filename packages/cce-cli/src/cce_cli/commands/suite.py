"""`cce suite fetch SUITE.toml`: prepare every member's corpus before a run.

Why it exists: a suite's git members are fetched into the cache directory on first use;
on a new machine or in CI that is network time before the first query. Fetching ahead
makes the run itself offline and its time the scoring's alone, and shows, member by
member, where each corpus is (docs/suites.md#corpora). A checkout already in place at
its pinned commit with a clean working tree is reused as it is. `--keep-going` fetches
every member it can and names the others with their causes (exit 1 if any failed).
"""

from __future__ import annotations

import argparse
import sys

import attrs

from cce_cli.errors import CliError
from cce_cli.evaluation.building import cache_root
from cce_cli.evaluation.corpora import member_corpus
from cce_cli.formats.git_url import redact_git_url
from cce_cli.formats.suite_manifest import GitCorpus, Member, read_manifest
from cce_cli.output import display_text, visible_controls, write_stdout


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("fetch",), help="fetch: check out every git member")
    parser.add_argument("manifest", metavar="SUITE.toml", help="a cce.suite/v1 manifest")
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="fetch every member that can be fetched, then name the others (exit 1 if any)",
    )


@attrs.frozen(slots=True)
class SuiteRequest:
    """One `cce suite ACTION`: the action (`fetch`), the manifest and whether to go on
    past a member that fails."""

    manifest: str
    action: str = "fetch"
    keep_going: bool = False


def suite_request(args: argparse.Namespace) -> SuiteRequest:
    """The suite action the parsed arguments ask for."""
    return SuiteRequest(
        str(args.manifest), str(args.action), bool(getattr(args, "keep_going", False))
    )


def run(args: argparse.Namespace) -> int:
    return run_suite_action(suite_request(args))


def run_suite_action(request: SuiteRequest) -> int:
    """Read the manifest and carry out the action on every member."""
    manifest = read_manifest(request.manifest)
    if request.action != "fetch":  # argparse's choices keep this unreachable
        raise CliError(f"unknown suite action {request.action!r}", 2)
    return fetch_members(manifest.members, cache_root(), keep_going=request.keep_going)


def member_source(member: Member) -> str:
    """Where `member`'s corpus comes from, as `cce suite fetch` prints it (credentials
    in a URL redacted)."""
    if isinstance(member.corpus, GitCorpus):
        return f"{redact_git_url(member.corpus.url)} @ {member.corpus.rev}"
    return "local directory"


def fetch_members(members: tuple[Member, ...], cache: str, *, keep_going: bool) -> int:
    """Prepare each member's corpus in order: a progress line each on stderr, then
    `name<TAB>corpus<TAB>source` per prepared member on stdout. Without `keep_going` the
    first failure is the error; with it, every failure is an `error:` line and the last
    line counts them (exit 1)."""
    lines = []
    failed: list[str] = []
    total = len(members)
    for done, member in enumerate(members, 1):
        try:
            corpus = member_corpus(member, cache)
        except CliError as error:
            if not keep_going:
                raise
            failed.append(member.name)
            _stderr(f"[{done}/{total}] {member.name}: failed")
            _stderr(f"error: {visible_controls(error.message)}")
            continue
        _stderr(f"[{done}/{total}] {member.name}: {display_text(corpus)}")
        lines.append(
            f"{member.name}\t{display_text(corpus)}\t{display_text(member_source(member))}\n"
        )
    write_stdout("".join(lines))
    if failed:
        raise CliError(
            f"{len(failed)} of {total} members could not be fetched ({', '.join(failed)}); "
            "the errors above say why; the others are ready"
        )
    return 0


def _stderr(line: str) -> None:
    if sys.stderr is not None:
        print(line, file=sys.stderr)
