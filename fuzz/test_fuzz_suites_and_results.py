"""Fuzz properties of two inputs that name other files: suite manifests (their members'
fixtures, corpora and names, and the executor) and results-file headers (the corpus whose
code a report shows).

A manifest of any shape through `cce relevance` ends in a report or one `error:` line,
never a traceback or a hang; a results file of any header through `cce report` ends the
same way, and its page never holds a byte from outside the working directory nor a
secret the index redacted (docs/hostile-input.md#report-code). Each property runs
`CCE_FUZZ_EXAMPLES` examples; run with `nox -s fuzz` (docs/hostile-input.md#fuzzing).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cce_cli.main import main
from cce_retrieval import chunk_file

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("CCE_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=max(20, EXAMPLES // 5),  # each example runs a whole command
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,  # capsys is drained at the end of each example
    ],
)

CANARY = "CANARY-outside-the-working-directory"
KEY_BODY = "MIIEpAIBAAKCAQEAx7Tb2KdQ9pT0pUlY2v0wZ3Rj8JmKp1pRr7C0n0XcV2L3q"
_CORPUS = {
    "a.py": "def load_config(path):\n    return open(path).read()\n",
    "keys.py": (
        'PEM = """-----BEGIN RSA PRIVATE KEY-----\n'
        f"{KEY_BODY}\n{KEY_BODY[::-1]}\n"
        '-----END RSA PRIVATE KEY-----"""\n\n\n'
        "def load_signing_material():\n    return PEM.encode()\n"
    ),
}
_FIXTURES = (
    '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
    '{"id":"a","query":"load config","expected":["a.py"]}\n'
    '{"id":"b","query":"load_signing_material PEM","expected":["keys.py"],"k":3}\n'
)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`cce ARGV` in process; an exit of 1 or 2 must come with an `error:` line."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    captured = capsys.readouterr()
    event(f"exit status {code}")
    assert code in (0, 1, 2), (code, captured.err)
    assert "Traceback" not in captured.err
    if code in (1, 2):
        assert "error:" in captured.err, captured.err
    return code, captured.out, captured.err


