"""The `cce.suite/v1` manifest: many repositories, each with its fixtures, as one benchmark.

Why it exists: one repository's labeled queries rarely number enough to show a realistic
change, and public code-search benchmarks span dozens of repositories. A manifest names
each member's fixture file and corpus (a local directory, or a git repository pinned to a
full commit id), so a whole benchmark runs, gates and diffs as one input wherever a
fixture file is accepted. This module reads and checks a manifest; every error names the
manifest, the member, the cause and the fix (docs/suites.md#the-manifest).
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from collections.abc import Mapping
from typing import Any, Final

import attrs

from cce_cli.errors import CliError
from cce_cli.formats import input_files
from cce_cli.formats.git_url import redact_git_url

SUITE_SCHEMA: Final = "cce.suite/v1"
SUITE_REPORT_SCHEMA: Final = "cce.suite.report/v1"
"""The schema of the report a suite run writes (`cce_cli.render.suite`)."""
GROUP_NAME: Final = re.compile(r"[A-Za-z0-9._-]+")
# A member name becomes a file name and a case-id prefix: it starts with a letter or a
# digit, so `.`, `..` and option-like `-rf` are never one.
MEMBER_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# A full commit id: SHA-1 (40) or SHA-256 (64) hex digits, lower case as git prints them,
# so that a later `HEAD == rev` check compares like with like.
FULL_COMMIT: Final = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_MEMBER_KEYS: Final = frozenset({"name", "fixtures", "corpus", "git", "rev", "root", "groups"})


@attrs.frozen(slots=True)
class GitCorpus:
    """A corpus that is a git repository at one commit; `root` is the indexed subdirectory."""

    url: str
    rev: str
    root: str = ""

    def identity(self) -> dict[str, str]:
        """How reports and provenance name it; credentials in the URL are redacted."""
        identity = {"url": redact_git_url(self.url), "rev": self.rev}
        if self.root:
            identity["root"] = self.root
        return identity


@attrs.frozen(slots=True)
class Member:
    """One repository of a suite: its name, fixture file, corpus and groups."""

    name: str
    fixtures: str
    """The fixture file's path (the manifest's directory joined with the written one)."""
    corpus: str | GitCorpus
    """A local directory's path, or the git repository it is checked out from."""
    groups: tuple[str, ...] = ()

    def corpus_identity(self) -> dict[str, str]:
        """How reports name the corpus: `{"path": ...}` or `{"url", "rev"[, "root"]}`."""
        if isinstance(self.corpus, GitCorpus):
            return self.corpus.identity()
        return {"path": self.corpus}


@attrs.frozen(slots=True)
class SuiteManifest:
    """A parsed manifest: where it is, its bytes' digest, its members in manifest order."""

    path: str
    sha256: str
    members: tuple[Member, ...]
    executor: str | None = None

    def groups(self) -> tuple[str, ...]:
        """Every group some member is in, in code-point order."""
        return tuple(sorted({group for member in self.members for group in member.groups}))


def toml_unless_json(path: str) -> dict[str, Any] | None:
    """The TOML document at `path`, or None when the file is unreadable, blank, opens a
    JSON object, or is not UTF-8 TOML: the test that tells a manifest (or TOML meant as
    one) from a fixture file, leaving anything else to the fixture reader."""
    try:
        data = input_files.read_input(path, input_files.SUITE_MANIFEST)
    except OSError:
        return None
    if data.lstrip()[:1] in (b"{", b""):
        return None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None


def looks_like_suite(path: str) -> bool:
    """Whether `path` is a suite manifest rather than a fixture file: a regular file whose
    first non-blank character does not open a JSON object and whose TOML has a `schema`
    or `members` key (a wrong or missing schema is then `read_manifest`'s error, naming
    the file). Anything unreadable is left to the fixture reader."""
    document = toml_unless_json(path)
    return document is not None and ("schema" in document or "members" in document)


