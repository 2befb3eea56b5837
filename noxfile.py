"""Developer sessions: tests per package, lint, types, wheels, goldens and benchmarks.

Why it exists: one entry point (`uv run nox`) that CI and developers share. Each
package's tests run in an environment holding only that package, its declared
dependencies and its own dev group, synced from `uv.lock`, so a package that imports
something it does not declare fails here rather than on a user's machine.
"""

from __future__ import annotations

import os
import pathlib
import tempfile

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["tests", "lint", "types", "wheels"]
nox.options.error_on_external_run = False

ROOT = pathlib.Path(__file__).parent
PACKAGES = ["cce-stats", "cce-fixtures", "cce-metrics", "cce-retrieval", "cce-cli"]
# The standalone-wheel check covers the leaf libraries other eval tools import on
# their own; cce-retrieval and cce-cli depend on unpublished siblings.
LEAF_PACKAGES = ["cce-stats", "cce-fixtures", "cce-metrics"]


def _isolated_env(package: str) -> dict[str, str]:
    return {"UV_PROJECT_ENVIRONMENT": str(ROOT / ".nox" / f"env-{package}")}


@nox.session
@nox.parametrize("package", PACKAGES)
def tests(session: nox.Session, package: str) -> None:
    """Run one package's test suite (default: not slow) in its own locked environment."""
    env = _isolated_env(package)
    session.run("uv", "sync", "--locked", "--package", package, "--exact", env=env)
    args = session.posargs or ["-m", "not slow", "-q"]
    session.run(
        "uv",
        "run",
        "--no-sync",
        "--package",
        package,
        "python",
        "-m",
        "pytest",
        f"packages/{package}",
        *args,
        env=env,
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole tree."""
    session.run("uv", "run", "--locked", "ruff", "check", ".")
    session.run("uv", "run", "--locked", "ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """mypy --strict over every package's sources and tests, and this file."""
    targets = [f"packages/{p}/src" for p in PACKAGES] + ["noxfile.py"]
    session.run("uv", "run", "--locked", "mypy", "--strict", *targets)


@nox.session
def wheels(session: nox.Session) -> None:
    """Build each leaf package's wheel and import it in a fresh venv with only its deps."""
    with tempfile.TemporaryDirectory(prefix="cce-wheels-") as tmp:
        for package in LEAF_PACKAGES:
            out = os.path.join(tmp, package)
            session.run("uv", "build", "--package", package, "--wheel", "--out-dir", out)
            wheel = next(pathlib.Path(out).glob("*.whl"))
            venv = os.path.join(tmp, f"venv-{package}")
            session.run("uv", "venv", "--quiet", venv)
            python = os.path.join(venv, "bin", "python")
            session.run("uv", "pip", "install", "--quiet", "--python", python, str(wheel))
            module = package.replace("-", "_")
            session.run(python, "-c", f"import {module}; print({module}.__name__, 'imports')")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks (never part of the test suite): indexing, search latency, relevance time.

    Prints throughputs and ratios on the interpreter's stdlib (see bench/corpus.py);
    pass a directory after `--` to benchmark another corpus.
    """
    for script in ("bench/bench_index.py", "bench/bench_search.py", "bench/bench_relevance.py"):
        if os.path.exists(script):
            session.run("uv", "run", "--locked", "python", script, *session.posargs)


@nox.session
def goldens(session: nox.Session) -> None:
    """Regenerate the pinned goldens from the current code; review the diff before committing."""
    session.run(
        "uv",
        "run",
        "--locked",
        "cce",
        "conformance",
        "eval/corpus/sample",
        "-o",
        "packages/cce-cli/tests/golden/sample.conformance.json",
    )
    with open("packages/cce-cli/tests/golden/code.report.json", "w", encoding="utf-8") as out:
        session.run(
            "uv",
            "run",
            "--locked",
            "cce",
            "relevance",
            "eval/relevance/code.jsonl",
            "--json",
            stdout=out,
        )
    session.run("git", "diff", "--stat", "--", "packages/cce-cli/tests/golden", external=True)
