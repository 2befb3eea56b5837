"""The public semble benchmark format, converted to a cce suite.

Why it exists: the semble code-search benchmark ships many repositories' labeled
queries as `annotations/<name>.json` plus a `repos.json` that pins each repository to
a commit. `cce import semble` turns that into a `cce.suite/v1` manifest and one
`cce.relevance/v1` fixture file per repository, so the benchmark runs under cce as is.
This module owns the reading (every error names the file, the task, the cause and the
fix), the conversion rules (docs/relevance.md#importing-the-semble-benchmark; where a
target's path points is `cce_cli.formats.semble_paths`), the manifest's TOML text, and
writing the whole suite atomically. It never touches the network: the repositories
themselves are fetched when a suite runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from cce_cli.errors import CliError
from cce_cli.formats import input_files, json_text
from cce_cli.formats.git_url import strip_credentials
from cce_cli.formats.semble_paths import Reading, Repo, clean_path, written_from_repository
from cce_cli.formats.suite_manifest import FULL_COMMIT, GROUP_NAME, MEMBER_NAME, SUITE_SCHEMA
from cce_fixtures import SCHEMA_ID, Anchor, AnchorError
from cce_retrieval import describe_os_error, write_atomic

__all__ = [
    "SUITE_SCHEMA",
    "Conversion",
    "Failure",
    "Member",
    "Suite",
    "convert_all",
    "convert_repository_all",
    "default_category",
    "describe_failures",
    "group_name",
    "read_repos_all",
    "render_manifest",
    "toml_string",
    "write_suite",
]

MANIFEST_NAME: Final = "suite.toml"
FIXTURES_DIR: Final = "fixtures"
# semble scores nDCG@10, so every imported case judges the first ten results.
IMPORTED_K: Final = 10

# Line numbers cce's anchors can hold (a u64).
_MAX_LINE: Final = 2**64 - 1


@attrs.frozen
class Member:
    """One repository of the suite: its manifest entry and its fixture file's text."""

    name: str
    git: str
    rev: str
    root: str | None
    groups: tuple[str, ...]
    fixtures_text: str
    cases: int
    root_relative: int = 0
    """How many targets were read relative to the benchmark root rather than the
    repository root (see `_target_anchor`)."""
    checked: bool = False
    """Whether every target was found in a checkout of the pinned commit."""
    outside_root: int = 0
    """How many targets of a file written from the repository root lie outside the
    benchmark root: kept as written, they name no file of the indexed corpus, so no
    search finds them (as in semble, which indexes only the benchmark root)."""

    @property
    def fixtures(self) -> str:
        """The fixture file's path, relative to the manifest."""
        return f"{FIXTURES_DIR}/{self.name}.jsonl"


@attrs.frozen
class Suite:
    """A converted benchmark: members in the order `REPOS.json` lists them."""

    members: tuple[Member, ...]

    def files(self) -> dict[str, str]:
        """Every file of the suite: relative path to text (the manifest first)."""
        written = {MANIFEST_NAME: render_manifest(self.members)}
        for member in self.members:
            written[member.fixtures] = member.fixtures_text
        return written


# -- TOML ---------------------------------------------------------------------------------

_TOML_ESCAPES: Final = {
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}


def toml_string(text: str) -> str:
    """`text` as a TOML basic string: quotes, backslashes and control characters escaped
    (TOML 1.0: U+0000-U+001F and U+007F may not appear raw), everything else verbatim."""
    out = []
    for char in text:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def render_manifest(members: Sequence[Member]) -> str:
    """The `cce.suite/v1` manifest: the schema, then one `[[members]]` table each."""
    lines = [f"schema = {toml_string(SUITE_SCHEMA)}"]
    for member in members:
        lines += [
            "",
            "[[members]]",
            f"name = {toml_string(member.name)}",
            f"fixtures = {toml_string(member.fixtures)}",
            f"git = {toml_string(strip_credentials(member.git))}",
            f"rev = {toml_string(member.rev)}",
        ]
        if member.root is not None:
            lines.append(f"root = {toml_string(member.root)}")
        lines.append("groups = [" + ", ".join(toml_string(group) for group in member.groups) + "]")
    return "\n".join(lines) + "\n"


# -- reading ------------------------------------------------------------------------------


def _load_json(path: str) -> Any:
    try:
        data = input_files.read_input(path, input_files.TASK_LIST)
    except OSError as error:
        raise CliError(f"could not read {path}: {describe_os_error(error)}") from None
    try:
        return json_text.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise CliError(
            f"{path}: invalid UTF-8 at byte offset {error.start}; save the file as UTF-8"
        ) from None
    except json.JSONDecodeError as error:
        raise CliError(
            f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}; "
            "fix the file so that it parses as JSON"
        ) from None


