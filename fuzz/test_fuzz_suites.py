"""Property-based fuzzing of suite manifests, semble imports and git URL redaction
(`nox -s fuzz`).

Why it exists: a `cce.suite/v1` manifest and the semble benchmark's `repos.json` and
annotation files come from outside, and name member names, paths, commits and URLs that
become file names, git arguments and report fields. Each must end in a value or a
one-line `error:` naming the file (exit 1, 2 for usage), never a traceback; a member
name that is accepted is always a plain name; a redacted URL never holds the password
it was given. Marked `slow`, like fuzz/test_fuzz.py; `CCE_FUZZ_EXAMPLES` bounds it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cce_cli.errors import CliError
from cce_cli.formats.git_url import redact_git_text, redact_git_url, strip_credentials
from cce_cli.formats.semble import convert_all, group_name, toml_string
from cce_cli.formats.suite_manifest import looks_like_suite, read_manifest

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("CCE_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_TOML_VALUES = st.one_of(
    st.text(max_size=20),
    st.sampled_from([".", "..", "-rf", "a" * 40, "../x", "/etc", "file:///etc", "fd::17"]),
    st.integers(),
    st.booleans(),
    st.lists(st.text(max_size=6), max_size=3),
)
_MEMBER_KEYS = st.sampled_from(
    ["name", "fixtures", "corpus", "git", "rev", "root", "groups", "other"]
)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_string(item) for item in value) + "]"
    return toml_string(value)


@FUZZ
@given(
    schema=st.sampled_from(["", 'schema = "cce.suite/v1"\n', 'schema = "cce.suite/v2"\n']),
    members=st.lists(st.dictionaries(_MEMBER_KEYS, _TOML_VALUES, max_size=7), max_size=3),
)
def test_manifests_end_in_a_suite_or_an_error_naming_the_file(
    schema: str, members: list[dict[str, Any]]
) -> None:
    text = schema + "".join(
        "\n[[members]]\n" + "".join(f"{key} = {_toml_value(value)}\n" for key, value in m.items())
        for m in members
    )
    with tempfile.TemporaryDirectory() as where:
        path = os.path.join(where, "suite.toml")
        Path(path).write_text(text, encoding="utf-8")
        try:
            manifest = read_manifest(path)
        except CliError as error:
            assert error.message.startswith(f"suite manifest {path}")
            assert "\n" not in error.message
            return
        assert looks_like_suite(path)
        for member in manifest.members:
            assert _PLAIN_NAME.fullmatch(member.name)


@FUZZ
@given(language=st.text(max_size=16))
def test_every_language_becomes_a_group_name(language: str) -> None:
    assert re.fullmatch(r"[A-Za-z0-9._-]+", group_name(language))


@FUZZ
@given(
    user=st.text(alphabet="abcXYZ019_-.", min_size=1, max_size=8),
    secret=st.text(alphabet="abcXYZ019_-.~!$&'()*+,;=", min_size=6, max_size=16),
    scheme=st.sampled_from(["http", "https", "ssh", "git", "ftp"]),
    rest=st.text(alphabet="abc/.:-_0", max_size=12),
)
def test_a_redacted_url_never_holds_its_password(
    user: str, secret: str, scheme: str, rest: str
) -> None:
    url = f"{scheme}://{user}:{secret}@host/{rest}"
    for shown in (redact_git_url(url), strip_credentials(url), redact_git_text(f"fatal: {url}")):
        assert f":{secret}@" not in shown


_TARGETS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["src/a.py", "a.py", "/abs", "../x", "src/../a", "a#b", "a@1-2"]),
    st.fixed_dictionaries(
        {"path": st.text(max_size=8)},
        optional={
            "start_line": st.one_of(st.integers(), st.none(), st.text(max_size=2)),
            "end_line": st.one_of(st.integers(min_value=-2, max_value=2**70), st.none()),
        },
    ),
)
_TASKS = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "query": st.one_of(st.text(max_size=10), st.integers()),
            "relevant": st.one_of(st.lists(_TARGETS, max_size=3), st.text(max_size=3)),
            "secondary": st.lists(_TARGETS, max_size=2),
            "category": st.one_of(st.text(max_size=5), st.integers()),
        },
    ),
    max_size=4,
)


@FUZZ
@given(
    name=st.one_of(st.sampled_from(["web", ".", "..", "-rf"]), st.text(max_size=6)),
    language=st.text(max_size=8),
    root=st.one_of(st.none(), st.sampled_from(["src", "./src/", "../x", "/abs", ""])),
    tasks=_TASKS,
)
def test_semble_inputs_convert_or_name_every_problem(
    name: str, language: str, root: str | None, tasks: list[dict[str, Any]]
) -> None:
    repo = {
        "name": name,
        "language": language,
        "url": "https://example.invalid/x.git",
        "revision": "a" * 40,
        "benchmark_root": root,
    }
    with tempfile.TemporaryDirectory() as where:
        repos = os.path.join(where, "repos.json")
        Path(repos).write_text(json.dumps([repo]), encoding="utf-8")
        annotations = os.path.join(where, "ann")
        os.mkdir(annotations)
        # A name no file system takes (a slash, a NUL byte, . or ..) gets no annotation
        # file: the import must then name the missing file or refuse the name itself.
        if "/" not in name and "\x00" not in name and name not in ("", ".", ".."):
            Path(annotations, f"{name}.json").write_text(json.dumps(tasks), encoding="utf-8")
        try:
            conversion = convert_all(annotations, repos)
        except CliError as error:
            assert error.message
            return
        for member in conversion.members:
            assert _PLAIN_NAME.fullmatch(member.name)
            assert re.fullmatch(r"[A-Za-z0-9._-]+", member.groups[0])
        for failure in conversion.failures:
            assert failure.problems and all(problem for problem in failure.problems)
