"""`cce relevance` before it scores: dead anchors warned (or refused with --strict), and a
store whose corpus changed since `cce index` reported as stale. Stdout never changes."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from cce_cli.evaluation.corpus_checks import MAX_DEAD_ANCHOR_LINES

REPO = Path(__file__).parents[3]
# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text("def login(user):\n    return check(user)\n")
    (root / "src" / "cache.py").write_text("def evict(key):\n    del CACHE[key]\n")
    return root


def _fixture(directory: Path, anchors: Sequence[str]) -> Path:
    lines = [json.dumps({"schema": "cce.relevance/v1", "corpus": "corpus"})]
    lines += [
        json.dumps({"id": f"c{i}", "query": "login user", "expected": [anchor]})
        for i, anchor in enumerate(anchors)
    ]
    path = directory / "set.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_typo_is_warned_with_the_case_and_the_suggestion_and_stdout_is_unchanged(
    corpus: Path, run_cce: RunCce
) -> None:
    clean = _fixture(corpus.parent, ["src/auth.py", "src/cache.py"])
    code, clean_out, clean_err = run_cce("relevance", str(clean), "--backend", "bm25")
    assert (code, clean_err) == (0, "")
    typo = _fixture(corpus.parent, ["src/auth.py", "src/cahce.py"])
    code, out, err = run_cce("relevance", str(typo), "--backend", "bm25")
    assert code == 0
    assert err == (
        f'warning: {typo}:3: case c1: anchor "src/cahce.py": path src/cahce.py is not in the '
        'index; did you mean "src/cache.py"?\n'
    )
    # The warning is never part of the report: same layout, only the scores differ.
    assert "warning" not in out and "cahce" not in out
    assert len(out.splitlines()) == len(clean_out.splitlines())
    report = run_cce("relevance", str(typo), "--backend", "bm25", "--json")[1]
    assert [case["id"] for case in json.loads(report)["backends"][0]["per_query"]] == ["c0", "c1"]


def test_strict_refuses_to_score_a_dead_anchor(corpus: Path, run_cce: RunCce) -> None:
    typo = _fixture(corpus.parent, ["src/auth.py", "src/cahce.py"])
    code, out, err = run_cce("relevance", str(typo), "--strict")
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0].startswith(f'warning: {typo}:3: case c1: anchor "src/cahce.py"')
    assert lines[1] == (
        f"error: 1 anchor in {typo} can never match; refusing to score with --strict "
        "(see the warnings above, or run cce check)"
    )


def test_strict_on_a_clean_set_scores_as_usual(corpus: Path, run_cce: RunCce) -> None:
    clean = _fixture(corpus.parent, ["src/auth.py"])
    plain = run_cce("relevance", str(clean), "--json")
    assert run_cce("relevance", str(clean), "--json", "--strict") == plain
    assert plain[0] == 0 and plain[2] == ""


def test_many_dead_anchors_are_capped_with_a_count(corpus: Path, run_cce: RunCce) -> None:
    dead = ["src/auth.py"] + [f"gone{i}.py" for i in range(MAX_DEAD_ANCHOR_LINES + 3)]
    fixture = _fixture(corpus.parent, dead)
    code, _, err = run_cce("relevance", str(fixture), "--backend", "bm25")
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == MAX_DEAD_ANCHOR_LINES + 1
    assert lines[-1] == (
        f"warning: ... and 3 more dead anchors; cce check {fixture} lists them all"
    )


def _index(corpus: Path, run_cce: RunCce) -> str:
    assert run_cce("index", str(corpus), "--no-metrics")[0] == 0
    return str(corpus / ".cce" / "index.json")


def _record_root(store: str, root: str) -> None:
    record = Path(store).with_name("sources.json")
    document = json.loads(record.read_text())
    document["root"] = root
    record.write_text(json.dumps(document))


def test_a_recorded_root_with_a_nul_cannot_tell_staleness_and_strict_refuses(
    corpus: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    # The record's root was unusable, so the store was scored as fresh, even with --strict.
    store = _index(corpus, run_cce)
    fixture = _fixture(corpus.parent, ["src/auth.py"])
    (corpus / "src" / "auth.py").write_text("def login(user, password):\n    return True\n")
    _record_root(store, "..\x00")
    record = str(corpus / ".cce" / "sources.json")
    code, out, err = run_cce("relevance", str(fixture), "--store", store)
    assert (code, err) == (
        0,
        f"warning: {record} records the corpus as '..\\x00', not the relative, normalised "
        "path cce index writes; it is not walked; cannot tell whether the store is stale\n",
    )
    assert out
    strict = run_cce("relevance", str(fixture), "--store", store, "--strict")
    assert strict[:2] == (1, "")
    assert strict[2].startswith(f"error: {record} records the corpus as '..\\x00'")
    assert strict[2].endswith("(refusing the store with --strict)\n")


@pytest.mark.parametrize("root", ["../../../usr/lib", "/usr/lib", "../src/../.."])
def test_a_recorded_root_outside_the_project_is_not_walked(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], root: str, run_cce: RunCce
) -> None:
    store = _index(corpus, run_cce)
    fixture = _fixture(corpus.parent, ["src/auth.py"])
    _record_root(store, root)
    code, _, err = run_cce("relevance", str(fixture), "--store", store)
    assert code == 0
    assert err.startswith(f"warning: {corpus / '.cce' / 'sources.json'} records the corpus as ")
    assert "it is not walked; cannot tell whether the store is stale\n" in err
    assert "is stale:" not in err
    strict = run_cce("relevance", str(fixture), "--store", store, "--strict")
    assert strict[0] == 1


def test_a_recorded_root_inside_the_project_is_walked(corpus: Path, run_cce: RunCce) -> None:
    # `cce index src --store .cce/index.json` from the project: the store indexes a
    # directory inside the one holding .cce, and its record says `../src`.
    (corpus / "other.py").write_text("y = 2\n")
    store = str(corpus / ".cce" / "index.json")
    assert run_cce("index", str(corpus / "src"), "--store", store, "--no-metrics")[0] == 0
    assert json.loads(Path(store).with_name("sources.json").read_text())["root"] == "../src"
    fixture = _fixture(corpus.parent, ["src/auth.py"])
    (corpus / "src" / "cache.py").write_text("def evict(key):\n    pass\n")
    code, _, err = run_cce("relevance", str(fixture), "--store", store)
    assert code == 0
    assert f"warning: store {store} is stale: 1 file changed" in err


def test_editing_an_indexed_file_makes_the_store_stale(
    corpus: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    store = _index(corpus, run_cce)
    fixture = _fixture(corpus.parent, ["src/auth.py"])
    fresh = run_cce("relevance", str(fixture), "--store", store, "--backend", "bm25")
    assert fresh[0] == 0 and fresh[2] == ""

    (corpus / "src" / "auth.py").write_text("def login(user, password):\n    return True\n")
    (corpus / "src" / "new.py").write_text("x = 1\n")
    code, out, err = run_cce("relevance", str(fixture), "--store", store, "--backend", "bm25")
    assert code == 0
    assert out == fresh[1]
    assert err == (
        f"warning: store {store} is stale: 1 file changed, 1 added, 0 removed in {corpus} "
        f"since it was built (e.g. src/auth.py, src/new.py); run cce index {corpus} again\n"
    )
    strict = run_cce("relevance", str(fixture), "--store", store, "--strict")
    assert strict[:2] == (1, "")
    assert strict[2].startswith(f"error: store {store} is stale: ")
    assert strict[2].endswith("(refusing the store with --strict)\n")

    _index(corpus, run_cce)
    assert run_cce("relevance", str(fixture), "--store", store)[2] == ""


def test_a_removed_file_is_stale_and_its_anchor_explained(
    corpus: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    store = _index(corpus, run_cce)
    (corpus / "src" / "cache.py").unlink()
    fixture = _fixture(corpus.parent, ["src/auth.py"])
    _, _, err = run_cce("relevance", str(fixture), "--store", store)
    assert "1 removed" in err and "e.g. src/cache.py" in err


def test_a_store_without_a_source_record_is_not_judged(
    corpus: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    store = _index(corpus, run_cce)
    (corpus / ".cce" / "sources.json").unlink()
    (corpus / "src" / "auth.py").write_text("changed = True\n")
    fixture = _fixture(corpus.parent, ["src/auth.py"])
    code, _, err = run_cce("relevance", str(fixture), "--store", store, "--strict")
    assert (code, err) == (0, "")


def test_cce_check_reports_a_stale_store_once(
    corpus: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    store = _index(corpus, run_cce)
    (corpus / "src" / "auth.py").write_text("changed = True\n")
    fixture = _fixture(corpus.parent, ["src/auth.py"])
    code, out, _ = run_cce("check", str(fixture), str(fixture), "--store", store)
    assert code == 0
    assert out == (
        f"{store}: warning: store {store} is stale: 1 file changed, 0 added, 0 removed in "
        f"{corpus} since it was built (e.g. src/auth.py); run cce index {corpus} again\n"
    )
    assert run_cce("check", str(fixture), "--store", store, "--strict")[0] == 1


def test_the_starter_sets_score_without_warnings(
    monkeypatch: pytest.MonkeyPatch, run_cce: RunCce
) -> None:
    monkeypatch.chdir(REPO)
    for name in ("code.jsonl", "docs.jsonl"):
        code, _, err = run_cce("relevance", f"eval/relevance/{name}", "--strict")
        assert (code, err) == (0, "")


def test_a_corpus_one_directory_too_deep_is_named(corpus: Path, run_cce: RunCce) -> None:
    fixture = _fixture(corpus.parent, ["src/auth.py", "src/cache.py"])
    code, _, err = run_cce("relevance", str(fixture), "--dir", str(corpus / "src"))
    assert code == 0
    assert err.splitlines() == [
        f'warning: {fixture}:2: case c0: anchor "src/auth.py": path src/auth.py is not in the '
        'index; did you mean "auth.py"?',
        f'warning: {fixture}:3: case c1: anchor "src/cache.py": path src/cache.py is not in '
        'the index; did you mean "cache.py"?',
        f"warning: {fixture}: none of the 2 anchor paths is in the index; anchors are relative "
        "to the corpus directory, so check that it is the right one (--dir, --store or the "
        'header\'s "corpus")',
    ]
