"""A suite on a Dask cluster that misbehaves: every wait is bounded by `CCE_DASK_TIMEOUT`
and ends in one `error:` line, and an address that is not `dask://HOST:PORT` is a usage
error before `distributed` sees it (docs/suites.md#dask, docs/hostile-input.md). Servers
listen on 127.0.0.1 only; the commands run as subprocesses, since a hang or a traceback
printed at exit is what is tested, with a 2-second deadline."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cce_cli.evaluation import member_workers

SAMPLE = Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


def _suite(root: Path, members: int = 1) -> Path:
    shutil.copytree(SAMPLE, root / "corpus")
    (root / "f.jsonl").write_text(
        '{"schema": "cce.relevance/v1", "corpus": "corpus"}\n'
        '{"id": "a", "query": "load config", "expected": ["config.py"], "k": 5}\n',
        encoding="utf-8",
    )
    blocks = "".join(
        f'[[members]]\nname = "m{i}"\nfixtures = "f.jsonl"\ncorpus = "corpus"\n\n'
        for i in range(members)
    )
    manifest = root / "suite.toml"
    manifest.write_text(f'schema = "cce.suite/v1"\n\n{blocks}', encoding="utf-8")
    return manifest


def _cce(manifest: Path, address: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CCE_DASK_TIMEOUT": "2"}
    command = [sys.executable, "-m", "cce_cli", "relevance", str(manifest), "--executor", address]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        ("dask://127.0.0.1:notaport", "dask://127.0.0.1:notaport"),
        ("dask://[::1", "dask://[::1"),
        ("dask://user:pw@127.0.0.1:1", "dask://***@127.0.0.1:1"),
        ("dask://127.0.0.1:0", "dask://127.0.0.1:0"),
        ("dask://127.0.0.1:8786/path", "dask://127.0.0.1:8786/path"),
    ],
)
def test_an_address_that_is_not_host_and_port_is_a_usage_error(
    tmp_path: Path, run_cce: RunCce, address: str, shown: str
) -> None:
    manifest = _suite(tmp_path)
    status, out, err = run_cce("relevance", str(manifest), "--executor", address)
    assert (status, out) == (2, "")
    assert err.startswith(f"error: --executor {shown}: ")
    assert err.count("\n") == 1 and "Traceback" not in err and "pw@" not in err


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


def test_a_scheduler_that_never_answers_is_an_error_within_the_deadline(
    tmp_path: Path, silent_server: int
) -> None:
    result = _cce(_suite(tmp_path), f"dask://127.0.0.1:{silent_server}")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"error: the Dask scheduler at tcp://127.0.0.1:{silent_server} accepted the connection "
        "but did not answer within 2 s; check that a Dask scheduler listens there, or raise "
        "CCE_DASK_TIMEOUT\n"
    )


_SCHEDULER = """
import asyncio, sys
from distributed import Scheduler

async def main():
    async with Scheduler(host="127.0.0.1", port=0, dashboard_address=None) as scheduler:
        print(scheduler.address, flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


@pytest.fixture
def workerless_scheduler() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A Dask scheduler on 127.0.0.1 with no worker: what a cluster is once its only
    worker was killed, nanny included. Yields its dask:// address and process."""
    pytest.importorskip("distributed")
    process = subprocess.Popen(
        [sys.executable, "-c", _SCHEDULER],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    address = process.stdout.readline().strip()
    assert address.startswith("tcp://127.0.0.1:"), address
    yield address.replace("tcp://", "dask://"), process
    process.kill()
    process.wait()


@pytest.mark.slow  # starting the scheduler and cce's wait of 2 s take about 15 s here
def test_a_cluster_without_workers_is_an_error_not_a_hang(
    tmp_path: Path, workerless_scheduler: tuple[str, subprocess.Popen[str]]
) -> None:
    address, _ = workerless_scheduler
    result = _cce(_suite(tmp_path), address)
    assert (result.returncode, result.stdout) == (1, "")
    target = address.replace("dask://", "tcp://")
    assert result.stderr == (
        f"error: the Dask cluster at {target} has had no worker for 2 s while member 'm0' "
        "waited to be scored (a worker was killed and none took its place); start a worker, "
        "or raise CCE_DASK_TIMEOUT\n"
    )


@pytest.mark.slow  # distributed gives up reconnecting after about 15 s
def test_a_scheduler_killed_mid_run_is_one_error_line(
    tmp_path: Path, workerless_scheduler: tuple[str, subprocess.Popen[str]]
) -> None:
    address, scheduler = workerless_scheduler
    env = {**os.environ, "CCE_DASK_TIMEOUT": "30"}  # the kill, not the idle bound, ends it
    command = [sys.executable, "-m", "cce_cli", "relevance", str(_suite(tmp_path))]
    process = subprocess.Popen(
        [*command, "--executor", address, "--progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    first = process.stderr.readline()  # once this is printed the member was submitted
    assert first == "members: 0/1 done, scoring m0\n"
    time.sleep(1)
    scheduler.send_signal(signal.SIGKILL)
    out, err = process.communicate(timeout=90)
    assert (process.returncode, out) == (1, "")
    assert err.startswith("error: the Dask scheduler at "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err


def test_a_bad_dask_timeout_names_the_variable(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CCE_DASK_TIMEOUT", "soon")
    status, out, err = run_cce("relevance", str(_suite(tmp_path)), "--executor", "dask://h:1")
    assert (status, out) == (1, "")
    assert err.startswith("error: CCE_DASK_TIMEOUT=soon is not a number of seconds;")


# --- --jobs above the members or the cores ------------------------------------------------


@pytest.mark.parametrize(
    ("jobs", "members", "cores", "workers", "message"),
    [
        (48, 3, 2, 2, "running 2 worker processes, since the suite has 3 members and 2 cores"),
        (8, 3, 16, 3, "running 3 worker processes, since the suite has 3 members and 16 cores"),
        (4, 1, 4, 1, "running 1 worker process, since the suite has 1 member and 4 cores"),
        (2, 3, 2, 2, None),
    ],
)
def test_jobs_are_capped_at_the_members_and_the_cores(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    jobs: int,
    members: int,
    cores: int,
    workers: int,
    message: str | None,
) -> None:
    monkeypatch.setattr(member_workers, "available_cores", lambda: cores)
    assert member_workers.member_workers(jobs, members) == workers
    err = capsys.readouterr().err
    if message is None:
        assert err == ""
    else:
        assert err.startswith(f"warning: --jobs {jobs}: {message}")


def test_a_suite_with_more_jobs_than_members_says_how_many_workers_ran(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = _suite(tmp_path, members=3)
    monkeypatch.setattr(member_workers, "available_cores", lambda: 2)
    status, _, err = run_cce("relevance", str(manifest), "--jobs", "48")
    assert status == 0
    assert err == (
        "warning: --jobs 48: running 2 worker processes, since the suite has 3 members and "
        "2 cores are available\n"
    )
    monkeypatch.setattr(member_workers, "available_cores", lambda: 8)
    status, _, err = run_cce("relevance", str(manifest), "--jobs", "48")
    assert status == 0
    assert err == (
        "warning: --jobs 48: running 3 worker processes, since the suite has 3 members and "
        "8 cores are available\n"
    )
