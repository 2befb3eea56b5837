"""Helper processes of a build: how they start, how they answer, and that they never
outlive the process that started them.

Why it exists: a build's CPU-bound work runs beside the interpreter lock, in other
processes. On Linux they are forked: a fork starts in milliseconds and shares what the
starting process already holds (the loaded grammars, a finished build's token counts)
without copying or pickling it. A fork beside other threads can leave the child
waiting forever on a lock one of them held, so a lone child (`run_forked`) is forked
only from a single-threaded process, and work is run on a thread otherwise. A helper
whose starting process is gone, even SIGKILLed, leaves at once (`exit_with_parent`),
so a killed `cce index` leaves no process behind.

Ctrl-C is the starting process's to answer. A helper ignores it (`become_helper`):
a terminal sends it to the whole process group, and a helper interrupted mid-task
would print its own traceback. The starting process stops its helpers as it unwinds.
While a pool starts, it defers a Ctrl-C (`interrupts_deferred`): an interrupt between
forking the workers and starting the thread that feeds them would leave workers that no
shutdown reaches, and interpreter exit would wait for them forever.

A worker writes its result into a pipe the starting process reads on a thread of its
own, which shares the interpreter lock with the rest of the build: a 64 KB pipe makes a
worker wait, about 0.7 s per worker per stdlib build, until that thread reads on.
`widen_pipes` lets a pool's pipes hold 1 MB, so most results are written at once.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import multiprocessing
import multiprocessing.context
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Generic, TypeVar

_T = TypeVar("_T")

_PARENT_POLL_S = 0.25
_PIPE_BYTES = 1 << 20  # Linux's default ceiling for an unprivileged process


def pool_context() -> multiprocessing.context.BaseContext:
    """The start method of worker pools: fork on Linux, the platform's default elsewhere."""
    if sys.platform == "linux":
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def widen_pipes(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Let `pool`'s task and result pipes hold `_PIPE_BYTES` (Linux; before any task).

    The executor keeps its pipes private, so they are looked up by name; where they are
    not found, or the system refuses the size, they stay as they are (only slower).
    """
    if sys.platform != "linux":
        return
    import fcntl

    for queue, end in (("_result_queue", "_reader"), ("_call_queue", "_writer")):
        connection = getattr(getattr(pool, queue, None), end, None)
        fileno = getattr(connection, "fileno", None)
        if callable(fileno):
            with contextlib.suppress(OSError, ValueError, TypeError):
                fcntl.fcntl(fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def exit_with_parent(parent: int) -> None:
    """In a helper process: leave as soon as process `parent` is gone (a pool initializer)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="cce-parent-watch", daemon=True).start()


def become_helper(parent: int) -> None:
    """In a helper process: ignore Ctrl-C and leave with process `parent` (a pool
    initializer). Stopping helpers on an interrupt is the starting process's work."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent(parent)


@contextlib.contextmanager
def forks_without_garbage() -> Iterator[None]:
    """Unreachable objects collected here, and everything else frozen, for a block that
    forks worker processes (the first task of a fork-context pool).

    A forked worker inherits every object of this process, garbage awaiting the cyclic
    collector included, and every lock as it stood at the fork. When the worker's own
    collector later frees such garbage, its finalizers run in the worker: an earlier
    executor's weakref callback (`concurrent.futures.process`) takes that executor's
    shutdown lock, which a thread of this process may have held at the fork, and the
    worker waits for it forever (seen as a suite run that never ended, on Python 3.13,
    after earlier suites in the same process). Collecting first runs those finalizers
    here, where the lock's holder releases it; freezing keeps the workers' collectors
    off every object they inherit."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold back a Ctrl-C (SIGINT) for the block, and raise it as it ends.

    For steps that must not be cut in the middle, such as starting a pool: its
    workers exist once forked, but only a fully started pool can be shut down. The
    interrupt is raised by the handler that was in place, once the block is done.
    Off the main thread, or when SIGINT is ignored or left to the system, the block
    simply runs (nothing could interrupt it there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield
        return
    held: list[tuple[int, FrameType | None]] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append((signum, frame))

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            previous(*held[0])


def can_fork_alone() -> bool:
    """Whether a lone child may be forked here: on Linux, from a single-threaded process."""
    return sys.platform == "linux" and threading.active_count() == 1


class Forked(Generic[_T]):
    """Work started by `run_forked`: its result, once, or its cancellation."""

    def __init__(
        self,
        pid: int | None,
        read_end: int | None,
        future: concurrent.futures.Future[_T] | None,
    ) -> None:
        self.pid = pid
        """The child's process id; None when the work runs on a thread."""
        self._read_end = read_end
        self._future = future

    def result(self) -> _T:
        """Wait for the work's result, or raise what it raised. A child that ended
        without a whole answer (killed, interrupted) raises OSError."""
        if self._future is not None:
            return self._future.result()
        data, status = self._collect()
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0) or not data:
            raise OSError(f"a helper process ended without an answer (wait status {status})")
        try:
            answer = pickle.loads(data)  # our own child's bytes, through our own pipe
        except Exception as err:
            raise OSError(f"a helper process's answer could not be read: {err}") from err
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[no-any-return]

    def cancel(self) -> None:
        """Stop a child at once (SIGKILL) and collect it; work on a thread is left to end."""
        if self.pid is None or self._read_end is None:  # on a thread, or collected
            return
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        self._collect()

    def _collect(self) -> tuple[bytes, int]:
        read_end, self._read_end = self._read_end, None
        if read_end is None or self.pid is None:
            raise OSError("a helper process's answer was already taken")
        try:
            with os.fdopen(read_end, "rb") as pipe:
                data = pipe.read()
        finally:
            _, status = os.waitpid(self.pid, 0)
        return data, status


def run_forked(work: Callable[[], _T]) -> Forked[_T]:
    """Start `work` in a forked child (when `can_fork_alone`, else on a thread).

    The result travels back pickled, so it should be small. `Forked.result` or
    `Forked.cancel` must be called once, to collect the child. Raises OSError when no
    child can be started.
    """
    if not can_fork_alone():
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cce-helper")
        future = executor.submit(work)
        executor.shutdown(wait=False)
        return Forked(None, None, future)
    parent = os.getpid()
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # pragma: no cover - the child's lines are never reported (it _exits)
        os.close(read_end)
        _answer_and_exit(work, parent, write_end)
    os.close(write_end)
    return Forked(pid, read_end, None)


def _answer_and_exit(
    work: Callable[[], object], parent: int, write_end: int
) -> None:  # pragma: no cover - runs in the child
    status = 1
    try:
        become_helper(parent)
        try:
            answer: object = work()
        except Exception as err:  # sent back, raised again by the waiting side
            answer = err
        try:
            data = pickle.dumps(answer)
        except Exception as err:  # an answer that does not pickle is an error of its own
            data = pickle.dumps(OSError(f"a helper process's answer could not be sent: {err}"))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
        status = 0
    finally:
        # Nothing of the parent's runs here: no atexit handlers, no buffered stdout.
        os._exit(status)
