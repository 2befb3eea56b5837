"""Hostile environments for the CLI: odd names, broken stdout, Ctrl-C, links, bad flags.

Each test sets up one way `cce` could end in a traceback, write through a link, lose
a file or mislead, and pins what it does instead (docs/hostile-input.md).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from cce_cli.commands import conformance as cmd_conformance
from cce_cli.formats import event_log as events
from cce_cli.output import display_text

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

CCE = [sys.executable, "-m", "cce_cli"]


def repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "auth.py").write_text("import util\n\ndef login(user):\n    return user\n")
    (root / "util.py").write_text("def shared():\n    return 1\n")
    return root


def fixtures(path: Path) -> Path:
    path.write_text(
        '{"schema": "cce.relevance/v1", "k": 3}\n'
        '{"id": "q1", "query": "login user", "expected": ["auth.py"]}\n'
    )
    return path


# --- display_text ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("src/a.py", "src/a.py"),
        ("a\\b.py", "a\\b.py"),  # plain: unchanged, as the reference prints it
        ("x\udcff.py", '"x\\xff.py"'),
        ("evil\n.py", '"evil\\n.py"'),
        ("\x1b[31mred.py", '"\\u001b[31mred.py"'),
        ("gpj.\u202eexe", '"gpj.\\u202eexe"'),
        ('"quoted".py', '"\\"quoted\\".py"'),
        ("x\\\udcff", '"x\\\\\\xff"'),
    ],
)
def test_display_text(name: str, shown: str) -> None:
    assert display_text(name) == shown


def test_display_text_keeps_names_apart() -> None:
    names = ["x\udcff", "x\\xff", '"x\\xff"', "x\ufffd", "x\n", "x\\n"]
    assert len({display_text(name) for name in names}) == len(names)


# --- non-UTF-8 paths (11) ------------------------------------------------------------------


def test_non_utf8_directory_and_store_are_printed_escaped(tmp_path: Path) -> None:
    root = repo(tmp_path / "r\udcfe")
    indexed = subprocess.run(
        [*CCE, "index", str(root), "--no-metrics"], capture_output=True, check=False
    )
    assert indexed.returncode == 0, indexed.stderr
    assert b"Traceback" not in indexed.stderr
    assert f'Indexed "{tmp_path}/r\\xfe"\n'.encode() in indexed.stdout
    relevance = subprocess.run(
        [*CCE, "relevance", str(fixtures(tmp_path / "f.jsonl")), "--dir", str(root), "--json"],
        capture_output=True,
        check=False,
    )
    assert relevance.returncode == 0, relevance.stderr
    assert json.loads(relevance.stdout)["corpus"] == str(root)  # \udcfe round-trips


def test_non_utf8_corpus_file_names_print_escaped(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    with open(os.path.join(os.fsencode(root), b"w\xff.py"), "wb") as handle:
        handle.write(b"def login_weird(user):\n    return user\n")
    searched = subprocess.run(
        [*CCE, "index", str(root), "--no-metrics"], capture_output=True, check=False
    )
    assert searched.returncode == 0
    out = subprocess.run(
        [*CCE, "search", "login weird", str(root), "--no-metrics"], capture_output=True, check=False
    )
    assert out.returncode == 0 and b"Traceback" not in out.stderr
    assert "w\ufffd.py".encode() in out.stdout  # the reference's lossy rel_path


# --- stdout closed, full, broken pipe (12) ------------------------------------------------


def test_closed_stdout_is_an_error_before_any_work(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    closed = subprocess.run(
        [*CCE, "index", str(root), "--no-metrics"],
        stdout=None,
        stderr=subprocess.PIPE,
        check=False,
        preexec_fn=lambda: os.close(1),
    )
    assert closed.returncode == 1
    assert closed.stderr.startswith(b"error: stdout is closed")
    assert not (root / ".cce").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_stdout_is_an_error(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [*CCE, "index", str(root), "--no-metrics"],
            stdout=full,
            stderr=subprocess.PIPE,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr.endswith(
        b"error: could not write to stdout: No space left on device (os error 28)\n"
    )


def _broken_pipe(args: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(args, stdout=write, stderr=subprocess.PIPE, check=False)
    finally:
        os.close(write)


def test_broken_pipe_is_an_error_line(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    result = _broken_pipe([*CCE, "index", str(root), "--no-metrics"])
    assert result.returncode == 1
    assert (
        result.stderr == b"error: stdout was closed before all output was written (broken pipe)\n"
    )


def test_fixtures_validate_into_head_is_quiet(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n" * 2000)
    head = subprocess.Popen(["head", "-1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert head.stdin is not None
    validate = subprocess.run(
        [sys.executable, "-m", "cce_fixtures", "validate", str(bad)],
        stdout=head.stdin,
        stderr=subprocess.PIPE,
        check=False,
    )
    head.stdin.close()
    assert head.stdout is not None
    first = head.stdout.read()
    head.wait()
    assert first.count(b"\n") == 1
    assert validate.stderr == b""


# --- Ctrl-C (15) ---------------------------------------------------------------------------


_READY_THEN_RUN = "\n".join(
    [
        "import os",
        "from cce_cli.entry import main",
        "os.write(int(os.environ['READY_FD']), b'r')",
        "raise SystemExit(main())",
    ]
)


_BUSY_FILES = 600
_BUSY_SOURCE = "".join(f"def step_{n}(value):\n    return value + {n}\n\n" for n in range(40))


@pytest.mark.parametrize("delay", [0.02, 0.1, 0.3])
def test_early_ctrl_c_is_interrupted_130(tmp_path: Path, delay: float) -> None:
    # From the moment the entry point is imported (before numpy, tree-sitter and the
    # command modules load) every Ctrl-C is `error: interrupted`, exit 130. Earlier than
    # that the interpreter itself is still starting, which no program can handle.
    root = repo(tmp_path / "r")
    # Enough files that the last signal still finds the build running on a fast machine
    # (two files were indexed within 0.3 s), and that the build starts its workers.
    for number in range(_BUSY_FILES):
        (root / f"busy_{number}.py").write_text(_BUSY_SOURCE)
    ready_read, ready_write = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-c", _READY_THEN_RUN, "index", str(root), "--no-metrics"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(ready_write,),
        env={**os.environ, "READY_FD": str(ready_write)},
    )
    os.close(ready_write)
    ready = os.read(ready_read, 1)
    os.close(ready_read)
    if ready != b"r":
        _, err = process.communicate(timeout=60)
        pytest.fail(f"the child did not start: {err.decode(errors='replace')}")
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert b"Traceback" not in err
    if process.returncode == 0:
        pytest.skip("the command finished before the signal")
    assert (process.returncode, err) == (130, b"error: interrupted\n")


_UNRAISABLE_THEN_SPIN = "\n".join(
    [
        "import sys, time",
        "from cce_cli.entry import _quiet_interrupts",
        "sys.unraisablehook = _quiet_interrupts",
        "class Finalizer:",
        "    def __del__(self):",
        "        raise {exception}",
        "try:",
        "    Finalizer()",
        "    deadline = time.monotonic() + {spin_seconds}",
        # Not `while time.monotonic() < deadline`: on 3.13 an interrupt raised in a
        # tight loop's condition escapes the enclosing try (CPython issue #130279).
        "    while True:",
        "        if time.monotonic() > deadline:",
        "            break",
        "    print('carried on')",
        "except KeyboardInterrupt:",
        "    print('interrupted')",
    ]
)


@pytest.mark.parametrize(
    ("exception", "stdout", "stderr_has"),
    [
        ("KeyboardInterrupt", b"interrupted\n", b""),
        ("ValueError('finalizer')", b"carried on\n", b"Exception ignored"),
    ],
)
def test_ctrl_c_in_a_finalizer_still_stops_the_main_thread(
    exception: str, stdout: bytes, stderr_has: bytes
) -> None:
    # A Ctrl-C that lands in code Python cannot raise from (a finalizer, an import-time
    # weakref callback) is re-delivered to ordinary code; any other exception there is
    # reported the standard way. Only a lost Ctrl-C spins for the full 20 seconds.
    spin_seconds = 20 if exception == "KeyboardInterrupt" else 1
    script = _UNRAISABLE_THEN_SPIN.format(exception=exception, spin_seconds=spin_seconds)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, check=False
    )
    assert done.stdout == stdout, done.stderr
    assert stderr_has in done.stderr
    if not stderr_has:
        assert done.stderr == b""


_COMMAND_TURNS_CTRL_C_INTO = "\n".join(
    [
        "import os, signal, sys, time, types",
        "from cce_cli.entry import main",
        "command = types.ModuleType('cce_cli.main')",
        "def run():",
        "    try:",
        "        if {interrupt}:",
        "            os.kill(os.getpid(), signal.SIGINT)",
        "            time.sleep(20)",
        # What numpy's extension module does when the interrupt lands while it imports.
        "    except KeyboardInterrupt:",
        "        pass",
        "    raise ImportError('PyCapsule_Import could not import module \"datetime\"')",
        "command.main = run",
        "sys.modules['cce_cli.main'] = command",
        "raise SystemExit(main())",
    ]
)


@pytest.mark.parametrize("interrupt", [True, False])
def test_an_error_made_of_a_ctrl_c_is_reported_as_the_interrupt(interrupt: bool) -> None:
    # C code running when Ctrl-C comes may raise an error of its own instead of
    # KeyboardInterrupt; after a Ctrl-C that is `error: interrupted`, 130. The same error
    # without a Ctrl-C is a real failure and is not hidden.
    script = _COMMAND_TURNS_CTRL_C_INTO.format(interrupt=interrupt)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, check=False
    )
    if interrupt:
        assert (done.returncode, done.stderr) == (130, b"error: interrupted\n")
    else:
        assert done.returncode == 1
        assert b"ImportError: PyCapsule_Import" in done.stderr


_CTRL_C_AFTER_THE_COMMAND = "\n".join(
    [
        "import atexit, os, signal, sys, time, types",
        "from cce_cli.entry import main",
        "command = types.ModuleType('cce_cli.main')",
        "class LateCtrlC:",
        "    def __del__(self):",
        "        os.kill(os.getpid(), signal.SIGINT)",
        "        time.sleep(0.2)",
        "def run():",
        "    print('done', flush=True)",
        "    if '{moment}' == 'as it returns':",
        "        os.kill(os.getpid(), signal.SIGINT)",
        "    elif '{moment}' == 'at exit':",
        "        atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(0.2)))",
        # Freed with __main__'s globals, after the shutdown has reset SIGINT's handler.
        "    elif '{moment}' == 'as modules are freed':",
        "        globals()['late'] = LateCtrlC()",
        "    return 0",
        "command.main = run",
        "sys.modules['cce_cli.main'] = command",
        "raise SystemExit(main())",
    ]
)


@pytest.mark.parametrize(
    ("moment", "outcome"),
    [
        ("as it returns", (130, b"done\n", b"error: interrupted\n")),
        ("at exit", (0, b"done\n", b"")),
        ("as modules are freed", (0, b"done\n", b"")),
    ],
)
def test_a_ctrl_c_after_the_command_returned_leaves_its_status(
    moment: str, outcome: tuple[int, bytes, bytes]
) -> None:
    # Until the command returns, Ctrl-C is `error: interrupted`, 130. After it (the work
    # done, the output flushed) it is ignored: at interpreter shutdown it was reported as
    # "Exception ignored", or, once the shutdown had reset SIGINT, killed the process by
    # the signal with nothing said.
    script = _CTRL_C_AFTER_THE_COMMAND.format(moment=moment)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == outcome


@pytest.mark.slow
def test_ctrl_c_near_the_end_of_index_is_interrupted_or_done(tmp_path: Path) -> None:
    # A Ctrl-C swept over the last part of a real `cce index`: every run ends either as
    # interrupted (130, one line) or as done (0, the summary), never killed by the signal.
    root = repo(tmp_path / "r")
    for number in range(40):
        (root / f"m_{number}.py").write_text(_BUSY_SOURCE)
    command = [*CCE, "index", str(root), "--no-metrics"]
    started = time.monotonic()
    subprocess.run(command, capture_output=True, timeout=120, check=True)
    took = time.monotonic() - started
    outcomes = set()
    for step in range(40):
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(took * (0.7 + 0.5 * step / 40))
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        if process.returncode == 0:
            assert out.startswith(b"Indexed ") and err == b""
        else:
            assert (process.returncode, err) == (130, b"error: interrupted\n")
        outcomes.add(process.returncode)
    assert outcomes <= {0, 130}


def test_an_ignored_ctrl_c_stays_ignored() -> None:
    # `nohup` and background jobs of non-interactive shells start with SIGINT ignored.
    script = "\n".join(
        [
            "import signal",
            "signal.signal(signal.SIGINT, signal.SIG_IGN)",
            "import sys, types",
            "from cce_cli.entry import main",
            "command = types.ModuleType('cce_cli.main')",
            "command.main = lambda: print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN) or 0",
            "sys.modules['cce_cli.main'] = command",
            "raise SystemExit(main())",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (0, b"True\n")


_CTRL_C_AS_BM25_FORKS = "\n".join(
    [
        "import os, signal, sys",
        "from cce_retrieval.build import processes",
        "from cce_cli.entry import main",
        "fork = os.fork",
        "def fork_then_interrupt():",
        "    pid = fork()",
        "    if pid:",  # the building process: Ctrl-C before it holds the child's handle
        "        print(pid, file=sys.stderr, flush=True)",
        "        os.kill(os.getpid(), signal.SIGINT)",
        "    return pid",
        "processes.os = type('os', (), {**vars(os), 'fork': staticmethod(fork_then_interrupt)})",
        "raise SystemExit(main())",
    ]
)


@pytest.mark.skipif(sys.platform != "linux", reason="BM25 is forked apart on Linux")
def test_ctrl_c_as_bm25_forks_leaves_no_child_and_no_staged_part(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_AS_BM25_FORKS, "index", str(root), "--no-metrics"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    child, _, rest = done.stderr.partition(b"\n")
    assert (done.returncode, rest) == (130, b"error: interrupted\n")
    # The child was killed and collected before the command ended: no process, no parts.
    with pytest.raises(ProcessLookupError):
        os.kill(int(child), 0)
    time.sleep(0.5)  # what a child still running would write meanwhile
    sidecar = root / ".cce" / "index.json.sidecar"
    assert not sidecar.exists() or list(sidecar.iterdir()) == []


# --- control and bidi characters in human output (17) ---------------------------------------


def test_search_escapes_hostile_file_names(run_cce: RunCce, tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    (root / "evil\x1b[2J\u202e.py").write_text("def login_evil(user):\n    return '\x1b[31m'\n")
    (root / "new\nline.py").write_text("def login_newline(user):\n    pass\n")
    run_cce("index", str(root), "--no-metrics")
    code, out, _ = run_cce("search", "login", str(root), "--no-metrics")
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out
    assert '"evil\\u001b[2J\\u202e.py":' in out
    assert '"new\\nline.py":' in out


# --- cce search DIR, footer, graph rows (21) ----------------------------------------------


def test_search_takes_the_positional_dir(
    run_cce: RunCce, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repo(tmp_path / "r")
    run_cce("index", str(root), "--no-metrics")
    monkeypatch.chdir(tmp_path)  # no ./.cce here: the DIR argument must be used
    code, out, err = run_cce("search", "login", str(root))
    assert (code, err) == (0, "")
    assert "auth.py" in out
    assert "feedback" not in out
    assert out.splitlines()[-1].startswith("query-id: ")
    code, _, err = run_cce("search", "login", str(root), "--dir", str(root))
    assert code == 2 and "either DIR or --dir" in err


def test_graph_expansion_rows_are_labelled_and_json_is_unchanged(
    run_cce: RunCce, tmp_path: Path
) -> None:
    root = repo(tmp_path / "r")
    run_cce("index", str(root), "--no-metrics")
    store = str(root / ".cce" / "index.json")
    _, out, _ = run_cce("search", "login", "--store", store, "--top-k", "1", "--no-metrics")
    rows = [line for line in out.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert len(rows) == 2  # one ranked row plus its related file
    assert not rows[0].endswith("[graph: related file]")
    assert rows[1].endswith("  [graph: related file]") and "util.py" in rows[1]
    _, text, _ = run_cce(
        "search", "login", "--store", store, "--top-k", "1", "--no-metrics", "--json"
    )
    assert "graph" not in text and len(json.loads(text)["results"]) == 2


# --- --compare , and relevance --dir walk errors (22) ---------------------------------------


def test_compare_comma_blames_compare(run_cce: RunCce, tmp_path: Path) -> None:
    fixture = str(fixtures(tmp_path / "f.jsonl"))
    code, _, err = run_cce(
        "relevance", fixture, "--dir", str(repo(tmp_path / "r")), "--compare", ","
    )
    assert code == 2
    assert err == "error: --compare requires exactly two distinct backends, e.g. bm25,hybrid\n"


def test_relevance_dir_warns_about_walk_errors(run_cce: RunCce, tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    os.mkfifo(root / ".gitignore")  # unreadable as a .gitignore: one walk error
    code, _, err = run_cce("relevance", str(fixtures(tmp_path / "f.jsonl")), "--dir", str(root))
    assert code == 0
    assert err.startswith("warning: 1 .gitignore file could not be read")


@pytest.mark.parametrize("kind", ["fifo", "zero-link", "oversized"])
def test_an_unreadable_gitignore_is_said_to_be_ignored_not_to_lose_files(
    run_cce: RunCce, tmp_path: Path, kind: str
) -> None:
    # Its directory is indexed as if it had no .gitignore: saying files under it were
    # not indexed would send the user looking for files that are there.
    root = repo(tmp_path / "r")
    (root / "sub").mkdir()
    (root / "sub" / "c.py").write_text("def c():\n    return 3\n")
    gitignore = root / "sub" / ".gitignore"
    if kind == "fifo":
        os.mkfifo(gitignore)
    elif kind == "zero-link":
        gitignore.symlink_to("/dev/zero")
    else:
        gitignore.write_bytes(b"#" * (8 * 1024 * 1024 + 1))
    code, out, err = run_cce("index", str(root), "--no-metrics")
    assert code == 0
    assert "  files indexed     : 3\n" in out
    assert "  walk errors       : 1\n" in out
    assert err == (
        "warning: 1 .gitignore file could not be read (not a regular file, or larger than "
        "8 MiB) and was ignored; files it would have excluded were indexed\n"
    )


def test_an_unreadable_directory_keeps_the_reference_warning(
    run_cce: RunCce, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repo(tmp_path / "r")
    os.mkfifo(root / ".gitignore")
    (root / "locked").mkdir()
    (root / "locked" / "d.py").write_text("x = 1\n")
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:  # a directory this user may not list (tests run as root)
        if os.fsencode(path).endswith(b"/locked"):
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, out, err = run_cce("index", str(root), "--no-metrics")
    assert code == 0
    assert "  walk errors       : 2\n" in out
    assert err.splitlines() == [
        "warning: 1 directory could not be read; files under them were NOT indexed — the "
        "index may be incomplete and may differ across machines",
        "warning: 1 .gitignore file could not be read (not a regular file, or larger than "
        "8 MiB) and was ignored; files it would have excluded were indexed",
    ]


# --- the metrics log (3) ----------------------------------------------------------------------


def test_metrics_log_symlink_is_never_followed(run_cce: RunCce, tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (root / ".cce").mkdir()
    (root / ".cce" / "metrics.jsonl").symlink_to(victim)
    code, _, err = run_cce("index", str(root))
    assert code == 0
    code, _, err = run_cce("search", "secret query text", str(root))
    assert code == 0
    assert "is a symlink" in err
    assert victim.read_text() == "precious\n"


def test_metrics_log_gets_whole_lines_or_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / ".cce" / "index.json")
    assert events.append_event(store, {"event": "a"}) is not None
    log = tmp_path / ".cce" / "metrics.jsonl"
    before = log.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("cce_cli.formats.event_log.os.write", half_then_full)
    assert events.append_event(store, {"event": "b"}) is None
    monkeypatch.undo()
    assert log.read_bytes() == before
    assert events.append_event(store, {"event": "c"}) is not None
    assert [json.loads(line)["event"] for line in log.read_text().splitlines()] == ["a", "c"]
    assert "No space left on device" in capsys.readouterr().err


# --- conformance -o (4) ------------------------------------------------------------------------


def test_conformance_output_is_replaced_atomically(
    run_cce: RunCce, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repo(tmp_path / "r")
    output = tmp_path / "conformance.json"
    output.write_text("previous good table\n")

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("cce_retrieval.store.fileio.os.fsync", full_disk)
    code, out, err = run_cce("conformance", str(root), "-o", str(output))
    assert (code, out) == (1, "")
    assert "No space left on device" in err
    assert output.read_text() == "previous good table\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conformance.json", "r"]
    monkeypatch.undo()
    assert run_cce("conformance", str(root), "-o", str(output))[0] == 0
    assert json.loads(output.read_text())


def test_conformance_can_still_write_to_a_pipe(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    result = subprocess.run(
        [*CCE, "conformance", str(root), "-o", "/dev/stdout"], capture_output=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(b"{") and result.stdout.endswith(b"wrote /dev/stdout\n")
    assert cmd_conformance.configure is not None


# --- a device as the store path (1) -----------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_index_refuses_a_device_store(run_cce: RunCce, tmp_path: Path) -> None:
    import stat

    device = tmp_path / "null"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    code, out, err = run_cce("index", str(repo(tmp_path / "r")), "--store", str(device))
    assert (code, out) == (1, "")
    assert "exists and is not a regular file; refusing to replace it" in err
    assert stat.S_ISCHR(os.lstat(device).st_mode)


# --- closed stderr ---------------------------------------------------------------------------


def _closed_stderr(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `cce ARGS` from a shell with file descriptor 2 closed (`2>&-`), which is not the
    same as `stderr=DEVNULL`: Python then starts with `sys.stderr` None."""
    return subprocess.run(
        ["sh", "-c", 'exec "$@" 2>&-', "sh", *CCE, *args],
        cwd=cwd,
        capture_output=False,
        stdout=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("progress", [[], ["--progress"]], ids=["default", "forced-progress"])
def test_closed_stderr_runs_as_with_no_progress(tmp_path: Path, progress: list[str]) -> None:
    root = repo(tmp_path / "r")
    indexed = _closed_stderr(["index", str(root), *progress], tmp_path)
    assert indexed.returncode == 0
    assert indexed.stdout.startswith(f"Indexed {root}\n")
    found = _closed_stderr(["search", "login", "--dir", str(root), "--json"], tmp_path)
    assert found.returncode == 0
    assert json.loads(found.stdout)["results"][0]["file_path"] == "auth.py"


def test_closed_stderr_keeps_notes_off_stdout(tmp_path: Path) -> None:
    root = repo(tmp_path / "r")
    fixture = str(fixtures(tmp_path / "f.jsonl"))
    pooled = _closed_stderr(
        ["pool", fixture, "--dir", str(root), "--backends", "bm25", "-o", "judge.jsonl"], tmp_path
    )
    assert pooled.returncode == 0
    assert pooled.stdout == ""  # "wrote N judging lines" belongs on stderr, now the null device
    assert (tmp_path / "judge.jsonl").read_text().startswith("{")


# --- exit statuses of usage errors and of --help ---------------------------------------------


def test_an_empty_pool_backend_list_is_a_usage_error(run_cce: RunCce, tmp_path: Path) -> None:
    fixture = str(fixtures(tmp_path / "f.jsonl"))
    code, out, err = run_cce("pool", fixture, "--dir", str(repo(tmp_path / "r")), "--backends", ",")
    assert (code, out) == (2, "")
    known = "bm25, vector, hybrid, code, code-hybrid, grep"
    assert err == f"error: --backends needs at least one of {known}\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["--help"], ["relevance", "--help"]], ids=["cce", "relevance"])
def test_help_that_cannot_be_written_is_an_error(argv: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*CCE, *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60, check=False
        )
    assert done.returncode == 1
    assert done.stderr == (
        "error: could not write to stdout: No space left on device (os error 28)\n"
    )
