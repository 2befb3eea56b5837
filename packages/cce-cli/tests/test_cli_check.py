"""`cce check`: one precise line per dead anchor, the case- and corpus-level problems,
exit statuses, both formats, and the starter sets staying clean."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from cce_cli.evaluation.anchor_check import (
    LARGE_CHUNK_FACTOR,
    UNDIAGNOSED,
    CorpusFacts,
    fixture_problems,
)
from cce_cli.evaluation.corpus_checks import store_corpus_root
from cce_fixtures import parse_fixtures
from cce_retrieval import build_index, save_index
from cce_retrieval.embed.hashing import HashEmbedder

REPO = Path(__file__).parents[3]
# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

_APP = "def load():\n    return 1\n\n\nclass Big:\n" + "".join(
    f"    x{i} = {i}\n" for i in range(1, 61)
)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A corpus with one indexed file and one file per walker exclusion rule."""
    root = tmp_path / "corpus"
    files: dict[str, bytes] = {
        "src/app.py": _APP.encode(),
        "src/cafe\u0301.py": b"x = 1\n",
        "venv/lib.py": b"x = 1\n",
        ".hidden/h.py": b"x = 1\n",
        "gen/g.py": b"x = 1\n",
        ".gitignore": b"gen/\n",
        "secrets.yaml": b"token: 1\n",
        "latin1.py": b"caf\xe9 = 1\n",
        "notes.jsonl": b"{}\n",
        "huge.py": b"#" * (2 * 1024 * 1024 + 1),
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def _fixture(directory: Path, cases: Sequence[str], corpus: str | None = "corpus") -> Path:
    lines = [] if corpus is None else [json.dumps({"schema": "cce.relevance/v1", "corpus": corpus})]
    path = directory / "set.jsonl"
    path.write_text("\n".join([*lines, *cases]) + "\n", encoding="utf-8")
    return path


def _case(case_id: str, *anchors: str) -> str:
    return json.dumps({"id": case_id, "query": "load", "expected": list(anchors)})


# One anchor per dead kind: (anchor, the exact text after `case ID: anchor "...": `).
DEAD = [
    ("src/ap.py", 'path src/ap.py is not in the index; did you mean "src/app.py"?'),
    ("./src/app.py", 'path ./src/app.py is not in the index; did you mean "src/app.py"?'),
    (
        "SRC/App.py",
        'path SRC/App.py is not in the index; did you mean "src/app.py"? (the names differ '
        "only in letter case)",
    ),
    (
        "src/caf\u00e9.py",
        'path src/caf\u00e9.py is not in the index; did you mean "src/cafe\u0301.py"? (the '
        "names differ only in Unicode normalisation (NFC/NFD))",
    ),
    (
        "venv/lib.py",
        "path venv/lib.py is not indexed: venv/ is a pruned directory (never indexed: .cce, "
        ".git, .venv, __pycache__, build, dist, node_modules, venv); the walker never "
        "indexes it; label a file outside it",
    ),
    (
        ".hidden/h.py",
        "path .hidden/h.py is not indexed: .hidden/ is a dot-directory (directories "
        "starting with '.' are skipped); the walker never indexes it; label a file outside it",
    ),
    (
        "gen/g.py",
        "path gen/g.py is not indexed: gen/ is ignored by .gitignore; the walker honours "
        ".gitignore; label another file or unignore it",
    ),
    (
        "secrets.yaml",
        "path secrets.yaml is not indexed: secrets.yaml has a sensitive name (keys, "
        "credentials, .env files are never read); files with secret-like names are never read",
    ),
    (
        "huge.py",
        "path huge.py is not indexed: huge.py is 2097153 bytes, over the 2097152-byte size "
        "limit; split the file or label another one",
    ),
    (
        "latin1.py",
        "path latin1.py is not indexed: latin1.py is not valid UTF-8 text; save it as UTF-8 "
        "or label another file",
    ),
    (
        "notes.jsonl",
        "path notes.jsonl is not indexed: notes.jsonl: .jsonl files are never indexed; "
        "label another file",
    ),
    (
        "src/app.py#function_item",
        "kind function_item never occurs in src/app.py; kinds there: class_definition, "
        'function_definition; did you mean "src/app.py#function_definition"?',
    ),
    ("src/app.py@500-510", "lines 500-510 lie past the end of src/app.py (65 lines)"),
    (
        "#function_item",
        "kind function_item occurs nowhere in the corpus; kinds that do: class_definition, "
        'function_definition, module; did you mean "#function_definition"?',
    ),
    (
        "src/app.py#function_definition@10-12",
        "no function_definition chunk of src/app.py touches lines 10-12; they span "
        "1-2 function_definition",
    ),
]


@pytest.mark.parametrize(("anchor", "problem"), DEAD, ids=[anchor for anchor, _ in DEAD])
def test_each_dead_kind_gets_one_precise_line(
    corpus: Path, anchor: str, problem: str, run_cce: RunCce
) -> None:
    fixture = _fixture(corpus.parent, [_case("c1", anchor)])
    code, out, err = run_cce("check", str(fixture))
    assert code == 1
    assert out == f'{fixture}:2: case c1: anchor "{anchor}": {problem}\n'
    assert err == "cce check: 1 error(s), 0 warning(s)\n"


def test_all_dead_kinds_in_one_set_give_one_line_each(corpus: Path, run_cce: RunCce) -> None:
    cases = [_case(f"c{i}", anchor, "src/app.py") for i, (anchor, _) in enumerate(DEAD)]
    fixture = _fixture(corpus.parent, cases)
    code, out, _ = run_cce("check", str(fixture))
    assert code == 1
    assert out.splitlines() == [
        f'{fixture}:{i + 2}: case c{i}: anchor "{anchor}": {problem}'
        for i, (anchor, problem) in enumerate(DEAD)
    ]


def test_a_case_whose_every_anchor_is_dead(corpus: Path, run_cce: RunCce) -> None:
    fixture = _fixture(corpus.parent, [_case("gone", "a.py", "b.py")])
    _, out, _ = run_cce("check", str(fixture))
    assert (
        f"{fixture}:2: case gone: every expected anchor is dead, so the case scores 0 "
        "whatever the backend"
    ) in out.splitlines()


def test_a_dead_secondary_anchor_is_reported_but_the_case_lives(
    corpus: Path, run_cce: RunCce
) -> None:
    case = json.dumps({"id": "s", "query": "q", "expected": ["src/app.py"], "secondary": ["x.py"]})
    fixture = _fixture(corpus.parent, [case])
    code, out, _ = run_cce("check", str(fixture))
    assert code == 1
    assert out == f'{fixture}:2: case s: anchor "x.py": path x.py is not in the index\n'


def test_a_range_only_met_by_a_much_larger_chunk_warns(corpus: Path, run_cce: RunCce) -> None:
    fixture = _fixture(corpus.parent, [_case("wide", "src/app.py@30-31")])
    code, out, err = run_cce("check", str(fixture))
    assert code == 0
    assert out == (
        f'{fixture}:2: warning: case wide: anchor "src/app.py@30-31": only chunks of 61+ lines '
        "touch this 2-line range (kinds: class_definition), so any of them counts as a hit "
        "while tok-IoU shows the miss; consider path#kind@a-b to say which chunk is meant\n"
    )
    assert err == "cce check: 0 error(s), 1 warning(s)\n"
    assert run_cce("check", "--strict", str(fixture))[0] == 1
    assert LARGE_CHUNK_FACTOR * 2 <= 61


def test_a_range_that_fits_its_chunk_is_clean(corpus: Path, run_cce: RunCce) -> None:
    fixture = _fixture(
        corpus.parent, [_case("fn", "src/app.py@1-2", "src/app.py#class_definition")]
    )
    assert run_cce("check", str(fixture)) == (0, "", "")


def test_a_range_running_past_the_end_warns(corpus: Path, run_cce: RunCce) -> None:
    fixture = _fixture(corpus.parent, [_case("tail", "src/app.py#class_definition@60-70")])
    code, out, _ = run_cce("check", str(fixture))
    assert code == 0
    assert "lines 60-70 run past the end of src/app.py (65 lines)" in out


def test_duplicate_ids_and_near_miss_keys(corpus: Path, run_cce: RunCce) -> None:
    fixture = _fixture(
        corpus.parent,
        [_case("a", "src/app.py"), '{"id":"a","query":"q","expected":["src/app.py"],"K":3}'],
    )
    code, out, _ = run_cce("check", str(fixture))
    assert code == 1
    assert out.splitlines() == [
        f'{fixture}:3: duplicate case id "a" (first used on line 2); give every case its own id',
        f'{fixture}:3: warning: key "K" is ignored; did you mean "k"? (keys are case-sensitive)',
    ]


def test_a_header_corpus_with_no_files(tmp_path: Path, run_cce: RunCce) -> None:
    (tmp_path / "empty").mkdir()
    fixture = _fixture(tmp_path, [_case("a", "a.py")], corpus="empty")
    code, out, _ = run_cce("check", str(fixture))
    assert code == 1
    assert out == f"{fixture}:1: corpus {tmp_path}/empty resolves to no indexable files\n"


def test_a_header_corpus_that_is_missing_or_absent(tmp_path: Path, run_cce: RunCce) -> None:
    fixture = _fixture(tmp_path, [_case("a", "a.py")], corpus="nowhere")
    assert run_cce("check", str(fixture))[1] == (
        f"{fixture}:1: corpus {tmp_path}/nowhere is not a directory\n"
    )
    fixture = _fixture(tmp_path, [_case("a", "a.py")], corpus=None)
    assert run_cce("check", str(fixture))[1] == (
        f'{fixture}: no corpus: pass --dir <corpus> or declare "corpus" in the fixture header\n'
    )


def test_a_subfolder_as_corpus_suggests_the_shorter_path_and_warns_once(
    corpus: Path, run_cce: RunCce
) -> None:
    fixture = _fixture(corpus.parent, [_case("a", "src/app.py"), _case("b", "src/other.py")])
    code, out, _ = run_cce("check", str(fixture), "--dir", str(corpus / "src"))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].endswith('path src/app.py is not in the index; did you mean "app.py"?')
    assert lines[-1] == (
        f"{fixture}: warning: none of the 2 anchor paths is in the index; anchors are "
        "relative to the corpus directory, so check that it is the right one (--dir, "
        '--store or the header\'s "corpus")'
    )


