"""A discovered `cce.toml` or `[tool.cce]` is read only when a configured name is asked for.

An invalid configuration in some ancestor directory (another project's, or a half-edited
one) must not stop a run that uses only registered backends; when the file is read, stderr
names it once (docs/hostile-input.md#configuration-discovery).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cce_cli.evaluation import configurations

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

BROKEN_TOML = "[backends.x\n"
VALID = '[backends.bm25-b04]\nuse = "bm25"\nb = 0.4\n'


@pytest.fixture(autouse=True)
def _fresh_announcements(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(configurations, "_ANNOUNCED", set(), raising=False)


@pytest.fixture(params=["cce.toml", "pyproject.toml"])
def broken(request: pytest.FixtureRequest, workspace: Path) -> Path:
    """An invalid configuration two directories above the fixtures."""
    root = workspace.parent
    if request.param == "cce.toml":
        target = root / "cce.toml"
        target.write_text(BROKEN_TOML, encoding="utf-8")
    else:
        target = root / "pyproject.toml"
        target.write_text('[tool.cce]\nbackends = "bm25"\n', encoding="utf-8")
    return target


def test_an_invalid_ancestor_config_does_not_stop_registered_backends(
    workspace: Path, broken: Path, run_cce: RunCce
) -> None:
    fixtures = str(workspace / "code.jsonl")
    broken_text = broken.read_bytes()
    broken.unlink()
    clean = run_cce("relevance", fixtures, "--compare", "bm25,hybrid")
    broken.write_bytes(broken_text)
    for argv in (
        ["relevance", fixtures, "--compare", "bm25,hybrid"],
        ["relevance", fixtures, "--backend", "bm25", "--json"],
        ["pool", fixtures, "--backends", "bm25"],
    ):
        code, _, err = run_cce(*argv)
        assert (code, err) == (0, ""), (argv, err)
    assert run_cce("relevance", fixtures, "--compare", "bm25,hybrid") == clean


def test_asking_for_a_configured_name_reads_the_file_and_its_errors_stop(
    workspace: Path, broken: Path, run_cce: RunCce
) -> None:
    code, out, err = run_cce("relevance", str(workspace / "code.jsonl"), "--backend", "x")
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {broken}")


def test_cce_backends_warns_about_an_unusable_config_and_lists_the_registered_ones(
    workspace: Path, broken: Path, run_cce: RunCce
) -> None:
    code, out, err = run_cce("backends", str(workspace))
    assert code == 0
    assert out.startswith("bm25")
    assert err.startswith(f"warning: {broken}") and "going on with the registered backends" in err


def test_the_file_read_is_named_once_and_only_when_used(workspace: Path, run_cce: RunCce) -> None:
    config = workspace.parent / "cce.toml"
    config.write_text(VALID, encoding="utf-8")
    fixtures = str(workspace / "code.jsonl")
    code, _, err = run_cce("relevance", fixtures, "--compare", "bm25,bm25-b04")
    assert (code, err) == (0, f"note: backend configurations from {config}\n")
    code, _, err = run_cce("relevance", fixtures, "--backend", "bm25-b04")
    assert (code, err) == (0, "")  # once per process
    code, _, err = run_cce("relevance", fixtures)
    assert (code, err) == (0, "")
    # Given with --config, the file is the user's choice: nothing to announce.
    configurations._ANNOUNCED.clear()
    code, _, err = run_cce("relevance", fixtures, "--config", str(config), "--backend", "bm25-b04")
    assert (code, err) == (0, "")


def test_cce_search_with_a_registered_backend_ignores_an_invalid_config(
    workspace: Path,
    broken: Path,
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = workspace.parent / "corpus" / "sample"
    store = workspace / "index.json"
    assert run_cce("index", str(corpus), "--store", str(store), "--no-metrics")[0] == 0
    monkeypatch.chdir(workspace)
    code, out, err = run_cce(
        "search", "load config", "--store", str(store), "--backend", "bm25", "--no-metrics"
    )
    assert (code, err) == (0, ""), err
    assert "config.py" in out


@pytest.mark.parametrize(
    "data",
    [b'[tool.other]\nx = "caf\xe9"\n', b"a = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"],
    ids=["latin-1", "deep"],
)
def test_an_unreadable_pyproject_in_a_parent_is_not_a_configuration(
    workspace: Path, data: bytes, run_cce: RunCce
) -> None:
    (workspace.parent / "pyproject.toml").write_bytes(data)
    code, out, err = run_cce("relevance", str(workspace / "code.jsonl"), "--backend", "x")
    assert (code, out) == (2, "")  # no configuration, so no backend x: never a traceback
    assert err.startswith("error: unknown backend") or "expected one of" in err, err


def test_cce_backends_shows_configured_names_escaped(workspace: Path, run_cce: RunCce) -> None:
    (workspace / "cce.toml").write_text(
        '[backends."b\\u001b]0;x\\u0007m"]\nuse = "bm25"\nb = 0.4\n', encoding="utf-8"
    )
    code, out, err = run_cce("backends", str(workspace))
    assert (code, err) == (0, "")
    assert "\x1b" not in out and "\x07" not in out
    assert "b\\u001b]0;x\\u0007m: use bm25, b=0.4\n" in out
