"""A suite member's corpus on disk: a local directory as written, or a git repository
checked out once, detached at its pinned commit, in the cache directory.

Why it exists: a benchmark is only repeatable when every member's corpus is the same
bytes on every run and machine, so git members name a full commit id. This module owns
how that commit gets on disk and stays right (docs/suites.md#corpora):

- Only the pinned commit is fetched (`--depth 1`), and with a `root` only that subtree
  is checked out (sparse checkout; blobs filtered where the server offers it). A server
  that refuses a commit by id gets one full fetch instead.
- git runs with its own configuration (`url.<base>.insteadOf` mirrors apply), a protocol
  allow-list, HTTP low-speed limits and a total time bound (`CCE_GIT_TIMEOUT`).
- The checkout is made in a `.clone-*` staging directory and renamed into place, so a
  run killed at any moment leaves a whole checkout or none; staging directories left by
  a killed run are removed by the next.
- A checkout in place is reused only when `HEAD` is the commit and the working tree is
  clean; an edited, deleted or added file is restored, a damaged entry replaced.
- The indexed directory (`root`) must resolve inside the checkout.

Every message shows the URL with its credentials redacted (`cce_cli.formats.git_url`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Final

from cce_cli.errors import CliError
from cce_cli.formats.git_url import redact_git_text, redact_git_url
from cce_cli.formats.suite_manifest import GitCorpus, Member

_DEFAULT_GIT_TIMEOUT_S: Final = 1800.0
"""A fetch of a large repository over a slow link still finishes; a hung one does not
hang the run forever. `CCE_GIT_TIMEOUT` (seconds) overrides it."""

ALLOWED_PROTOCOLS: Final = "file:https:ssh:git:http"
"""git's transports a manifest may name (`GIT_ALLOW_PROTOCOL`): `ext::`, `fd::` and
remote helpers of unknown kind are refused by git itself."""

_LOW_SPEED_LIMIT: Final = "1000"
_LOW_SPEED_TIME: Final = "60"
"""An HTTP transfer slower than 1,000 bytes/s for 60 s (a server that accepted and says
nothing) is abandoned by git; the user's own `GIT_HTTP_LOW_SPEED_*` take precedence."""

_STAGING_PREFIX: Final = ".clone-"
_STALE_FOREIGN_STAGING_S: Final = 24 * 3600.0
"""A staging directory of another host (a shared cache) is left alone for a day, since
whether its process still runs cannot be known from here."""


class _GitTimeout(Exception):
    def __init__(self, waiting_for: str) -> None:
        super().__init__(waiting_for)
        self.waiting_for = waiting_for


def corpora_dir(cache_root: str) -> str:
    """Where git members are checked out: `<cache>/corpora`."""
    return os.path.join(cache_root, "corpora")


def git_timeout_s() -> float:
    """The bound on one member's whole fetch: `CCE_GIT_TIMEOUT` seconds, else 1,800."""
    raw = os.environ.get("CCE_GIT_TIMEOUT", "").strip()
    if not raw:
        return _DEFAULT_GIT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e9:
        raise CliError(
            f"CCE_GIT_TIMEOUT={raw!r} is not a number of seconds above 0; "
            "set it to e.g. 600, or unset it for the default 1800"
        )
    return value


def member_corpus(member: Member, cache_root: str) -> str:
    """The directory `member`'s fixtures are scored against (fetched first if it is a git
    member not yet in the cache, restored if its cached checkout was changed); CliError
    naming the member when that fails."""
    if not isinstance(member.corpus, GitCorpus):
        return member.corpus
    corpus = member.corpus
    checkout = checkout_path(corpus, cache_root)
    deadline = time.monotonic() + git_timeout_s()
    try:
        if not _reuse(member, corpus, checkout, deadline):
            _clone(member, corpus, checkout, deadline)
    except OSError as error:
        raise CliError(
            f"member {member.name!r}: could not run git for {redact_git_url(corpus.url)}: "
            f"{error.strerror or error}; install git, or check the cache directory"
        ) from None
    except _GitTimeout as timeout:
        raise CliError(
            f"member {member.name!r}: git did not finish within {_seconds(git_timeout_s())} "
            f"(waiting for {timeout.waiting_for} from {redact_git_url(corpus.url)}); check "
            "the network and the server, or raise CCE_GIT_TIMEOUT (seconds)"
        ) from None
    return _inside_checkout(member, corpus, checkout)


