"""Parsing and loading `index.json`, with errors that say what is wrong and where.

Why it exists: a damaged or foreign store must fail with a message that names the file
and the broken part (docs/index-store.md), while a well-formed store of 50,000 chunks
must load fast; so the embedding arrays are parsed with numpy before `json.loads` sees
the rest, and anything not in that exact shape falls back to the ordinary parser, which
reports the cause. Unknown keys are ignored and legacy defaults applied.

A store that parses but could not have been written by a compatible cce is refused with
the reason rather than loaded into wrong answers: a `spec_version` of a newer major
version, a non-finite embedding value (`NaN`, or `1e999`, which overflows), embeddings
whose width disagrees with the recorded `embedding_dim`, a hash store whose vectors are
not 256 wide, or a chunk whose `start_line` is after its `end_line`. JSON nested deeper
than Python's parser can follow is a `StoreError` too, never a `RecursionError`
(docs/hostile-input.md#stores).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.embed.hashing import EMBED_DIM, MAX_VECTOR_VALUE
from cce_retrieval.model import Chunk, FloatMatrix, Index
from cce_retrieval.store.fileio import describe_os_error, read_input_file
from cce_retrieval.store.paths import MAX_STORE_BYTES, StoreError


class _ShapeError(Exception):
    """A JSON document that parsed but is not a store; the message says which part."""


def _require(obj: Mapping[str, object], key: str, where: str) -> object:
    if key not in obj:
        raise _ShapeError(f"{where}missing field `{key}`")
    return obj[key]


def _as_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _ShapeError(f"{what} must be a string, found {_json_type(value)}")
    return value


def _as_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _ShapeError(f"{what} must be a non-negative integer, found {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


class _FastPathMiss(Exception):
    """The pre-extracted embeddings do not line up with the chunks; parse the slow way."""


def _parse_chunk(raw: object, i: int, pre_extracted: bool) -> tuple[Chunk, list[float]]:
    where = f"chunk {i}: "
    if not isinstance(raw, dict):
        raise _ShapeError(f"{where}must be an object, found {_json_type(raw)}")
    embedding = raw.get("embedding", [])
    if pre_extracted:
        if type(embedding) is not int or embedding != i:
            raise _FastPathMiss
        embedding = []
    if not isinstance(embedding, list):
        raise _ShapeError(f"{where}`embedding` must be an array of numbers")
    for value in embedding:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _ShapeError(f"{where}`embedding` holds {_json_type(value)}, not a number")
    kind = raw.get("kind", "")
    chunk_id, file_path, chunk_type = (
        raw.get("chunk_id"),
        raw.get("file_path"),
        raw.get("chunk_type"),
    )
    start, end, tokens = raw.get("start_line"), raw.get("end_line"), raw.get("token_count")
    language, content = raw.get("language"), raw.get("content")
    if (  # the common, well-formed chunk: skip the field-by-field diagnosis below
        isinstance(chunk_id, str)
        and isinstance(file_path, str)
        and isinstance(chunk_type, str)
        and isinstance(kind, str)
        and isinstance(language, str)
        and isinstance(content, str)
        and type(start) is int
        and type(end) is int
        and type(tokens) is int
        and min(start, end, tokens) >= 0
    ):
        chunk = Chunk(chunk_id, file_path, start, end, chunk_type, kind, language, content, tokens)
        return chunk, embedding
    chunk = Chunk(
        chunk_id=_as_str(_require(raw, "chunk_id", where), f"{where}`chunk_id`"),
        file_path=_as_str(_require(raw, "file_path", where), f"{where}`file_path`"),
        start_line=_as_count(_require(raw, "start_line", where), f"{where}`start_line`"),
        end_line=_as_count(_require(raw, "end_line", where), f"{where}`end_line`"),
        chunk_type=_as_str(_require(raw, "chunk_type", where), f"{where}`chunk_type`"),
        kind=_as_str(kind, f"{where}`kind`"),
        language=_as_str(_require(raw, "language", where), f"{where}`language`"),
        content=_as_str(_require(raw, "content", where), f"{where}`content`"),
        token_count=_as_count(_require(raw, "token_count", where), f"{where}`token_count`"),
    )
    return chunk, embedding


def embedding_matrix(vectors: Sequence[Sequence[float]]) -> tuple[FloatMatrix, list[int] | None]:
    """Stack per-chunk vectors into the index matrix (row i = chunk i).

    Equal lengths give an (n, length) matrix and no length list. Ragged vectors (a
    legacy store's empty embeddings, an Ollama empty vector) are zero-padded to the
    widest one and their true lengths returned, so the store round-trips them.
    """
    lengths = [len(v) for v in vectors]
    if not lengths:
        return np.zeros((0, 0), dtype=np.float64), None
    width = max(lengths)
    if all(length == width for length in lengths):
        return np.array(vectors, dtype=np.float64).reshape(len(lengths), width), None
    matrix = np.zeros((len(lengths), width), dtype=np.float64)
    for i, vector in enumerate(vectors):
        if vector:
            matrix[i, : len(vector)] = vector
    return matrix, lengths


def _parse_document(document: object, extracted: _Extracted | None = None) -> Index:
    if not isinstance(document, dict):
        raise _ShapeError(f"the top level must be an object, found {_json_type(document)}")
    spec_version = _as_str(_require(document, "spec_version", ""), "`spec_version`")
    embedder = _as_str(document.get("embedder", "hash"), "`embedder`")
    raw_model = document.get("embedder_model")
    model = None if raw_model is None else _as_str(raw_model, "`embedder_model`")
    raw_dim = document.get("embedding_dim")
    dim = None if raw_dim is None else _as_count(raw_dim, "`embedding_dim`")
    raw_chunks = _require(document, "chunks", "")
    if not isinstance(raw_chunks, list):
        raise _ShapeError(f"`chunks` must be an array, found {_json_type(raw_chunks)}")
    raw_imports = _require(document, "file_imports", "")
    if not isinstance(raw_imports, dict):
        raise _ShapeError(f"`file_imports` must be an object, found {_json_type(raw_imports)}")
    file_imports: dict[str, list[str]] = {}
    for path, modules in raw_imports.items():
        if not isinstance(modules, list):
            raise _ShapeError(f"`file_imports` entry {path!r} must be an array of strings")
        file_imports[path] = [_as_str(m, f"`file_imports` entry {path!r}") for m in modules]
    raw_tokens = document.get("file_tokens", {})
    if not isinstance(raw_tokens, dict):
        raise _ShapeError(f"`file_tokens` must be an object, found {_json_type(raw_tokens)}")
    file_tokens = {
        path: _as_count(count, f"`file_tokens` entry {path!r}")
        for path, count in raw_tokens.items()
    }
    chunks: list[Chunk] = []
    vectors: list[list[float]] = []
    for i, raw in enumerate(raw_chunks):
        chunk, vector = _parse_chunk(raw, i, extracted is not None)
        chunks.append(chunk)
        vectors.append(vector)
    if extracted is None:
        embeddings, lengths = embedding_matrix(vectors)
    elif extracted.rows == len(chunks):
        embeddings, lengths = extracted.matrix, extracted.lengths
    else:
        raise _FastPathMiss
    _check_consistency(spec_version, embedder, dim, chunks, embeddings, lengths)
    return Index(
        embedder=embedder,
        chunks=chunks,
        embeddings=embeddings,
        file_imports=file_imports,
        file_tokens=file_tokens,
        spec_version=spec_version,
        embedding_lengths=lengths,
        embedder_model=model,
        embedding_dim=dim,
    )


SUPPORTED_SPEC_MAJOR = 1
"""Stores up to this `spec_version` major load (legacy 0.x too); a newer one is refused."""


def _check_consistency(
    spec_version: str,
    embedder: str,
    dim: int | None,
    chunks: Sequence[Chunk],
    embeddings: FloatMatrix,
    lengths: Sequence[int] | None,
) -> None:
    """Refuse a parsed store whose parts cannot belong together (see the module docstring)."""
    major = spec_version.split(".", 1)[0]
    if not major.isdigit() or int(major) > SUPPORTED_SPEC_MAJOR:
        raise _ShapeError(
            f"`spec_version` is {spec_version!r}, but this cce reads stores up to version "
            f"{SUPPORTED_SPEC_MAJOR}.x; re-index with `cce index`"
        )
    for i, chunk in enumerate(chunks):
        if chunk.start_line > chunk.end_line:
            raise _ShapeError(
                f"chunk {i}: `start_line` {chunk.start_line} is after `end_line` {chunk.end_line}"
            )
    if embeddings.size and not np.isfinite(embeddings).all():
        row = int(np.flatnonzero(~np.isfinite(embeddings).all(axis=1))[0])
        raise _ShapeError(f"chunk {row}: `embedding` holds NaN or an infinite number (e.g. 1e999)")
    if embeddings.size and float(np.abs(embeddings).max()) > MAX_VECTOR_VALUE:
        row = int(np.flatnonzero((np.abs(embeddings) > MAX_VECTOR_VALUE).any(axis=1))[0])
        raise _ShapeError(
            f"chunk {row}: `embedding` holds a value of magnitude over {MAX_VECTOR_VALUE:g} "
            "(e.g. 1e300), whose dot products overflow"
        )
    widths = list(lengths) if lengths is not None else [embeddings.shape[1]] * len(chunks)
    present = {width for width in widths if width}
    if dim is not None and present - {dim}:
        width = min(present - {dim})
        raise _ShapeError(f"`embedding_dim` is {dim} but an embedding has {width} values")
    width = present.pop() if len(present) == 1 else None
    if embedder == "hash" and width is not None and width != EMBED_DIM:
        raise _ShapeError(
            f"hash embeddings have {EMBED_DIM} values, these have {width}; "
            "the store was not written by a hash build"
        )


@attrs.frozen(slots=True)
class _Extracted:
    """Embeddings cut out of the store text before JSON parsing (see `_extract_embeddings`)."""

    reduced_text: str
    rows: int
    matrix: FloatMatrix
    lengths: list[int] | None


_EMBEDDING_ARRAY = re.compile(r'"embedding":\[([^\]]*)\]')
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_BYTES = np.zeros(256, dtype=bool)
_NUMBER_BYTES[np.frombuffer(b"0123456789.eE+-,", dtype=np.uint8)] = True
_ZERO_TOKEN = np.frombuffer(b"0.0", dtype=np.uint8)


_MAX_NUMBER_TOKEN = 32  # ryu's longest f64 text is 24 bytes; longer tokens are not ours


def _distinct_tokens(
    raw: npt.NDArray[np.uint8], starts: npt.NDArray[np.intp], lengths: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.bytes_], npt.NDArray[np.intp]]:
    """The distinct byte strings among the tokens `raw[start:start+length]`, and the inverse.

    Tokens are copied into fixed-width, zero-padded rows (in slices, to bound memory)
    and de-duplicated by numpy, so Python touches each distinct text once.
    """
    width = int(lengths.max())
    if width > _MAX_NUMBER_TOKEN:
        width = _MAX_NUMBER_TOKEN + 1  # too long for any f64 text: the caller rejects it
    cells = np.zeros((starts.size, width), dtype=np.uint8)
    offsets = np.arange(width)
    step = 1 << 16
    for first in range(0, starts.size, step):
        part = slice(first, first + step)
        index = starts[part, None] + offsets
        inside = offsets < lengths[part, None]
        cells[part] = np.where(inside, raw[np.minimum(index, raw.size - 1)], 0)
    fixed = cells.view(f"S{width}").reshape(-1)
    distinct, inverse = np.unique(fixed, return_inverse=True)
    return distinct, inverse


def _extract_embeddings(text: str) -> _Extracted | None:
    """Parse the compact store's embedding arrays with numpy instead of `json.loads`.

    `json.loads` builds one Python float per embedding value (12.8 M for a 50,000-chunk
    store), which dominates loading. Each `"embedding":[...]` array of a store written
    by `save_index` is replaced by its ordinal, and its numbers are parsed here: the
    (overwhelmingly common) `0.0` tokens are recognised with vectorised byte compares
    and only the other tokens are converted, once per distinct text. Returns None when
    the text is not in that exact shape; the caller then parses it the ordinary way.
    """
    bodies: list[str] = []

    def cut(match: re.Match[str]) -> str:
        bodies.append(match.group(1))
        return f'"embedding":{len(bodies) - 1}'

    reduced = _EMBEDDING_ARRAY.sub(cut, text)
    if not bodies:
        return None
    lengths = [body.count(",") + 1 if body else 0 for body in bodies]
    joined = ",".join(body for body in bodies if body)
    try:
        raw = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    except UnicodeEncodeError:
        return None
    if not _NUMBER_BYTES[raw].all():
        return None
    commas = np.flatnonzero(raw == ord(","))
    starts = np.concatenate(([0], commas + 1))
    ends = np.concatenate((commas, [raw.size]))
    total = int(starts.size) if raw.size else 0
    if total != sum(lengths):
        return None
    values = np.zeros(total, dtype=np.float64)
    if total:
        token_lengths = ends - starts
        if not token_lengths.all():
            return None
        zero = token_lengths == 3
        for offset, expected in enumerate(_ZERO_TOKEN.tolist()):
            zero &= raw[np.minimum(starts + offset, raw.size - 1)] == expected
        other = np.flatnonzero(~zero)
        if other.size:
            distinct, inverse = _distinct_tokens(raw, starts[other], token_lengths[other])
            distinct_values: list[float] = []
            for token_bytes in distinct.tolist():
                token = token_bytes.decode("ascii")
                if _JSON_NUMBER.fullmatch(token) is None:
                    return None
                distinct_values.append(float(token))
            values[other] = np.array(distinct_values, dtype=np.float64)[inverse.reshape(-1)]
    width = max(lengths)
    rows = len(lengths)
    if all(length == width for length in lengths):
        return _Extracted(reduced, rows, values.reshape(rows, width), None)
    matrix = np.zeros((rows, width), dtype=np.float64)
    row_of = np.repeat(np.arange(rows), lengths)
    row_start = np.repeat(np.cumsum([0, *lengths[:-1]]), lengths)
    matrix[row_of, np.arange(total) - row_start] = values
    return _Extracted(reduced, rows, matrix, lengths)


def parse_index(data: bytes, path: str = "<memory>") -> Index:
    """Parse store bytes (docs/index-store.md#loading): unknown keys ignored, legacy defaults
    applied."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise StoreError(
            "load", path, f"stream did not contain valid UTF-8 (byte offset {err.start})"
        ) from err
    extracted = _extract_embeddings(text)
    if extracted is not None:
        try:
            return _parse_document(json.loads(extracted.reduced_text), extracted)
        except (ValueError, RecursionError, _ShapeError, _FastPathMiss):
            pass  # not a well-formed compact store: the ordinary path reports why
    try:
        document = json.loads(text)
    except RecursionError:
        raise StoreError(
            "load", path, "not a cce store: the JSON is nested too deeply to be one"
        ) from None
    except json.JSONDecodeError as err:
        if not text.strip():
            cause = "the file is empty, not a JSON store"
        elif err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string"):
            # The parser ran out of input: a partial write or a copy cut short.
            cause = f"the JSON ends early, the store looks truncated ({err.msg})"
        else:
            cause = f"invalid JSON: {err.msg} (line {err.lineno}, column {err.colno})"
        raise StoreError("load", path, cause) from err
    except ValueError:  # int(str)'s digit limit: no store field is anywhere near that long
        raise StoreError(
            "load",
            path,
            f"not a cce store: it holds an integer of more than "
            f"{sys.get_int_max_str_digits()} digits",
        ) from None
    try:
        return _parse_document(document)
    except _ShapeError as err:
        raise StoreError("load", path, f"not a cce store: {err}") from err


def load_index(path: str) -> Index:
    """Read and parse the store at `path`; any failure is a StoreError naming `path`."""
    try:
        data = read_input_file(path, MAX_STORE_BYTES, "stores")
    except OSError as err:
        raise StoreError("load", path, describe_os_error(err)) from err
    return parse_index(data, path)
