"""Helper processes: a lone forked child answers, fails and dies as `run_forked` says,
and a pool's pipes are widened (`cce_retrieval.build.processes`)."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from cce_retrieval.build import processes
from cce_retrieval.build.processes import can_fork_alone, pool_context, run_forked, widen_pipes

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="helpers are forked on Linux")


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@linux_only
def test_a_single_threaded_process_forks_and_gets_the_answer_or_the_error() -> None:
    out = run_python(
        """
        import os
        from cce_retrieval.build.processes import can_fork_alone, run_forked

        def fail():
            raise ValueError("no ranks for term 7")

        print(can_fork_alone())
        forked = run_forked(lambda: (os.getpid(), os.getppid(), [1, 2, 3]))
        child, parent, payload = forked.result()
        print(forked.pid == child)
        print(child != os.getpid(), parent == os.getpid(), payload)
        try:
            run_forked(fail).result()
        except ValueError as err:
            print("ValueError", err)
        try:
            run_forked(lambda: os._exit(3)).result()
        except OSError as err:
            print("OSError", "without an answer" in str(err))
        """
    )
    assert out.splitlines() == [
        "True",
        "True",
        "True True [1, 2, 3]",
        "ValueError no ranks for term 7",
        "OSError True",
    ]


def test_beside_other_threads_the_work_runs_on_a_thread_of_this_process() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not can_fork_alone()
        forked = run_forked(os.getpid)
        assert forked.pid is None and forked.result() == os.getpid()
        found: dict[str, int] = {}
        with pytest.raises(KeyError):
            run_forked(lambda: found["missing"]).result()
    finally:
        release.set()
        other.join()


@linux_only
def test_a_cancelled_child_is_killed_at_once_and_collected() -> None:
    out = run_python(
        """
        import os, time
        from cce_retrieval.build.processes import run_forked

        forked = run_forked(lambda: time.sleep(60))
        began = time.monotonic()
        forked.cancel()
        print(time.monotonic() - began < 5)
        try:
            os.kill(forked.pid, 0)  # collected: no such process any more, not a zombie
            print("still there")
        except ProcessLookupError:
            print("gone")
        try:
            forked.result()
        except OSError as err:
            print("taken", "already taken" in str(err))
        """
    )
    assert out.splitlines() == ["True", "gone", "taken True"]


@linux_only
def test_a_forked_helper_leaves_when_its_parent_is_killed() -> None:
    out = run_python(
        """
        import os, signal, time
        from cce_retrieval.build.processes import run_forked

        read_end, write_end = os.pipe()
        middle = os.fork()
        if middle == 0:
            os.close(read_end)
            def linger():
                os.write(write_end, str(os.getpid()).encode() + b"\\n")
                time.sleep(60)
            run_forked(linger)
            time.sleep(60)
            os._exit(0)
        os.close(write_end)
        helper = int(os.read(read_end, 64).split()[0])
        os.kill(middle, signal.SIGKILL)
        os.waitpid(middle, 0)
        deadline = time.monotonic() + 10
        alive = True
        while alive and time.monotonic() < deadline:
            try:
                os.kill(helper, 0)
                time.sleep(0.05)
            except ProcessLookupError:
                alive = False
        print("helper gone" if not alive else "helper still running")
        """
    )
    assert out.strip() == "helper gone"


@linux_only
def test_a_pools_task_and_result_pipes_hold_a_megabyte() -> None:
    import fcntl

    with open("/proc/sys/fs/pipe-max-size") as limit:
        if int(limit.read()) < processes._PIPE_BYTES:
            pytest.skip("this system caps pipes below a megabyte")
    pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=pool_context())
    try:
        ends = [pool._result_queue._reader, pool._call_queue._writer]  # type: ignore[attr-defined]
        before = {fcntl.fcntl(end.fileno(), fcntl.F_GETPIPE_SZ) for end in ends}
        widen_pipes(pool)
        after = {fcntl.fcntl(end.fileno(), fcntl.F_GETPIPE_SZ) for end in ends}
        assert max(before) < processes._PIPE_BYTES
        assert after == {processes._PIPE_BYTES}
        assert pool.submit(sum, [1, 2, 3]).result(timeout=30) == 6
    finally:
        pool.shutdown()


def test_an_interrupt_in_a_deferred_block_is_raised_when_the_block_ends() -> None:
    out = run_python(
        """
        import os, signal
        from cce_retrieval.build.processes import interrupts_deferred

        steps = []
        try:
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                steps.append("after the signal")
            steps.append("after the block")
        except KeyboardInterrupt:
            steps.append("interrupted")
        print(steps, signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        """
    )
    assert out.strip() == "['after the signal', 'interrupted'] True"


def test_a_deferred_block_keeps_an_ignored_interrupt_ignored() -> None:
    out = run_python(
        """
        import os, signal
        from cce_retrieval.build.processes import interrupts_deferred

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
        print("carried on", signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
        """
    )
    assert out.strip() == "carried on True"


@linux_only
def test_ctrl_c_while_the_pool_starts_leaves_no_worker_behind() -> None:
    # The interrupt lands right after the workers are forked, before the thread that
    # feeds and stops them exists: the window where, without the deferral, a build leaves
    # workers that interpreter exit waits for forever.
    out = run_python(
        """
        import concurrent.futures.process as process, multiprocessing, os, signal, sys
        import tempfile
        from pathlib import Path
        from cce_retrieval.build import outcomes as build_outcomes
        from cce_retrieval import HashEmbedder, build_index

        root = Path(tempfile.mkdtemp())
        for n in range(40):
            (root / f"m{n}.py").write_text(f"def f{n}(x):\\n    return x + {n}\\n")
        build_outcomes._PARALLEL_MIN_BYTES = 0
        launch = process.ProcessPoolExecutor._launch_processes

        def launch_then_interrupt(self):
            launch(self)
            os.kill(os.getpid(), signal.SIGINT)

        process.ProcessPoolExecutor._launch_processes = launch_then_interrupt
        try:
            build_index(str(root), HashEmbedder(), jobs=2)
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted", multiprocessing.active_children())
        """
    )
    assert out.strip() == "interrupted []"


@linux_only
def test_helpers_leave_ctrl_c_to_the_starting_process() -> None:
    out = run_python(
        """
        import os, signal
        from cce_retrieval.build.processes import run_forked

        def interrupted_self():
            os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C reaches the group
            return "finished"

        print(run_forked(interrupted_self).result())
        """
    )
    assert out.strip() == "finished"


def test_forks_without_garbage_runs_pending_finalizers_first_and_freezes_the_rest() -> None:
    import gc
    import weakref

    from cce_retrieval import forks_without_garbage

    class Cycle:
        cycle: object

    finalized: list[str] = []
    garbage = Cycle()
    garbage.cycle = garbage
    reference = weakref.ref(garbage, lambda _: finalized.append("collected"))
    del garbage
    collecting = gc.isenabled()
    gc.disable()  # no chance collection before the block
    try:
        assert reference() is not None and finalized == []
        with forks_without_garbage():
            # Collected before anything in the block could fork, and here, not in a child.
            assert finalized == ["collected"]
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() == 0
    finally:
        if collecting:
            gc.enable()
