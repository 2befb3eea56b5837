"""Developer sessions: tests per package and per Python, lint, types, dependencies, wheels, more.

Why it exists: one entry point (`uv run nox`) that CI and developers share. Each
package's tests run in an environment holding only that package, its declared
dependencies and its own dev group, synced from `uv.lock`, so a package that imports
something it does not declare fails here rather than on a user's machine.
"""

from __future__ import annotations

import glob
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["tests", "hooks", "lint", "types", "deps", "wheels"]
nox.options.error_on_external_run = False

ROOT = pathlib.Path(__file__).parent
PACKAGES = ["cce-stats", "cce-fixtures", "cce-metrics", "cce-retrieval", "cce-cli"]
# The suites long enough to gain from one pytest worker per core; the others finish
# before xdist's workers have started.
PARALLEL = {package: ("-n", "auto") for package in ("cce-stats", "cce-retrieval", "cce-cli")}


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
    """Run one package's test suite (default: not slow, on every core) in its own locked
    environment."""
    env = _isolated_env(package)
    # --all-extras: a package's optional features (the Dask executor, the in-process
    # model2vec embedder) are tested too, not skipped.
    sync = ["uv", "sync", "--locked", "--package", package, "--exact", "--all-extras"]
    session.run(*sync, env=env)
    args = session.posargs or ["-m", "not slow and not browser", "-q", *PARALLEL.get(package, ())]
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


