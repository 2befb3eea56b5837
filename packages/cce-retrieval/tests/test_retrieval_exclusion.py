"""`why_not_indexed` names the walker rule that leaves a path out, and agrees with `walk`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cce_retrieval.walk.exclusion import Exclusion, why_not_indexed
from cce_retrieval.walk.walker import MAX_FILE_BYTES, walk


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    files: dict[str, bytes] = {
        "src/app.py": b"def f():\n    return 1\n",
        "venv/lib/site.py": b"x = 1\n",
        "build/out.js": b"var x;\n",
        ".hidden/a.py": b"x = 1\n",
        "logs/keep.py": b"x = 1\n",
        "logs/drop.log": b"noise\n",
        "gen/code.py": b"x = 1\n",
        "sub/.gitignore": b"local.py\n",
        "sub/local.py": b"x = 1\n",
        "sub/other.py": b"x = 1\n",
        ".gitignore": b"*.log\ngen/\n",
        "secrets.yaml": b"token: x\n",
        "config/.env": b"A=1\n",
        "data.jsonl": b"{}\n",
        "big.py": b"#" * (MAX_FILE_BYTES + 1),
        "latin1.py": b"caf\xe9 = 1\n",
    }
    for rel, data in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    os.symlink(tmp_path / "src" / "app.py", tmp_path / "link.py")
    return tmp_path


@pytest.mark.parametrize(
    ("rel", "rule", "where", "fragment"),
    [
        ("venv/lib/site.py", Exclusion.PRUNED_DIRECTORY, "venv", "venv/ is a pruned directory"),
        ("build/out.js", Exclusion.PRUNED_DIRECTORY, "build", "pruned directory"),
        (".hidden/a.py", Exclusion.DOT_DIRECTORY, ".hidden", "dot-directory"),
        ("logs/drop.log", Exclusion.GITIGNORE, "logs/drop.log", "ignored by .gitignore"),
        ("gen/code.py", Exclusion.GITIGNORE, "gen", "gen/ is ignored by .gitignore"),
        ("sub/local.py", Exclusion.GITIGNORE, "sub/local.py", "ignored by sub/.gitignore"),
        ("secrets.yaml", Exclusion.SENSITIVE, "secrets.yaml", "sensitive name"),
        ("config/.env", Exclusion.SENSITIVE, "config/.env", "sensitive name"),
        ("data.jsonl", Exclusion.UNSUPPORTED_EXTENSION, "data.jsonl", ".jsonl files"),
        ("big.py", Exclusion.SIZE_LIMIT, "big.py", f"over the {MAX_FILE_BYTES}-byte size limit"),
        ("latin1.py", Exclusion.NOT_UTF8, "latin1.py", "not valid UTF-8"),
        ("link.py", Exclusion.SYMLINK, "link.py", "symbolic link"),
        ("nope.py", Exclusion.MISSING, "nope.py", "does not exist"),
        ("src/app.py/x", Exclusion.MISSING, "src/app.py", "not a directory"),
        ("src", Exclusion.NOT_A_FILE, "src", "not a regular file"),
        ("./src/app.py", Exclusion.MISSING, "./src/app.py", "not a corpus path"),
    ],
)
def test_each_rule_is_named(
    corpus: Path, rel: str, rule: Exclusion, where: str, fragment: str
) -> None:
    reason = why_not_indexed(str(corpus), rel)
    assert reason is not None
    assert (reason.rule, reason.path) == (rule, where)
    assert fragment in reason.message


def test_it_agrees_with_the_walk(corpus: Path) -> None:
    kept = {walked.rel_path for walked in walk(str(corpus)).files}
    assert kept == {"src/app.py", "logs/keep.py", "sub/other.py", "sub/.gitignore", ".gitignore"}
    for path in corpus.rglob("*"):
        rel = path.relative_to(corpus).as_posix()
        if path.is_file() and not path.is_symlink():
            assert (why_not_indexed(str(corpus), rel) is None) == (rel in kept), rel


def test_protection_off_reads_sensitive_names(corpus: Path) -> None:
    assert why_not_indexed(str(corpus), "secrets.yaml", protect=False) is None
