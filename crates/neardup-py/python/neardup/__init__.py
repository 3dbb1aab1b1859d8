"""neardup: near-duplicate documents, from Python.

The same engine as the ``neardup`` command and server, so the same input gives the same fingerprints,
signatures and clusters everywhere:

* ``neardup.fingerprint(data)``: the ``simhash-doc-v1`` fingerprint of a document. ``bytes`` are a document
  in any medium (HTML, PDF, XML, text, EPUB), detected from the content; a ``str`` is text, taken as it is
  (as the CLI takes the text field of JSONL records). ``media="html"`` (or another) reads either as that
  medium. Same text, same fingerprint, from any medium.
* ``neardup.sketch(data, scheme=...)``: a fingerprint or a MinHash-family signature, for any scheme in
  ``neardup.schemes()``; ``neardup.compare(a, b)`` compares two.
* ``neardup.sketches(texts, scheme=...)``: a whole column at once, on all cores, as a NumPy array
  (``uint64`` fingerprints, or a 2-D ``uint32`` array of signatures).
* ``neardup.Index(path_or_none, scheme=..., k=... | threshold=...)``: stored sketches and exact-radius
  queries, in memory or in the same files as ``neardup index``.
* ``neardup.dedup(texts, ids=None, ...)``: clusters safe to act on, as a ``pyarrow.Table`` with the CLI's
  columns (``id``, ``cluster``, ``representative``, ``duplicate_of``, ``score``).
* ``neardup.dedup_files(paths, ...)``: the same over JSONL and Parquet files as the CLI reads them,
  streamed (datasets larger than memory), optionally writing the deduplicated dataset.
* ``neardup.datasketch``: a drop-in for datasketch 2.0's ``MinHash``, ``LeanMinHash`` and ``MinHashLSH``.

Errors are ``neardup.Error`` and its kinds: ``SchemeMismatch``, ``MediaError``, ``NoTokens``,
``ParseError``, ``UnsupportedError``, ``IndexError``.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

from . import _native
from ._native import (
    Error,
    Index,
    IndexError,
    MediaError,
    NoTokens,
    ParseError,
    SchemeMismatch,
    Sketch,
    UnsupportedError,
    compare,
    fingerprint,
    schemes,
    sketch,
)

__version__ = _native.__version__
Fingerprint = Sketch
"""A SimHash fingerprint is a :class:`Sketch` of a SimHash scheme (``value``, ``distance``, ``similarity``)."""

__all__ = [
    "Error",
    "Fingerprint",
    "Index",
    "IndexError",
    "MediaError",
    "NoTokens",
    "ParseError",
    "SchemeMismatch",
    "Sketch",
    "UnsupportedError",
    "compare",
    "dedup",
    "dedup_files",
    "fingerprint",
    "schemes",
    "sketch",
    "sketches",
]


def _string_array(values: Any):
    """A pyarrow string or binary Array, or ChunkedArray (its chunks kept as they are, not concatenated), for
    any column-like input (list, tuple, NumPy array, pyarrow Array or ChunkedArray, pandas or polars Series),
    without a Python object per item where the input is already columnar."""
    import pyarrow as pa

    if hasattr(values, "to_arrow") and not isinstance(values, (pa.Array, pa.ChunkedArray)):  # polars
        values = values.to_arrow()
    if isinstance(values, (list, tuple)) and all(isinstance(v, str) for v in values):
        values = _strings([v.encode() for v in values])
    elif not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(values)
    if getattr(pa.types, "is_string_view", lambda _: False)(values.type):
        values = values.cast(pa.large_string())
    if not (
        pa.types.is_string(values.type)
        or pa.types.is_large_string(values.type)
        or pa.types.is_binary(values.type)
        or pa.types.is_large_binary(values.type)
    ):
        raise TypeError(f"documents must be strings or bytes, not {values.type}")
    return values


def _buffers(values):
    """The Arrow buffers of a string or binary Array or ChunkedArray, as the native module takes them: a tuple
    with one tuple per chunk of (offsets, data, offset width, validity or None, offset, length, binary). The
    buffers are pyarrow ``Buffer`` objects, read in place (not copied) while the tuple holds them; a sliced
    array is read at its offset."""
    import pyarrow as pa

    width = 8 if pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type) else 4
    binary = pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    buffers = []
    for chunk in chunks:
        validity, offsets, data = chunk.buffers()[:3]
        buffers.append(
            (
                offsets if offsets is not None else b"\0" * width,
                data if data is not None else b"",
                width,
                validity if validity is not None and chunk.null_count else None,
                chunk.offset,
                len(chunk),
                binary,
            )
        )
    return tuple(buffers)


def _column_input(texts: Any):
    """What the native batch functions take for a column, and its length: a list of ``str``/``bytes`` as it is
    (copied once natively: building an Arrow array from Python objects costs more than the copy), anything
    else as the Arrow buffers of :func:`_string_array`."""
    if isinstance(texts, (list, tuple)):
        items = list(texts) if isinstance(texts, tuple) else texts
        return items, len(items)
    column = _string_array(texts)
    return _buffers(column), len(column)


def _scheme_params(num_perm, seed, shingle, char_shingle):
    return dict(num_perm=num_perm, seed=seed, shingle=shingle, char_shingle=char_shingle)


def sketches(
    texts: Any,
    scheme: str = "simhash-doc-v1",
    *,
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
    errors: str = "raise",
):
    """Sketches a column of documents on all cores (the GIL released).

    ``texts``: a list, a NumPy array of strings, a ``pyarrow`` Array or ChunkedArray, a pandas or polars
    Series; ``str`` values are text, taken as they are, ``bytes`` values documents in any medium, detected
    (``media=`` names the medium of both). Returns a NumPy array: one
    ``uint64`` per document for a SimHash scheme (the fingerprint's value, as ``Sketch.value``), or a 2-D
    ``uint32`` array of signatures (one row per document) for a MinHash scheme. ``errors="raise"`` (default)
    raises on the first document that cannot be sketched, naming its row; ``errors="zero"`` leaves its row at
    zero and warns with the count.
    """
    import numpy as np

    column, n = _column_input(texts)
    kind, per_row, values, failures = _native.sketch_column(
        column, scheme, media=media, **_scheme_params(num_perm, seed, shingle, char_shingle)
    )
    _report(failures, errors)
    # ``values`` is a bytearray written by the native code and referenced by nothing else: the array views it.
    if kind == "simhash":
        return np.frombuffer(values, dtype="<u8")
    return np.frombuffer(values, dtype="<u4").reshape(n, per_row)


def _report(failures, errors: str, count=None, what="documents could not be sketched", more=" more rows") -> None:
    """Raises (``errors="raise"``) or warns about ``failures``, ``(place, message)`` pairs (a place that is a
    number is a row), naming the first; ``count`` of them in all (default: as many as listed)."""
    if not failures:
        return
    place, message = failures[0]
    first = f"{f'row {place}' if isinstance(place, int) else place}: {message}"
    count = len(failures) if count is None else count
    if errors == "raise":
        raise Error(first + (f" (and {count - 1}{more})" if count > 1 else ""))
    if errors not in ("zero", "keep"):
        raise ValueError(f"errors must be 'raise' or 'keep', not {errors!r}")
    warnings.warn(f"{count} {what}; the first, {first}", RuntimeWarning, stacklevel=3)


def dedup(
    texts: Any,
    ids: Optional[Any] = None,
    scheme: str = "simhash-doc-v1",
    *,
    k: Optional[int] = None,
    threshold: Optional[float] = None,
    verify: str = "exact",
    clustering: str = "centres",
    representative: str = "smallest-id",
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
    errors: str = "keep",
):
    """Finds near-duplicate documents and groups them in clusters safe to act on.

    ``texts`` as for :func:`sketches`; ``ids`` (same length; default the row numbers as strings) must be
    unique. SimHash schemes pair documents within ``k`` bits (default 3); MinHash schemes at similarity
    ``threshold`` or more (default 0.8), verified exactly by default (``verify="estimate"`` or ``"none"``).
    ``clustering="centres"`` (default) keeps every member within the threshold of its representative;
    ``"components"`` gives connected components. ``representative``: ``"smallest-id"`` (default),
    ``"first"`` (input order) or ``"longest"``.

    Returns a ``pyarrow.Table`` with one row per document, in input order, and the CLI's columns: ``id``,
    ``cluster`` (``uint64``, null for a document in no cluster), ``representative`` (the id kept for its
    cluster), ``duplicate_of`` (for a removed document, the kept id it duplicates; null for the kept ones)
    and ``score`` (its distance or similarity to that one). Keep the rows where ``duplicate_of`` is null.
    Documents that cannot be sketched (empty, no words, broken) are kept alone, with a warning
    (``errors="raise"`` raises instead). The result depends on neither thread count nor input order.
    """
    column, _ = _column_input(texts)
    columns, failures = _native.dedup_column(
        column,
        None if ids is None else _buffers(_string_array(ids)),
        scheme,
        k=k,
        threshold=threshold,
        verify=verify,
        clustering=clustering,
        representative=representative,
        media=media,
        **_scheme_params(num_perm, seed, shingle, char_shingle),
    )
    _report(failures, errors)
    return _cluster_table(*columns)


def dedup_files(
    paths: Any,
    scheme: str = "simhash-doc-v1",
    *,
    id_field: str = "id",
    text_field: str = "text",
    media_field: Optional[str] = None,
    output: Any = None,
    removed: Any = None,
    k: Optional[int] = None,
    threshold: Optional[float] = None,
    verify: str = "exact",
    clustering: str = "centres",
    representative: str = "smallest-id",
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
    errors: str = "keep",
    progress: Optional[Any] = None,
):
    """Deduplicates datasets on disk, read as ``neardup dedup`` reads them: JSON Lines (``.jsonl``, ``.json``,
    ``.ndjson``, plain, ``.gz`` or ``.zst``), Parquet, or directories of such shards (``paths``: one path or a
    list). Records stream through the sketching on all cores, a batch at a time, so a dataset larger than
    memory is fine: what is held is each document's id and sketch (and, with exact verification, its
    shingle set).

    Each record's id is its ``id_field`` and its text its ``text_field`` (dotted paths reach nested fields;
    ``media_field`` names a field giving a record's medium). The other arguments are :func:`dedup`'s, and the
    result is the same table: one row per document, in input order, with the columns ``id``, ``cluster``,
    ``representative``, ``duplicate_of`` and ``score``. The clusters are the CLI's for the same files.

    ``output`` (and ``removed``) write the deduplicated dataset as ``neardup dedup --output`` (``--removed``)
    does: the kept records with every field as they were (JSONL lines byte for byte; Parquet rows with the
    input's schema), in input order, and the removed ones with ``duplicate_of`` and ``score`` added. JSONL
    goes to JSONL and Parquet to Parquet; the format follows the name; a file is renamed into place only
    when complete.

    Records that are not documents (a line that is not JSON, no text, no id, an id seen before) and files
    that cannot be read to their end are reported in one warning and the run goes on (they are kept in the
    split, as the CLI keeps them); documents that cannot be sketched are kept alone. ``errors="raise"``
    raises instead, naming the first, and then writes nothing.

    ``progress``, a callable, is called as ``progress(bytes_read, total_bytes)`` after each batch and each
    file (compressed bytes for ``.gz``/``.zst``), on the calling thread, for a bar such as tqdm's; an
    exception it raises stops the run. Ctrl-C stops it between batches.
    """
    import os

    if errors not in ("keep", "raise"):
        raise ValueError(f"errors must be 'keep' or 'raise', not {errors!r}")
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    columns, problems, count = _native.dedup_files(
        [os.fsdecode(p) for p in paths],
        scheme,
        id_field=id_field,
        text_field=text_field,
        media_field=media_field,
        k=k,
        threshold=threshold,
        verify=verify,
        clustering=clustering,
        representative=representative,
        media=media,
        output=None if output is None else os.fspath(output),
        removed=None if removed is None else os.fspath(removed),
        strict=errors == "raise",
        progress=progress,
        **_scheme_params(num_perm, seed, shingle, char_shingle),
    )
    _report(problems, errors, count, "records or files could not be used", more=" more")
    return _cluster_table(*columns)


def _cluster_table(cluster_b, score_b, id_column, rep_column, dup_column):
    """The result table of :func:`dedup` and :func:`dedup_files` from the native columns: each row's cluster
    (``uint64``, 0: none) and score (``float64``, NaN: none) as bytes, and the three string columns built
    natively as Arrow buffers (offsets' width, offsets, data, validity or None)."""
    import numpy as np
    import pyarrow as pa

    cluster = np.frombuffer(cluster_b, dtype="<u8")
    score = np.frombuffer(score_b, dtype="<f8")
    n = len(cluster)

    def strings(width, offsets, data, validity):
        kind = pa.string() if width == 4 else pa.large_string()
        buffers = [None if validity is None else pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)]
        return pa.Array.from_buffers(kind, n, buffers)

    return pa.table(
        {
            "id": strings(*id_column),
            "cluster": _masked(pa.uint64(), cluster, cluster == 0),
            "representative": strings(*rep_column),
            "duplicate_of": strings(*dup_column),
            "score": _masked(pa.float64(), score, np.isnan(score)),
        }
    )


# Arrays are built from buffers here, not with `pa.array` or `to_numpy`: those look for pandas first and
# import it if it is installed, which costs a third of a second on the first call.


def _masked(arrow_type, values, nulls):
    """An Arrow array of a NumPy array's values (of `arrow_type`'s width), null where `nulls` is true."""
    import numpy as np
    import pyarrow as pa

    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if nulls.any() else None
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(np.ascontiguousarray(values))])


def _strings(items):
    """An Arrow string array of UTF-8 `bytes` items."""
    import numpy as np
    import pyarrow as pa

    offsets = np.zeros(len(items) + 1, dtype="<i8")
    np.cumsum([len(b) for b in items], out=offsets[1:])
    data = pa.py_buffer(b"".join(items))
    return pa.Array.from_buffers(pa.large_string(), len(items), [None, pa.py_buffer(offsets), data])