def _kind(value: object) -> str:
    """How a JSON value is named in messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _string_field(entry: Mapping[str, Any], key: str, where: str, fix: str) -> str:
    if key not in entry:
        raise CliError(f'{where}: missing field "{key}"; {fix}')
    value = entry[key]
    if not isinstance(value, str) or not value.strip():
        raise CliError(f'{where}: "{key}" must be a non-empty string, not {_kind(value)}; {fix}')
    _require_encodable(value, where)
    return value


def _require_encodable(text: str, where: str) -> None:
    """JSON may escape half of a surrogate pair (`"\\ud800"`); no UTF-8 file can hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise CliError(
            f"{where}: the text holds an unpaired surrogate escape "
            f"(\\u{ord(text[error.start]):04x}); write the character itself, or a full pair"
        ) from None


@attrs.frozen
class Failure:
    """A repository (or an annotation file without one) that did not convert, with
    every problem found in it, each a whole message naming file, place, cause and fix."""

    name: str
    problems: tuple[str, ...]


@attrs.frozen
class Conversion:
    """What `convert_all` made of the benchmark: the members that converted (in the
    order of `REPOS.json`) and those that did not."""

    members: tuple[Member, ...]
    failures: tuple[Failure, ...]


def read_repos_all(path: str) -> tuple[list[Repo], list[Failure]]:
    """The repositories of `REPOS.json` that are well formed, in its order, every field
    checked, and a failure for each entry that is not (named by its position when it has
    no usable name)."""
    entries = _load_json(path)
    if not isinstance(entries, list):
        raise CliError(
            f"{path}: must be a JSON array of repositories, not {_kind(entries)}; "
            'write [{"name", "language", "url", "revision", "benchmark_root"}, ...]'
        )
    repos: list[Repo] = []
    failures: list[Failure] = []
    seen: dict[str, int] = {}
    for number, entry in enumerate(entries, start=1):
        try:
            repos.append(_read_repo(path, number, entry, seen))
        except CliError as error:
            name = entry.get("name") if isinstance(entry, dict) else None
            label = name if isinstance(name, str) and name else f"repository {number}"
            failures.append(Failure(label, (error.message,)))
    return repos, failures


def _read_repo(path: str, number: int, entry: object, seen: dict[str, int]) -> Repo:
    where = f"{path}: repository {number}"
    if not isinstance(entry, dict):
        raise CliError(f"{where}: must be a JSON object, not {_kind(entry)}")
    name = _string_field(entry, "name", where, "give the repository a name")
    where = f"{path}: repository {number} ({json.dumps(name)})"
    if not MEMBER_NAME.fullmatch(name):
        raise CliError(
            f"{where}: name {json.dumps(name)} may only use letters, digits, '.', '_' "
            "and '-', starting with a letter or digit; rename it (and its annotation file)"
        )
    if name in seen:
        raise CliError(
            f"{where}: name {json.dumps(name)} is also repository {seen[name]}; "
            "names must be unique, rename or remove one"
        )
    seen[name] = number
    language = _string_field(entry, "language", where, "name the repository's language")
    url = _string_field(entry, "url", where, "give the URL git clones the repository from")
    revision = _string_field(entry, "revision", where, "pin the repository to a commit")
    if not FULL_COMMIT.fullmatch(revision):
        raise CliError(
            f"{where}: revision {json.dumps(revision)} is not a full commit id; "
            "write all 40 hex digits in lower case (git rev-parse <ref> prints them)"
        )
    root = entry.get("benchmark_root")
    if root is not None and not isinstance(root, str):
        raise CliError(
            f'{where}: "benchmark_root" must be a string or null, not {_kind(root)}; '
            "write the indexed subdirectory, or null for the whole repository"
        )
    cleaned = None
    if root is not None:
        _require_encodable(root, where)
        cleaned = clean_path(root, where, "benchmark_root")
    group = group_name(language)
    return Repo(name, group, url, revision, cleaned or None)


_LANGUAGE_SPELLINGS: Final = {"+": "p", "#": "sharp"}


def group_name(language: str) -> str:
    """`language` as a suite group name: lower case, `+` as `p` and `#` as `sharp`
    (`c++` is `cpp`, `C#` is `csharp`), any run of other characters that a group name
    may not hold as one `-` (`Objective C` is `objective-c`); `other` if nothing is left."""
    spelled = "".join(_LANGUAGE_SPELLINGS.get(char, char) for char in language.strip().lower())
    name = re.sub(r"[^a-z0-9._-]+", "-", spelled).strip("-")
    return name if GROUP_NAME.fullmatch(name) else "other"