@contextlib.contextmanager
def _inside(directory: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`work/` (the working directory) with a corpus, its fixtures, a report and its
    results; beside it `outside/passwd`, which `work/link` and `corpus/linked.py` reach."""
    root = tmp_path_factory.mktemp("reports")
    outside = root / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(f"{CANARY}\n", encoding="utf-8")
    work = root / "work"
    corpus = work / "corpus"
    corpus.mkdir(parents=True)
    for name, text in _CORPUS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    (corpus / "linked.py").symlink_to(outside / "passwd")
    (work / "link").symlink_to(outside)
    (work / "fixtures.jsonl").write_text(_FIXTURES, encoding="utf-8")
    argv = ["relevance", "fixtures.jsonl", "--backend", "bm25", "--no-cache", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "cce_cli", *argv, "--results", "run.jsonl"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    )
    (work / "report.json").write_text(done.stdout, encoding="utf-8")
    return work


def _chunk_ids(path: str, text: str) -> list[str]:
    return [chunk.chunk_id for chunk in chunk_file(path, text).chunks]


_TEXT = st.text(max_size=16)
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 99), _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=6,
)


@st.composite
def results_text(draw: st.DrawFn, work: Path) -> str:
    """A results file whose header names any corpus and whose hits name any file, with
    chunk ids that are real for the canary and the corpus files (so only the rules about
    where code is read from keep the canary out), or arbitrary."""
    outside = str(work.parent / "outside")
    corpus = draw(
        st.one_of(
            st.sampled_from(
                ["corpus", "link", outside, "..", "/", "corpus/../..", str(work / "corpus"), ""]
            ),
            _JSON,
        )
    )
    header: dict[str, Any] = {"schema": "cce.run/v1", "embedder": "hash"}
    if draw(st.booleans()) or corpus is not None:
        header["corpus"] = corpus
    ids = [
        *_chunk_ids("passwd", f"{CANARY}\n"),
        *_chunk_ids("linked.py", f"{CANARY}\n"),
        *(chunk for name, text in _CORPUS.items() for chunk in _chunk_ids(name, text)),
    ]
    paths = ["passwd", "linked.py", "keys.py", "a.py", "../outside/passwd", "../../outside/passwd"]
    records = []
    for case in ("a", "b")[: draw(st.integers(0, 2))]:
        hits = []
        for rank in range(1, draw(st.integers(1, 4)) + 1):
            start = draw(st.integers(1, 8))
            hits.append(
                {
                    "chunk_id": draw(st.one_of(st.sampled_from(ids), _TEXT)),
                    "end_line": start + draw(st.integers(0, 6)),
                    "file_path": draw(st.one_of(st.sampled_from([*paths, outside]), _TEXT)),
                    "kind": "module",
                    "matches": [],
                    "rank": rank,
                    "score": "1.000000",
                    "start_line": start,
                }
            )
        records.append({"backend": "bm25", "id": case, "k": 5, "query": "q", "results": hits})
    return "\n".join(json.dumps(line) for line in [header, *records]) + "\n"


@FUZZ
@given(data=st.data(), corpus_flag=st.booleans())
def test_results_headers_never_show_code_from_outside_or_redacted(
    workspace: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject, corpus_flag: bool
) -> None:
    text = data.draw(results_text(workspace))
    with tempfile.TemporaryDirectory() as scratch, _inside(workspace):
        results = os.path.join(scratch, "hostile.jsonl")
        Path(results).write_text(text, encoding="utf-8")
        page = os.path.join(scratch, "page.html")
        argv = ["report", "report.json", "--results", results, "-o", page]
        if corpus_flag:
            argv += ["--corpus", "corpus"]
        _, _, err = _run(argv, capsys)
        written = Path(page).read_text(encoding="utf-8") if os.path.exists(page) else ""
    assert CANARY not in written and CANARY not in err
    assert KEY_BODY not in written and KEY_BODY[::-1] not in written


# --- suite manifests ---------------------------------------------------------------------------

_EXECUTORS = st.sampled_from(
    [
        "dask://127.0.0.1:notaport",
        "dask://[::1",
        "dask://user:pw@127.0.0.1:1",
        "dask://127.0.0.1:0",
        "dask://127.0.0.1:1/x",
        "dask://",
        "dask://127.0.0.1:1",  # refused at once: nothing listens on port 1
        "tcp://127.0.0.1:1",
        "",
        "dask://\x1b]0;t\x07:1",
    ]
)
_NAMES = st.one_of(st.sampled_from(["alpha", "beta", ".", "..", "-rf", "a/b", "é", ""]), _TEXT)
# Relative names only, and none that climbs: a drawn "/" would index the whole disk.
_PATHS = st.one_of(
    st.sampled_from(["fixtures.jsonl", "corpus", "/dev/zero", "missing", "link", "", "\x00"]),
    _TEXT.filter(lambda text: not text.startswith(("/", "~")) and ".." not in text),
)


def _toml_value(value: object) -> str:
    """`value` as a TOML value (strings JSON-quoted, which TOML reads the same way when
    they hold no control characters; those make the manifest invalid TOML, also a case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


@st.composite
def manifest_text(draw: st.DrawFn) -> str:
    """A suite manifest near the grammar: members with hostile names, paths and groups,
    a stray key or a wrong type now and then, and a hostile executor."""
    lines = [f"schema = {_toml_value(draw(st.sampled_from(['cce.suite/v1'] * 7 + ['x'])))}"]
    if draw(st.integers(0, 3)) == 0:
        lines.append(f"executor = {_toml_value(draw(st.one_of(_EXECUTORS, st.integers(0, 9))))}")
    for _ in range(draw(st.integers(0, 3))):
        member: dict[str, object] = {
            "name": draw(_NAMES),
            "fixtures": draw(st.one_of(st.just("fixtures.jsonl"), _PATHS)),
            "corpus": draw(st.one_of(st.just("corpus"), _PATHS)),
        }
        if draw(st.integers(0, 3)) == 0:
            member["groups"] = draw(st.lists(_NAMES, max_size=3))
        if draw(st.integers(0, 5)) == 0:
            key = draw(st.sampled_from(["name", "fixtures", "corpus", "groups", "extra", "git"]))
            # git only ever as a wrong type or a local path: the fuzz stays off the network
            member[key] = draw(st.one_of(st.integers(0, 9), st.lists(_TEXT, max_size=2)))
        if draw(st.integers(0, 7)) == 0:
            member.pop(draw(st.sampled_from(["name", "fixtures", "corpus"])))
        lines.append("\n[[members]]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in member.items()]
    return "\n".join(lines) + "\n"


@FUZZ
@given(text=manifest_text())
def test_suite_manifests_end_in_a_report_or_one_error(
    workspace: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    with tempfile.TemporaryDirectory() as scratch, _inside(workspace):
        manifest = os.path.join(workspace, f"suite-{os.path.basename(scratch)}.toml")
        Path(manifest).write_text(text, encoding="utf-8")
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("CCE_DASK_TIMEOUT", "1")
                _, _, err = _run(["relevance", manifest, "--backend", "bm25", "--no-cache"], capsys)
        finally:
            os.unlink(manifest)
    assert "pw@" not in err
