"""Running code from installed plugins: what any failure of that code becomes.

Why it exists: a backend or embedder plugin is code cce did not write, running in cce's
own process. Whatever it does (raise, call `sys.exit()`, recurse without end, return
the wrong thing) must end as one error that names the plugin and its entry point,
never as a traceback, a silent exit or an exit status the plugin chose: a plugin that
calls `sys.exit(0)` must not make a gate pass. This module owns that rule for both kinds
of plugin (docs/hostile-input.md#plugins); `rank/backends/plugins.py` and
`embed/plugins.py` run every call into a plugin through a `PluginCaller`.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import TypeVar

import attrs

__all__ = [
    "PluginCaller",
    "PluginError",
    "PluginInterrupt",
    "close_generator",
    "one_line",
    "refused_close",
]

_T = TypeVar("_T")

_MESSAGE_LIMIT = 300
"""Characters of a plugin's own exception message kept in an error line."""


class PluginError(Exception):
    """A plugin failed or broke its protocol; `str()` is the whole message, which starts
    `<kind> plugin 'NAME' (ENTRY POINT): `."""


class PluginInterrupt(KeyboardInterrupt):
    """A `KeyboardInterrupt` that came out of plugin code.

    It unwinds like the user's Ctrl-C (cleanup runs, nothing half-written is kept), and
    is one when the user did press Ctrl-C; a command that can tell that no Ctrl-C came
    (the `cce` command counts SIGINTs) reports `message` as an error instead.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[type[PluginInterrupt], tuple[str]]:
        return (PluginInterrupt, (self.message,))


_REFUSED_CLOSE: set[int] = set()
"""Ids of plugin generators that yielded again when closed, and so are still suspended."""


def close_generator(generator: types.GeneratorType[object, object, object]) -> None:
    """Close a plugin's generator now, so its `finally` runs where its failure is caught.

    One that yields again when closed raises `RuntimeError` here and stays suspended;
    Python tries again when it is collected and, failing again, can only print
    "Exception ignored" on stderr. Its id is kept so that the command's hook for such
    notes can drop that one (`refused_close`): the failure is already reported."""
    try:
        generator.close()
    except BaseException:
        if generator.gi_frame is not None:  # still suspended: it will be tried again
            _REFUSED_CLOSE.add(id(generator))
        raise


def refused_close(obj: object) -> bool:
    """Whether `obj`, being collected, is a plugin generator whose refusal to close was
    already reported (`close_generator`); it is forgotten once asked about."""
    if id(obj) in _REFUSED_CLOSE and isinstance(obj, types.GeneratorType):
        _REFUSED_CLOSE.discard(id(obj))
        return True
    return False


def one_line(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    """`text` on one line: controls escaped (`\\n`, `\\x1b`), cut to `limit` characters."""
    escaped = "".join(char if char.isprintable() else repr(char)[1:-1] for char in text[:limit])
    return escaped + ("..." if len(text) > limit else "")


def _message_of(error: BaseException) -> str:
    """`str(error)`, which is plugin code too when the plugin made the exception type."""
    try:
        return one_line(str(error))
    except Exception:  # an exception whose __str__ fails still names its type
        return "(its message could not be read)"


def _exit_code_of(error: SystemExit) -> str:
    """`repr` of the code given to `sys.exit()`, which may be any object of the plugin's."""
    try:
        return one_line(repr(error.code))
    except Exception:
        return "..."


def describe_failure(what: str, error: BaseException) -> str:
    """What happened, for the error line: `search() raised ValueError: boom`."""
    if isinstance(error, SystemExit):
        return f"{what} called sys.exit({_exit_code_of(error)}); a plugin must return or raise"
    if isinstance(error, RecursionError):
        return f"{what} recursed without end (RecursionError: {_message_of(error)})"
    message = _message_of(error)
    kind = type(error).__name__
    return f"{what} raised {kind}: {message}" if message else f"{what} raised {kind}"


@attrs.frozen
class PluginCaller:
    """Calls into one plugin; every failure becomes `error_type(prefix + what happened)`.

    `prefix` is `<kind> plugin 'NAME' (ENTRY POINT)`. `passes` are exception types of the
    plugin's protocol, let through unchanged (an embedder's `EmbedError`, which says its
    server is down). A `PluginError` (raised by cce's own checks while the plugin runs,
    or by another plugin it called) passes too. A `KeyboardInterrupt` becomes a
    `PluginInterrupt` naming the plugin. Everything else (any `Exception`, `SystemExit`,
    `GeneratorExit`, a `BaseException` of its own) becomes the error.
    """

    prefix: str
    error_type: Callable[[str], PluginError]
    passes: tuple[type[BaseException], ...] = ()

    @classmethod
    def of(
        cls,
        kind: str,
        name: str,
        entry_point: str,
        error_type: Callable[[str], PluginError],
        passes: tuple[type[BaseException], ...] = (),
    ) -> PluginCaller:
        """The guard of the `kind` plugin `name`, loaded from `entry_point` (`module:attr`;
        empty for one registered in the process, which is then named alone)."""
        where = f" ({entry_point})" if entry_point else ""
        return cls(f"{kind} plugin {name!r}{where}", error_type, passes)

    def strict(self) -> PluginCaller:
        """This guard with nothing passed through: every failure is the plugin's error."""
        return attrs.evolve(self, passes=())

    def error(self, what: str) -> PluginError:
        """The error for `what` went wrong: `<kind> plugin 'NAME' (ENTRY): what`."""
        return self.error_type(f"{self.prefix}: {what}")

    def call(self, what: str, function: Callable[..., _T], *args: object) -> _T:
        """`function(*args)`, its failures made errors that say `what` failed."""
        try:
            return function(*args)
        except PluginError:
            raise
        except KeyboardInterrupt:
            raise PluginInterrupt(f"{self.prefix}: {what} raised KeyboardInterrupt") from None
        except BaseException as error:
            if self.passes and isinstance(error, self.passes):
                raise
            raise self.error(describe_failure(what, error)) from error