def test_a_broken_fixture_reports_its_contract_problems_only(corpus: Path, run_cce: RunCce) -> None:
    fixture = _fixture(corpus.parent, ['{"query":"","expected":["nope.py"]}'])
    code, out, _ = run_cce("check", str(fixture))
    assert code == 1
    assert out == f'{fixture}:2: "query" must be a string that is not blank\n'


def test_store_mode_explains_from_the_store_directory(corpus: Path, run_cce: RunCce) -> None:
    store = corpus / ".cce" / "index.json"
    store.parent.mkdir()
    save_index(build_index(str(corpus), HashEmbedder()).index, str(store))
    assert store_corpus_root(str(store)) == str(corpus)
    (corpus / "src" / "new.py").write_text("def new():\n    pass\n", encoding="utf-8")
    cases = [_case("a", "venv/lib.py"), _case("b", "src/new.py"), _case("c", "src/app.py")]
    fixture = _fixture(corpus.parent, cases)
    code, out, _ = run_cce("check", str(fixture), "--store", str(store))
    assert code == 1
    assert out.splitlines() == [
        f'{fixture}:2: case a: anchor "venv/lib.py": path venv/lib.py is not indexed: venv/ '
        "is a pruned directory (never indexed: .cce, .git, .venv, __pycache__, build, dist, "
        "node_modules, venv); the walker never indexes it; label a file outside it",
        f'{fixture}:3: case b: anchor "src/new.py": path src/new.py is not in the store, but '
        "the file is on disk and would be indexed; the store is older than the corpus; run "
        "cce index again",
    ]


