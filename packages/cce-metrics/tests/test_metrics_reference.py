"""Line weights and token masses re-derived from the reference sample corpus
(docs/metrics.md#token-metrics, docs/metrics.md).

The chunk spans come from the reference's conformance table; their content is cut from
the sample files, with a nested chunk's first line starting at the node's column.
"""

from __future__ import annotations

from pathlib import Path

from cce_metrics import LineWeights, TokenScore, rust_lines, score_tokens


def chunk(lines: list[str], start: int, end: int, first_column: int = 0) -> str:
    text = "\n".join(lines[start - 1 : end])
    return text[first_column:]


def test_python_sample_weights_and_bm25_token_mass(reference_dir: Path) -> None:
    samples = reference_dir / "test" / "fixture" / "samples"
    python = rust_lines((samples / "python.py").read_bytes().decode("utf-8"))
    typescript = rust_lines((samples / "typescript.ts").read_bytes().decode("utf-8"))
    exported = len("export ")
    weights = LineWeights.from_chunks(
        [
            ("python.py", 3, chunk(python, 3, 4)),  # function_definition read_config
            ("python.py", 6, chunk(python, 6, 8)),  # class_definition Loader
            ("python.py", 7, chunk(python, 7, 8, first_column=4)),  # method load
            ("typescript.ts", 3, chunk(typescript, 3, 5, exported)),  # function loadConfig
            ("typescript.ts", 7, chunk(typescript, 7, 9, exported)),  # interface Config
            ("typescript.ts", 11, chunk(typescript, 11, 15, exported)),  # class Loader
            ("typescript.ts", 12, chunk(typescript, 12, 14, first_column=2)),  # method load
        ]
    )
    observed = {line: weights.weight("python.py", line) for line in range(1, 10)}
    assert observed == {1: 1, 2: 1, 3: 5, 4: 10, 5: 1, 6: 3, 7: 4, 8: 7, 9: 1}
    # bm25's top 5 for code-read-config-span: mass 29 + 8 + 14 = 51, expected 3-4 weighs 15.
    bm25_top5 = [
        ("python.py", 3, 4),
        ("python.py", 7, 8),
        ("typescript.ts", 7, 9),
        ("python.py", 6, 8),
        ("typescript.ts", 12, 14),
    ]
    score = score_tokens([("python.py", 3, 4)], bm25_top5, 5, weights)
    assert score == TokenScore(precision=15 / 51, recall=1.0, iou=15 / 51)


def test_c_sample_first_writer_is_the_parameter_struct(reference_dir: Path) -> None:
    source = (reference_dir / "test" / "fixture" / "samples" / "c.c").read_bytes()
    lines = rust_lines(source.decode("utf-8"))
    struct_column = lines[6].index("struct Node")
    weights = LineWeights.from_chunks(
        [
            ("c.c", 3, chunk(lines, 3, 5)),  # struct_specifier Node
            ("c.c", 7, lines[6][struct_column : struct_column + len("struct Node")]),
            ("c.c", 7, chunk(lines, 7, 9)),  # function_definition sum_node
        ]
    )
    assert weights.weight("c.c", 7) == 2
    assert weights.weight("c.c", 8) == 5
    assert weights.weight("c.c", 6) == 1