def default_category(query: str) -> str:
    """semble's category of a task that names none, from the query's shape: `symbol` if
    the query, stripped, has no space; `architecture` if it starts with `how ` in any
    case (`How does routing work`); else `semantic`."""
    if " " not in query.strip():
        return "symbol"
    if query.lower().startswith("how "):
        return "architecture"
    return "semantic"


def _target_anchor(target: object, repo: Repo, where: str, reading: Reading) -> str:
    """One semble target as a cce anchor: its path relative to the benchmark root,
    `@a-b` if ranged.

    semble writes paths relative to the repository root, but some annotation files
    relative to the benchmark root. A path that does not start with the root can only be
    the latter. One that does could be either (`src/x.py` under root `src` is `src/x.py`
    or `src/src/x.py`): with a checkout of the pinned commit at hand, the reading whose
    file exists is taken (both or neither is an error); without one, the repository
    reading. `reading` counts the targets read from the benchmark root."""
    line_range: tuple[int, int] | None = None
    if isinstance(target, str):
        path_text = target
    elif isinstance(target, dict):
        given = target.get("path")
        if not isinstance(given, str):
            raise CliError(
                f'{where}: "path" must be a string, found '
                f"{'nothing' if 'path' not in target else _kind(given)}; "
                'write {"path": "dir/file.py", "start_line": 1, "end_line": 9}'
            )
        path_text = given
        line_range = _target_range(target, where)
    else:
        raise CliError(
            f"{where}: must be a path string or an object with a path, not {_kind(target)}; "
            'write "dir/file.py" or {"path": "dir/file.py", "start_line": 1, "end_line": 9}'
        )
    path = clean_path(path_text, where, "path")
    if not path:
        raise CliError(f"{where}: path {json.dumps(path_text)} names no file; write a file path")
    path = reading.resolve(path, path_text, repo, where)
    anchor = path if line_range is None else f"{path}@{line_range[0]}-{line_range[1]}"
    _check_round_trip(anchor, path, line_range, where)
    return anchor


