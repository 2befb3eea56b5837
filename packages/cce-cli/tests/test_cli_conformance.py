"""`cce conformance` (docs/index-store.md#conformance-document) and the project's pinned
sample-corpus golden.

The golden `golden/sample.conformance.json` is the conformance document of the
project's own corpus `eval/corpus/sample`. Regenerate it (then review the diff) with,
from the repository root:

    uv run cce conformance eval/corpus/sample \\
        -o packages/cce-cli/tests/golden/sample.conformance.json

(`uv run nox -s goldens` runs the same command.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

REPO = Path(__file__).parents[3]
SAMPLE_CORPUS = REPO / "eval" / "corpus" / "sample"
GOLDEN = Path(__file__).parent / "golden" / "sample.conformance.json"


def test_sample_corpus_matches_golden(tmp_path: Path, run_cce: RunCce) -> None:
    out = str(tmp_path / "sample.json")
    code, stdout, stderr = run_cce("conformance", str(SAMPLE_CORPUS), "-o", out)
    assert (code, stdout, stderr) == (0, f"wrote {out}\n", "")
    assert Path(out).read_bytes() == GOLDEN.read_bytes()


def test_golden_covers_every_language_and_nesting() -> None:
    chunks = json.loads(GOLDEN.read_bytes())["chunks"]
    paths = {c["file_path"] for c in chunks}
    assert paths == {
        "README.md",
        "cache.py",
        "config.py",
        "queue.ts",
        "retry.js",
        "ring.c",
        "store.rs",
        "worker.rb",
    }
    kinds = {c["kind"] for c in chunks}
    for kind in (
        "class_definition",
        "method_definition",
        "interface_declaration",
        "impl_item",
        "struct_specifier",
        "method",
        "module",
    ):
        assert kind in kinds


def test_reference_samples_are_byte_identical_but_language(
    tmp_path: Path,
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    reference_path: Callable[..., Path],
) -> None:
    samples = reference_path("test", "fixture", "samples")
    golden = reference_path("conformance.json")
    monkeypatch.chdir(tmp_path)
    code, stdout, _ = run_cce("conformance", str(samples))
    assert (code, stdout) == (0, "wrote conformance.json\n")
    got = (tmp_path / "conformance.json").read_text(encoding="utf-8")
    want = golden.read_text(encoding="utf-8").replace(
        '"impl_language": "rust"', '"impl_language": "python"', 1
    )
    assert got == want
    assert os.listdir(tmp_path) == ["conformance.json"]


def test_two_runs_are_identical(tmp_path: Path, run_cce: RunCce) -> None:
    first, second = str(tmp_path / "1.json"), str(tmp_path / "2.json")
    assert run_cce("conformance", str(SAMPLE_CORPUS), "--output", first)[0] == 0
    assert run_cce("conformance", str(SAMPLE_CORPUS), "--output", second)[0] == 0
    assert Path(first).read_bytes() == Path(second).read_bytes()


def test_missing_directory(tmp_path: Path, run_cce: RunCce) -> None:
    missing = str(tmp_path / "missing")
    code, out, err = run_cce("conformance", missing, "-o", str(tmp_path / "x.json"))
    assert (code, out, err) == (1, "", f"error: not a directory: {missing}\n")
    assert os.listdir(tmp_path) == []


def test_unwritable_output(tmp_path: Path, run_cce: RunCce) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("keep")
    target = str(blocker / "out.json")
    code, out, err = run_cce("conformance", str(SAMPLE_CORPUS), "-o", target)
    assert (code, out) == (1, "")
    assert err == f"error: could not write {target}: Not a directory (os error 20)\n"
    assert blocker.read_text() == "keep"
