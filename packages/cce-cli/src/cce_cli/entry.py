"""The `cce` console script: the command's imports happen inside the interrupt handler.

Why it exists: importing the command (numpy, tree-sitter grammars, the retrieval and
statistics packages) takes a noticeable fraction of a second, and a Ctrl-C in that
window would otherwise end in a `KeyboardInterrupt` traceback. The script's entry point is this
module, which imports nothing heavy itself (the `cce_cli` package resolves its public
names lazily), so an interrupt at any point after start-up is `error: interrupted` with
exit status 130, like one during the command itself.

C code running when the Ctrl-C comes can turn the `KeyboardInterrupt` into an error of
its own: numpy's extension module, imported mid-interrupt, fails with an `ImportError`
("PyCapsule_Import could not import module"). So the entry point's SIGINT handler also
remembers that it ran, and an error that ends the command after a Ctrl-C is reported as
the interrupt it is. It also counts the Ctrl-Cs, so that a `KeyboardInterrupt` a plugin
raised by itself, with no Ctrl-C, can be told from the user's (`cce_cli.main`).

Once the command has returned, Ctrl-C is ignored until the process ends: the work is
done and the output flushed, and the interpreter's shutdown would otherwise die by the
signal without a word (docs/hostile-input.md#output-streams-and-interrupts).
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys

from cce_cli.interrupts import count_interrupts, counting_handler_installed, interrupt_received

INTERRUPTED = 130


def _quiet_interrupts(unraisable: sys.UnraisableHookArgs) -> None:
    """Re-deliver a Ctrl-C that landed in a callback Python cannot raise from (an
    import-time weakref callback, say), so the main thread still stops with
    `error: interrupted` instead of printing "Exception ignored" and carrying on.

    The hook runs on the main thread, which handles a pending signal at its next
    check, still inside this hook, where the exception would be ignored again. So a
    second thread re-delivers it: that thread needs the interpreter lock, which the main
    thread keeps until it is back in ordinary code.

    A plugin's generator that yielded again when cce closed it fails to close once more
    when it is collected; that failure was already the command's error, so its note is
    dropped (`cce_retrieval.plugin_calls.refused_close`)."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        with contextlib.suppress(RuntimeError):  # no new threads at interpreter exit
            _thread.start_new_thread(_thread.interrupt_main, ())
        return
    plugin_calls = sys.modules.get("cce_retrieval.plugin_calls")
    if plugin_calls is not None and plugin_calls.refused_close(unraisable.object):
        return  # a plugin's generator that would not close: already reported as an error
    sys.__unraisablehook__(unraisable)


def main() -> int:
    """Import and run `cce_cli.main.main`; a Ctrl-C at any moment until it returns exits
    130 with `error: interrupted`, and one after that is ignored (the command's status
    stands: its work is done and its output written)."""
    try:
        sys.unraisablehook = _quiet_interrupts
        count_interrupts()
        from cce_cli.main import main as run

        status = run()
        _ignore_late_interrupts()
        if interrupt_received() and status != INTERRUPTED:
            # A Ctrl-C swallowed where Python could not raise it (a finalizer) and not
            # yet re-delivered: it still came while the command ran.
            return _interrupted()
        return status
    except KeyboardInterrupt:
        return _interrupted()
    except Exception:
        if interrupt_received():  # what the interrupted code made of the Ctrl-C
            return _interrupted()
        raise


def _ignore_late_interrupts() -> None:
    """Ignore Ctrl-C from now until the process ends: the command has returned, its work
    is done and its output flushed, so the status is the command's.

    What is left is the interpreter's shutdown (atexit callbacks, joining finished
    threads, freeing modules). A Ctrl-C there raised where nothing could report it, and
    once the shutdown had reset SIGINT to its default action (before it frees the
    modules, which takes a while with numpy loaded) it killed the process by the signal,
    with no `error: interrupted` and no status 130. An ignored SIGINT is left ignored by
    the shutdown, so no moment is left where the signal decides the outcome. A SIGINT
    that was ignored from the start stays so; one the embedding program handles itself
    is left alone (only the console script's handlers are replaced)."""
    if (
        counting_handler_installed()
        or signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupted() -> int:
    with contextlib.suppress(OSError, ValueError):  # stderr itself may be gone
        print("error: interrupted", file=sys.stderr)
    return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