def read_manifest(path: str) -> SuiteManifest:
    """The manifest at `path`, checked; CliError (exit 1) naming what is wrong and how to
    fix it."""
    try:
        data = input_files.read_input(path, input_files.SUITE_MANIFEST)
    except OSError as error:
        raise CliError(f"could not read suite manifest {path}: {error.strerror or error}") from None
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CliError(f"suite manifest {path}: not UTF-8; save it as UTF-8") from None
    except (tomllib.TOMLDecodeError, RecursionError) as error:
        raise CliError(f"suite manifest {path}: not valid TOML ({error})") from None
    schema = document.get("schema")
    if schema is None:
        raise CliError(
            f'suite manifest {path}: no schema; declare schema = "{SUITE_SCHEMA}" at the top'
        )
    if schema != SUITE_SCHEMA:
        raise CliError(
            f"suite manifest {path}: schema {schema!r} is not one this cce reads; "
            f'declare schema = "{SUITE_SCHEMA}" (or use a cce that reads {schema!r})'
        )
    unknown = sorted(set(document) - {"schema", "members", "executor"})
    if unknown:
        raise CliError(
            f"suite manifest {path}: unknown key {unknown[0]!r}; "
            "a manifest has schema, members and optionally executor"
        )
    executor = document.get("executor")
    if executor is not None and not isinstance(executor, str):
        raise CliError(f'suite manifest {path}: executor must be a string, e.g. "dask://host:8786"')
    raw_members = document.get("members")
    if not isinstance(raw_members, list) or not raw_members:
        raise CliError(
            f"suite manifest {path}: no members; add at least one [[members]] table "
            "with name, fixtures and corpus or git"
        )
    base = os.path.dirname(path)
    members: list[Member] = []
    seen: set[str] = set()
    for position, raw in enumerate(raw_members, 1):
        member = _member(path, base, position, raw)
        if member.name in seen:
            raise CliError(
                f"suite manifest {path}: member {member.name!r} appears twice; "
                "member names must be unique"
            )
        seen.add(member.name)
        members.append(member)
    return SuiteManifest(path, hashlib.sha256(data).hexdigest(), tuple(members), executor)


def select_members(manifest: SuiteManifest, names: str) -> SuiteManifest:
    """`manifest` with only the members `names` lists (comma-separated), in manifest
    order, for `--members a,b`; a usage error (exit 2) naming an unknown member and the
    ones there are. The digest stays the manifest file's: reports name what was read."""
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    if not wanted:
        raise CliError("--members needs member names separated by commas", exit_code=2)
    known = [member.name for member in manifest.members]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise CliError(
            f"--members: no member {unknown[0]!r} in {manifest.path}; "
            f"its members are {', '.join(known)}",
            exit_code=2,
        )
    chosen = tuple(member for member in manifest.members if member.name in wanted)
    return attrs.evolve(manifest, members=chosen)


def _member(path: str, base: str, position: int, raw: object) -> Member:
    where = f"suite manifest {path}, member {position}"
    if not isinstance(raw, Mapping):
        raise CliError(f"{where}: each member is a [[members]] table")
    name = raw.get("name")
    if not isinstance(name, str) or MEMBER_NAME.fullmatch(name) is None:
        raise CliError(
            f"{where}: name must be letters, digits, '.', '_' or '-', starting with a "
            f"letter or digit (got {name!r}); give every member a short unique name"
        )
    where = f"suite manifest {path}, member {name!r}"
    unknown = sorted(set(raw) - _MEMBER_KEYS)
    if unknown:
        raise CliError(
            f"{where}: unknown key {unknown[0]!r}; a member has name, fixtures, "
            "corpus or git with rev (and root), and groups"
        )
    fixtures = _string(raw, "fixtures", where, "the path of its fixture file")
    groups = raw.get("groups", [])
    if not isinstance(groups, list) or not all(
        isinstance(group, str) and GROUP_NAME.fullmatch(group) for group in groups
    ):
        raise CliError(f'{where}: groups must be a list of names, e.g. groups = ["python"]')
    has_corpus, has_git = "corpus" in raw, "git" in raw
    if has_corpus == has_git:
        raise CliError(
            f"{where}: give exactly one of corpus (a local directory) and git "
            "(a repository URL, with rev)"
        )
    corpus: str | GitCorpus
    if has_corpus:
        for key in ("rev", "root"):
            if key in raw:
                raise CliError(f"{where}: {key} goes with git, not with a local corpus")
        corpus = os.path.join(base, _string(raw, "corpus", where, "a directory"))
    else:
        url = _string(raw, "git", where, "a repository URL or path git accepts")
        rev = raw.get("rev")
        if not isinstance(rev, str) or FULL_COMMIT.fullmatch(rev) is None:
            raise CliError(
                f"{where}: rev must be a full commit id (40 lowercase hex digits, "
                f"got {rev!r}); pin the commit, not a branch or tag"
            )
        root = raw.get("root", "")
        if not isinstance(root, str) or _escapes(root):
            raise CliError(
                f"{where}: root must be a relative path inside the repository (got {root!r})"
            )
        corpus = GitCorpus(_git_url(url, base), rev, root.strip("/"))
    return Member(name, os.path.join(base, fixtures), corpus, tuple(groups))


def _string(raw: Mapping[str, object], key: str, where: str, what: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value or "\0" in value:
        raise CliError(f"{where}: {key} must be {what}")
    return value


def _escapes(root: str) -> bool:
    """Whether `root` is absolute or climbs out of the repository."""
    return root.startswith("/") or ".." in root.split("/") or "\0" in root


def _git_url(url: str, base: str) -> str:
    """A relative local repository path is taken relative to the manifest, like corpus;
    anything with a scheme (or scp-like `host:path`) is passed to git as written."""
    if "://" in url or re.match(r"^[^/]+@[^/]+:", url) or os.path.isabs(url):
        return url
    return os.path.join(base, url)
