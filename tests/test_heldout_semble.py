"""bench/heldout_semble.py's own parts, without any registry: which tasks and targets a
package release keeps, what of a package becomes the corpus, and the suite it writes.

Why it exists: the held-out suite is the acceptance data for ranking work; a task kept
with a target its corpus lacks would score as a miss that no ranking can fix, and a
suite whose fixtures and annotations disagree would fail the peer comparison's check.
These tests build tiny corpora by hand, so they need no download.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).parents[1]


def _heldout() -> ModuleType:
    path = REPO / "bench/heldout_semble.py"
    spec = importlib.util.spec_from_file_location("heldout_semble", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # The dataclasses in it look their module up by name while the class is made.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


heldout = _heldout()


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    (corpus / "sub" / "util.py").write_text("x = 1\n")
    return corpus


def test_a_task_is_kept_only_when_every_relevant_target_is_in_the_corpus(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    tasks = [
        {"query": "a", "relevant": ["pkg/app.py"], "secondary": ["pkg/gone.py", "pkg/sub/util.py"]},
        {"query": "b", "relevant": ["pkg/app.py", "pkg/gone.py"], "secondary": []},
        {"query": "c", "relevant": [{"path": "pkg/app.py", "start_line": 5, "end_line": 20}]},
        {"query": "d", "relevant": [{"path": "pkg/app.py", "start_line": 5, "end_line": 21}]},
        {"query": "e", "relevant": ["other/app.py"], "secondary": []},
    ]
    kept, coverage = heldout.filter_tasks(tasks, "pkg", corpus)
    assert [task["query"] for task in kept] == ["a", "c"]
    # A missing secondary target leaves the task, not the task's other targets.
    assert kept[0]["secondary"] == ["pkg/sub/util.py"]
    assert kept[1]["secondary"] == []
    assert coverage["tasks"] == 5 and coverage["tasks_kept"] == 2
    assert (coverage["targets"], coverage["targets_present"]) == (8, 4)
    # A line range past the end of its file is missing, and so is a path outside the root.
    assert coverage["missing"] == ["other/app.py", "pkg/app.py", "pkg/gone.py"]


def test_a_whole_repository_member_matches_targets_from_the_corpus_root(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    kept, coverage = heldout.filter_tasks(
        [{"query": "q", "relevant": ["sub/util.py"]}], None, corpus
    )
    assert len(kept) == 1 and coverage["missing"] == []


def test_the_corpus_leaves_out_build_output_hidden_folders_named_and_symlinks(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    (tree / ".hash").mkdir(parents=True)
    (tree / "ws").mkdir()
    (tree / "client.py").write_text("pass\n")
    (tree / "ws" / "reader.py").write_text("pass\n")
    (tree / "ws" / "reader.c").write_text("/* generated */\n")
    (tree / ".hash" / "client.py.hash").write_text("0\n")
    (tree / "alias.py").symlink_to(tree / "client.py")
    source = heldout.Source("demo", "pypi", "demo", "1.0", "demo-*/demo", (".c",), (".hash",))
    corpus = tmp_path / "corpus"
    assert heldout.copy_corpus(source, tree, corpus) == 2
    copied = sorted(str(p.relative_to(corpus)) for p in corpus.rglob("*") if p.is_file())
    assert copied == ["client.py", "ws/reader.py"]


def test_the_written_suite_points_at_the_local_corpora_and_checks_clean(tmp_path: Path) -> None:
    out = tmp_path / "suite"
    corpus = out / "corpora" / "demo"
    corpus.mkdir(parents=True)
    (corpus / "app.py").write_text("def route():\n    return 1\n")
    (out / "annotations").mkdir()
    tasks = [
        {"query": "route", "relevant": ["src/demo/app.py"], "secondary": [], "category": "symbol"}
    ]
    (out / "annotations" / "demo.json").write_text(json.dumps(tasks))
    repo = {
        "name": "demo",
        "language": "python",
        "url": "https://example.invalid/demo.git",
        "revision": "0" * 40,
        "benchmark_root": "src/demo",
    }
    (out / "repos.json").write_text(json.dumps([repo]))
    heldout.write_suite(out, [("demo", "python")])
    manifest = (out / "suite.toml").read_text()
    assert 'corpus = "corpora/demo"' in manifest and 'groups = ["python"]' in manifest
    lines = (out / "fixtures" / "demo.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"schema": "cce.relevance/v1", "corpus": "../corpora/demo"}
    case = json.loads(lines[1])
    assert (case["id"], case["expected"], case["tags"], case["k"]) == (
        "demo-01",
        ["app.py"],
        ["symbol"],
        10,
    )
    # No leftover import folder beside the suite.
    assert sorted(p.name for p in out.iterdir()) == [
        "annotations",
        "corpora",
        "fixtures",
        "repos.json",
        "suite.toml",
    ]
    check = [sys.executable, "-m", "cce_cli", "check", str(out / "suite.toml")]
    done = subprocess.run(check, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_folder_that_is_not_empty_is_refused_with_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("x")
    status = heldout.main([str(tmp_path), "--annotations", "a", "--repos", "r.json"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith("error: ") and "not empty" in err and err.count("\n") == 1
    assert (tmp_path / "keep.txt").read_text() == "x"


def test_an_unknown_member_is_named_before_anything_is_downloaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    annotations = tmp_path / "annotations"
    annotations.mkdir()
    repos = tmp_path / "repos.json"
    repos.write_text("[]")
    out = tmp_path / "out"
    status = heldout.main(
        [str(out), "--annotations", str(annotations), "--repos", str(repos), "--members", "nope"]
    )
    assert status == 1
    assert "--members: no source for nope" in capsys.readouterr().err
    assert not out.exists()
