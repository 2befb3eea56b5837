"""Import extraction per pack: the docs/index-store.md#imports anchors (exact lists) and the
documented quirks."""

from __future__ import annotations

import pytest

from cce_retrieval.chunk.chunker import chunk_file


def imports_of(path: str, source: str) -> list[str]:
    return list(chunk_file(path, source).imports)


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        (
            "m.py",
            "import os.path\nfrom pkg.sub import x\nimport hashlib\nimport numpy as np\n",
            ["os", "pkg", "hashlib", "numpy"],
        ),
        ("m.js", "import a from 'react';\nimport b from './auth';\n", ["react", "auth"]),
        (
            "m.rb",
            'require "json"\nrequire_relative "lib/foo"\nrequire "json"\n',
            ["json", "foo"],
        ),
        ("m.rs", "use std::x;\nuse crate::y::Z;\nuse std::w;\n", ["std", "crate"]),
        (
            "m.ts",
            'import {a} from "@scope/pkg";\nimport b from "./store";\n',
            ["@scope/pkg", "store"],
        ),
        ("m.c", '#include <sys/types.h>\n#include "store.h"\n', ["types", "store"]),
    ],
)
def test_language_pack_import_anchors(path: str, source: str, expected: list[str]) -> None:
    assert imports_of(path, source) == expected


def test_python_relative_and_future_imports() -> None:
    source = (
        "from . import x\n"
        "from .mod import y\n"
        "from ..a.b import z\n"
        "from __future__ import annotations\n"
        "import a.b as c, d\n"
    )
    assert imports_of("m.py", source) == ["mod", "a", "d"]


def test_nested_imports_count_and_imports_survive_without_chunks() -> None:
    assert imports_of("m.py", "def f():\n    import inner\n") == ["inner"]
    only_imports = chunk_file("m.py", "import os\n")
    assert only_imports.imports == ("os",)
    assert [chunk.kind for chunk in only_imports.chunks] == ["module"]


def test_javascript_import_quirks() -> None:
    source = (
        "import './side';\n"
        'import x from "a\\x41b";\n'
        "const r = require('req');\n"
        "import('dyn');\n"
        "export { q } from 'reexp';\n"
        "import y from '../../up/z';\n"
        "import s from '@scope/pkg/sub';\n"
        "import t from '@solo';\n"
    )
    # Side-effect imports count, the LAST string fragment wins (`b`), require/import()/
    # re-exports do not count, `.`/`..` segments are dropped, scopes keep two segments.
    assert imports_of("m.js", source) == ["side", "b", "up", "@scope/pkg", "@solo"]


def test_typescript_import_type_counts_but_import_require_does_not() -> None:
    source = "import type { T } from 'types-mod';\nimport z = require('zz');\n"
    assert imports_of("m.ts", source) == ["types-mod"]


def test_ruby_require_quirks() -> None:
    source = (
        "Kernel.require 'nope'\n"
        "require 'a.tar.gz'\n"
        "require '.hidden'\n"
        "require File.expand_path('../x/y.rb', __dir__)\n"
    )
    assert imports_of("m.rb", source) == ["a.tar", ".hidden", "y"]


def test_rust_use_quirks() -> None:
    source = (
        "pub use foo::bar;\n"
        "use ::std::x;\n"
        "use {a, b};\n"
        "use self::m;\n"
        "use super::*;\n"
        "extern crate ec;\n"
        "mod md;\n"
    )
    assert imports_of("m.rs", source) == ["pub", "self", "super"]


def test_c_include_quirks() -> None:
    source = '#include "a/b/c.h"\n#include MACRO\n#include <stdio.h>\n#include <.hidden>\n'
    assert imports_of("m.c", source) == ["c", "stdio", ".hidden"]


def test_plaintext_files_never_have_imports() -> None:
    assert imports_of("notes.md", "import os\n") == []
    assert imports_of("m.pyi", "import os\n") == []
