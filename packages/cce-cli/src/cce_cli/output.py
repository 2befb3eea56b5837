"""Writing a command's result to stdout as UTF-8 bytes, in one go.

Why it exists: reports and search results must be byte-identical on every machine, so
they are encoded as UTF-8 whatever the locale says, and written whole so that an error
never leaves half a report behind. Every command that prints a result uses this.
"""

from __future__ import annotations

import sys


def write_stdout(text: str) -> None:
    """Write `text` to stdout as UTF-8 (falls back to text mode for a replaced stdout)."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
    else:
        sys.stdout.flush()
        buffer.write(text.encode("utf-8"))
    sys.stdout.flush()
