"""Suite members on a Dask cluster: the address checked, and every wait on the cluster bounded.

Why it exists: `--executor dask://HOST:PORT` (or a manifest's `executor`) hands members to
a cluster cce does not control, and `distributed`'s own timeouts do not bound every wait:
a "scheduler" that accepts the connection and never answers hangs `Client(timeout=...)`;
a cluster whose only worker was killed (nanny included) keeps the members waiting for a
worker forever; a scheduler killed mid-run ends in a `CancelledError` traceback; and an
address that does not parse ends in a `ValueError` traceback, then a second one from
`Client.__del__` a minute later. This module owns the cluster side of a suite run:
checking the address before `distributed` sees it, connecting within the deadline,
waiting for each member while watching that the scheduler answers and has a worker, and
closing. Each failure is one `error:` line naming the scheduler, what was awaited and the
fix (docs/suites.md#dask). The deadline is `CCE_DASK_TIMEOUT` seconds (default 60).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import math
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, TypeVar

from cce_cli.errors import CliError
from cce_cli.evaluation.member_workers import collect_in_order
from cce_cli.output import display_text

__all__ = [
    "DASK_TIMEOUT_ENV",
    "DEFAULT_DASK_TIMEOUT",
    "dask_timeout",
    "run_on_dask",
    "scheduler_address",
]

DASK_TIMEOUT_ENV: Final = "CCE_DASK_TIMEOUT"
DEFAULT_DASK_TIMEOUT: Final = 60.0
"""Seconds to connect, for each answer of the scheduler, and for a cluster to go without
any worker while members wait: long enough for a worker to restart, short enough that a
dead cluster is an error within a minute."""

_POLL_SECONDS: Final = 0.5
"""How often a wait for a member looks at the cluster."""

_Task = TypeVar("_Task")
_Result = TypeVar("_Result")


def dask_timeout() -> float:
    """`CCE_DASK_TIMEOUT` in seconds, or the default; a value that is not a positive
    number of seconds is an error naming the variable."""
    raw = os.environ.get(DASK_TIMEOUT_ENV)
    if raw is None or raw == "":
        return DEFAULT_DASK_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or value > 86_400:
        raise CliError(
            f"{DASK_TIMEOUT_ENV}={display_text(raw)} is not a number of seconds; set it to a "
            f"positive number up to 86400 (default {DEFAULT_DASK_TIMEOUT:g})"
        )
    return value


def _shown(address: str) -> str:
    """`address` with any user information replaced by `***`, printable."""
    prefix, _, rest = address.partition("://")
    if "@" in rest.split("/", 1)[0]:
        rest = "***@" + rest.split("@", 1)[1]
    return display_text(f"{prefix}://{rest}" if _ else address)


def scheduler_address(address: str) -> str:
    """The `tcp://HOST:PORT` of `dask://HOST:PORT`; a usage error (exit 2) naming the
    address, credentials redacted, when it is not one."""
    shown = _shown(address)
    usage = (
        f"--executor {shown}: name a Dask scheduler as dask://HOST:PORT "
        "(a host name or address and a port number, nothing else)"
    )
    if not address.startswith("dask://") or len(address) <= len("dask://"):
        raise CliError(usage, exit_code=2)
    rest = address[len("dask://") :]
    if any(char.isspace() or not char.isprintable() for char in rest):
        raise CliError(usage, exit_code=2)
    try:
        parts = urllib.parse.urlsplit("tcp://" + rest)
        port = parts.port
    except ValueError:
        raise CliError(usage, exit_code=2) from None
    if parts.username is not None or parts.password is not None:
        raise CliError(
            f"--executor {shown}: a Dask address carries no user or password; "
            "write dask://HOST:PORT",
            exit_code=2,
        )
    host = parts.hostname
    if not host or port is None or not 0 < port < 65536 or parts.path or parts.query:
        raise CliError(usage, exit_code=2)
    if parts.fragment or "#" in rest or "?" in rest:
        raise CliError(usage, exit_code=2)
    return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"


def _bounded(call: Callable[[], _Result], seconds: float) -> tuple[bool, _Result | None]:
    """`call()` in a daemon thread: (True, its value) when it returns within `seconds`,
    (False, None) when it does not; its exception is raised here."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as error:  # carried to the caller's thread
            box["error"] = error

    thread = threading.Thread(target=run, name="cce-dask-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        return False, None
    if "error" in box:
        raise box["error"]
    return True, box.get("value")


# The exceptions a member's future raises when the cluster, not the member, failed.
_CANCELLED: tuple[type[BaseException], ...] = (
    concurrent.futures.CancelledError,
    asyncio.CancelledError,
)


def _connect(target: str, shown: str, timeout: float) -> Any:
    from distributed import Client

    def make() -> Any:
        return Client(target, timeout=timeout, set_as_default=False)

    try:
        # A second past the deadline lets the client raise its own cause when it has one.
        finished, client = _bounded(make, timeout + 1)
    except (OSError, TimeoutError, ValueError) as error:
        cause = display_text(str(error).splitlines()[0] if str(error) else type(error).__name__)
        raise CliError(
            f"could not reach the Dask scheduler at {shown}: {cause}; start it, or check "
            "the address"
        ) from None
    if not finished:
        raise CliError(
            f"the Dask scheduler at {shown} accepted the connection but did not answer "
            f"within {timeout:g} s; check that a Dask scheduler listens there, or raise "
            f"{DASK_TIMEOUT_ENV}"
        )
    return client


def _worker_count(client: Any, timeout: float) -> int | None:
    """The workers the scheduler knows now, or None when it does not answer in time."""
    try:
        finished, count = _bounded(lambda: len(client.scheduler_info()["workers"]), timeout)
    except Exception:  # a closed comm, a scheduler gone: it did not answer
        return None
    return count if finished else None


def _result(
    client: Any, future: concurrent.futures.Future[_Result], name: str, shown: str, timeout: float
) -> _Result:
    """`future`'s result, watching the cluster while it is awaited: a scheduler that stops
    answering or a cluster without any worker for `timeout` seconds is an error."""
    idle_since: float | None = None
    while True:
        try:
            return future.result(timeout=_POLL_SECONDS)
        except concurrent.futures.TimeoutError:
            pass
        except _CANCELLED:
            raise CliError(
                f"the Dask scheduler at {shown} went away while member {name!r} was being "
                "scored (its work was cancelled); restart the scheduler and run the suite again"
            ) from None
        workers = _worker_count(client, timeout)
        if workers is None:
            raise CliError(
                f"the Dask scheduler at {shown} stopped answering (nothing within "
                f"{timeout:g} s) while member {name!r} was being scored; restart it and run "
                f"the suite again, or raise {DASK_TIMEOUT_ENV}"
            )
        if workers:
            idle_since = None
            continue
        now = time.monotonic()
        idle_since = now if idle_since is None else idle_since
        if now - idle_since >= timeout:
            raise CliError(
                f"the Dask cluster at {shown} has had no worker for {timeout:g} s while member "
                f"{name!r} waited to be scored (a worker was killed and none took its place); "
                f"start a worker, or raise {DASK_TIMEOUT_ENV}"
            )


@contextlib.contextmanager
def _quiet_distributed() -> Iterator[None]:
    """`distributed` logs its reconnection attempts and closing errors, tracebacks
    included, on stderr; cce says what failed in its own one line instead. Its loggers
    set their own levels, so each is switched off, and back on after."""
    import distributed  # noqa: F401  (creates its loggers)

    manager = logging.Logger.manager
    names = [
        "distributed",
        *(name for name in manager.loggerDict if name.startswith("distributed.")),
    ]
    loggers = [logging.getLogger(name) for name in names]
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, before, strict=True):
            logger.disabled = disabled


def run_on_dask(
    address: str,
    work: Callable[[_Task], _Result],
    tasks: Sequence[_Task],
    names: Sequence[str],
    progress: Callable[[int, int, str], None] | None = None,
) -> list[_Result]:
    """`work(task)` for every task on the Dask cluster at `address` (`dask://HOST:PORT`),
    results in task order; `names` name the tasks in progress lines and errors. A Ctrl-C
    cancels the tasks not yet done."""
    target = scheduler_address(address)
    timeout = dask_timeout()
    try:
        import distributed  # noqa: F401  (only whether it is installed)
    except ImportError:
        raise CliError(
            "--executor dask:// needs Dask's distributed package: install cce-cli[distributed] "
            "(in the workspace: uv sync --all-extras)"
        ) from None
    shown = display_text(target)
    with _quiet_distributed():
        client = _connect(target, shown, timeout)
        try:
            executor = client.get_executor()
            futures = [executor.submit(work, task) for task in tasks]
            return collect_in_order(
                futures,
                names,
                lambda future, name: _result(client, future, name, shown, timeout),
                progress,
            )
        finally:
            with contextlib.suppress(Exception):
                _bounded(lambda: client.close(timeout=timeout), timeout + 5)
