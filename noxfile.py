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
import zipfile

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["tests", "lint", "types", "wheels"]
nox.options.error_on_external_run = False

ROOT = pathlib.Path(__file__).parent
PACKAGES = ["cce-stats", "cce-fixtures", "cce-metrics", "cce-retrieval", "cce-cli"]


# Where the reference data lives and whether its tests must run (see conftest.py); passed
# through by name so the per-package runs see exactly what the caller set.
REFERENCE_ENV = ("CCE_REFERENCE_DIR", "CCE_REQUIRE_REFERENCE")


def _isolated_env(package: str) -> dict[str, str]:
    env = {"UV_PROJECT_ENVIRONMENT": str(ROOT / ".nox" / f"env-{package}")}
    env.update({name: os.environ[name] for name in REFERENCE_ENV if name in os.environ})
    return env


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
    """mypy --strict over every package's sources, each package's tests, bench and this file."""
    sources = [f"packages/{p}/src" for p in PACKAGES]
    session.run("uv", "run", "--locked", "mypy", "--strict", *sources, "noxfile.py", "conftest.py")
    # Each package's tests have their own conftest.py, so they are checked one package at a time.
    for package in PACKAGES:
        session.run("uv", "run", "--locked", "mypy", "--strict", f"packages/{package}/tests")
    session.run("uv", "run", "--locked", "mypy", "--strict", "bench", env={"MYPYPATH": "bench"})


@nox.session
def wheels(session: nox.Session) -> None:
    """Build every package's wheel; check its metadata and install it in a fresh venv.

    Metadata must declare plain version ranges (no workspace paths or direct URLs).
    Each wheel is installed alone into a new virtual environment, resolving its cce
    siblings only from the wheels just built (`--find-links`) and everything else from
    the registry, then imported; the CLI wheel must also answer `cce --help`.
    """
    with tempfile.TemporaryDirectory(prefix="cce-wheels-") as tmp:
        dist = os.path.join(tmp, "dist")
        for package in PACKAGES:
            session.run(
                "uv", "build", "--quiet", "--package", package, "--wheel", "--out-dir", dist
            )
        for wheel in sorted(pathlib.Path(dist).glob("*.whl")):
            _check_wheel_metadata(wheel)
        for package in PACKAGES:
            module = package.replace("-", "_")
            wheel = next(pathlib.Path(dist).glob(f"{module}-*.whl"))
            venv = os.path.join(tmp, f"venv-{package}")
            session.run("uv", "venv", "--quiet", venv)
            python = os.path.join(venv, "bin", "python")
            session.run(
                "uv",
                "pip",
                "install",
                "--quiet",
                "--python",
                python,
                "--find-links",
                dist,
                str(wheel),
            )
            session.run(python, "-c", f"import {module}; print({module}.__name__, 'imports')")
        session.run(os.path.join(tmp, "venv-cce-cli", "bin", "cce"), "--help", silent=True)


def _check_wheel_metadata(wheel: pathlib.Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode("utf-8")
    requirements = [
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    for requirement in requirements:
        if "@" in requirement or "file:" in requirement:
            raise RuntimeError(f"{wheel.name}: requirement is not a plain range: {requirement}")
        if requirement.startswith("cce-") and not any(op in requirement for op in "<>=~"):
            raise RuntimeError(f"{wheel.name}: sibling requirement has no version range")
    print(f"{wheel.name}: {len(requirements)} requirements, all plain ranges")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks (never part of the test suite): indexing, search latency, relevance time.

    Prints throughputs and ratios on the interpreter's stdlib (see bench/corpus.py);
    pass a directory after `--` to benchmark another corpus.
    """
    scripts = (
        "bench/bench_index.py",
        "bench/bench_search.py",
        "bench/bench_relevance.py",
        "bench/bench_gitignore.py",
    )
    for script in scripts:
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
