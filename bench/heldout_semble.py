"""Rebuild the held-out semble suite (13 repositories outside semble-dev) from package registries.

Why it exists: ranking work on cce is developed on the semble-dev suite (seven
repositories of the public semble code-search benchmark) and must be accepted on
repositories it was not tuned on. The benchmark pins each repository to a git commit,
but a machine that can reach only the package registries cannot clone them. Many of
those repositories ship the very source tree the benchmark indexes as a package: a
Python sdist, an npm tarball, a Debian package of Go, Rust, Ruby or header-only C++
sources. This script owns turning those packages into a suite that `cce relevance`
and `bench/peer_semble.py` read like semble-dev:

    OUT/corpora/<name>/         the benchmark root, as the package ships it
    OUT/annotations/<name>.json semble's tasks, keeping those whose targets exist
    OUT/repos.json              semble's entries for these repositories
    OUT/fixtures/<name>.jsonl   `cce import semble` of the two above
    OUT/suite.toml              a cce.suite/v1 manifest over the local corpora
    OUT/coverage.json           per member: package, version, pinned commit, coverage

A package is a release, not the pinned commit. Each member names the release closest
to the benchmark's pins (for PyPI and npm the newest release before 2026-05-01, a date
inside the window, 0.135.2 to 0.136.3, in which fastapi's releases match its
line-numbered targets; for Debian the version the configured suite carries), and the
report records both. A target that the release does not have (a file added or moved
later, or a line range past the end of its file) is counted; a task keeps its
secondary targets that exist and is dropped when one of its relevant targets is
missing, so that every kept query can be answered and both scorings read the same
targets.

semble's annotation files are not in any registry: pass the benchmark's
`annotations/` directory and `repos.json` (from a checkout of MinishLab/semble,
`benchmarks/`).

Usage:

    uv run python bench/heldout_semble.py OUT --annotations DIR --repos REPOS.json
        [--members aiohttp,fastapi,...]

It drives `pip download`, `npm pack` and `apt-get download` by package name and uses
the registries those tools are configured with. OUT must not exist or be empty.
Exit status: 0 done, 1 a step failed (one `error:` line), 2 usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from typing import Any


class HeldOutError(Exception):
    """A step failed; the message is the one line the user sees."""


@dataclasses.dataclass(frozen=True)
class Source:
    """Where one member's corpus comes from.

    `tree` is the folder, inside the unpacked package, that holds the benchmark root's
    contents; `*` stands for a part that carries the version. `drop_suffixes` and
    `drop_folders` name what the package adds to the repository's tree (build output),
    which the corpus leaves out.
    """

    name: str
    registry: str  # "pypi", "npm" or "debian"
    package: str
    version: str | None  # None: the version the Debian suite carries
    tree: str
    drop_suffixes: tuple[str, ...] = ()
    drop_folders: tuple[str, ...] = ()


# The newest PyPI and npm releases before 2026-05-01; the Debian suite's versions.
SOURCES: tuple[Source, ...] = (
    # Cython output, the vendored parser's C files and their hashes are generated at
    # build time and are not in the repository's aiohttp/ folder.
    Source("aiohttp", "pypi", "aiohttp", "3.13.5", "aiohttp-*/aiohttp", (".c", ".h"), (".hash",)),
    Source("fastapi", "pypi", "fastapi", "0.136.1", "fastapi-*/fastapi"),
    Source("model2vec", "pypi", "model2vec", "0.8.1", "model2vec-*/model2vec"),
    Source("pydantic", "pypi", "pydantic", "2.13.3", "pydantic-*/pydantic"),
    Source("zod", "npm", "zod", "4.4.1", "package/src"),
    Source(
        "gin",
        "debian",
        "golang-github-gin-gonic-gin-dev",
        None,
        "usr/share/gocode/src/github.com/gin-gonic/gin",
    ),
    Source(
        "cobra",
        "debian",
        "golang-github-spf13-cobra-dev",
        None,
        "usr/share/gocode/src/github.com/spf13/cobra",
    ),
    Source(
        "chi",
        "debian",
        "golang-github-go-chi-chi-dev",
        None,
        "usr/share/gocode/src/github.com/go-chi/chi",
    ),
    Source("tokio", "debian", "librust-tokio-dev", None, "usr/share/cargo/registry/tokio-*/src"),
    Source(
        "rack",
        "debian",
        "ruby-rack",
        None,
        "usr/share/rubygems-integration/all/gems/rack-*/lib/rack",
    ),
    Source("nlohmann-json", "debian", "nlohmann-json3-dev", None, "usr/include/nlohmann"),
    Source("fmtlib", "debian", "libfmt-dev", None, "usr/include/fmt"),
    Source("abseil-cpp", "debian", "libabsl-dev", None, "usr/include/absl"),
)


def _run(command: Sequence[str], cwd: pathlib.Path) -> str:
    try:
        done = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise HeldOutError(f"`{command[0]}` is not installed; install it and run again") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise HeldOutError(f"`{' '.join(command)}` exited {done.returncode}: {last}")
    return done.stdout


def _pip() -> list[str]:
    """pip from this interpreter when it has one (a uv environment may not), else from PATH."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    found = shutil.which("pip3") or shutil.which("pip")
    if found is None:
        raise HeldOutError("pip is not installed; install it and run again")
    return [found]


