"""Shared test set-up for cce-cli: keep every command's build cache inside the test run,
and run the `cce` command in-process.

Commands cache per-file build results in the user cache directory by default; tests
point `CCE_CACHE_DIR` at a temporary directory instead, so they neither read a
developer's cache nor leave anything behind. Most tests drive the command through
`run_cce`, which calls `cce_cli.main.main` directly (fast) and hands back what a user
would see: the exit status, stdout and stderr.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
from collections.abc import Callable

import pytest

from cce_cli.main import main


@pytest.fixture(autouse=True)
def _private_build_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("cce-cache")
    monkeypatch.setenv("CCE_CACHE_DIR", str(directory))
    # A gated comparison appends to the job summary; a CI run's own must stay untouched.
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return directory


@pytest.fixture
def run_cce(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """`run_cce(*argv)` runs `cce argv...` in-process and returns its exit status, stdout
    and stderr. A usage error's `SystemExit` becomes its status (argparse exits 2), as the
    `cce` entry point would report it. The output is what was written since the test last
    read `capsys`."""

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def _run_git(cwd: pathlib.Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "cce",
        "GIT_AUTHOR_EMAIL": "cce@example.invalid",
        "GIT_COMMITTER_NAME": "cce",
        "GIT_COMMITTER_EMAIL": "cce@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def git() -> Callable[..., str]:
    """`git(cwd, *args)` runs git in `cwd` with a fixed identity and neither the system's
    nor the user's configuration, and returns its stdout, stripped; a failure raises."""
    return _run_git


REPORT_DATA = pathlib.Path(__file__).parent / "data" / "report"
SAMPLE_CORPUS = pathlib.Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"


def report_workspace(root: pathlib.Path) -> pathlib.Path:
    """The reviewer-report data laid out in `root`: the saved reports, results and
    fixtures of `data/report/`, and their corpus, the sample corpus plus `hostile.js`
    (code that looks like markup). The reports name the corpus `corpus`, relative."""
    root.mkdir(parents=True, exist_ok=True)
    for item in REPORT_DATA.iterdir():
        if item.is_file() and item.name != "hostile.js":
            shutil.copy(item, root / item.name)
    shutil.copytree(SAMPLE_CORPUS, root / "corpus")
    shutil.copy(REPORT_DATA / "hostile.js", root / "corpus" / "hostile.js")
    return root


@pytest.fixture
def report_data(tmp_path: pathlib.Path) -> pathlib.Path:
    """`report_workspace` in this test's temporary directory."""
    return report_workspace(tmp_path / "report-data")


@pytest.fixture(scope="module")
def report_data_module(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """`report_workspace` shared by one module's tests (they only read it)."""
    return report_workspace(tmp_path_factory.mktemp("report-data"))


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    """eval/relevance/code.jsonl beside a copy of its corpus, as a user would have it;
    the fixtures' directory is returned."""
    shutil.copytree(SAMPLE_CORPUS.parent, tmp_path / "corpus")
    (tmp_path / "rel").mkdir()
    relevance = SAMPLE_CORPUS.parents[1] / "relevance" / "code.jsonl"
    shutil.copy(relevance, tmp_path / "rel" / "code.jsonl")
    return tmp_path / "rel"