def _target_range(target: Mapping[str, Any], where: str) -> tuple[int, int] | None:
    start, end = target.get("start_line"), target.get("end_line")
    if start is None and end is None:
        return None
    for key, value in (("start_line", start), ("end_line", end)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise CliError(
                f'{where}: "{key}" must be a line number from 1, not {json.dumps(value)}; '
                "give both start_line and end_line (1-based, inclusive), or neither"
            )
    assert isinstance(start, int) and isinstance(end, int)
    for key, value in (("start_line", start), ("end_line", end)):
        if value > _MAX_LINE:
            shown = str(value) if len(str(value)) <= 30 else f"a number of {len(str(value))} digits"
            raise CliError(
                f'{where}: "{key}" {shown} is larger than any line number '
                f"(at most {_MAX_LINE}); give the line the target ends on"
            )
    if start > end:
        raise CliError(
            f"{where}: start_line {start} is after end_line {end}; swap them "
            "(lines are 1-based and inclusive)"
        )
    return start, end


def _check_round_trip(
    anchor: str, path: str, line_range: tuple[int, int] | None, where: str
) -> None:
    """Refuse a path that the anchor grammar would read differently (`#`, a range-like
    `@` tail, surrounding spaces): the fixture would then label another file."""
    try:
        parsed = Anchor.parse(anchor)
    except AnchorError:
        parsed = None
    if parsed is None or (parsed.file_path, parsed.kind, parsed.line_range) != (
        path,
        None,
        line_range,
    ):
        raise CliError(
            f"{where}: path {json.dumps(path)} cannot be written as a cce anchor "
            "(a '#', an '@' followed by a line range, or spaces at either end change its "
            "meaning); rename the file in the annotation or leave the target out"
        )


def _targets(
    task: Mapping[str, Any], key: str, repo: Repo, where: str, reading: Reading
) -> tuple[list[str], list[str]]:
    """The anchors of `task[key]`, and one problem per target that cannot be one."""
    value = task.get(key)
    if value is None and key == "secondary":
        return [], []
    if not isinstance(value, list):
        found = "missing" if key not in task else f"{_kind(value)}"
        raise CliError(
            f'{where}: "{key}" must be an array of targets, found {found}; '
            'write ["dir/file.py", {"path": "dir/file.py", "start_line": 1, "end_line": 9}]'
        )
    if key == "relevant" and not value:
        raise CliError(
            f'{where}: "relevant" is empty; list at least one relevant target or drop the task'
        )
    anchors: list[str] = []
    problems: list[str] = []
    for number, target in enumerate(value, start=1):
        try:
            anchors.append(_target_anchor(target, repo, f"{where}: {key} target {number}", reading))
        except CliError as error:
            problems.append(error.message)
    return anchors, problems


def convert_repository_all(
    path: str, repo: Repo, checkout: str | None = None
) -> tuple[Member | None, list[str]]:
    """One annotation file as a member, or None and every problem of every task.

    `checkout` is a checkout of the pinned commit (its benchmark root inside) when one
    is at hand: each target is then checked to be a file of it."""
    tasks = _load_json(path)
    if not isinstance(tasks, list):
        raise CliError(
            f"{path}: must be a JSON array of tasks, not {_kind(tasks)}; "
            'write [{"query", "relevant", "secondary", "category"}, ...]'
        )
    if not tasks:
        raise CliError(f"{path}: has no task; add one or remove the repository")
    width = max(2, len(str(len(tasks))))
    lines = [json.dumps({"schema": SCHEMA_ID}, separators=(",", ":"))]
    problems: list[str] = []
    reading = Reading(checkout, written_from_repository(tasks, repo.root))
    for number, task in enumerate(tasks, start=1):
        case_id = f"{repo.name}-{number:0{width}d}"
        where = f"{path}: task {number} ({case_id})"
        try:
            line, task_problems = _case_line(task, case_id, repo, where, reading)
        except CliError as error:
            problems.append(error.message)
            continue
        problems.extend(task_problems)
        lines.append(line)
    if problems:
        return None, problems
    member = Member(
        repo.name,
        repo.url,
        repo.revision,
        repo.root,
        (repo.language,),
        "\n".join(lines) + "\n",
        len(tasks),
        reading.root_relative,
        checkout is not None,
        reading.outside_root,
    )
    return member, []


def _case_line(
    task: object, case_id: str, repo: Repo, where: str, reading: Reading
) -> tuple[str, list[str]]:
    if not isinstance(task, dict):
        raise CliError(f"{where}: must be a JSON object, not {_kind(task)}")
    query = task.get("query")
    if not isinstance(query, str) or not query.strip():
        found = "missing" if "query" not in task else _kind(query)
        if isinstance(query, str):
            found = "blank"
        raise CliError(f'{where}: "query" must be a non-blank string, found {found}')
    category = task.get("category")
    if category is None:
        category = default_category(query)
    elif not isinstance(category, str) or not category.strip():
        raise CliError(
            f'{where}: "category" must be a non-empty string, not {json.dumps(category)}; '
            "name the category or leave the field out"
        )
    expected, problems = _targets(task, "relevant", repo, where, reading)
    secondary, secondary_problems = _targets(task, "secondary", repo, where, reading)
    problems += secondary_problems
    case: dict[str, object] = {"id": case_id, "query": query, "expected": expected}
    if secondary:
        case["secondary"] = secondary
    case["tags"] = [category]
    case["k"] = IMPORTED_K
    line = json.dumps(case, ensure_ascii=False, separators=(",", ":"))
    _require_encodable(line, where)
    return line, problems


def convert_all(
    annotations_dir: str,
    repos_path: str,
    *,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    checkout_for: Callable[[str, str, str | None], str | None] | None = None,
) -> Conversion:
    """Every repository of `repos_path` (those in `only` if given, none in `skip`), each
    read from `annotations_dir/<name>.json`, converted as far as it goes: the members
    that convert, and every problem of the others. An annotation file without a
    repository is a failure too (unless `only` or `skip` leaves it out).

    `checkout_for(url, revision, root)` names a checkout of a repository's pinned
    commit when one is at hand (targets are then checked against it)."""
    repos, failures = read_repos_all(repos_path)
    try:
        names = sorted(
            entry.name for entry in os.scandir(annotations_dir) if entry.name.endswith(".json")
        )
    except OSError as error:
        raise CliError(
            f"could not read the annotations directory {annotations_dir}: "
            f"{describe_os_error(error)}"
        ) from None
    listed = [repo.name for repo in repos] + [failure.name for failure in failures]
    # An annotation file without a repository can be skipped by its name too.
    skippable = listed + [file_name.removesuffix(".json") for file_name in names]
    for flag, chosen, known_names in (("--only", only, listed), ("--skip", skip, skippable)):
        unknown = [name for name in chosen if name not in known_names]
        if unknown:
            raise CliError(
                f"{flag}: no repository {json.dumps(unknown[0])} in {repos_path}; "
                f"name repositories it lists, separated by commas",
                exit_code=2,
            )

    def wanted(name: str) -> bool:
        return (not only or name in only) and name not in skip

    failures = [failure for failure in failures if wanted(failure.name)]
    known = set(listed)
    for file_name in names:
        name = file_name.removesuffix(".json")
        if name not in known and wanted(name) and not only:
            failures.append(
                Failure(
                    name,
                    (
                        f"{os.path.join(annotations_dir, file_name)}: no repository "
                        f"{json.dumps(name)} in {repos_path}; add it there (url, revision, "
                        "language) or move the file out of the directory",
                    ),
                )
            )
    members = []
    for repo in repos:
        if not wanted(repo.name):
            continue
        path = os.path.join(annotations_dir, f"{repo.name}.json")
        if f"{repo.name}.json" not in names:
            failures.append(
                Failure(
                    repo.name,
                    (
                        f"{repos_path}: repository {json.dumps(repo.name)} has no annotation "
                        f"file {path}; add it, or remove the repository from {repos_path}",
                    ),
                )
            )
            continue
        checkout = checkout_for(repo.url, repo.revision, repo.root) if checkout_for else None
        try:
            member, problems = convert_repository_all(path, repo, checkout)
        except CliError as error:
            member, problems = None, [error.message]
        if member is None:
            failures.append(Failure(repo.name, tuple(problems)))
        else:
            members.append(member)
    if not members and not failures:
        raise CliError(f"{repos_path}: lists no repository; there is nothing to import")
    return Conversion(tuple(members), tuple(failures))


def describe_failures(failures: Sequence[Failure]) -> str:
    """Every problem as its own `error:` line (the first without the prefix, which the
    caller adds), then, when there is more than one, a line counting them."""
    problems = [problem for failure in failures for problem in failure.problems]
    if len(problems) == 1:
        return problems[0]
    names = ", ".join(failure.name for failure in failures)
    count = f"{len(failures)} repositor{'y' if len(failures) == 1 else 'ies'}"
    summary = (
        f"{len(problems)} problems in {count} ({names}); fix them, leave those "
        "repositories out with --skip, or write the others with --keep-going"
    )
    return "\nerror: ".join([*problems, summary])


# -- writing ------------------------------------------------------------------------------


def write_suite(suite: Suite, output: str) -> None:
    """Write every file of `suite` under `output`, all or nothing.

    The files are written into a temporary directory beside `output`, which is then
    renamed onto it; `output` must not exist or be an empty directory, so an import
    never replaces files someone else wrote.
    """
    if not output:
        raise CliError("-o needs a directory path: the suite directory to create", exit_code=2)
    target = os.path.abspath(output)
    _refuse_occupied(output, target)
    _refuse_file_ancestor(output, target)
    parent = os.path.dirname(target)
    try:
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.tmp.", dir=parent)
    except OSError as error:
        raise CliError(f"could not create {output}: {describe_os_error(error)}") from None
    try:
        for relative, text in suite.files().items():
            write_atomic(os.path.join(staging, relative), text.encode("utf-8"))
        os.chmod(staging, 0o777 & ~_umask())
        os.rename(staging, target)
    except OSError as error:
        raise CliError(f"could not write {output}: {describe_os_error(error)}") from None
    finally:
        if os.path.lexists(staging):
            with contextlib.suppress(OSError):
                shutil.rmtree(staging)


def _refuse_occupied(output: str, target: str) -> None:
    if not os.path.lexists(target):
        return
    if not os.path.isdir(target) or os.path.islink(target):
        raise CliError(f"{output} exists and is not a directory; choose another -o directory")
    try:
        occupied = any(True for _ in os.scandir(target))
    except OSError as error:
        raise CliError(f"could not read {output}: {describe_os_error(error)}") from None
    if occupied:
        raise CliError(
            f"{output} is not empty; an import never overwrites files: "
            "remove the directory or choose another -o directory"
        )


def _refuse_file_ancestor(output: str, target: str) -> None:
    """`-o file/sub`: name the file in the way rather than echo `File exists`."""
    ancestor = os.path.dirname(target)
    while not os.path.lexists(ancestor) and os.path.dirname(ancestor) != ancestor:
        ancestor = os.path.dirname(ancestor)
    if os.path.lexists(ancestor) and not os.path.isdir(ancestor):
        raise CliError(
            f"{output}: {ancestor} is a file, not a directory, so no directory can be made "
            "under it; choose another -o directory"
        )


def _umask() -> int:
    """The process umask (mkdtemp creates 0o700; the suite gets the usual mode)."""
    current = os.umask(0)
    os.umask(current)
    return current
