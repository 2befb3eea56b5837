"""Special files named as inputs: every command refuses them instead of hanging.

`/dev/zero` behind a symlink grew memory without bound (4.8 GB in 12 s for `cce diff`), a
FIFO blocked forever, `/dev/full` read as endless zeros. Each command that reads a file
named on its command line is run with one such file in each input slot; it must end
quickly, with exit 1 and an error naming the path (docs/hostile-input.md#special-files-as-inputs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

CCE = [sys.executable, "-m", "cce_cli"]

# Far over the moment a refusal takes: only a hang reaches it.
_DEADLINE_SECONDS = 20


def _special(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"special-{kind}"
    if kind == "zero-link":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/full")
    return path


# Each command line reads the special file S in one slot; the other inputs are valid
# (the reviewer-report data: reports, results, fixtures and their corpus, in `data`).
_COMMANDS: dict[str, Callable[[Path, str], list[str]]] = {
    "relevance fixtures": lambda d, s: ["relevance", s, "--dir", str(d / "corpus")],
    "relevance --store": lambda d, s: ["relevance", str(d / "fixtures.jsonl"), "--store", s],
    "relevance --run": lambda d, s: [
        "relevance",
        str(d / "fixtures.jsonl"),
        "--dir",
        str(d / "corpus"),
        "--run",
        f"mine={s}",
    ],
    "relevance --config": lambda d, s: [
        "relevance",
        str(d / "fixtures.jsonl"),
        "--dir",
        str(d / "corpus"),
        "--config",
        s,
    ],
    "check fixtures": lambda d, s: ["check", s],
    "check --store": lambda d, s: ["check", str(d / "fixtures.jsonl"), "--store", s],
    "pool fixtures": lambda d, s: ["pool", s, "--backends", "bm25,vector"],
    "pool --apply": lambda d, s: [
        "pool",
        str(d / "fixtures.jsonl"),
        "--apply",
        s,
        "-o",
        str(d / "out.jsonl"),
    ],
    "queries": lambda d, s: ["queries", s],
    "diff base": lambda d, s: ["diff", s, str(d / "bm25.report.json")],
    "diff head": lambda d, s: ["diff", str(d / "bm25.report.json"), s],
    "plan": lambda d, s: ["plan", s],
    "search --store": lambda d, s: ["search", "load config", "--store", s],
    "report": lambda d, s: ["report", s],
    "report --results": lambda d, s: ["report", str(d / "bm25.report.json"), "--results", s],
    "report --fixtures": lambda d, s: [
        "report",
        str(d / "bm25.report.json"),
        "--results",
        str(d / "bm25.results.jsonl"),
        "--fixtures",
        s,
    ],
    "suite fetch": lambda d, s: ["suite", "fetch", s],
    "import semble --repos": lambda d, s: [
        "import",
        "semble",
        str(d / "corpus"),
        "--repos",
        s,
        "-o",
        str(d / "imported"),
    ],
}


# Runs every command line of one kind in one interpreter (a subprocess per command
# would cost a second of start-up each). Each gets an alarm far under the test timeout:
# only a hang reaches it. Address space is capped, so reading `/dev/zero` whole fails
# with MemoryError within seconds instead of taking the machine's memory.
_DRIVER = """
import contextlib, io, json, resource, signal, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from cce_cli.main import main

class Hung(Exception):
    pass

def alarm(signum, frame):
    raise Hung()

signal.signal(signal.SIGALRM, alarm)
results = {}
for name, args in json.loads(sys.argv[1]).items():
    out, err = io.StringIO(), io.StringIO()
    signal.alarm(int(sys.argv[2]))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    except Hung:
        code = "hung"
    except BaseException as error:
        code = repr(error)
    finally:
        signal.alarm(0)
    results[name] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(results))
"""

_KINDS = ["zero-link", "fifo", "full-link"]


@pytest.fixture(scope="module")
def outcomes(
    report_data_module: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, list[Any]]]:
    """Per kind of special file, each command's [status, stdout, stderr]."""
    found: dict[str, dict[str, list[Any]]] = {}
    for kind in _KINDS:
        where = tmp_path_factory.mktemp(f"special-{kind}")
        special = str(_special(where, kind))
        lines = {name: make(report_data_module, special) for name, make in _COMMANDS.items()}
        done = subprocess.run(
            [sys.executable, "-c", _DRIVER, json.dumps(lines), str(_DEADLINE_SECONDS)],
            capture_output=True,
            text=True,
            timeout=_DEADLINE_SECONDS * len(lines),
            stdin=subprocess.DEVNULL,
            cwd=where,
        )
        assert done.returncode == 0, done.stderr
        found[kind] = {"path": [special], **json.loads(done.stdout)}
    return found


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_a_special_file_as_input_is_refused_quickly(
    outcomes: dict[str, dict[str, list[Any]]], command: str, kind: str
) -> None:
    special = outcomes[kind]["path"][0]
    code, out, err = outcomes[kind][command]
    assert code == 1, (code, err)
    shown = err + out  # `cce check` lists problems on stdout
    assert special in shown
    described = "a FIFO" if kind == "fifo" else "a character device"
    assert f"not a regular file ({described}); give a regular file" in shown