def _unpack_tar(archive: pathlib.Path, into: pathlib.Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")


def fetch(source: Source, scratch: pathlib.Path) -> tuple[pathlib.Path, str]:
    """Download and unpack one member's package; return the unpacked root and its version."""
    download = scratch / "download"
    unpacked = scratch / "unpacked"
    download.mkdir(parents=True)
    unpacked.mkdir()
    if source.registry == "pypi":
        spec = f"{source.package}=={source.version}"
        pip_download = [*_pip(), "download", "--quiet", "--no-deps", "--no-binary", ":all:"]
        _run([*pip_download, spec, "-d", str(download)], scratch)
        for archive in sorted(download.glob("*.tar.gz")):
            _unpack_tar(archive, unpacked)
        return unpacked, str(source.version)
    if source.registry == "npm":
        spec = f"{source.package}@{source.version}"
        _run(["npm", "pack", "--silent", spec, "--pack-destination", str(download)], scratch)
        for archive in sorted(download.glob("*.tgz")):
            _unpack_tar(archive, unpacked)
        return unpacked, str(source.version)
    spec = source.package if source.version is None else f"{source.package}={source.version}"
    _run(["apt-get", "download", spec], download)
    debs = sorted(download.glob("*.deb"))
    if len(debs) != 1:
        raise HeldOutError(
            f"{source.name}: `apt-get download {spec}` gave {len(debs)} files, not one"
        )
    version = _run(["dpkg-deb", "--field", str(debs[0]), "Version"], scratch).strip()
    _run(["dpkg-deb", "--extract", str(debs[0]), str(unpacked)], scratch)
    return unpacked, version


def locate_tree(source: Source, unpacked: pathlib.Path) -> pathlib.Path:
    found = sorted(path for path in unpacked.glob(source.tree) if path.is_dir())
    if len(found) != 1:
        raise HeldOutError(
            f"{source.name}: {len(found)} folders match {source.tree} in {source.package}; "
            "the package's layout changed: update the member's tree in SOURCES"
        )
    return found[0]


def copy_corpus(source: Source, tree: pathlib.Path, corpus: pathlib.Path) -> int:
    """Copy the benchmark root's files (no symlinks, no build output); return their count."""
    count = 0
    for path in sorted(tree.rglob("*")):
        relative = path.relative_to(tree)
        if path.is_symlink() or not path.is_file():
            continue
        if set(relative.parts[:-1]) & set(source.drop_folders):
            continue
        if source.drop_suffixes and path.name.endswith(source.drop_suffixes):
            continue
        target = corpus / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        count += 1
    return count


def _target_path(target: Any) -> str:
    return target if isinstance(target, str) else str(target["path"])


def _present(target: Any, root: str | None, corpus: pathlib.Path) -> bool:
    path = _target_path(target)
    prefix = f"{root.strip('/')}/" if root else ""
    if not path.startswith(prefix):
        return False
    file = corpus / path[len(prefix) :]
    if not file.is_file():
        return False
    if isinstance(target, dict):
        text = file.read_bytes()
        lines = text.count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)
        return int(target["end_line"]) <= lines
    return True


