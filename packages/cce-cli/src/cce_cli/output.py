"""Writing a command's result to stdout as UTF-8 bytes, in one go, and showing names safely.

Why it exists: reports and search results must be byte-identical on every machine, so
they are encoded as UTF-8 whatever the locale says, and written whole so that an error
never leaves half a report behind. Every command that prints a result uses this. A
stdout that is closed, full or a broken pipe is an `error:` (exit 1), not a traceback.

`column` right-aligns a table cell and keeps at least one space before a cell too wide
for its column, so a long value (W+ over hundreds of queries) never runs into its
neighbour and reads as one number.

`write_output` is how every output option that names a file (`--results`,
`--export-qrels`, `-o`, `queries --fixtures`, `conformance -o`) writes it: a regular or
new file is replaced atomically, and a device or a pipe (`/dev/stdout`, `/dev/stderr`, a
FIFO) is written as a stream, since there is no file there to replace
(docs/hostile-input.md#output-streams-and-interrupts).

`visible_controls` is its sibling for prose and code (query text, snippets, the HTML
report's strings): controls are spelled `\\uNNNN` in place, without quotes.

`display_text` is how human output shows a name that came from the file system or the
command line (docs/hostile-input.md#printing): unchanged when it is plain, otherwise in
double quotes with C-style escapes, so a newline, an ESC sequence, a bidi override or a
byte that is not UTF-8 can neither garble the terminal nor be mistaken for another name.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections.abc import Iterable

from cce_cli.errors import CliError
from cce_retrieval import describe_os_error, write_atomic

# C0 and C1 controls, DEL, the bidi embedding/override/isolate controls and marks, and
# lone surrogates (what Python makes of non-UTF-8 bytes in argv and file names).
_NEEDS_QUOTING = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_SIMPLE_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    simple = _SIMPLE_ESCAPES.get(char)
    if simple is not None:
        return simple
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # an undecodable byte (surrogateescape)
    if _NEEDS_QUOTING.match(char):
        return f"\\u{code:04x}"
    return char


def display_text(text: str) -> str:
    """`text` as human output shows it: itself when plain, else quoted and escaped.

    Plain means no control, bidi or undecodable character and no leading `"`. Otherwise
    the result is `"…"` with `\\\\`, `\\"`, `\\n`, `\\r`, `\\t`, `\\xNN` for a byte that is
    not UTF-8 and `\\uNNNN` for other controls; distinct names always show distinctly.
    """
    if not text.startswith('"') and _NEEDS_QUOTING.search(text) is None:
        return text
    return '"' + "".join(_escape(char) for char in text) + '"'


def visible_controls(text: str, keep: str = "") -> str:
    """`text` with each control, bidi or undecodable character (but those in `keep`)
    spelled `\\uNNNN` (`\\xNN` for a byte that is not UTF-8), unquoted.

    For text that is prose or code rather than a name (a query, a snippet, a page's
    strings), where `display_text`'s quotes would be noise; ordinary text is unchanged.
    """
    if _NEEDS_QUOTING.search(text) is None:
        return text
    return "".join(
        char if char in keep or not _NEEDS_QUOTING.match(char) else _control_escape(char)
        for char in text
    )


def _control_escape(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's exit-time flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def stdout_error(err: OSError) -> CliError:
    """The `error:` for a failed write to stdout (the caller has given up on stdout)."""
    silence_stdout()
    if isinstance(err, BrokenPipeError):
        return CliError("stdout was closed before all output was written (broken pipe)")
    return CliError(f"could not write to stdout: {describe_os_error(err)}")


def number_text(value: float) -> str:
    """A number the user gave (a floor, alpha, power, delta) as a message shows it: the
    short `%g` form when that reads back as the same number, else the shortest text that
    does (`1.0000001`, never `1`), so a floor or level is never printed as a value it is
    not, and every value `%g` printed exactly prints as before."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def write_output(path: str, data: bytes) -> None:
    """Replace the regular (or new) file `path` with `data` atomically; write a device or
    a pipe (`/dev/stdout`) straight through. Raises OSError.

    An atomic write of `/dev/stdout` on a pipe followed the link to `pipe:[N]`, which no
    directory holds (`No such file or directory`); on a terminal it refused the device.
    A directory is left to `write_atomic`, which refuses it naming the path."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing (to be created), or for the writer to report
        mode = stat.S_IFREG
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        write_atomic(path, data)
        return
    with open(path, "wb") as handle:
        handle.write(data)


def write_stdout(text: str) -> None:
    """Write `text` to stdout as UTF-8 (falls back to text mode for a replaced stdout).

    A name with non-UTF-8 bytes that reached `text` unescaped is written with
    backslash escapes rather than failing. Raises CliError when stdout is closed or
    the write fails.
    """
    stream = sys.stdout
    if stream is None:
        raise CliError("stdout is closed; nothing was printed (redirect it, e.g. > /dev/null)")
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is None:
            stream.write(text)
        else:
            stream.flush()
            buffer.write(text.encode("utf-8", "backslashreplace"))
        stream.flush()
    except OSError as err:
        raise stdout_error(err) from None


def label_width(labels: Iterable[str], minimum: int) -> int:
    """The width of a left-aligned label column: `minimum` (the reference's layout) unless
    some label would fill it, then one more than the longest, so no label runs into the
    next column and output without long labels keeps its bytes."""
    return max([minimum, *(len(label) + 1 for label in labels)])


def column(text: str, width: int) -> str:
    """`text` right-aligned in `width` characters; one space before it when it is wider."""
    return f"{text:>{width}}" if len(text) < width else f" {text}"
