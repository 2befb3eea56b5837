"""`cce import semble`: the suite it writes, byte for byte; fixtures that pass
`cce-fixtures validate` and `cce check` against a git checkout made here; every input
error named with its file and fix; all-or-nothing output. Nothing is downloaded: the
one git member is a repository this file creates, the others are never fetched."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_cli.formats import semble
from cce_cli.formats.semble import default_category, toml_string
from cce_cli.main import main
from cce_fixtures import parse_fixtures
from cce_fixtures.cli import validate_files

Outcome = tuple[int, str, str]
# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]
FAKE_REV = "0123456789abcdef0123456789abcdef01234567"

APP = "def route(path):\n    return path\n\n\ndef dispatch(request):\n    return route(request)\n"
UTIL = "def slugify(text):\n    return text.lower()\n"


def _git(cwd: Path, *argv: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
            *argv,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, str]:
    """A git repository with the indexed code under `src/web`, and its commit id."""
    repo = tmp_path / "upstream"
    for rel, text in {
        "src/web/app.py": APP,
        "src/web/util/text.py": UTIL,
        "docs/guide.md": "# Guide\n",
    }.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    return repo, _git(repo, "rev-parse", "HEAD")


def _write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")
    return path


def _bench(tmp_path: Path, upstream: tuple[Path, str]) -> tuple[Path, Path, list[dict[str, Any]]]:
    """Two repositories: `web` (the local git repository, root `src/web`) and `tool`
    (a URL nobody fetches, whole repository), with their annotation files."""
    repo, rev = upstream
    repos: list[dict[str, Any]] = [
        {
            "name": "web",
            "language": "python",
            "url": repo.as_uri(),
            "revision": rev,
            "benchmark_root": "src/web",
            "stars": 12,  # unknown fields are ignored
        },
        {
            "name": "tool",
            "language": "go",
            "url": "https://example.invalid/tool.git",
            "revision": FAKE_REV,
            "benchmark_root": None,
        },
    ]
    annotations = tmp_path / "annotations"
    _write(
        annotations / "web.json",
        [
            {"query": "dispatch", "relevant": ["src/web/app.py"], "secondary": []},
            {
                "query": "how does a request reach its route",
                "relevant": [{"path": "src/web/app.py", "start_line": 5, "end_line": 6}],
                "secondary": ["src/web/util/text.py"],
                "difficulty": "hard",
            },
            {
                "query": 'turn a title into a "slug"',
                "relevant": [{"path": "src/web/util/text.py", "start_line": 1, "end_line": 2}],
                "category": "utility",
            },
        ],
    )
    _write(annotations / "tool.json", [{"query": "main entry", "relevant": ["cmd/main.go"]}])
    return annotations, _write(tmp_path / "repos.json", repos), repos


def _import(run_cce: RunCce, annotations: Path, repos: Path, out: Path) -> Outcome:
    return run_cce("import", "semble", str(annotations), "--repos", str(repos), "-o", str(out))


def test_import_writes_the_manifest_and_one_fixture_file_per_repository(
    tmp_path: Path, upstream: tuple[Path, str], run_cce: RunCce
) -> None:
    annotations, repos_file, repos = _bench(tmp_path, upstream)
    out = tmp_path / "suite"
    code, stdout, stderr = _import(run_cce, annotations, repos_file, out)
    assert (code, stderr) == (0, "")
    assert stdout == (
        "fixtures/web.jsonl: 3 queries\n"
        "fixtures/tool.jsonl: 1 query\n"
        f"{out / 'suite.toml'}: 2 member(s), 4 queries\n"
    )
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "fixtures",
        "fixtures/tool.jsonl",
        "fixtures/web.jsonl",
        "suite.toml",
    ]
    manifest = (out / "suite.toml").read_text(encoding="utf-8")
    assert manifest == (
        'schema = "cce.suite/v1"\n'
        "\n"
        "[[members]]\n"
        'name = "web"\n'
        'fixtures = "fixtures/web.jsonl"\n'
        f'git = "{repos[0]["url"]}"\n'
        f'rev = "{repos[0]["revision"]}"\n'
        'root = "src/web"\n'
        'groups = ["python"]\n'
        "\n"
        "[[members]]\n"
        'name = "tool"\n'
        'fixtures = "fixtures/tool.jsonl"\n'
        'git = "https://example.invalid/tool.git"\n'
        f'rev = "{FAKE_REV}"\n'
        'groups = ["go"]\n'
    )
    assert tomllib.loads(manifest) == {
        "schema": "cce.suite/v1",
        "members": [
            {
                "name": "web",
                "fixtures": "fixtures/web.jsonl",
                "git": repos[0]["url"],
                "rev": repos[0]["revision"],
                "root": "src/web",
                "groups": ["python"],
            },
            {
                "name": "tool",
                "fixtures": "fixtures/tool.jsonl",
                "git": "https://example.invalid/tool.git",
                "rev": FAKE_REV,
                "groups": ["go"],
            },
        ],
    }
    assert (out / "fixtures" / "web.jsonl").read_text(encoding="utf-8") == (
        '{"schema":"cce.relevance/v1"}\n'
        '{"id":"web-01","query":"dispatch","expected":["app.py"],"tags":["symbol"],"k":10}\n'
        '{"id":"web-02","query":"how does a request reach its route",'
        '"expected":["app.py@5-6"],"secondary":["util/text.py"],'
        '"tags":["architecture"],"k":10}\n'
        '{"id":"web-03","query":"turn a title into a \\"slug\\"",'
        '"expected":["util/text.py@1-2"],"tags":["utility"],"k":10}\n'
    )
    assert (out / "fixtures" / "tool.jsonl").read_text(encoding="utf-8") == (
        '{"schema":"cce.relevance/v1"}\n'
        '{"id":"tool-01","query":"main entry","expected":["cmd/main.go"],'
        '"tags":["semantic"],"k":10}\n'
    )


def test_written_fixtures_pass_validate_and_check_against_the_pinned_checkout(
    tmp_path: Path, upstream: tuple[Path, str], capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    annotations, repos_file, _ = _bench(tmp_path, upstream)
    out = tmp_path / "suite"
    assert _import(run_cce, annotations, repos_file, out)[0] == 0
    fixture_files = sorted(str(path) for path in (out / "fixtures").glob("*.jsonl"))
    report = io.StringIO()
    assert validate_files(fixture_files, report, strict=True) == 0
    assert report.getvalue() == ""

    # The member as a suite runner would have it: cloned, detached at `rev`, its root indexed.
    manifest = tomllib.loads((out / "suite.toml").read_text(encoding="utf-8"))
    web = manifest["members"][0]
    checkout = tmp_path / "checkout"
    _git(tmp_path, "clone", "-q", web["git"], str(checkout))
    _git(checkout, "checkout", "-q", "--detach", web["rev"])
    fixtures = out / web["fixtures"]
    corpus = checkout / web["root"]
    code = main(["check", "--strict", str(fixtures), "--dir", str(corpus)])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err) == (0, "", "")
    # And it scores: semble's metric is nDCG@10 over every query.
    assert len(parse_fixtures(fixtures.read_text(encoding="utf-8")).cases) == 3
    code = main(["relevance", str(fixtures), "--dir", str(corpus), "--metrics", "ndcg", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    for backend in json.loads(captured.out)["backends"]:
        assert "ndcg_at_k" in backend and len(backend["per_query"]) == 3


def test_the_same_input_gives_the_same_bytes(
    tmp_path: Path, upstream: tuple[Path, str], run_cce: RunCce
) -> None:
    annotations, repos_file, _ = _bench(tmp_path, upstream)
    first, second = tmp_path / "one", tmp_path / "two"
    assert _import(run_cce, annotations, repos_file, first)[0] == 0
    second.mkdir()  # an existing empty directory is fine
    assert _import(run_cce, annotations, repos_file, second)[0] == 0
    for path in first.rglob("*.*"):
        assert path.read_bytes() == (second / path.relative_to(first)).read_bytes()


@pytest.mark.parametrize(
    ("query", "category"),
    [
        ("Blueprint", "symbol"),
        ("app.route", "symbol"),
        ("how", "symbol"),
        ("how does routing work", "architecture"),
        # semble's rule: the query stripped has no space; "how " in any case.
        ("How does routing work", "architecture"),
        ("HOW are hooks run", "architecture"),
        (" Blueprint ", "symbol"),
        ("however it is saved", "semantic"),
        ("where is the session saved", "semantic"),
    ],
)
def test_a_missing_category_follows_the_query_shape(query: str, category: str) -> None:
    assert default_category(query) == category


@pytest.mark.parametrize(("tasks", "width"), [(1, 2), (99, 2), (100, 3), (1000, 4)])
def test_ids_are_zero_padded_to_one_width_per_file(
    tmp_path: Path, tasks: int, width: int, run_cce: RunCce
) -> None:
    repos = _write(
        tmp_path / "repos.json",
        [{"name": "r", "language": "c", "url": "u", "revision": FAKE_REV, "benchmark_root": None}],
    )
    _write(
        tmp_path / "ann" / "r.json",
        [{"query": f"q{n}", "relevant": ["a.c"]} for n in range(tasks)],
    )
    assert _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")[0] == 0
    lines = (tmp_path / "out" / "fixtures" / "r.jsonl").read_text(encoding="utf-8").splitlines()
    ids = [json.loads(line)["id"] for line in lines[1:]]
    assert ids == [f"r-{n:0{width}d}" for n in range(1, tasks + 1)]


@given(st.text())
@settings(max_examples=300, derandomize=True)
def test_toml_strings_read_back_as_written(text: str) -> None:
    assert tomllib.loads(f"key = {toml_string(text)}\n") == {"key": text}


def test_toml_escapes_follow_the_spec() -> None:
    assert toml_string('a"b\\c\n\t\x00\x7f\x1fé') == '"a\\"b\\\\c\\n\\t\\u0000\\u007F\\u001Fé"'


def _repo(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": "web",
        "language": "python",
        "url": "https://example.invalid/web.git",
        "revision": FAKE_REV,
        "benchmark_root": "src",
    }
    entry.update(changes)
    return {key: value for key, value in entry.items() if value != "<drop>"}


GOOD_TASK = {"query": "q", "relevant": ["src/a.py"]}

# (repositories, the web annotation file's content (raw text when a string), the file
# the message names, stable fragments of the message).
ERRORS: list[tuple[str, list[dict[str, Any]], Any, str, Sequence[str]]] = [
    ("malformed json", [_repo()], "[{", "web.json", ["invalid JSON at line 1"]),
    ("malformed repos", [], None, "repos.json", ["must be a JSON array"]),
    ("missing url", [_repo(url="<drop>")], [GOOD_TASK], "repos.json", ['missing field "url"']),
    (
        "wrong type language",
        [_repo(language=3)],
        [GOOD_TASK],
        "repos.json",
        ['"language" must be a non-empty string, not a number'],
    ),
    (
        "duplicate name",
        [_repo(), _repo()],
        [GOOD_TASK],
        "repos.json",
        ["repository 2", "also repository 1", "must be unique"],
    ),
    (
        "bad name",
        [_repo(name="we b")],
        [GOOD_TASK],
        "repos.json",
        ["may only use letters, digits"],
    ),
    (
        "short revision",
        [_repo(revision="0123abc")],
        [GOOD_TASK],
        "repos.json",
        ["not a full commit id", "git rev-parse"],
    ),
    (
        "root type",
        [_repo(benchmark_root=["src"])],
        [GOOD_TASK],
        "repos.json",
        ['"benchmark_root" must be a string or null'],
    ),
    ("tasks not a list", [_repo()], {"query": "q"}, "web.json", ["must be a JSON array of tasks"]),
    ("no tasks", [_repo()], [], "web.json", ["has no task"]),
    (
        "missing query",
        [_repo()],
        [GOOD_TASK, {"relevant": ["src/a.py"]}],
        "web.json",
        ["task 2 (web-02)", '"query" must be a non-blank string, found missing'],
    ),
    (
        "relevant not a list",
        [_repo()],
        [{"query": "q", "relevant": "src/a.py"}],
        "web.json",
        ["task 1 (web-01)", '"relevant" must be an array of targets, found a string'],
    ),
    (
        "empty relevant",
        [_repo()],
        [{"query": "q", "relevant": []}],
        "web.json",
        ['"relevant" is empty'],
    ),
    (
        "target wrong type",
        [_repo()],
        [{"query": "q", "relevant": [7]}],
        "web.json",
        ["relevant target 1", "must be a path string or an object"],
    ),
    (
        "bad line range",
        [_repo()],
        [{"query": "q", "relevant": [{"path": "src/a.py", "start_line": 9, "end_line": 2}]}],
        "web.json",
        ["start_line 9 is after end_line 2"],
    ),
    (
        "half a range",
        [_repo()],
        [{"query": "q", "relevant": [{"path": "src/a.py", "start_line": 0}]}],
        "web.json",
        ['"start_line" must be a line number from 1'],
    ),
    (
        "absolute target",
        [_repo()],
        [{"query": "q", "relevant": ["/src/a.py"]}],
        "web.json",
        ['"/src/a.py" is absolute'],
    ),
    (
        "dotdot target",
        [_repo()],
        [{"query": "q", "relevant": ["src/../../a.py"]}],
        "web.json",
        ["contains '..'"],
    ),
    (
        "dotdot root",
        [_repo(benchmark_root="../src")],
        [GOOD_TASK],
        "repos.json",
        ["benchmark_root", "contains '..'"],
    ),
    (
        "path the anchor grammar misreads",
        [_repo()],
        [{"query": "q", "relevant": ["src/a#b.py"]}],
        "web.json",
        ["cannot be written as a cce anchor"],
    ),
    (
        "category wrong type",
        [_repo()],
        [{"query": "q", "relevant": ["src/a.py"], "category": 1}],
        "web.json",
        ['"category" must be a non-empty string'],
    ),
    (
        "unpaired surrogate",
        [_repo()],
        '[{"query": "q\\ud800", "relevant": ["src/a.py"]}]',
        "web.json",
        ["task 1 (web-01)", "unpaired surrogate escape (\\ud800)"],
    ),
    (
        "annotation without repository",
        [_repo(name="other")],
        [GOOD_TASK],
        "web.json",
        ['no repository "web"', "add it there"],
    ),
]


@pytest.mark.parametrize(
    ("repos", "tasks", "named", "fragments"),
    [case[1:] for case in ERRORS],
    ids=[case[0] for case in ERRORS],
)
def test_every_input_error_names_the_file_the_cause_and_the_fix(
    tmp_path: Path,
    repos: list[dict[str, Any]],
    tasks: Any,
    named: str,
    fragments: Sequence[str],
    run_cce: RunCce,
) -> None:
    repos_file = tmp_path / "repos.json"
    if repos:
        _write(repos_file, repos)
    else:
        repos_file.write_text('{"name": "web"}', encoding="utf-8")
    annotations = tmp_path / "ann"
    annotations.mkdir()
    web = annotations / "web.json"
    if isinstance(tasks, str):
        web.write_text(tasks, encoding="utf-8")
    elif tasks is not None:
        _write(web, tasks)
    out = tmp_path / "out"
    code, stdout, stderr = _import(run_cce, annotations, repos_file, out)
    assert (code, stdout) == (1, "")
    # One line per problem (a badly named repository also leaves web.json without one),
    # then one counting them.
    lines = stderr.splitlines()
    assert lines and all(line.startswith("error: ") for line in lines)
    assert len(lines) == 1 or (len(lines) == 3 and "2 problems in 2 repositories" in lines[-1])
    assert named in stderr
    for fragment in fragments:
        assert fragment in stderr
    assert not out.exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ann", "repos.json"]


def test_a_repository_without_annotations_is_named(tmp_path: Path, run_cce: RunCce) -> None:
    repos = _write(tmp_path / "repos.json", [_repo(), _repo(name="cli")])
    _write(tmp_path / "ann" / "web.json", [GOOD_TASK])
    code, _, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")
    assert code == 1
    assert 'repository "cli" has no annotation file' in stderr
    assert str(tmp_path / "ann" / "cli.json") in stderr


def test_an_occupied_output_is_refused_and_left_alone(
    tmp_path: Path, upstream: tuple[Path, str], run_cce: RunCce
) -> None:
    annotations, repos_file, _ = _bench(tmp_path, upstream)
    out = tmp_path / "suite"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    code, stdout, stderr = _import(run_cce, annotations, repos_file, out)
    assert (code, stdout) == (1, "")
    assert "is not empty" in stderr and "choose another -o directory" in stderr
    assert [path.name for path in out.iterdir()] == ["notes.txt"]
    as_file = tmp_path / "file"
    as_file.write_text("x", encoding="utf-8")
    code, _, stderr = _import(run_cce, annotations, repos_file, as_file)
    assert code == 1 and "is not a directory" in stderr


def test_an_interrupted_write_leaves_nothing_behind(
    tmp_path: Path,
    upstream: tuple[Path, str],
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    annotations, repos_file, _ = _bench(tmp_path, upstream)
    before = sorted(os.listdir(tmp_path))
    calls: list[str] = []

    def interrupted(path: str, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)

    monkeypatch.setattr(semble, "write_atomic", interrupted)
    code, stdout, stderr = _import(run_cce, annotations, repos_file, tmp_path / "suite")
    assert (code, stdout, stderr) == (130, "", "error: interrupted\n")
    assert sorted(os.listdir(tmp_path)) == before


def test_paths_are_normalised_before_they_become_anchors(tmp_path: Path, run_cce: RunCce) -> None:
    repos = _write(
        tmp_path / "repos.json",
        [_repo(name="a", benchmark_root="./src/"), _repo(name="b", benchmark_root=".")],
    )
    task = {"query": "q", "relevant": ["./src//pkg/a.py", {"path": "src/b.py"}]}
    _write(tmp_path / "ann" / "a.json", [task])
    _write(tmp_path / "ann" / "b.json", [task])
    assert _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")[0] == 0
    manifest = tomllib.loads((tmp_path / "out" / "suite.toml").read_text(encoding="utf-8"))
    assert [member.get("root") for member in manifest["members"]] == ["src", None]
    expected = [
        json.loads(path.read_text(encoding="utf-8").splitlines()[1])["expected"]
        for path in (
            tmp_path / "out" / "fixtures" / "a.jsonl",
            tmp_path / "out" / "fixtures" / "b.jsonl",
        )
    ]
    assert expected == [["pkg/a.py", "b.py"], ["src/pkg/a.py", "src/b.py"]]


def test_an_imported_suite_runs_as_a_suite(
    tmp_path: Path,
    upstream: tuple[Path, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run_cce: RunCce,
) -> None:
    """The manifest import writes is the one `cce relevance SUITE.toml` reads: its git
    member is checked out at the pinned commit and scored with semble's nDCG@10."""
    annotations, repos_file, _ = _bench(tmp_path, upstream)
    out = tmp_path / "suite"
    assert _import(run_cce, annotations, repos_file, out)[0] == 0
    manifest = (out / "suite.toml").read_text(encoding="utf-8")
    # Only the member whose repository the test made: the other one is not reachable.
    (out / "web.toml").write_text(manifest.split('\n[[members]]\nname = "tool"')[0] + "\n")
    monkeypatch.setenv("CCE_CACHE_DIR", str(tmp_path / "cache"))
    code = main(["relevance", str(out / "web.toml"), "--metrics", "ndcg", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document = json.loads(captured.out)
    assert document["members"][0]["name"] == "web"
    assert document["aggregates"]["bm25"]["overall"]["queries"] == 3
    assert "ndcg_at_k" in document["aggregates"]["bm25"]["overall"]


# -- the published benchmark's shapes -----------------------------------------------------


def test_targets_written_from_the_benchmark_root_are_read_from_it(
    tmp_path: Path, run_cce: RunCce
) -> None:
    """Without a checkout: a path outside the root can only be relative to the root."""
    repos = _write(tmp_path / "repos.json", [_repo()])
    _write(
        tmp_path / "ann" / "web.json",
        [
            {"query": "q", "relevant": ["src/a.py"]},
            {
                "query": "r",
                "relevant": ["lib/b.py", {"path": "c.py", "start_line": 2, "end_line": 3}],
            },
        ],
    )
    code, stdout, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")
    assert (code, stderr) == (0, "")
    assert stdout.splitlines()[0] == (
        "fixtures/web.jsonl: 2 queries, 2 targets read from the benchmark root"
    )
    lines = (tmp_path / "out" / "fixtures" / "web.jsonl").read_text().splitlines()
    assert [json.loads(line)["expected"] for line in lines[1:]] == [
        ["a.py"],
        ["lib/b.py", "c.py@2-3"],
    ]


def test_a_path_outside_the_root_in_a_file_written_from_the_repository_root_is_named(
    tmp_path: Path, run_cce: RunCce
) -> None:
    """A file that writes its targets from the repository root (most start with the root)
    and names one file beside the root (a sibling module): that target is not one
    written from the benchmark root but a repository path semble never indexes. It is
    kept as written and the summary says so, apart from the benchmark-root count."""
    repos = _write(tmp_path / "repos.json", [_repo(benchmark_root="core/src")])
    _write(
        tmp_path / "ann" / "web.json",
        [
            {"query": "Table", "relevant": ["core/src/db/Table.kt"]},
            {"query": "Column", "relevant": ["./core/src//db/Column.kt"]},
            {
                "query": "schema utilities",
                "relevant": ["jdbc/src/db/SchemaUtils.kt"],
                "secondary": ["core/src/db/SchemaApi.kt"],
            },
        ],
    )
    code, stdout, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")
    assert (code, stderr) == (0, "")
    assert stdout.splitlines()[0] == (
        "fixtures/web.jsonl: 3 queries, 1 target outside the benchmark root kept as written "
        "(no search of the root finds it)"
    )
    lines = (tmp_path / "out" / "fixtures" / "web.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines[1:]]
    assert [case["expected"] for case in cases] == [
        ["db/Table.kt"],
        ["db/Column.kt"],
        ["jdbc/src/db/SchemaUtils.kt"],
    ]
    assert cases[2]["secondary"] == ["db/SchemaApi.kt"]


def test_unknown_task_fields_and_a_missing_category_import(tmp_path: Path, run_cce: RunCce) -> None:
    """Older annotation files: no `category`, and `seed` / `related` (string or ranged
    targets) that semble's loader ignores; the import ignores them too."""
    repos = _write(tmp_path / "repos.json", [_repo()])
    _write(
        tmp_path / "ann" / "web.json",
        [
            {"query": "How are routes matched", "relevant": ["src/routing.py"], "secondary": []},
            {
                "query": "Router",
                "relevant": [{"path": "src/routing.py", "start_line": 3, "end_line": 9}],
                "secondary": [],
                "seed": {"path": "src/app.py", "line": 19},
                "related": [
                    "src/routing.py",
                    {"path": "src/app.py", "start_line": 1, "end_line": 2},
                ],
            },
        ],
    )
    code, stdout, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")
    assert (code, stderr) == (0, "")
    assert stdout.splitlines()[0] == "fixtures/web.jsonl: 2 queries"
    lines = (tmp_path / "out" / "fixtures" / "web.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines[1:]]
    assert [(case["expected"], case["tags"]) for case in cases] == [
        (["routing.py"], ["architecture"]),
        (["routing.py@3-9"], ["symbol"]),
    ]
    assert all("seed" not in case and "related" not in case for case in cases)


def test_a_cached_checkout_decides_between_the_two_readings(
    tmp_path: Path, upstream: tuple[Path, str], run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, rev = upstream
    # src/web/src/web/app.py also exists: "src/web/app.py" can then be read both ways.
    nested = repo / "src" / "web" / "src" / "web"
    nested.mkdir(parents=True)
    (nested / "app.py").write_text(APP, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "nested")
    rev = _git(repo, "rev-parse", "HEAD")
    entry = {"name": "web", "language": "python", "url": repo.as_uri(), "revision": rev,
             "benchmark_root": "src/web"}  # fmt: skip
    repos = _write(tmp_path / "repos.json", [entry])
    monkeypatch.setenv("CCE_CACHE_DIR", str(tmp_path / "cache"))
    good = [{"query": "q", "relevant": ["util/text.py", "src/web/util/text.py"]}]
    _write(tmp_path / "ann" / "web.json", good)
    assert _import(run_cce, tmp_path / "ann", repos, tmp_path / "first")[0] == 0
    assert run_cce("suite", "fetch", str(tmp_path / "first" / "suite.toml"))[0] == 0
    code, stdout, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "second")
    assert (code, stderr) == (0, "")
    assert stdout.startswith("fixtures/web.jsonl: 1 query, 1 target read from the benchmark root\n")
    bad = [
        {"query": "both", "relevant": ["src/web/app.py"]},
        {"query": "neither", "relevant": ["src/web/nope.py", "nope.py"]},
    ]
    _write(tmp_path / "ann" / "web.json", bad)
    code, stdout, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "third")
    assert (code, stdout) == (1, "")
    lines = stderr.splitlines()
    assert len(lines) == 4
    assert 'task 1 (web-01): relevant target 1: path "src/web/app.py" names a file both' in lines[0]
    assert 'task 2 (web-02): relevant target 1: path "src/web/nope.py" is not a file' in lines[1]
    assert 'task 2 (web-02): relevant target 2: path "nope.py" is not a file' in lines[2]
    assert lines[3] == (
        "error: 3 problems in 1 repository (web); fix them, leave those repositories out "
        "with --skip, or write the others with --keep-going"
    )


def _broken_bench(tmp_path: Path) -> Path:
    """Three repositories: `good`, `bad` (two broken tasks), `worse` (a broken target)."""
    repos = _write(
        tmp_path / "repos.json",
        [_repo(name="good"), _repo(name="bad"), _repo(name="worse", language="c++")],
    )
    _write(tmp_path / "ann" / "good.json", [GOOD_TASK])
    _write(tmp_path / "ann" / "bad.json", [{"query": ""}, GOOD_TASK, {"relevant": []}])
    _write(tmp_path / "ann" / "worse.json", [{"query": "q", "relevant": ["/abs.py"]}])
    return repos


def test_every_problem_of_every_repository_is_named_in_one_run(
    tmp_path: Path, run_cce: RunCce
) -> None:
    repos = _broken_bench(tmp_path)
    code, stdout, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")
    assert (code, stdout) == (1, "")
    lines = stderr.splitlines()
    assert [line.split(": task ")[1][:12] for line in lines[:3]] == [
        "1 (bad-01): ",
        "3 (bad-03): ",
        "1 (worse-01)",
    ]
    assert lines[3] == (
        "error: 3 problems in 2 repositories (bad, worse); fix them, leave those "
        "repositories out with --skip, or write the others with --keep-going"
    )
    assert not (tmp_path / "out").exists()


def test_keep_going_writes_the_members_that_convert_and_exits_1(
    tmp_path: Path, run_cce: RunCce
) -> None:
    repos = _broken_bench(tmp_path)
    out = tmp_path / "out"
    code, stdout, stderr = run_cce(
        "import", "semble", str(tmp_path / "ann"), "--repos", str(repos), "-o", str(out),
        "--keep-going",
    )  # fmt: skip
    assert code == 1
    assert stdout == f"fixtures/good.jsonl: 1 query\n{out / 'suite.toml'}: 1 member(s), 1 query\n"
    assert stderr.splitlines()[-1] == (
        f"error: 2 repositories not imported (bad, worse); the other 1 are written to {out}"
    )
    assert stderr.count("error: ") == 4
    assert sorted(path.name for path in (out / "fixtures").iterdir()) == ["good.jsonl"]


def test_only_and_skip_choose_the_repositories(tmp_path: Path, run_cce: RunCce) -> None:
    repos = _broken_bench(tmp_path)
    ann = str(tmp_path / "ann")
    code, stdout, stderr = run_cce(
        "import", "semble", ann, "--repos", str(repos), "-o", str(tmp_path / "a"),
        "--skip", "bad,worse",
    )  # fmt: skip
    assert (code, stderr) == (0, "") and stdout.startswith("fixtures/good.jsonl: 1 query\n")
    code, stdout, stderr = run_cce(
        "import", "semble", ann, "--repos", str(repos), "-o", str(tmp_path / "b"),
        "--only", "worse,good", "--skip", "good",
    )  # fmt: skip
    assert code == 1 and "worse-01" in stderr and "bad-" not in stderr
    code, _, stderr = run_cce(
        "import", "semble", ann, "--repos", str(repos), "-o", str(tmp_path / "c"),
        "--only", "nobody",
    )  # fmt: skip
    assert code == 2
    assert (
        stderr == f'error: --only: no repository "nobody" in {repos}; name repositories it lists, '
        "separated by commas\n"
    )


@pytest.mark.parametrize(
    ("language", "group"),
    [
        ("c++", "cpp"),
        ("Objective C", "objective-c"),
        ("C#", "csharp"),
        ("Python", "python"),
        (" F* ", "f"),
        ("日本", "other"),
    ],
)
def test_language_names_become_group_names_a_manifest_accepts(
    tmp_path: Path, run_cce: RunCce, language: str, group: str
) -> None:
    from cce_cli.formats.suite_manifest import read_manifest

    assert semble.group_name(language) == group
    repos = _write(tmp_path / "repos.json", [_repo(language=language)])
    _write(tmp_path / "ann" / "web.json", [GOOD_TASK])
    assert _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")[0] == 0
    manifest = read_manifest(str(tmp_path / "out" / "suite.toml"))
    assert manifest.members[0].groups == (group,)


def test_an_end_line_beyond_any_line_number_is_named(tmp_path: Path, run_cce: RunCce) -> None:
    repos = _write(tmp_path / "repos.json", [_repo()])
    target = {"path": "src/a.py", "start_line": 1, "end_line": 10**30}
    _write(tmp_path / "ann" / "web.json", [{"query": "q", "relevant": [target]}])
    code, _, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")
    assert code == 1
    assert '"end_line" a number of 31 digits is larger than any line number' in stderr
    assert "anchor" not in stderr


def test_output_paths_that_cannot_be_a_directory_are_named(
    tmp_path: Path, upstream: tuple[Path, str], run_cce: RunCce
) -> None:
    annotations, repos_file, _ = _bench(tmp_path, upstream)
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    code, _, stderr = _import(run_cce, annotations, repos_file, blocker / "sub")
    assert code == 1
    assert stderr == (
        f"error: {blocker / 'sub'}: {blocker} is a file, not a directory, so no directory "
        "can be made under it; choose another -o directory\n"
    )
    code, _, stderr = run_cce(
        "import", "semble", str(annotations), "--repos", str(repos_file), "-o", ""
    )
    assert (code, stderr) == (
        2,
        "error: -o needs a directory path: the suite directory to create\n",
    )


def test_credentials_never_reach_the_manifest(tmp_path: Path, run_cce: RunCce) -> None:
    repos = _write(
        tmp_path / "repos.json",
        [_repo(url="https://user:TOKEN@example.invalid/web.git")],
    )
    _write(tmp_path / "ann" / "web.json", [GOOD_TASK])
    code, stdout, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")
    assert code == 0
    manifest = (tmp_path / "out" / "suite.toml").read_text(encoding="utf-8")
    assert 'git = "https://example.invalid/web.git"' in manifest
    assert "TOKEN" not in manifest + stdout + stderr
    assert stderr.startswith("note: the manifest holds the URLs of web without their credentials")


@pytest.mark.parametrize("name", [".", "..", "-rf"])
def test_repository_names_that_are_not_plain_names_are_refused(
    tmp_path: Path, run_cce: RunCce, name: str
) -> None:
    repos = _write(tmp_path / "repos.json", [_repo(name=name)])
    (tmp_path / "ann").mkdir()
    code, _, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "out")
    assert code == 1
    assert "starting with a letter or digit" in stderr


def test_skip_leaves_out_an_annotation_file_without_a_repository(
    tmp_path: Path, run_cce: RunCce
) -> None:
    repos = _write(tmp_path / "repos.json", [_repo()])
    _write(tmp_path / "ann" / "web.json", [GOOD_TASK])
    _write(tmp_path / "ann" / "stray.json", [GOOD_TASK])
    code, _, stderr = _import(run_cce, tmp_path / "ann", repos, tmp_path / "a")
    assert code == 1 and 'no repository "stray"' in stderr
    code, stdout, stderr = run_cce(
        "import", "semble", str(tmp_path / "ann"), "--repos", str(repos),
        "-o", str(tmp_path / "b"), "--skip", "stray",
    )  # fmt: skip
    assert (code, stderr) == (0, "") and stdout.startswith("fixtures/web.jsonl: 1 query\n")
