"""Hostile backend and embedder plugins: whatever their code does, the command ends in
one `error:` line naming the plugin and its entry point, exit 1 (a Ctrl-C stays 130)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from cce_cli.main import main
from cce_retrieval import EMBEDDERS, load_embedder_plugins
from cce_retrieval.rank import backends as registry

MODULE = "hostile_plugins"

PLUGINS = textwrap.dedent(
    '''
    """Backend and embedder plugins that misbehave, one way each."""
    import signal
    import sys

    READ = []  # how many of its 10,000 items the long generator handed out, per call


    def hit(path="config.py", start=1, end=2, score=1.0):
        return {"file_path": path, "start_line": start, "end_line": end, "score": score}


    class Search:
        def __init__(self, behave):
            self.behave = behave

        def search(self, index, query, k):
            return self.behave(k)


    def backend(behave):
        return lambda params: Search(behave)


    def _exit(k):
        sys.exit(0)


    def _raise(k):
        raise ValueError("boom")


    def _fail_part_way(k):
        yield hit()
        yield hit()
        raise OSError("the index service went away")


    def _recurse(k):
        return _recurse(k)


    def _stop(k):
        raise StopIteration


    def _generator_exit(k):
        raise GeneratorExit


    def _keyboard(k):
        raise KeyboardInterrupt


    def _os_exit(k):
        import os

        os._exit(0)


    def _stubborn(k):
        while True:
            try:
                yield hit()
            except GeneratorExit:
                continue  # yields again instead of stopping


    def _ctrl_c(k):
        signal.raise_signal(signal.SIGINT)
        return [hit()]


    def _long(k):
        READ.append(0)
        for _ in range(10_000):
            READ[-1] += 1
            yield hit()


    def _nan(k):
        return [hit(), hit(score=float("nan"))]


    def _junk_after_k(k):
        return JUNK_AFTER[: k] + JUNK_AFTER[10:]


    JUNK_AFTER = [hit()] * 10 + [None] * 3_000_000

    exits = backend(_exit)
    raises = backend(_raise)
    fails_part_way = backend(_fail_part_way)
    recurses = backend(_recurse)
    stops = backend(_stop)
    generator_exit = backend(_generator_exit)
    keyboard = backend(_keyboard)
    ctrl_c = backend(_ctrl_c)
    os_exit = backend(_os_exit)
    stubborn = backend(_stubborn)
    long = backend(_long)
    nan = backend(_nan)
    junk_after_k = backend(_junk_after_k)
    returns_none = backend(lambda k: None)
    returns_int = backend(lambda k: 7)
    inf = backend(lambda k: [hit(score=float("-inf"))])
    negative_line = backend(lambda k: [hit(start=-1)])
    reversed_lines = backend(lambda k: [hit(start=9, end=3)])
    huge_line = backend(lambda k: [hit(end=10**30)])
    float_line = backend(lambda k: [hit(end=1e30)])
    nul_path = backend(lambda k: [hit(), hit(), hit(path="config\\0.py")])


    def factory_exits(params):
        sys.exit(3)


    def factory_raises(params):
        raise RuntimeError("no model file")


    def factory_none(params):
        return None


    class ExitingEmbedder:
        name = "exits"

        def embed(self, text):
            sys.exit(0)

        def try_embed_batch(self, texts):
            sys.exit(0)


    class QueryRaisingEmbedder:
        name = "query-raises"

        def embed(self, text):
            raise ValueError("query model crashed")

        def try_embed_batch(self, texts):
            return [[float(len(text)), 1.0] for text in texts]


    class CheckExitsEmbedder(QueryRaisingEmbedder):
        name = "check-exits"
        location = "nowhere"

        def check(self):
            sys.exit(0)


    class TextEmbedder(QueryRaisingEmbedder):
        name = "text"

        def try_embed_batch(self, texts):
            return [["one", "two"] for text in texts]


    def embedder_check_exits(model, environ):
        return CheckExitsEmbedder()


    def embedder_text(model, environ):
        return TextEmbedder()


    def embedder_exits(model, environ):
        return ExitingEmbedder()


    def embedder_query_raises(model, environ):
        return QueryRaisingEmbedder()


    def embedder_factory_exits(model, environ):
        sys.exit(0)
    '''
)

BACKEND_PLUGINS = (
    "exits",
    "raises",
    "fails_part_way",
    "recurses",
    "stops",
    "generator_exit",
    "keyboard",
    "ctrl_c",
    "os_exit",
    "stubborn",
    "long",
    "nan",
    "junk_after_k",
    "returns_none",
    "returns_int",
    "inf",
    "negative_line",
    "reversed_lines",
    "huge_line",
    "float_line",
    "nul_path",
    "factory_exits",
    "factory_raises",
    "factory_none",
)

EMBEDDER_PLUGINS = {
    "exits": "embedder_exits",
    "query-raises": "embedder_query_raises",
    "factory-exits": "embedder_factory_exits",
    "check-exits": "embedder_check_exits",
    "text": "embedder_text",
}


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """Every plugin above installed for this test: a module and a .dist-info on sys.path."""
    site = tmp_path / "site"
    info = site / "hostile_plugins-0.1.0.dist-info"
    info.mkdir(parents=True)
    (site / f"{MODULE}.py").write_text(PLUGINS, encoding="utf-8")
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: hostile-plugins\nVersion: 0.1.0\n", encoding="utf-8"
    )
    backends = "".join(f"{name} = {MODULE}:{name}\n" for name in BACKEND_PLUGINS)
    embedders = "".join(f"{name} = {MODULE}:{attr}\n" for name, attr in EMBEDDER_PLUGINS.items())
    (info / "entry_points.txt").write_text(
        f"[cce.backends]\n{backends}[cce.embedders]\n{embedders}", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(site))
    registry.load_plugins(force=True)
    embedders_before = dict(EMBEDDERS)
    load_embedder_plugins(force=True)
    yield sys.modules[MODULE]
    for name in BACKEND_PLUGINS:
        registry.BACKENDS.pop(name, None)
    EMBEDDERS.clear()
    EMBEDDERS.update(embedders_before)
    sys.modules.pop(MODULE, None)


def cce(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as stop:  # what the plugin chose, had it got through
        code = stop.code if isinstance(stop.code, int) else 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def relevance(capsys: pytest.CaptureFixture[str], workspace: Path, name: str) -> tuple[int, str]:
    """`cce relevance --compare bm25,NAME --fail-on-significant`: (status, stderr); stdout
    must stay empty on failure."""
    fixtures = str(workspace / "code.jsonl")
    code, out, err = cce(
        capsys, "relevance", fixtures, "--compare", f"bm25,{name}", "--fail-on-significant"
    )
    if code != 0:
        assert out == ""
    return code, err


def one_error(err: str, name: str, attr: str | None = None) -> str:
    """The one `error:` line about plugin `name`, without its prefix."""
    prefix = f"error: backend plugin {name!r} ({MODULE}:{attr or name}): "
    assert err.startswith(prefix), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err[len(prefix) : -1]


def test_a_plugin_that_exits_cannot_pass_the_gate(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = relevance(capsys, workspace, "exits")
    assert code == 1
    assert one_error(err, "exits") == "search() called sys.exit(0); a plugin must return or raise"


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("raises", "search() raised ValueError: boom"),
        ("fails_part_way", "search() raised OSError: the index service went away"),
        ("stops", "search() raised StopIteration"),
        ("generator_exit", "search() raised GeneratorExit"),
        ("returns_none", "search() returned None, not a list of results"),
        ("returns_int", "search() returned an int, not a list of results"),
        ("factory_exits", "the factory called sys.exit(3); a plugin must return or raise"),
        ("factory_raises", "the factory raised RuntimeError: no model file"),
        ("factory_none", "the factory returned None, which has no search(index, query, k)"),
    ],
)
def test_each_way_a_plugin_fails_is_one_error_naming_it(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str], name: str, what: str
) -> None:
    code, err = relevance(capsys, workspace, name)
    assert (code, one_error(err, name)) == (1, what)


def test_a_plugin_that_recurses_without_end_is_an_error(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = relevance(capsys, workspace, "recurses")
    assert code == 1
    assert one_error(err, "recurses").startswith(
        "search() recursed without end (RecursionError: maximum recursion depth exceeded"
    )


def test_a_keyboard_interrupt_the_plugin_raised_itself_is_an_error(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = relevance(capsys, workspace, "keyboard")
    assert code == 1
    assert one_error(err, "keyboard") == (
        "search() raised KeyboardInterrupt; no Ctrl-C came, so the plugin raised it itself"
    )


def test_a_ctrl_c_while_a_plugin_runs_is_still_an_interrupt(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = relevance(capsys, workspace, "ctrl_c")
    assert (code, err) == (130, "error: interrupted\n")


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("nan", "case 'code-load-config': result 2 `score` nan is not a finite number"),
        ("inf", "case 'code-load-config': result 1 `score` -inf is not a finite number"),
        ("negative_line", "case 'code-load-config': result 1 `start_line` -1 is negative"),
        (
            "reversed_lines",
            "case 'code-load-config': result 1 `start_line` 9 is after `end_line` 3",
        ),
        (
            "huge_line",
            "case 'code-load-config': result 1 `end_line` 1000000000000000000000000000000 "
            "is not below 2**63",
        ),
        ("float_line", "case 'code-load-config': result 1 lines are not integers"),
        (
            "nul_path",
            "case 'code-load-config': result 3 `file_path` 'config\\x00.py' holds a NUL character",
        ),
    ],
)
def test_a_result_that_cannot_be_printed_or_scored_is_an_error(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str], name: str, what: str
) -> None:
    code, err = relevance(capsys, workspace, name)
    assert (code, one_error(err, name)) == (1, what)


def test_results_past_k_are_neither_checked_nor_read(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixtures = str(workspace / "code.jsonl")
    code, out, err = cce(capsys, "relevance", fixtures, "--backend", "junk_after_k", "--json")
    assert code == 0, err
    assert json.loads(out)["backends"][0]["backend"] == "junk_after_k"
    code, out, err = cce(capsys, "relevance", fixtures, "--backend", "long", "--json")
    assert code == 0, err
    cases = [json.loads(line) for line in (workspace / "code.jsonl").read_text().splitlines()[1:]]
    read: list[int] = plugins.READ  # items each call handed out: the case's k, no more
    assert read == [case["k"] for case in cases]


def test_cce_search_and_cce_pool_hold_plugins_to_the_same_rule(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    corpus = workspace.parent / "corpus" / "sample"
    code, _, err = cce(capsys, "index", str(corpus), "--no-metrics")
    assert code == 0, err
    for name, what in [
        ("exits", "search() called sys.exit(0); a plugin must return or raise"),
        ("nan", "query 'load config': result 2 `score` nan is not a finite number"),
    ]:
        code, out, err = cce(
            capsys, "search", "load config", "--dir", str(corpus), "--backend", name, "--no-metrics"
        )
        assert (code, out) == (1, "")
        assert one_error(err, name) == what
    fixtures = str(workspace / "code.jsonl")
    output = str(tmp_path / "judge.jsonl")
    for name, what in [
        ("exits", "search() called sys.exit(0); a plugin must return or raise"),
        ("fails_part_way", "search() raised OSError: the index service went away"),
        (
            "reversed_lines",
            "case 'code-load-config': result 1 `start_line` 9 is after `end_line` 3",
        ),
    ]:
        code, out, err = cce(capsys, "pool", fixtures, "--backends", f"bm25,{name}", "-o", output)
        assert (code, out) == (1, "")
        assert one_error(err, name) == what


def test_an_embedder_plugin_that_exits_or_raises_is_one_error(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = workspace.parent / "corpus" / "sample"
    code, out, err = cce(capsys, "index", str(corpus), "--embedder", "exits", "--no-metrics")
    assert (code, out) == (1, "")
    assert err.startswith(
        f"error: embedder plugin 'exits' ({MODULE}:embedder_exits): try_embed_batch() called "
        "sys.exit(0); a plugin must return or raise"
    ), err
    assert err.count("\n") == 1
    code, out, err = cce(
        capsys, "index", str(corpus), "--embedder", "factory-exits", "--no-metrics"
    )
    assert (code, out) == (1, "")
    assert err == (
        f"error: embedder plugin 'factory-exits' ({MODULE}:embedder_factory_exits): the "
        "factory called sys.exit(0); a plugin must return or raise\n"
    )
    code, _, err = cce(capsys, "index", str(corpus), "--embedder", "query-raises", "--no-metrics")
    assert code == 0, err
    code, out, err = cce(capsys, "search", "load config", "--dir", str(corpus), "--no-metrics")
    assert (code, out) == (1, "")
    assert err == (
        f"error: embedder plugin 'query-raises' ({MODULE}:embedder_query_raises): embed() "
        "raised ValueError: query model crashed\n"
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_suite_holds_plugins_to_the_same_rule_here_and_in_workers(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str], jobs: str
) -> None:
    manifest = workspace / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n\n'
        '[[members]]\nname = "one"\nfixtures = "code.jsonl"\ncorpus = "../corpus/sample"\n\n'
        '[[members]]\nname = "two"\nfixtures = "code.jsonl"\ncorpus = "../corpus/sample"\n',
        encoding="utf-8",
    )
    for name, what in [
        ("exits", "search() called sys.exit(0); a plugin must return or raise"),
        (
            "keyboard",
            "search() raised KeyboardInterrupt; no Ctrl-C came, so the plugin raised it itself",
        ),
        ("nan", "case 'code-load-config': result 2 `score` nan is not a finite number"),
    ]:
        code, out, err = cce(
            capsys,
            "relevance",
            str(manifest),
            "--compare",
            f"bm25,{name}",
            "--fail-on-significant",
            "--jobs",
            jobs,
        )
        assert (code, out) == (1, ""), err
        assert err.endswith(f"backend plugin {name!r} ({MODULE}:{name}): {what}\n"), err
        assert err.startswith("error: member 'one': "), err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_a_plugin_that_exits_on_import_fails_only_the_runs_that_use_it(
    plugins: ModuleType,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = tmp_path / "site2"
    info = site / "exiting_plugin-0.1.0.dist-info"
    info.mkdir(parents=True)
    (site / "exiting_plugin.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: exiting-plugin\nVersion: 0.1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[cce.backends]\non_import = exiting_plugin:SPEC\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(site))
    try:
        registry.load_plugins(force=True)
        fixtures = str(workspace / "code.jsonl")
        code, out, err = cce(capsys, "relevance", fixtures, "--backend", "bm25", "--json")
        assert code == 0, err
        assert json.loads(out)["backends"][0]["backend"] == "bm25"
        code, err = relevance(capsys, workspace, "on_import")
        assert (code, err) == (
            1,
            "error: backend plugin 'on_import' (exiting_plugin:SPEC) failed to load: importing "
            "it called sys.exit(0); a plugin must return or raise\n",
        )
    finally:
        registry.BACKENDS.pop("on_import", None)


def test_a_suite_worker_that_a_plugin_ends_is_an_error_naming_the_member(
    plugins: ModuleType, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = workspace / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n\n'
        '[[members]]\nname = "one"\nfixtures = "code.jsonl"\ncorpus = "../corpus/sample"\n\n'
        '[[members]]\nname = "two"\nfixtures = "code.jsonl"\ncorpus = "../corpus/sample"\n',
        encoding="utf-8",
    )
    code, out, err = cce(
        capsys, "relevance", str(manifest), "--compare", "bm25,os_exit", "--jobs", "2"
    )
    assert (code, out) == (1, "")
    assert err == (
        "error: a worker process ended without a result before member 'one' was scored (it "
        "was killed, or code it ran, such as a plugin, ended the process itself)\n"
    )


def test_a_generator_that_will_not_close_is_one_error_and_no_note(
    plugins: ModuleType, workspace: Path
) -> None:
    # Through the console script's entry point, whose hook for "Exception ignored" notes
    # is what would print the generator's second refusal, when it is collected.
    site = Path(plugins.__file__ or "").parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from cce_cli.entry import main; sys.exit(main())",
            "relevance",
            str(workspace / "code.jsonl"),
            "--backend",
            "stubborn",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"error: backend plugin 'stubborn' ({MODULE}:stubborn): search() raised RuntimeError: "
        "generator ignored GeneratorExit\n"
    )


@pytest.mark.parametrize(
    ("name", "attr", "what"),
    [
        ("check-exits", "embedder_check_exits", "check() called sys.exit(0); a plugin must"),
        ("text", "embedder_text", "try_embed_batch() raised ValueError: could not convert"),
    ],
)
def test_an_embedder_plugin_health_check_and_vectors_are_guarded(
    plugins: ModuleType,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    attr: str,
    what: str,
) -> None:
    corpus = workspace.parent / "corpus" / "sample"
    code, out, err = cce(capsys, "index", str(corpus), "--embedder", name, "--no-metrics")
    assert (code, out) == (1, "")
    assert err.startswith(f"error: embedder plugin {name!r} ({MODULE}:{attr}): {what}"), err
    assert err.count("\n") == 1