def local_member_corpus(member: Member, cache_root: str) -> str | None:
    """`member`'s corpus directory if it is on disk already (a git member is never
    fetched for it); None when it is not. For reading files, not for scoring."""
    if not isinstance(member.corpus, GitCorpus):
        return member.corpus
    checkout = checkout_path(member.corpus, cache_root)
    if os.path.islink(checkout) or not os.path.isdir(checkout):
        return None
    root = os.path.join(checkout, member.corpus.root) if member.corpus.root else checkout
    if not os.path.isdir(root) or not _resolves_inside(root, checkout):
        return None
    return root


def clean_cached_checkout(corpus: GitCorpus, cache_root: str) -> str | None:
    """The checkout of `corpus` in the cache if it is at its commit with a clean working
    tree (nothing is fetched or repaired); None otherwise. For reading its files."""
    checkout = checkout_path(corpus, cache_root)
    try:
        damage = _damage(checkout, corpus.rev, time.monotonic() + 60)
    except (OSError, _GitTimeout):
        return None
    return checkout if damage is None else None


def checkout_path(corpus: GitCorpus, cache_root: str) -> str:
    """The checkout of `corpus`'s repository at its commit: one directory per (URL, commit)."""
    key = hashlib.sha256(corpus.url.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(corpora_dir(cache_root), f"{key}-{corpus.rev}")


def _inside_checkout(member: Member, corpus: GitCorpus, checkout: str) -> str:
    root = os.path.join(checkout, corpus.root) if corpus.root else checkout
    where = f"{redact_git_url(corpus.url)} at {corpus.rev}"
    if corpus.root and not _resolves_inside(root, checkout):
        raise CliError(
            f"member {member.name!r}: root {corpus.root!r} leads outside the repository "
            f"{where} (through a symbolic link); name a directory of the repository itself"
        )
    if not os.path.isdir(root):
        if _is_link_in_tree(checkout, corpus):
            raise CliError(
                f"member {member.name!r}: root {corpus.root!r} is a symbolic link in the "
                f"repository, not a directory of it ({where}); name the directory itself"
            )
        raise CliError(
            f"member {member.name!r}: {corpus.root!r} is not a directory of {where}; "
            "fix root in the manifest"
        )
    return root


def _is_link_in_tree(checkout: str, corpus: GitCorpus) -> bool:
    """Whether `root` is a symbolic link in the pinned commit's tree (the sparse
    checkout then leaves it out, so it never reaches outside)."""
    try:
        listed = _git(
            "ls-tree", corpus.rev, "--", corpus.root, cwd=checkout,
            deadline=time.monotonic() + 60, waiting_for="git ls-tree",
        )  # fmt: skip
    except (OSError, _GitTimeout):
        return False
    return listed.returncode == 0 and listed.stdout.startswith("120000 ")


def _resolves_inside(path: str, checkout: str) -> bool:
    real_checkout = os.path.realpath(checkout)
    real = os.path.realpath(path)
    return real == real_checkout or real.startswith(real_checkout + os.sep)


# -- running git --------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
    env.setdefault("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
    env.setdefault("GIT_HTTP_LOW_SPEED_LIMIT", _LOW_SPEED_LIMIT)
    env.setdefault("GIT_HTTP_LOW_SPEED_TIME", _LOW_SPEED_TIME)
    return env


def _git(
    *args: str, cwd: str | None = None, deadline: float, waiting_for: str
) -> subprocess.CompletedProcess[str]:
    """git ARGS in its own process group, ended whole (remote helpers included) when the
    member's deadline passes; _GitTimeout then says what it was waiting for."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _GitTimeout(waiting_for)
    process = subprocess.Popen(
        ["git", *args],
        cwd=cwd,
        env=_git_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=remaining)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise _GitTimeout(waiting_for) from None
    except BaseException:
        _kill_group(process)
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(OSError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        process.communicate(timeout=5)


def _seconds(value: float) -> str:
    return f"{value:g} s"


# -- reusing a checkout -------------------------------------------------------------------


def _reuse(member: Member, corpus: GitCorpus, checkout: str, deadline: float) -> bool:
    """Whether the checkout in place can be used (restored first if its files changed).
    False when there is none, or when a damaged entry was removed for a fresh fetch."""
    if not os.path.lexists(checkout):
        return False
    damage = _damage(checkout, corpus.rev, deadline)
    if damage is None:
        return True
    if damage == "changed files":
        _restore(checkout, corpus.rev, deadline)
        if _damage(checkout, corpus.rev, deadline) is None:
            _note(
                f"member {member.name!r}: the cached checkout {checkout} had changed files; "
                f"restored it to {corpus.rev}"
            )
            return True
        damage = "changed files that could not be restored"
    _remove_entry(member, checkout, damage)
    return False


def _damage(checkout: str, rev: str, deadline: float) -> str | None:
    """What is wrong with the cache entry `checkout`, or None when it is a clean
    checkout at `rev`."""
    if os.path.islink(checkout):
        return "a symbolic link, not a checkout"
    if not os.path.isdir(checkout) or not os.path.isdir(os.path.join(checkout, ".git")):
        return "not a git checkout"
    head = _git(
        "rev-parse",
        "--verify",
        "--quiet",
        "HEAD",
        cwd=checkout,
        deadline=deadline,
        waiting_for="git rev-parse in the cached checkout",
    )
    if head.returncode != 0:
        return "a checkout whose HEAD is unreadable"
    if head.stdout.strip() != rev:
        return "changed files"
    status = _git(
        "status", "--porcelain", "--untracked-files=all", "--ignored", "-z",
        cwd=checkout, deadline=deadline, waiting_for="git status in the cached checkout",
    )  # fmt: skip
    if status.returncode != 0:
        return "a checkout git cannot read"
    return "changed files" if status.stdout else None


def _restore(checkout: str, rev: str, deadline: float) -> None:
    with contextlib.suppress(OSError):
        _git("reset", "--quiet", "--hard", rev, cwd=checkout, deadline=deadline,
             waiting_for="git reset in the cached checkout")  # fmt: skip
        _git("clean", "-ffdxq", cwd=checkout, deadline=deadline,
             waiting_for="git clean in the cached checkout")  # fmt: skip


def _remove_entry(member: Member, checkout: str, damage: str) -> None:
    """Remove the damaged cache entry (a link is unlinked, never followed); CliError
    saying what to delete when that fails."""
    try:
        if os.path.islink(checkout) or not os.path.isdir(checkout):
            os.unlink(checkout)
        else:
            aside = tempfile.mkdtemp(prefix=_staging_prefix(), dir=os.path.dirname(checkout))
            os.rename(checkout, os.path.join(aside, "damaged"))
            shutil.rmtree(aside)
    except OSError as error:
        raise CliError(
            f"member {member.name!r}: the cached checkout {checkout} is {damage} and could "
            f"not be removed ({error.strerror or error}); delete it and run again"
        ) from None
    _note(f"member {member.name!r}: the cached checkout {checkout} was {damage}; fetching anew")


def _note(message: str) -> None:
    if sys.stderr is not None:
        print(f"note: {message}", file=sys.stderr)


# -- fetching -----------------------------------------------------------------------------


def _staging_prefix() -> str:
    return f"{_STAGING_PREFIX}{socket.gethostname()}-{os.getpid()}-"


def remove_stale_staging(parent: str) -> None:
    """Remove `.clone-*` directories of runs that no longer exist: on this host, by
    their process id; from elsewhere (or in the old unnamed form), once a day old."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    host = socket.gethostname()
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(_STAGING_PREFIX) or entry.is_symlink():
            continue
        owner = entry.name[len(_STAGING_PREFIX) :].rpartition("-")[0]
        owner_host, _, pid_text = owner.rpartition("-")
        stale: bool
        if owner_host == host and pid_text.isdigit():
            stale = not _process_alive(int(pid_text))
        else:
            try:
                stale = now - entry.stat(follow_symlinks=False).st_mtime > _STALE_FOREIGN_STAGING_S
            except OSError:
                continue
        if stale:
            shutil.rmtree(entry.path, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError as error:
        return error.errno == errno.EPERM
    return True


def _clone(member: Member, corpus: GitCorpus, checkout: str, deadline: float) -> None:
    parent = os.path.dirname(checkout)
    shown = redact_git_url(corpus.url)
    try:
        os.makedirs(parent, exist_ok=True)
        remove_stale_staging(parent)
        staging = tempfile.mkdtemp(prefix=_staging_prefix(), dir=parent)
    except OSError as error:
        raise CliError(
            f"member {member.name!r}: could not make the corpus cache {parent}: "
            f"{error.strerror or error}"
        ) from None
    try:
        try:
            _fetch_into(member, corpus, staging, deadline)
        except OSError as error:
            raise CliError(f"member {member.name!r}: git failed for {shown}: {error}") from None
        if _damage(staging, corpus.rev, deadline) is not None:
            raise CliError(
                f"member {member.name!r}: the checkout of {shown} is not at {corpus.rev}"
            )
        try:
            os.rename(staging, checkout)
        except OSError as error:
            # Another run put the same checkout in place first: use that one.
            if _damage(checkout, corpus.rev, deadline) is not None:
                raise CliError(
                    f"member {member.name!r}: could not put the checkout in place at "
                    f"{checkout} ({error.strerror or error}); delete {checkout} and run again"
                ) from None
    finally:
        if os.path.isdir(staging):
            shutil.rmtree(staging, ignore_errors=True)


def _fetch_into(member: Member, corpus: GitCorpus, staging: str, deadline: float) -> None:
    """Fetch `corpus.rev` alone into the empty `staging` and check it out (only `root`
    when one is given)."""
    shown = redact_git_url(corpus.url)
    waiting = f"commit {corpus.rev}"

    def git(*args: str, waiting_for: str = waiting) -> subprocess.CompletedProcess[str]:
        return _git(*args, cwd=staging, deadline=deadline, waiting_for=waiting_for)

    for args in (
        ("init", "--quiet"),
        # The URL goes into the configuration as a value, never as an argument git
        # could read as an option; `insteadOf` rewrites apply to it at fetch time.
        ("config", "remote.origin.url", corpus.url),
        ("config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
    ):
        done = git(*args, waiting_for="git init")
        if done.returncode != 0:
            raise CliError(
                f"member {member.name!r}: could not prepare a git repository in {staging}: "
                f"{_last_line(done.stderr)}"
            )
    shallow = ["fetch", "--quiet", "--no-tags", "--depth", "1"]
    if corpus.root:
        shallow.append("--filter=blob:none")
    fetched = git(*shallow, "origin", corpus.rev)
    if fetched.returncode != 0 and not _unreachable(fetched.stderr):
        # The server refuses a commit asked for by id (no allowReachableSHA1InWant under
        # the old protocol): fetch its branches and tags whole, and find the commit there.
        fetched = git("fetch", "--quiet", "--tags", "origin", waiting_for="every branch and tag")
    if fetched.returncode != 0:
        raise CliError(_fetch_error(member, corpus, fetched.stderr))
    present = git("cat-file", "-e", f"{corpus.rev}^{{commit}}")
    if present.returncode != 0:
        raise CliError(
            f"member {member.name!r}: commit {corpus.rev} is not in {shown}; "
            "pin a commit the repository has"
        )
    if corpus.root:
        sparse = git("sparse-checkout", "set", "--no-cone", _sparse_pattern(corpus.root),
                     waiting_for="git sparse-checkout")  # fmt: skip
        if sparse.returncode != 0:
            raise CliError(
                f"member {member.name!r}: git could not limit the checkout to "
                f"{corpus.root!r}: {_last_line(sparse.stderr)}"
            )
    checked = git("checkout", "--quiet", "--detach", corpus.rev,
                  waiting_for=f"the files of commit {corpus.rev}")  # fmt: skip
    if checked.returncode != 0:
        raise CliError(
            f"member {member.name!r}: git could not check out {corpus.rev} of {shown}: "
            f"{redact_git_text(_last_line(checked.stderr))}"
        )


def _sparse_pattern(root: str) -> str:
    """The gitignore-style pattern that selects the directory `root` and nothing else."""
    escaped = "".join(f"\\{char}" if char in "\\*?[]!#" else char for char in root)
    return f"/{escaped}/"


_UNREACHABLE: Final = (
    "unable to access",
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "operation too slow",
    "timed out",
    "permission denied",
    "authentication failed",
    "not allowed",
)
"""Marks of a fetch that failed before the server could refuse a commit: a second,
full fetch would fail the same way, after the same wait."""


def _unreachable(stderr: str) -> bool:
    text = stderr.lower()
    return _not_a_repository(stderr) or any(mark in text for mark in _UNREACHABLE)


def _not_a_repository(stderr: str) -> bool:
    text = stderr.lower()
    return "not a git repository" in text or "does not appear to be a git repository" in text


def _fetch_error(member: Member, corpus: GitCorpus, stderr: str) -> str:
    shown = redact_git_url(corpus.url)
    if _not_a_repository(stderr):
        return (
            f"member {member.name!r}: {shown} is not a git repository; "
            "fix git in the manifest (a repository URL, or the path of a local clone)"
        )
    if "transport" in stderr and "not allowed" in stderr:
        return (
            f"member {member.name!r}: {shown} uses a git transport cce does not allow "
            f"(allowed: {ALLOWED_PROTOCOLS.replace(':', ', ')}); use one of those URLs"
        )
    return (
        f"member {member.name!r}: git could not fetch {corpus.rev} from {shown}: "
        f"{redact_git_text(_last_line(stderr))}"
    )


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("warning:", "hint:"))] or lines
    if any("Please make sure you have the correct access rights" in line for line in lines):
        lines = [line for line in lines if line.startswith("fatal:")] or lines
        return lines[0] if lines else "no message"
    return lines[-1] if lines else "no message"