def test_a_file_over_its_limit_is_refused(tmp_path: Path) -> None:
    from cce_retrieval import RefusedInputError, read_input_file

    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 101)
    with pytest.raises(RefusedInputError) as refused:
        read_input_file(str(path), 100, "reports")
    assert refused.value.strerror == (
        "larger than 100 bytes, the most cce reads of reports; give a smaller file"
    )
    assert read_input_file(str(path), 101, "reports") == b"x" * 101


def test_a_file_that_grows_while_read_is_still_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cce_retrieval import RefusedInputError, read_input_file

    # fstat sees 10 bytes; by the time they are read the file holds many more (a writer
    # appending, or a file replaced under the name): reading stops past the limit.
    path = tmp_path / "growing.jsonl"
    path.write_bytes(b"y" * 10)
    real_fstat = os.fstat

    def fstat_then_grow(fd: int) -> os.stat_result:
        status = real_fstat(fd)
        with open(path, "ab") as grow:
            grow.write(b"z" * (1 << 20))
        return status

    monkeypatch.setattr(os, "fstat", fstat_then_grow)
    with pytest.raises(RefusedInputError, match="larger than 1 KiB"):
        read_input_file(str(path), 1 << 10, "fixture files")


def test_every_kind_has_a_limit_of_at_least_a_megabyte() -> None:
    from cce_cli.formats import input_files

    values = vars(input_files).values()
    kinds = [value for value in values if isinstance(value, input_files.InputKind)]
    assert len(kinds) == len(input_files.__all__) - 2
    assert all(kind.limit >= 1 << 20 for kind in kinds)


# --- outputs on a device or a pipe -----------------------------------------------------------

_OUTPUTS: dict[str, Callable[[Path], list[str]]] = {
    "relevance --results": lambda d: [
        "relevance",
        str(d / "fixtures.jsonl"),
        "--json",
        "--results",
        "/dev/stdout",
    ],
    "relevance --export-qrels": lambda d: [
        "relevance",
        str(d / "fixtures.jsonl"),
        "--json",
        "--export-qrels",
        "/dev/stdout",
    ],
    "report -o": lambda d: ["report", str(d / "bm25.report.json"), "-o", "/dev/stdout"],
    "pool -o": lambda d: [
        "pool",
        str(d / "fixtures.jsonl"),
        "--backends",
        "bm25,vector",
        "-o",
        "/dev/stdout",
    ],
}


@pytest.mark.parametrize("command", sorted(_OUTPUTS))
def test_an_output_on_a_pipe_is_streamed(report_data_module: Path, command: str) -> None:
    # `--results /dev/stdout` followed the link to `pipe:[N]` and failed with "No such
    # file or directory"; like `conformance -o /dev/stdout`, it is now written as a stream.
    done = subprocess.run(
        [*CCE, *_OUTPUTS[command](report_data_module)],
        capture_output=True,
        timeout=_DEADLINE_SECONDS * 3,
        stdin=subprocess.DEVNULL,
        cwd=report_data_module,
    )
    assert done.returncode == 0, done.stderr
    assert b"No such file" not in done.stderr
    expected = {
        "relevance --results": b'"schema":"cce.run/v1"',
        "relevance --export-qrels": b"code-load-config 0 config.py 1",
        "report -o": b"<!DOCTYPE html>",
        "pool -o": b'"schema":"cce.judging/v1"',
    }[command]
    assert expected in done.stdout


def test_an_output_on_a_full_device_is_an_error_naming_it(report_data_module: Path) -> None:
    done = subprocess.run(
        [*CCE, "report", str(report_data_module / "bm25.report.json"), "-o", "/dev/full"],
        capture_output=True,
        text=True,
        timeout=_DEADLINE_SECONDS,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stderr == (
        "error: could not write /dev/full: No space left on device (os error 28)\n"
    )