def test_json_format(corpus: Path, run_cce: RunCce) -> None:
    fixture = _fixture(corpus.parent, [_case("t", "src/ap.py")])
    code, out, _ = run_cce("check", str(fixture), "--format", "json")
    assert code == 1
    assert json.loads(out) == {
        "schema": "cce.check/v1",
        "errors": 1,
        "warnings": 0,
        "problems": [
            {
                "file": str(fixture),
                "line": 2,
                "severity": "error",
                "case_id": "t",
                "anchor": "src/ap.py",
                "message": "path src/ap.py is not in the index",
                "hint": 'did you mean "src/app.py"?',
            }
        ],
    }
    assert out.endswith("}\n")


def test_clean_json_is_an_empty_list(corpus: Path, run_cce: RunCce) -> None:
    fixture = _fixture(corpus.parent, [_case("t", "src/app.py")])
    code, out, _ = run_cce("check", str(fixture), "--format", "json")
    assert (code, json.loads(out)["problems"]) == (0, [])


@pytest.mark.parametrize(
    "argv",
    [[], ["x.jsonl", "--dir", "a", "--store", "b"], ["x.jsonl", "--format", "yaml"]],
)
def test_usage_errors_exit_2(argv: list[str], run_cce: RunCce) -> None:
    assert run_cce("check", *argv)[0] == 2


def test_unreadable_fixture(tmp_path: Path, run_cce: RunCce) -> None:
    missing = tmp_path / "missing.jsonl"
    code, out, _ = run_cce("check", str(missing))
    assert code == 1
    assert out.startswith(f"{missing}: could not read fixtures: ")


def test_the_starter_sets_are_clean(monkeypatch: pytest.MonkeyPatch, run_cce: RunCce) -> None:
    monkeypatch.chdir(REPO)
    sets = sorted(os.path.join("eval", "relevance", name) for name in ("code.jsonl", "docs.jsonl"))
    assert run_cce("check", *sets) == (0, "", "")


def test_diagnosis_can_stop_after_a_limit(corpus: Path) -> None:
    fixture_set = parse_fixtures(
        '{"query":"a","expected":["src/ap.py"]}\n{"query":"b","expected":["src/apx.py"]}\n'
    )
    facts = CorpusFacts.of(build_index(str(corpus), HashEmbedder()).index, str(corpus))
    first, second = fixture_problems("f", fixture_set, facts, diagnose_limit=1)[:2]
    assert first.hint == 'did you mean "src/app.py"?'
    assert (second.message, second.hint) == (UNDIAGNOSED, None)
    assert fixture_problems("f", fixture_set, facts)[1].hint == 'did you mean "src/app.py"?'
