"""The persisted store: `index.json` bytes, atomic writes, loading, and the fingerprint.

Why it exists: the store is a contract with the Rust reference (indexing spec §9). Its
bytes must be identical (serde_json compact output, keys in declaration order, floats
printed by ryu rather than Python's `repr`), a crash must never leave half a store
(temp file + fsync + rename), and a damaged store must fail with a message that names
the file and says what is wrong. This module owns all of that, plus the fingerprint
written beside the store (§9.5); it does no walking, chunking or embedding.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import json
import math
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from json.encoder import encode_basestring  # the C escaper behind ensure_ascii=False
from typing import Final

import attrs
import numpy as np
import numpy.typing as npt

from cce_metrics import TOKENIZER_ID
from cce_retrieval.embedder import EMBED_DIM
from cce_retrieval.model import Chunk, FloatMatrix, Index
from cce_retrieval.packs import PACK_SET

STORE_SPEC_VERSION: Final = "1.0"
ENGINE_VERSION: Final = "2.9.0"
FINGERPRINT_SCHEMA: Final = "cce.fingerprint/v1"
BLOCK_NESTING_LIMIT: Final = 192
MARKDOWN_SECTION_TOKENS: Final = 400

_temp_sequence = itertools.count()


class StoreError(Exception):
    """A store that could not be written or loaded; `str()` names the path and the cause."""

    def __init__(self, action: str, path: str, cause: str) -> None:
        super().__init__(f"could not {action} store {path}: {cause}")
        self.action = action
        self.path = path
        self.cause = cause


def default_store_path(directory: str) -> str:
    """`<directory>/.cce/index.json`, joined onto the directory exactly as typed (§9.1)."""
    return os.path.join(directory, ".cce", "index.json")


def resolve_store_path(store: str | None, directory: str | None) -> str:
    """§9.1: `--store` verbatim, else `<directory>/.cce/index.json`, else `./.cce/index.json`."""
    if store is not None:
        return store
    return default_store_path(directory if directory is not None else ".")


# ---------------------------------------------------------------------------------------
# Float and JSON formatting
# ---------------------------------------------------------------------------------------


def format_json_float(value: float) -> str:
    """Print a double like serde_json (ryu): shortest round-trip digits, ryu's layout.

    The digits are the ones `repr` picks; only the layout differs from `repr` for
    magnitudes below 1e-4 and at or above 1e16. Non-finite values print as `null`,
    like serde_json.
    """
    if not math.isfinite(value):
        return "null"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    text = repr(abs(value))
    mantissa, _, exponent_text = text.partition("e")
    exponent = int(exponent_text) if exponent_text else 0
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    exponent -= len(fraction)
    stripped = digits.lstrip("0")
    trailing = len(stripped) - len(stripped.rstrip("0"))
    digits = stripped.rstrip("0")
    exponent += trailing
    n = len(digits)
    kk = n + exponent
    if exponent >= 0 and kk <= 16:
        body = digits + "0" * exponent + ".0"
    elif 0 < kk <= 16:
        body = digits[:kk] + "." + digits[kk:]
    elif -5 < kk <= 0:
        body = "0." + "0" * (-kk) + digits
    elif n == 1:
        body = f"{digits}e{kk - 1}"
    else:
        body = f"{digits[0]}.{digits[1:]}e{kk - 1}"
    return sign + body


def _format_rows(embeddings: FloatMatrix, lengths: Sequence[int]) -> list[str]:
    """`[f,f,...]` for each row, formatting every DISTINCT non-zero value once.

    A store of 50,000 chunks holds 12.8 M floats, but for the hash embedder about 90%
    of them are 0.0 and the rest take a few ten thousand distinct values. So each row
    is assembled from runs of zeros (prebuilt `"0.0,"` strings) and its non-zero cells,
    which are formatted once per distinct value and glued to their preceding zero run
    by numpy's element-wise object addition; nothing is done per zero cell in Python.
    """
    rows, width = embeddings.shape
    if rows == 0 or width == 0:
        return ["[]"] * rows
    flat = np.ascontiguousarray(embeddings, dtype=np.float64).reshape(-1)
    row_lengths = np.asarray(lengths, dtype=np.int64)
    # Bit patterns, not values: -0.0 has non-zero bits and keeps its own text.
    bits = flat.view(np.uint64)
    nonzero = np.flatnonzero(bits)
    nz_rows = nonzero // width
    nz_cols = nonzero % width
    inside = nz_cols < row_lengths[nz_rows]  # ignore padding past a short row's end
    nonzero, nz_rows, nz_cols = nonzero[inside], nz_rows[inside], nz_cols[inside]
    zero_runs = ["0.0," * k for k in range(width + 1)]
    if nonzero.size:
        distinct_bits, inverse = np.unique(bits[nonzero], return_inverse=True)
        distinct_text = np.array(
            [format_json_float(v) for v in distinct_bits.view(np.float64).tolist()], dtype=object
        )
        previous_end = np.zeros(nonzero.size, dtype=np.int64)
        previous_end[1:] = nz_cols[:-1] + 1
        first_in_row = np.ones(nonzero.size, dtype=bool)
        first_in_row[1:] = nz_rows[1:] != nz_rows[:-1]
        previous_end[first_in_row] = 0
        runs = np.array(zero_runs, dtype=object)[nz_cols - previous_end]
        pieces: list[str] = (runs + distinct_text[inverse.reshape(-1)] + ",").tolist()
    else:
        pieces = []
    bounds = np.searchsorted(nz_rows, np.arange(rows + 1), side="left").tolist()
    starts, ends = np.asarray(bounds[:-1]), np.asarray(bounds[1:])
    last_end = np.zeros(rows, dtype=np.int64)
    has_nonzero = ends > starts
    last_end[has_nonzero] = nz_cols[ends[has_nonzero] - 1] + 1
    tails = (row_lengths - last_end).tolist()
    out: list[str] = []
    for i, length in enumerate(row_lengths.tolist()):
        if length == 0:
            out.append("[]")
            continue
        body = "".join(pieces[bounds[i] : bounds[i + 1]]) + zero_runs[tails[i]]
        out.append("[" + body[:-1] + "]")
    return out


def _embedding_lengths(index: Index) -> list[int]:
    rows, width = index.embeddings.shape if index.embeddings.ndim == 2 else (0, 0)
    if index.embedding_lengths is not None:
        return list(index.embedding_lengths)
    return [width if i < rows else 0 for i in range(len(index.chunks))]


def _chunk_json(chunk: Chunk, embedding: str) -> str:
    return (
        '{"chunk_id":' + encode_basestring(chunk.chunk_id)
        + ',"file_path":' + encode_basestring(chunk.file_path)
        + ',"start_line":' + str(chunk.start_line)
        + ',"end_line":' + str(chunk.end_line)
        + ',"chunk_type":' + encode_basestring(chunk.chunk_type)
        + ',"kind":' + encode_basestring(chunk.kind)
        + ',"language":' + encode_basestring(chunk.language)
        + ',"content":' + encode_basestring(chunk.content)
        + ',"token_count":' + str(chunk.token_count)
        + ',"embedding":' + embedding + "}"
    )  # fmt: skip


def _sorted_object(mapping: Mapping[str, object]) -> str:
    parts = []
    for key in sorted(mapping):
        value = mapping[key]
        if isinstance(value, list):
            rendered = "[" + ",".join(encode_basestring(m) for m in value) + "]"
        else:
            rendered = str(value)
        parts.append(encode_basestring(key) + ":" + rendered)
    return "{" + ",".join(parts) + "}"


def _iter_store_pieces(index: Index) -> Iterator[str]:
    lengths = _embedding_lengths(index)
    rows = index.embeddings.shape[0] if index.embeddings.ndim == 2 else 0
    if rows < len(index.chunks):
        raise ValueError(f"index has {len(index.chunks)} chunks but only {rows} embedding row(s)")
    embeddings = _format_rows(index.embeddings[: len(index.chunks)], lengths)
    yield (
        '{"spec_version":' + encode_basestring(index.spec_version)
        + ',"embedder":' + encode_basestring(index.embedder)
        + ',"chunks":['
    )  # fmt: skip
    for i, chunk in enumerate(index.chunks):
        yield ("," if i else "") + _chunk_json(chunk, embeddings[i])
    yield '],"file_imports":' + _sorted_object(index.file_imports)
    yield ',"file_tokens":' + _sorted_object(index.file_tokens) + "}"


def serialize_index(index: Index) -> bytes:
    """The exact `index.json` bytes of §9.2: compact, no trailing newline."""
    return "".join(_iter_store_pieces(index)).encode("utf-8")


# ---------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data` so a reader only ever sees the old or the new bytes.

    Parents are created; the temp file `.<name>.tmp.<pid>.<seq>` lives in the same
    directory (rename is atomic only within one file system), is fsynced, takes the
    old file's permission bits, and is removed again if anything fails. Raises OSError.
    """
    directory, name = os.path.split(path)
    if directory:
        try:
            os.makedirs(directory, exist_ok=True)
        except FileExistsError as err:
            # Some parent is a regular file; say so rather than "File exists".
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory) from err
    temp = os.path.join(directory, f".{name}.tmp.{os.getpid()}.{next(_temp_sequence)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            old_mode = os.stat(path).st_mode
        except FileNotFoundError:
            old_mode = None
        if old_mode is not None:
            os.chmod(temp, stat.S_IMODE(old_mode))
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def describe_os_error(err: OSError) -> str:
    """Rust's `io::Error` display: `<strerror> (os error <n>)` when there is an errno."""
    if err.errno is not None and err.strerror:
        return f"{err.strerror} (os error {err.errno})"
    return str(err)


def save_index(index: Index, path: str) -> int:
    """Write the store atomically to `path`; returns the byte count. Raises StoreError."""
    data = serialize_index(index)
    try:
        write_atomic(path, data)
    except OSError as err:
        raise StoreError("write", path, describe_os_error(err)) from err
    return len(data)


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------


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


def _parse_chunk(raw: object, i: int, placeholders: bool) -> tuple[Chunk, list[float]]:
    where = f"chunk {i}: "
    if not isinstance(raw, dict):
        raise _ShapeError(f"{where}must be an object, found {_json_type(raw)}")
    embedding = raw.get("embedding", [])
    if placeholders:
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
    return Index(
        embedder=embedder,
        chunks=chunks,
        embeddings=embeddings,
        file_imports=file_imports,
        file_tokens=file_tokens,
        spec_version=spec_version,
        embedding_lengths=lengths,
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
    """Parse store bytes (§9.4): unknown keys ignored, legacy defaults applied."""
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
        except (json.JSONDecodeError, _ShapeError, _FastPathMiss):
            pass  # not a well-formed compact store: the ordinary path reports why
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        if not text.strip():
            cause = "the file is empty, not a JSON store"
        elif err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string"):
            # The parser ran out of input: a partial write or a copy cut short.
            cause = f"the JSON ends early, the store looks truncated ({err.msg})"
        else:
            cause = f"invalid JSON: {err.msg} (line {err.lineno}, column {err.colno})"
        raise StoreError("load", path, cause) from err
    try:
        return _parse_document(document)
    except _ShapeError as err:
        raise StoreError("load", path, f"not a cce store: {err}") from err


def load_index(path: str) -> Index:
    """Read and parse the store at `path`; any failure is a StoreError naming `path`."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise StoreError("load", path, describe_os_error(err)) from err
    return parse_index(data, path)


# ---------------------------------------------------------------------------------------
# Fingerprint (§9.5)
# ---------------------------------------------------------------------------------------


def store_sha256(path: str) -> str:
    """SHA-256 hex of the file's bytes as they are on disk now. Raises OSError."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint_path(store_path: str) -> str:
    """`fingerprint.json` beside an `index.json`, else `<store name>.fingerprint.json`."""
    directory, name = os.path.split(store_path)
    file_name = "fingerprint.json" if name == "index.json" else f"{name}.fingerprint.json"
    return os.path.join(directory, file_name)


def embed_dim(index: Index) -> int:
    """256 for the hash embedder; else the length of the first non-empty embedding, or 0."""
    if index.embedder == "hash":
        return EMBED_DIM
    for length in _embedding_lengths(index):
        if length:
            return length
    return 0


def fingerprint_document(
    index: Index, store_digest: str, redaction: bool, pack_set: str = PACK_SET
) -> bytes:
    """The fingerprint's compact JSON, `sha256` being the hash of itself with `sha256=""`."""
    record: dict[str, object] = {
        "block_nesting_limit": BLOCK_NESTING_LIMIT,
        "embed_dim": embed_dim(index),
        "embedder": index.embedder,
        "engine_version": ENGINE_VERSION,
        "markdown_section_tokens": MARKDOWN_SECTION_TOKENS,
        "pack_set": pack_set,
        "redaction": redaction,
        "schema": FINGERPRINT_SCHEMA,
        "sha256": "",
        "spec_version": STORE_SPEC_VERSION,
        "store_sha256": store_digest,
        "tokenizer": TOKENIZER_ID,
    }

    def render() -> bytes:
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    record["sha256"] = hashlib.sha256(render()).hexdigest()
    return render()


def write_fingerprint(
    index: Index, store_path: str, redaction: bool, pack_set: str = PACK_SET
) -> str:
    """Hash the saved store as read back from disk and write its fingerprint atomically.

    Returns the fingerprint path. Raises OSError (callers treat it as a warning).
    """
    document = fingerprint_document(index, store_sha256(store_path), redaction, pack_set)
    target = fingerprint_path(store_path)
    write_atomic(target, document)
    return target