def _interpreter_version(executable: str) -> tuple[int, int] | None:
    """The (major, minor) an interpreter reports, or None when it does not run."""
    try:
        done = subprocess.run(
            [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.fullmatch(r"(\d+)\.(\d+)\s*", done.stdout)
    if done.returncode != 0 or match is None:
        return None
    return int(match.group(1)), int(match.group(2))


def other_pythons() -> dict[str, str]:
    """Every CPython >= 3.11 on this machine except the one running nox: version -> path.

    Looks on PATH (`python3.N`) and in pyenv's installs (`$PYENV_ROOT/versions/*/bin`),
    and keeps an interpreter only when it actually runs: a pyenv shim for a version that
    is not selected exits with an error and is skipped. Nothing is ever downloaded.
    """
    names = [f"python3.{minor}" for minor in range(11, 40)]
    candidates = [path for name in names if (path := shutil.which(name))]
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", "*", "bin", "python3.*")))
    running = sys.version_info[:2]
    by_version: dict[tuple[int, int], str] = {}
    for executable in candidates:
        if not re.search(r"python3\.\d+$", executable):
            continue
        version = _interpreter_version(executable)
        if version is None or version < (3, 11) or version == running:
            continue
        by_version.setdefault(version, executable)
    return {f"{major}.{minor}": by_version[major, minor] for major, minor in sorted(by_version)}


@nox.session
def pythons(session: nox.Session) -> None:
    """The default test suite on every other Python >= 3.11 the machine offers.

    `tests` already runs each package alone on the default interpreter; this session
    checks that the code also works on the newer interpreters installed here. It syncs
    one locked environment of the whole workspace per interpreter (never downloading one:
    UV_PYTHON_DOWNLOADS=never) and runs all packages' tests in it on two workers. Versions
    the machine lacks are skipped, with a note.
    """
    found = other_pythons()
    if not found:
        session.log("no other Python >= 3.11 found; nothing to do")
        return
    for version, executable in found.items():
        env = {
            "UV_PROJECT_ENVIRONMENT": str(ROOT / ".nox" / f"env-py{version}"),
            "UV_PYTHON_DOWNLOADS": "never",
        }
        env.update({name: os.environ[name] for name in REFERENCE_ENV if name in os.environ})
        session.log(f"Python {version}: {executable}")
        sync = ["uv", "sync", "--locked", "--all-packages", "--all-groups", "--all-extras"]
        sync.append("--exact")
        session.run(*sync, "--python", executable, "--quiet", env=env)
        args = session.posargs or ["-m", "not slow and not browser", "-q", "-n", "2"]
        session.run("uv", "run", "--no-sync", "python", "-m", "pytest", "packages", *args, env=env)


def _system_chromium(session: nox.Session) -> str:
    """Debian's chromium, installed with apt-get when missing (`apt-get update` only
    when the package is not known yet); never a browser download."""
    found = shutil.which("chromium")
    if found:
        return found
    known = (
        subprocess.run(
            ["apt-cache", "show", "chromium"], capture_output=True, check=False
        ).returncode
        == 0
    )
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    install = [*sudo, "apt-get", "install", "-y", "-q", "chromium"]
    if not known:
        session.run(*sudo, "apt-get", "update", "-q", external=True, env=env)
    # Package lists that are known but stale name files the mirror no longer has: then
    # refresh them once and try again.
    if subprocess.run(install, env={**os.environ, **env}, check=False).returncode != 0:
        session.run(*sudo, "apt-get", "update", "-q", external=True, env=env)
        session.run(*install, external=True, env=env)
    found = shutil.which("chromium")
    if not found:
        session.error("apt-get installed chromium, but no `chromium` is on PATH")
    return found


@nox.session
def browser(session: nox.Session) -> None:
    """The HTML report in a real browser (not in the default run; `.ci/run` runs it).

    Installs Debian's chromium when it is missing and runs the tests marked `browser`
    with Playwright driving it headless (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1: Playwright
    never fetches a browser of its own), in cce-cli's locked environment. The screenshot
    of the report is left in `.nox/browser/report.png`.
    """
    chromium = _system_chromium(session)
    session.log(f"chromium: {chromium}")
    output = ROOT / ".nox" / "browser"
    env = _isolated_env("cce-cli")
    env.update(
        {
            "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
            "CCE_REQUIRE_BROWSER": "1",
            "CCE_BROWSER_OUTPUT": str(output),
        }
    )
    session.run("uv", "sync", "--locked", "--package", "cce-cli", "--exact", env=env)
    args = session.posargs or ["-m", "browser", "-q", "-p", "no:cacheprovider"]
    session.run(
        "uv",
        "run",
        "--no-sync",
        "--package",
        "cce-cli",
        "python",
        "-m",
        "pytest",
        "packages/cce-cli/tests/test_browser_report.py",
        *args,
        env=env,
    )
    session.log(f"screenshot: {output / 'report.png'}")


@nox.session
def hooks(session: nox.Session) -> None:
    """The workspace-level tests (tests/): the root wheel, the layout, the shared copies.

    They run in the workspace environment, which holds every package. Installing the hooks
    by URL (tests/test_precommit_by_url.py) builds and installs the whole project twice,
    so it is marked slow and left to `.ci/run` (`nox -s hooks -- -m slow`).
    """
    args = session.posargs or ["-m", "not slow", "-q"]
    session.run("uv", "run", "--locked", "python", "-m", "pytest", "tests", *args)


@nox.session
def deps(session: nox.Session) -> None:
    """deptry: each package's sources import exactly the third-party packages it declares.

    Run once per package, with that package's pyproject.toml as the configuration, over
    its `src` tree (tests import the package's dev group, which the `tests` session
    installs alone, so an undeclared test dependency fails there).
    """
    for package in PACKAGES:
        config = f"packages/{package}/pyproject.toml"
        session.run(
            "uv", "run", "--locked", "deptry", f"packages/{package}/src", "--config", config
        )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole tree, then the import contracts:
    the packages' layers, their boundaries and no import cycle (import-linter, configured
    in pyproject.toml's [tool.importlinter]; docs/architecture.md#layers)."""
    session.run("uv", "run", "--locked", "ruff", "check", ".")
    session.run("uv", "run", "--locked", "ruff", "format", "--check", ".")
    session.run("uv", "run", "--locked", "lint-imports", "--no-cache")


@nox.session
def types(session: nox.Session) -> None:
    """mypy --strict over every package's sources, each package's tests, bench and this file.

    In one environment holding the whole workspace, every dev group and every extra: the
    tests import what their package's dev group and extras bring (the browser driver, a
    tokenizer for a tiny model), and the types they see must not depend on what else
    happens to be installed.
    """
    env = {"UV_PROJECT_ENVIRONMENT": str(ROOT / ".nox" / "env-types")}
    sync = ["uv", "sync", "--locked", "--all-packages", "--all-groups", "--all-extras", "--quiet"]
    session.run(*sync, env=env)
    mypy = ["uv", "run", "--no-sync", "mypy", "--strict"]
    sources = [f"packages/{p}/src" for p in PACKAGES]
    session.run(*mypy, *sources, "noxfile.py", "conftest.py", env=env)
    # Each package's tests have their own conftest.py, so they are checked one package at a time.
    for package in PACKAGES:
        session.run(*mypy, f"packages/{package}/tests", env=env)
    session.run(*mypy, "tests", env=env)
    session.run(*mypy, "bench", env={**env, "MYPYPATH": "bench"})
    session.run(*mypy, "fuzz", env=env)


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
def fuzz(session: nox.Session) -> None:
    """Property-based fuzzing of every hostile-input parser (never part of the default run).

    Fixture lines, `.gitignore` lines, store bytes, secret redaction and file names
    (fuzz/test_fuzz.py). Pass the number of examples per property after `--`
    (default 300, about a minute on two cores).
    """
    examples = session.posargs[0] if session.posargs else "300"
    session.run(
        "uv",
        "run",
        "--locked",
        "python",
        "-m",
        "pytest",
        "fuzz",
        "-m",
        "slow",
        "-q",
        "-p",
        "no:cacheprovider",
        env={"CCE_FUZZ_EXAMPLES": examples},
    )


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks (never part of the test suite): side by side with the baseline, then phases.

    Prints ratios against the baseline commit and throughputs on the interpreter's stdlib
    (see bench/corpus.py), then `cce_metrics.evaluate` beside pytrec_eval and ranx
    (bench/bench_metrics.py), and one exact signed-rank p at m = 300-1,000
    (bench/bench_signed_rank.py). Arguments after `--` go to bench/bench_perf.py (e.g.
    `--scale 1000000`, `--repeat 3`); a directory among them is also the corpus of the
    other scripts.
    """
    session.run("uv", "run", "--locked", "python", "bench/bench_perf.py", *session.posargs)
    corpora = [arg for arg in session.posargs if os.path.isdir(arg)]
    scripts = (
        "bench/bench_index.py",
        "bench/bench_search.py",
        "bench/bench_code.py",
        "bench/bench_relevance.py",
        "bench/bench_gitignore.py",
        "bench/bench_suite.py",
        "bench/bench_suite_fetch.py",
        "bench/bench_pool_apply.py",
    )
    for script in scripts:
        session.run("uv", "run", "--locked", "python", script, *corpora)
    # pytrec_eval and ranx are cce-metrics' test-only dependencies: its dev group has them.
    session.run(
        "uv", "run", "--locked", "--package", "cce-metrics", "python", "bench/bench_metrics.py"
    )
    session.run("uv", "run", "--locked", "python", "bench/bench_signed_rank.py")


SEMBLE_PIN = "0.7.0"


@nox.session
def peer(session: nox.Session) -> None:
    """nDCG@10 of cce beside semble's lexical engine on a suite (never in the default run).

    Installs semble==SEMBLE_PIN into its own virtual environment (`.nox/peer-semble`,
    never the workspace's: semble is no dependency of any cce package), once; later runs
    find it installed and need no network. Then bench/peer_semble.py indexes each
    member's corpus with semble (BM25 alone, and BM25 + its ranking step, no embedding
    model), scores both runs with `cce relevance --metrics ndcg` beside cce's `bm25`,
    prints the table per member and macro, and checks semble's own way of scoring
    against cce's. Arguments after `--` go to the script: a suite manifest (default the
    semble-dev suite), `--backends bm25,code`, `--out DIR`.
    """
    venv = ROOT / ".nox" / "peer-semble"
    python = str(venv / "bin" / "python")
    pinned = (
        "import importlib.metadata, sys; "
        f"sys.exit(importlib.metadata.version('semble') != '{SEMBLE_PIN}')"
    )
    installed = (
        os.path.exists(python)
        and subprocess.run([python, "-c", pinned], capture_output=True, check=False).returncode == 0
    )
    if not installed:
        session.run("uv", "venv", "--quiet", "--python", sys.executable, str(venv))
        session.run("uv", "pip", "install", "--quiet", "--python", python, f"semble=={SEMBLE_PIN}")
    session.run(
        "uv",
        "run",
        "--locked",
        "python",
        "bench/peer_semble.py",
        "--semble-python",
        python,
        *session.posargs,
    )


@nox.session
def ranking(session: nox.Session) -> None:
    """The `code` backend's ablation table on the semble-dev suite (docs/ranking.md):
    each rung of eval/ranking/cce.toml against the one before, with the paired test.
    A suite manifest after `--` replaces the default one. Then `code` against `bm25` on
    the hand-written queries over the interpreter's stdlib (eval/relevance/stdlib.py)."""
    session.run("uv", "run", "--locked", "python", "eval/ranking/ablation.py", *session.posargs)
    session.run("uv", "run", "--locked", "python", "eval/relevance/stdlib.py")


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
