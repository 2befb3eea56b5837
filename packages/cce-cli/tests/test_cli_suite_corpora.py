"""Git corpora of suites: only the pinned commit fetched (and only `root`), git's own URL
rewrites honoured, the cache checked before reuse and repaired, credentials never shown,
and no hang on a server that says nothing (docs/suites.md#corpora,
docs/hostile-input.md#git-corpora).

Every repository is made by the test; every server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "eval" / "corpus" / "sample"
CODE = (REPO / "eval" / "relevance" / "code.jsonl").read_text(encoding="utf-8").splitlines()
HEADER = '{"schema":"cce.relevance/v1"}'

RunCce = Callable[..., tuple[int, str, str]]
RunGit = Callable[..., str]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


class Origin:
    """A repository: the sample corpus under `src/`, a sibling `other/` directory, and
    a later commit the manifests do not pin."""

    def __init__(self, root: Path, git: RunGit) -> None:
        self.path = root / "origin"
        shutil.copytree(SAMPLE, self.path / "src")
        (self.path / "other").mkdir()
        (self.path / "other" / "big.txt").write_text("x" * 10_000, encoding="utf-8")
        git(self.path, "init", "--quiet")
        git(self.path, "add", "-A")
        git(self.path, "commit", "--quiet", "-m", "sample")
        self.pinned = git(self.path, "rev-parse", "HEAD")
        (self.path / "src" / "config.py").unlink()
        git(self.path, "commit", "--quiet", "-am", "drop config.py")

    @property
    def url(self) -> str:
        return f"file://{self.path}"


def write_suite(root: Path, members: list[tuple[str, str, str, str]]) -> Path:
    """A manifest of git members: (name, url, rev, root)."""
    fixtures = root / "fixtures" / "sample.jsonl"
    fixtures.parent.mkdir(parents=True, exist_ok=True)
    fixtures.write_text("\n".join([HEADER, *CODE[1:]]) + "\n", encoding="utf-8")
    text = 'schema = "cce.suite/v1"\n'
    for name, url, rev, sub in members:
        text += (
            f'\n[[members]]\nname = "{name}"\nfixtures = "fixtures/sample.jsonl"\n'
            f'git = "{url}"\nrev = "{rev}"\n'
        )
        if sub:
            text += f'root = "{sub}"\n'
    manifest = root / "suite.toml"
    manifest.write_text(text, encoding="utf-8")
    return manifest


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("CCE_CACHE_DIR", str(directory))
    # git's user configuration is the test's own (empty unless a test writes it).
    config = tmp_path / "gitconfig"
    config.write_text("", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    return directory


@pytest.fixture
def origin(tmp_path: Path, git: RunGit) -> Origin:
    return Origin(tmp_path, git)


def only_checkout(cache: Path) -> Path:
    entries = [entry for entry in (cache / "corpora").iterdir() if not entry.name.startswith(".")]
    assert len(entries) == 1
    return entries[0]


def test_only_the_pinned_commit_and_only_root_are_fetched(
    tmp_path: Path, cache: Path, origin: Origin, run_cce: RunCce, git: RunGit
) -> None:
    manifest = write_suite(tmp_path, [("sample", origin.url, origin.pinned, "src")])
    code, _, err = run_cce("suite", "fetch", str(manifest))
    assert (code, err.count("\n")) == (0, 1), err
    checkout = only_checkout(cache)
    assert (checkout / "src" / "config.py").is_file()  # the pinned commit, not the tip
    assert not (checkout / "other").exists()  # outside root: not checked out
    assert git(checkout, "rev-list", "--count", "HEAD") == "1"  # one commit, no history
    assert (checkout / ".git" / "shallow").is_file()
    # A run reuses it as it is: no note, same inode.
    inode = checkout.stat().st_ino
    again = run_cce("relevance", str(manifest), "--backend", "bm25", "--json")
    assert (again[0], again[2]) == (0, "")
    assert checkout.stat().st_ino == inode


def test_a_server_refusing_a_commit_by_id_gets_one_full_fetch(
    tmp_path: Path, cache: Path, origin: Origin, run_cce: RunCce, git: RunGit
) -> None:
    # The old protocol without allowReachableSHA1InWant refuses `fetch <commit>`.
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(
        "[protocol]\n\tversion = 0\n", encoding="utf-8"
    )
    git(origin.path, "config", "uploadpack.allowReachableSHA1InWant", "false")
    manifest = write_suite(tmp_path, [("sample", origin.url, origin.pinned, "src")])
    code, _, err = run_cce("suite", "fetch", str(manifest))
    assert code == 0, err
    assert (only_checkout(cache) / "src" / "config.py").is_file()


def test_git_url_rewrites_of_the_user_configuration_apply(
    tmp_path: Path, cache: Path, origin: Origin, run_cce: RunCce
) -> None:
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(
        f'[url "file://{origin.path.parent}/"]\n\tinsteadOf = https://mirror.invalid/\n',
        encoding="utf-8",
    )
    manifest = write_suite(
        tmp_path, [("sample", "https://mirror.invalid/origin", origin.pinned, "src")]
    )
    code, out, err = run_cce("suite", "fetch", str(manifest))
    assert code == 0, err
    assert out.endswith(f"\thttps://mirror.invalid/origin @ {origin.pinned}\n")


def test_keep_going_fetches_the_others_and_names_the_failures(
    tmp_path: Path, cache: Path, origin: Origin, run_cce: RunCce
) -> None:
    manifest = write_suite(
        tmp_path,
        [
            ("missing", origin.url, "0" * 40, ""),
            ("sample", origin.url, origin.pinned, "src"),
        ],
    )
    code, out, err = run_cce("suite", "fetch", "--keep-going", str(manifest))
    assert code == 1
    assert out.startswith("sample\t") and out.count("\n") == 1
    assert "error: member 'missing': commit 0000000000000000000000000000000000000000" in err
    assert err.rstrip().endswith("1 of 2 members could not be fetched (missing); the errors "
                                 "above say why; the others are ready")  # fmt: skip
    # Without it, the first failure stops the fetch.
    code, out, err = run_cce("suite", "fetch", str(manifest))
    assert (code, out) == (1, "") and err.count("error:") == 1


def test_a_changed_cached_checkout_is_restored_before_reuse(
    tmp_path: Path, cache: Path, origin: Origin, run_cce: RunCce
) -> None:
    manifest = write_suite(tmp_path, [("sample", origin.url, origin.pinned, "src")])
    first = run_cce("relevance", str(manifest), "--backend", "bm25", "--json")
    assert first[0] == 0
    checkout = only_checkout(cache)
    original = (checkout / "src" / "cache.py").read_bytes()
    (checkout / "src" / "cache.py").write_text("nothing here\n", encoding="utf-8")
    (checkout / "src" / "config.py").unlink()
    (checkout / "src" / "added.py").write_text("def login(): pass\n", encoding="utf-8")
    code, out, err = run_cce("relevance", str(manifest), "--backend", "bm25", "--json")
    assert code == 0
    assert err == (
        f"note: member 'sample': the cached checkout {checkout} had changed files; "
        f"restored it to {origin.pinned}\n"
    )
    assert out == first[1]  # the scores are the pinned commit's again
    assert (checkout / "src" / "cache.py").read_bytes() == original
    assert not (checkout / "src" / "added.py").exists()


@pytest.mark.parametrize("damage", ["symlink", "bad-head", "file"])
def test_a_damaged_cache_entry_is_replaced(
    tmp_path: Path, cache: Path, origin: Origin, run_cce: RunCce, damage: str
) -> None:
    manifest = write_suite(tmp_path, [("sample", origin.url, origin.pinned, "src")])
    assert run_cce("suite", "fetch", str(manifest))[0] == 0
    checkout = only_checkout(cache)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not cce's\n", encoding="utf-8")
    if damage == "symlink":
        shutil.rmtree(checkout)
        checkout.symlink_to(elsewhere)
    elif damage == "bad-head":
        (checkout / ".git" / "HEAD").write_text("garbage\n", encoding="utf-8")
    else:
        shutil.rmtree(checkout)
        checkout.write_text("a file\n", encoding="utf-8")
    code, _, err = run_cce("suite", "fetch", str(manifest))
    assert code == 0, err
    assert err.startswith(f"note: member 'sample': the cached checkout {checkout} was ")
    assert err.count("fetching anew") == 1
    assert checkout.is_dir() and not checkout.is_symlink()
    assert (checkout / "src" / "config.py").is_file()
    assert (elsewhere / "keep.txt").read_text(encoding="utf-8") == "not cce's\n"


def test_staging_directories_of_killed_runs_are_removed(
    tmp_path: Path, cache: Path, origin: Origin, run_cce: RunCce
) -> None:
    corpora = cache / "corpora"
    corpora.mkdir(parents=True)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    host = socket.gethostname()
    killed = corpora / f".clone-{host}-{ended.pid}-abc"
    running = corpora / f".clone-{host}-{os.getpid()}-def"
    old_form = corpora / ".clone-xyz"
    for directory in (killed, running, old_form):
        (directory / ".git").mkdir(parents=True)
    os.utime(old_form, (1_000_000_000, 1_000_000_000))
    manifest = write_suite(tmp_path, [("sample", origin.url, origin.pinned, "src")])
    assert run_cce("suite", "fetch", str(manifest))[0] == 0
    assert not killed.exists() and not old_form.exists()
    assert running.exists()  # a run in progress (this process) keeps its own


def test_a_root_that_leaves_the_checkout_through_a_link_is_refused(
    tmp_path: Path, cache: Path, run_cce: RunCce, git: RunGit
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa.py").write_text("KEY = 'secret'\n", encoding="utf-8")
    repository = tmp_path / "linked"
    repository.mkdir()
    (repository / "rootlink").symlink_to(outside)
    (repository / "README").write_text("x\n", encoding="utf-8")
    git(repository, "init", "--quiet")
    git(repository, "add", "-A")
    git(repository, "commit", "--quiet", "-m", "link")
    rev = git(repository, "rev-parse", "HEAD")
    manifest = write_suite(tmp_path, [("linked", f"file://{repository}", rev, "rootlink")])
    code, out, err = run_cce("relevance", str(manifest), "--backend", "bm25")
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: member 'linked': root 'rootlink' is a symbolic link in the repository, "
        "not a directory of it"
    )


def test_a_root_resolving_outside_the_checkout_is_refused(tmp_path: Path) -> None:
    """The check on disk, whatever put the link there."""
    from cce_cli.errors import CliError
    from cce_cli.evaluation.corpora import _inside_checkout
    from cce_cli.formats.suite_manifest import GitCorpus, Member

    outside = tmp_path / "outside"
    outside.mkdir()
    checkout = tmp_path / "checkout"
    (checkout / "inner").mkdir(parents=True)
    (checkout / "rootlink").symlink_to(outside)
    (checkout / "innerlink").symlink_to(checkout / "inner")
    corpus = GitCorpus("file:///x", "a" * 40, "rootlink")
    member = Member("m", "f.jsonl", corpus)
    with pytest.raises(CliError, match="root 'rootlink' leads outside the repository"):
        _inside_checkout(member, corpus, str(checkout))
    inside = GitCorpus("file:///x", "a" * 40, "innerlink")
    assert _inside_checkout(Member("m", "f.jsonl", inside), inside, str(checkout)) == str(
        checkout / "innerlink"
    )


def test_a_url_that_is_not_a_repository_says_so(
    tmp_path: Path, cache: Path, run_cce: RunCce
) -> None:
    manifest = write_suite(tmp_path, [("etc", "file:///etc", "a" * 40, "")])
    code, _, err = run_cce("suite", "fetch", str(manifest))
    assert code == 1
    assert err == (
        "error: member 'etc': file:///etc is not a git repository; fix git in the manifest "
        "(a repository URL, or the path of a local clone)\n"
    )


def test_transports_outside_the_allow_list_are_refused(
    tmp_path: Path, cache: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GIT_ALLOW_PROTOCOL", raising=False)
    monkeypatch.setenv("CCE_GIT_TIMEOUT", "20")
    manifest = write_suite(tmp_path, [("ftp", "ftp://127.0.0.1:1/x.git", "a" * 40, "")])
    code, _, err = run_cce("suite", "fetch", str(manifest))
    assert code == 1
    assert "uses a git transport cce does not allow (allowed: file, https, ssh, git, http)" in err


def test_git_runs_with_an_allow_list_and_low_speed_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cce_cli.evaluation.corpora import _git_env

    for name in ("GIT_ALLOW_PROTOCOL", "GIT_HTTP_LOW_SPEED_LIMIT", "GIT_HTTP_LOW_SPEED_TIME"):
        monkeypatch.delenv(name, raising=False)
    env = _git_env()
    assert env["GIT_ALLOW_PROTOCOL"] == "file:https:ssh:git:http"
    assert (env["GIT_HTTP_LOW_SPEED_LIMIT"], env["GIT_HTTP_LOW_SPEED_TIME"]) == ("1000", "60")
    assert env["GIT_TERMINAL_PROMPT"] == "0"


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts connections and never says anything."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.settimeout(0.2)
        self.port: int = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                self.held.append(self.listener.accept()[0])
            except OSError:
                continue

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for connection in self.held:
            connection.close()
        self.listener.close()


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def test_a_server_that_says_nothing_ends_at_the_time_bound(
    tmp_path: Path, cache: Path, silent_server: SilentServer
) -> None:
    url = f"git://127.0.0.1:{silent_server.port}/x.git"
    manifest = write_suite(tmp_path, [("silent", url, "b" * 40, "")])
    env = {**os.environ, "CCE_GIT_TIMEOUT": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "cce_cli", "suite", "fetch", str(manifest)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"error: member 'silent': git did not finish within 1 s (waiting for commit "
        f"{'b' * 40} from {url}); check the network and the server, or raise "
        "CCE_GIT_TIMEOUT (seconds)\n"
    )


def test_credentials_in_git_urls_are_never_shown(
    tmp_path: Path, cache: Path, origin: Origin, run_cce: RunCce
) -> None:
    secret_url = "https://user:TOKEN123@mirror.invalid/origin"
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(
        f'[url "file://{origin.path.parent}/"]\n\tinsteadOf = https://user:TOKEN123@mirror.invalid/\n',
        encoding="utf-8",
    )
    manifest = write_suite(
        tmp_path,
        [
            ("sample", secret_url, origin.pinned, "src"),
            ("broken", "http://TOKEN456@127.0.0.1:1/x.git", "c" * 40, ""),
        ],
    )
    code, out, err = run_cce("suite", "fetch", "--keep-going", str(manifest))
    assert code == 1
    assert "https://***@mirror.invalid/origin @ " in out
    assert "http://***@127.0.0.1:1/x.git" in err
    assert "TOKEN" not in out + err
    manifest.write_text(manifest.read_text().split('\n[[members]]\nname = "broken"')[0])
    code, out, err = run_cce("relevance", str(manifest), "--backend", "bm25", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["members"][0]["corpus"]["url"] == "https://***@mirror.invalid/origin"
    assert "TOKEN" not in out + err


@pytest.mark.parametrize("name", [".", "..", "-rf", "_x"])
def test_member_names_that_are_not_plain_names_are_refused(
    tmp_path: Path, run_cce: RunCce, name: str
) -> None:
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        f'schema = "cce.suite/v1"\n\n[[members]]\nname = "{name}"\nfixtures = "f.jsonl"\n'
        'corpus = "c"\n',
        encoding="utf-8",
    )
    code, out, err = run_cce("relevance", str(manifest))
    assert (code, out) == (1, "")
    assert err.startswith(f"error: suite manifest {manifest}, member 1: name must be letters")
    assert "starting with a letter or digit" in err


@pytest.mark.parametrize(
    ("schema_line", "message"),
    [
        ("", 'no schema; declare schema = "cce.suite/v1" at the top'),
        (
            'schema = "cce.suite/v2"\n',
            "schema 'cce.suite/v2' is not one this cce reads; declare schema = "
            "\"cce.suite/v1\" (or use a cce that reads 'cce.suite/v2')",
        ),
    ],
)
def test_a_manifest_cce_does_not_recognise_says_what_it_is_missing(
    tmp_path: Path, run_cce: RunCce, schema_line: str, message: str
) -> None:
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        f'{schema_line}\n[[members]]\nname = "a"\nfixtures = "f.jsonl"\ncorpus = "c"\n',
        encoding="utf-8",
    )
    for argv in (("relevance", str(manifest)), ("suite", "fetch", str(manifest))):
        code, out, err = run_cce(*argv)
        assert (code, out) == (1, "")
        assert err == f"error: suite manifest {manifest}: {message}\n"


def test_select_members_keeps_the_named_ones_in_manifest_order(tmp_path: Path) -> None:
    from cce_cli.errors import CliError
    from cce_cli.formats.suite_manifest import read_manifest, select_members

    manifest_path = tmp_path / "suite.toml"
    manifest_path.write_text(
        'schema = "cce.suite/v1"\n'
        + "".join(
            f'\n[[members]]\nname = "{name}"\nfixtures = "f.jsonl"\ncorpus = "c"\n'
            for name in ("a", "b", "c")
        ),
        encoding="utf-8",
    )
    manifest = read_manifest(str(manifest_path))
    chosen = select_members(manifest, "c, a")
    assert [member.name for member in chosen.members] == ["a", "c"]
    assert chosen.sha256 == manifest.sha256
    with pytest.raises(CliError) as raised:
        select_members(manifest, "a,zz")
    assert raised.value.exit_code == 2
    assert raised.value.message == (
        f"--members: no member 'zz' in {manifest_path}; its members are a, b, c"
    )


def test_a_missing_git_is_an_error_not_a_traceback(
    tmp_path: Path, cache: Path, origin: Origin, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = write_suite(tmp_path, [("sample", origin.url, origin.pinned, "src")])
    assert run_cce("suite", "fetch", str(manifest))[0] == 0  # a checkout in place
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    code, _, err = run_cce("suite", "fetch", str(manifest))
    assert code == 1
    assert err.startswith(f"error: member 'sample': could not run git for {origin.url}: ")
    assert err.rstrip().endswith("install git, or check the cache directory")


def test_an_http_server_that_says_nothing_is_abandoned_at_the_low_speed_limit(
    tmp_path: Path,
    cache: Path,
    silent_server: SilentServer,
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The user's own low-speed time is kept (cce's default is 60 s).
    monkeypatch.setenv("GIT_HTTP_LOW_SPEED_TIME", "1")
    monkeypatch.setenv("CCE_GIT_TIMEOUT", "60")
    url = f"http://127.0.0.1:{silent_server.port}/x.git"
    manifest = write_suite(tmp_path, [("silent", url, "d" * 40, "")])
    code, out, err = run_cce("suite", "fetch", str(manifest))
    assert (code, out) == (1, "")
    assert err.startswith(f"error: member 'silent': git could not fetch {'d' * 40} from {url}: ")
    assert "Operation too slow" in err and err.count("\n") == 1
    # No second, full fetch after a transport failure: one connection, not two.
    assert len(silent_server.held) == 1
