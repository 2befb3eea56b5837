"""The one exception type commands raise for a user-facing failure.

Why it exists: every command reports bad input the same way (`error: <message>` on
stderr, exit 1, never a traceback). Commands raise `CliError`; `cce_cli.main` is the
only place that turns it into output and an exit status.
"""

from __future__ import annotations


class CliError(Exception):
    """A failure the user can act on; `str(err)` is the message after `error: `."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message
