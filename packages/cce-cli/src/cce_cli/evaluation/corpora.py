"""A suite member's corpus on disk: a local directory as written, or a git repository
checked out once, detached at its pinned commit, in the cache directory.

Why it exists: a benchmark is only repeatable when every member's corpus is the same
bytes on every run and machine, so git members name a full commit id. The checkout is
made in a temporary directory and renamed into place, so a run killed at any moment
leaves either a whole checkout or none; one in place is verified (`HEAD` is the commit)
before it is reused, and never modified (docs/suites.md#corpora).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile

from cce_cli.errors import CliError
from cce_cli.formats.suite_manifest import GitCorpus, Member

_GIT_TIMEOUT_S = 1800.0
"""A clone of a large repository over a slow link still finishes; a hung one does not
hang the run forever."""


def corpora_dir(cache_root: str) -> str:
    """Where git members are checked out: `<cache>/corpora`."""
    return os.path.join(cache_root, "corpora")


def member_corpus(member: Member, cache_root: str) -> str:
    """The directory `member`'s fixtures are scored against (cloned first if it is a git
    member not yet in the cache); CliError naming the member when that fails."""
    if not isinstance(member.corpus, GitCorpus):
        return member.corpus
    checkout = checkout_path(member.corpus, cache_root)
    if not _is_checkout_of(checkout, member.corpus.rev):
        _clone(member, member.corpus, checkout)
    root = os.path.join(checkout, member.corpus.root) if member.corpus.root else checkout
    if not os.path.isdir(root):
        raise CliError(
            f"member {member.name!r}: {member.corpus.root!r} is not a directory of "
            f"{member.corpus.url} at {member.corpus.rev}; fix root in the manifest"
        )
    return root


def local_member_corpus(member: Member, cache_root: str) -> str | None:
    """`member`'s corpus directory if it is on disk already (a git member is never
    cloned for it); None when it is not. For reading files, not for scoring."""
    if not isinstance(member.corpus, GitCorpus):
        return member.corpus
    checkout = checkout_path(member.corpus, cache_root)
    root = os.path.join(checkout, member.corpus.root) if member.corpus.root else checkout
    return root if os.path.isdir(root) else None


def checkout_path(corpus: GitCorpus, cache_root: str) -> str:
    """The checkout of `corpus`'s repository at its commit: one directory per (URL, commit)."""
    key = hashlib.sha256(corpus.url.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(corpora_dir(cache_root), f"{key}-{corpus.rev}")


def _git(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=_GIT_TIMEOUT_S,
        check=False,
    )


def _is_checkout_of(checkout: str, rev: str) -> bool:
    if not os.path.isdir(os.path.join(checkout, ".git")):
        return False
    try:
        head = _git("rev-parse", "HEAD", cwd=checkout)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return head.returncode == 0 and head.stdout.strip() == rev


def _clone(member: Member, corpus: GitCorpus, checkout: str) -> None:
    parent = os.path.dirname(checkout)
    try:
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".clone-", dir=parent)
    except OSError as error:
        raise CliError(
            f"member {member.name!r}: could not make the corpus cache {parent}: "
            f"{error.strerror or error}"
        ) from None
    try:
        try:
            cloned = _git("clone", "--quiet", "--no-checkout", "--", corpus.url, staging)
            if cloned.returncode != 0:
                raise CliError(
                    f"member {member.name!r}: git could not clone {corpus.url}: "
                    f"{_last_line(cloned.stderr)}"
                )
            checked = _git("checkout", "--quiet", "--detach", corpus.rev, cwd=staging)
            if checked.returncode != 0:
                raise CliError(
                    f"member {member.name!r}: commit {corpus.rev} is not in {corpus.url} "
                    f"({_last_line(checked.stderr)}); pin a commit the repository has"
                )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise CliError(
                f"member {member.name!r}: git failed for {corpus.url}: {error}"
            ) from None
        if not _is_checkout_of(staging, corpus.rev):
            raise CliError(
                f"member {member.name!r}: the checkout of {corpus.url} is not at {corpus.rev}"
            )
        try:
            os.rename(staging, checkout)
        except OSError:
            # Another run put the same checkout in place first: use that one.
            if not _is_checkout_of(checkout, corpus.rev):
                raise CliError(
                    f"member {member.name!r}: could not put the checkout in place at {checkout}"
                ) from None
    finally:
        if os.path.isdir(staging):
            shutil.rmtree(staging, ignore_errors=True)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"
