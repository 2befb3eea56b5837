"""Counting the Ctrl-Cs that reach the `cce` process.

Why it exists: the console script (`cce_cli.entry`) installs the handler before anything
heavy is imported, and the command (`cce_cli.main`) asks afterwards whether a
`KeyboardInterrupt` came with a Ctrl-C behind it or was raised by a plugin on its own.
Both read the same count, so it lives below both of them; it imports nothing but the
standard library's signal handling, to stay instant at start-up.
"""

from __future__ import annotations

import contextlib
import signal
from types import FrameType

_interrupt_received = False
_interrupts = 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """`signal.default_int_handler`, remembering that a Ctrl-C came."""
    global _interrupt_received, _interrupts
    _interrupt_received = True
    _interrupts += 1
    raise KeyboardInterrupt


def interrupt_received() -> bool:
    """Whether a Ctrl-C has come since the handler was installed."""
    return _interrupt_received


def count_interrupts() -> None:
    """Have SIGINT counted (Python's default handler, plus the count), unless it is
    ignored or handled by someone else; only the main thread can set a handler."""
    with contextlib.suppress(ValueError):  # not the main thread
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _interrupt)  # an ignored SIGINT stays ignored


def counting_handler_installed() -> bool:
    """Whether SIGINT is handled by this module's counting handler."""
    return signal.getsignal(signal.SIGINT) is _interrupt


def interrupts_received() -> int | None:
    """How many Ctrl-Cs have come, or None when that cannot be known (SIGINT is handled
    by someone else's handler). An ignored SIGINT never interrupts: the count stays 0."""
    handler = signal.getsignal(signal.SIGINT)
    if handler is signal.SIG_IGN:
        return 0
    return _interrupts if handler is _interrupt else None