def filter_tasks(
    tasks: list[dict[str, Any]], root: str | None, corpus: pathlib.Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Keep the tasks whose relevant targets all exist; drop missing secondary targets."""
    kept: list[dict[str, Any]] = []
    missing: set[str] = set()
    targets = present = 0
    for task in tasks:
        relevant = list(task["relevant"])
        secondary = list(task.get("secondary", []))
        for target in [*relevant, *secondary]:
            targets += 1
            if _present(target, root, corpus):
                present += 1
            else:
                missing.add(_target_path(target))
        if all(_present(target, root, corpus) for target in relevant):
            clean = dict(task)
            clean["secondary"] = [t for t in secondary if _present(t, root, corpus)]
            kept.append(clean)
    return kept, {
        "tasks": len(tasks),
        "tasks_kept": len(kept),
        "targets": targets,
        "targets_present": present,
        "missing": sorted(missing),
    }


def _write_json(path: pathlib.Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def write_suite(out: pathlib.Path, members: Sequence[tuple[str, str]]) -> None:
    """Import the filtered annotations with `cce import semble` and point the members at
    the local corpora, as semble-dev's manifest does."""
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        imported = pathlib.Path(tmp) / "imported"
        _run(
            [
                sys.executable,
                "-m",
                "cce_cli",
                "import",
                "semble",
                str(out / "annotations"),
                "--repos",
                str(out / "repos.json"),
                "-o",
                str(imported),
            ],
            out,
        )
        (out / "fixtures").mkdir()
        for name, _ in members:
            lines = (imported / "fixtures" / f"{name}.jsonl").read_text("utf-8").splitlines()
            header = json.loads(lines[0])
            header["corpus"] = f"../corpora/{name}"
            lines[0] = json.dumps(header, separators=(",", ":"))
            (out / "fixtures" / f"{name}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    manifest = ['schema = "cce.suite/v1"']
    for name, language in members:
        manifest += [
            "",
            "[[members]]",
            f'name = "{name}"',
            f'fixtures = "fixtures/{name}.jsonl"',
            f'corpus = "corpora/{name}"',
            f'groups = ["{language}"]',
        ]
    (out / "suite.toml").write_text("\n".join(manifest) + "\n", encoding="utf-8")


def build(
    out: pathlib.Path, annotations: pathlib.Path, repos_file: pathlib.Path, names: Sequence[str]
) -> list[dict[str, Any]]:
    repos = {repo["name"]: repo for repo in json.loads(repos_file.read_text("utf-8"))}
    sources = {source.name: source for source in SOURCES}
    for name in names:
        if name not in sources:
            raise HeldOutError(f"--members: no source for {name}; known: {', '.join(sources)}")
        if name not in repos:
            raise HeldOutError(
                f"{repos_file}: no entry for {name}; pass semble's benchmarks/repos.json"
            )
        if not (annotations / f"{name}.json").is_file():
            raise HeldOutError(
                f"{annotations}: {name}.json is missing; pass semble's benchmarks/annotations"
            )
    (out / "annotations").mkdir(parents=True)
    (out / "corpora").mkdir()
    report: list[dict[str, Any]] = []
    kept_repos: list[dict[str, Any]] = []
    members: list[tuple[str, str]] = []
    for name in names:
        source, repo = sources[name], repos[name]
        print(f"{name}: {source.registry} {source.package}", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            unpacked, version = fetch(source, pathlib.Path(tmp))
            corpus = out / "corpora" / name
            corpus.mkdir()
            files = copy_corpus(source, locate_tree(source, unpacked), corpus)
        tasks = json.loads((annotations / f"{name}.json").read_text("utf-8"))
        kept, coverage = filter_tasks(tasks, repo.get("benchmark_root"), corpus)
        if not kept:
            raise HeldOutError(
                f"{name}: no task's relevant targets are in {source.package} {version}"
            )
        _write_json(out / "annotations" / f"{name}.json", kept)
        kept_repos.append(repo)
        members.append((name, str(repo["language"])))
        report.append(
            {
                "name": name,
                "language": repo["language"],
                "registry": source.registry,
                "package": source.package,
                "version": version,
                "pinned_revision": repo["revision"],
                "benchmark_root": repo.get("benchmark_root"),
                "corpus_files": files,
                **coverage,
            }
        )
    _write_json(out / "repos.json", kept_repos)
    write_suite(out, members)
    _write_json(out / "coverage.json", report)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the folder to create (must not exist or be empty)")
    parser.add_argument("--annotations", required=True, help="semble's benchmarks/annotations")
    parser.add_argument("--repos", required=True, help="semble's benchmarks/repos.json")
    parser.add_argument("--members", help="comma-separated subset (default: all 13)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out).resolve()
    names = args.members.split(",") if args.members else [s.name for s in SOURCES]
    try:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise HeldOutError(f"{out}: exists and is not empty; remove it or name another folder")
        report = build(out, pathlib.Path(args.annotations), pathlib.Path(args.repos), names)
    except HeldOutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError) as error:
        print(f"error: {error!r}; check the annotation and repos files", file=sys.stderr)
        return 1
    print(f"{'member':<14} {'version':<24} {'targets':>9} {'tasks':>7}  missing")
    for row in report:
        print(
            f"{row['name']:<14} {row['version']:<24} "
            f"{row['targets_present']:>4}/{row['targets']:<4} "
            f"{row['tasks_kept']:>3}/{row['tasks']:<3}  {', '.join(row['missing']) or '-'}"
        )
    print(f"suite: {out / 'suite.toml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
