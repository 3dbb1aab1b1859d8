"""neardup: near-duplicate documents, from Python.

The same engine as the ``neardup`` command and server, so the same input gives the same fingerprints,
signatures and clusters everywhere:

* ``neardup.fingerprint(data)``: the ``simhash-doc-v1`` fingerprint of a document. ``bytes`` are a document
  in any medium (HTML, PDF, XML, text, EPUB), detected from the content; a ``str`` is text, taken as it is
  (as the CLI takes the text field of JSONL records). ``media="html"`` (or another) reads either as that
  medium. Same text, same fingerprint, from any medium.
* ``neardup.sketch(data, scheme=...)``: a fingerprint or a MinHash-family signature, for any scheme in
  ``neardup.schemes()``; ``neardup.compare(a, b)`` compares two, and ``neardup.explain(a, b)`` says why
  they match or not (``neardup explain --json``'s object).
* ``neardup.sketches(texts, scheme=...)``: a whole column at once, on all cores, as a NumPy array
  (``uint64`` fingerprints, or a 2-D ``uint32`` array of signatures).
* ``neardup.Index(path_or_none, scheme=..., k=... | threshold=...)``: stored sketches and exact-radius
  queries, in memory or in the same files as ``neardup index``.
* ``neardup.dedup(texts, ids=None, ...)``: clusters safe to act on, as a ``pyarrow.Table`` with the CLI's
  columns (``id``, ``cluster``, ``representative``, ``duplicate_of``, ``score``).
* ``neardup.dedup_files(paths, ...)``: the same over JSONL and Parquet files as the CLI reads them,
  streamed (datasets larger than memory), optionally writing the deduplicated dataset.
* ``neardup.Dedup(scheme, ...)``: the same fed a batch at a time (``add``, ``add_batches`` of a
  ``pyarrow.RecordBatchReader`` or any iterable of batches), then ``clusters()`` (or ``pairs()``).
* ``neardup.calibrate(texts, ids=None, truth=...)``: which ``k`` or ``threshold`` fits these documents:
  precision and recall per setting against ground truth, score distributions and a recommendation
  (``neardup calibrate``'s ``calibration.json``, as a dict).
* ``neardup.datasketch``: a drop-in for datasketch 2.0's ``MinHash``, ``LeanMinHash`` and ``MinHashLSH``.

Errors are ``neardup.Error`` and its kinds: ``SchemeMismatch``, ``MediaError``, ``NoTokens``,
``ParseError``, ``UnsupportedError``, ``IndexError``.
"""

from __future__ import annotations

import collections.abc
import contextlib
import importlib
import operator
import sys
import threading
import time
import unicodedata
import warnings
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

if TYPE_CHECKING:
    import numpy
    import pyarrow

from . import _native
from ._native import (
    Error,
    IndexError as IndexError,  # re-exported (type checkers), though not in __all__
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

# Every PDF is read by a worker process of this interpreter, under the extractor's time limit and memory
# ceiling, as the command line reads them: a PDF built to overflow the extractor's stack costs that worker
# (the document's MediaError), not this process.
if sys.executable:
    _native._isolate_pdfs(sys.executable, _native.__file__)

Fingerprint = Sketch
"""A SimHash fingerprint is a :class:`Sketch` of a SimHash scheme (``value``, ``distance``, ``similarity``)."""

# `neardup.IndexError` is left out: `from neardup import *` would hide Python's own IndexError.
__all__ = [
    "Dedup",
    "Error",
    "Fingerprint",
    "Index",
    "MediaError",
    "NoTokens",
    "ParseError",
    "SchemeMismatch",
    "Sketch",
    "UnsupportedError",
    "calibrate",
    "compare",
    "dedup",
    "dedup_files",
    "explain",
    "fingerprint",
    "schemes",
    "sketch",
    "sketches",
]


def _optional_module(name: str, how_to_install: str, needed_by: Optional[str] = None) -> Any:
    """The optional dependency ``name``, or an ImportError whose message, ``how_to_install``, says what to
    install (rather than a ModuleNotFoundError from inside this package). ``needed_by``, a module of this
    package that cannot be imported without it, is named as the module the error is about: then ``python -m``
    of that module prints the message in one line, not a traceback."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError(how_to_install, name=needed_by) from e


def _pyarrow(needed_for: str = "this needs pyarrow (an Arrow column)"):
    """pyarrow, or an ImportError that says how to get it (without it, columns are read row by row, as lists,
    and only NumPy output is written). A function that returns Arrow asks for it with ``needed_for`` before
    any work, so that a long run (or a written file) does not end in this error."""
    return _optional_module(
        "pyarrow",
        f"{needed_for}: pip install pyarrow, or install neardup with it: pip install './crates/neardup-py[arrow]'",
    )

def _as_column(values: Any) -> Any:
    """Checks that ``values`` is a column (of documents or ids) and reads an iterator or generator into a list
    (a column has a length, and its rows are numbered in order). A table, a mapping, a set, None or a scalar
    is refused, saying what to pass instead (a lone ``str`` or ``bytes`` would be read as a column of its
    characters)."""
    expected = "expected a column (a list, array or Series)"
    values = _datasets_column(values)
    if isinstance(values, (str, bytes, bytearray, memoryview)):
        raise TypeError(
            f"{expected}, not one {type(values).__name__}: for one document, use neardup.sketch or "
            "neardup.fingerprint"
        )
    if hasattr(values, "read_next_batch"):
        raise TypeError(
            f"{expected}, not a {type(values).__name__}: pass its batches' columns one at a time "
            "(batch.column('text')), or deduplicate them all with neardup.Dedup(...).add_batches(reader)"
        )
    if isinstance(values, collections.abc.Iterator):
        return list(values)
    names = getattr(values, "column_names", None)
    if names is None and not isinstance(values, (list, tuple)):
        names = getattr(values, "columns", None)
    if names is not None:  # a pandas or polars DataFrame, a pyarrow Table or RecordBatch
        names = [str(name) for name in names]
        example = "text" if "text" in names else (names[0] if names else "text")
        raise TypeError(
            f"{expected}, not a {type(values).__name__} of columns {names[:8]}: pass one of them, "
            f"such as data[{example!r}] (and its ids as ids=)"
        )
    if isinstance(values, collections.abc.Mapping):
        raise TypeError(f"{expected}, not a {type(values).__name__}: pass its values, and its keys as ids=")
    if isinstance(values, (set, frozenset)):
        raise TypeError(f"{expected}, not a set: its rows have no order")
    if not isinstance(values, collections.abc.Iterable):
        raise TypeError(f"{expected}, not {type(values).__name__}")
    if getattr(values, "ndim", 1) != 1:
        shape = getattr(values, "shape", None)
        raise TypeError(f"{expected} of one dimension, not an array of shape {shape}")
    return values


def _datasets_column(values: Any) -> Any:
    """A column of a Hugging Face ``datasets.Dataset`` (``ds["text"]``, a ``datasets.arrow_dataset.Column`` since
    datasets 4; ``ds["meta"]["url"]`` for a field of a struct column) as the pyarrow column it reads from, its
    rows selected and ordered as the dataset's (after ``select``, ``shuffle`` or ``filter``). Iterated instead,
    it builds a Python dict per row: 200,000 documents took 19 s to dedup that way against 0.34 s from Arrow. A
    dataset with a transform (``set_transform``, ``with_transform``), whose rows are what the transform makes,
    is read as it iterates."""
    kind = type(values)
    if kind.__name__ != "Column" or kind.__module__ != "datasets.arrow_dataset":
        return values
    source: Any = getattr(values, "source", None)
    name: Any = getattr(values, "column_name", None)
    if type(source) is kind:  # a field of a struct column
        parent = _datasets_column(source)
        if parent is source:
            return values
        pa = _pyarrow()
        import pyarrow.compute as pc

        field = parent.type.get_field_index(name) if pa.types.is_struct(parent.type) else -1
        return values if field < 0 else pc.struct_field(parent, [field])
    if getattr(source, "_format_type", "custom") == "custom" or not hasattr(source, "with_format"):
        return values
    # The dataset's table (`Dataset.data`), and the rows its indices mapping keeps, in order: `with_format`
    # gives the same rows as a chunk per run of consecutive ones (a row each after a shuffle), which took four
    # times as long to dedup.
    table: Any = getattr(source, "data", None)
    indices: Any = getattr(source, "_indices", None)
    try:
        column = table[name]
        if indices is not None:
            column = column.take(indices.column(0))
    except Exception:  # another datasets' internals: its public way
        column = None
    if column is None or len(column) != len(values):
        column = source.with_format("arrow")[name]
    return column


def _as_rows(values: Any) -> Optional[list]:
    """A column to read row by row as a list, or None to read it through Arrow: a NumPy array of Python
    objects (its rows may be anything, each judged and named by its row), or any array or Series when pyarrow
    is not installed."""
    tolist = getattr(values, "tolist", None)
    if tolist is not None and getattr(getattr(values, "dtype", None), "kind", None) == "O" and not hasattr(
        values, "index"
    ):
        return tolist()  # NumPy object arrays; a pandas Series (with an index) keeps Arrow's nulls for NaN
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return tolist() if tolist is not None else list(values)  # a range, a deque, a dict's values
    return None


def _arrow_column(values: Any):
    """A pyarrow Array or ChunkedArray (its chunks kept as they are, not concatenated) for a column-like input
    (checked by :func:`_as_column`: tuple, NumPy array, pyarrow Array or ChunkedArray, pandas or polars
    Series), without a Python object per item where the input is already columnar. Dictionary-encoded columns
    (pandas categoricals, Parquet dictionaries) are decoded, and string views read as large strings."""
    pa = _pyarrow()

    if hasattr(values, "to_arrow") and not isinstance(values, (pa.Array, pa.ChunkedArray)):  # polars
        values = values.to_arrow()
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(values)
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    if pa.types.is_null(values.type):  # nothing but missing values (or no rows): a column of null strings
        values = values.cast(pa.large_string())
    if getattr(pa.types, "is_string_view", lambda _: False)(values.type):
        values = values.cast(pa.large_string())
    return values


def _is_text(arrow_type) -> bool:
    pa = _pyarrow()

    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
    )


def _string_array(values: Any):
    """The documents of a column-like input (see :func:`_arrow_column`) as a pyarrow string or binary Array
    or ChunkedArray."""
    values = _arrow_column(values)
    if not _is_text(values.type):
        raise TypeError(f"documents must be strings or bytes, not {values.type}")
    return values


def _id_input(ids: Any):
    """What the native functions take for a column of ids: a list as it is (integers as their decimal
    text; no pyarrow needed), anything else as the Arrow buffers of :func:`_id_array`."""
    ids = _as_column(ids)
    rows = _as_rows(ids)
    if rows is not None:
        ids = rows
    if isinstance(ids, (list, tuple)):
        return list(ids) if isinstance(ids, tuple) else ids  # integers are read natively
    ids = _rows_if_arrow_refuses(_id_array, ids)
    return ids if isinstance(ids, list) else _buffers(ids)


def _id_array(ids: Any):
    """The ids of a column-like input as a pyarrow string or binary Array or ChunkedArray: integers become
    their decimal text, as the CLI and ``neardup.spark`` read integer ids."""
    pa = _pyarrow()

    values = _arrow_column(ids)
    if pa.types.is_integer(values.type):
        values = values.cast(pa.string())
    if pa.types.is_floating(values.type):
        import pyarrow.compute as pc

        missing = pc.index(pc.is_null(values, nan_is_null=True), True).as_py()
        why = (
            f"row {missing} is missing (NaN): pandas makes an integer column with a missing value float; give "
            "every row an id, or use the nullable 'Int64' dtype"
            if missing >= 0
            else "cast them to integers or strings"
        )
        raise TypeError(f"ids must be strings, bytes or integers, not {values.type}: {why}")
    if not _is_text(values.type):
        raise TypeError(f"ids must be strings, bytes or integers, not {values.type}")
    return values


def _buffers(values):
    """The Arrow buffers of a string or binary Array or ChunkedArray, as the native module takes them: a tuple
    with one tuple per chunk of (offsets, data, offset width, validity or None, offset, length, binary). The
    buffers are pyarrow ``Buffer`` objects, read in place (not copied) while the tuple holds them; a sliced
    array is read at its offset."""
    pa = _pyarrow()

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
    texts = _as_column(texts)
    rows = _as_rows(texts)
    if rows is not None:
        texts = rows
    if isinstance(texts, (list, tuple)):
        items = list(texts) if isinstance(texts, tuple) else texts
        return items, len(items)
    column = _rows_if_arrow_refuses(_string_array, texts)
    if isinstance(column, list):
        return column, len(column)
    return _buffers(column), len(column)


def _rows_if_arrow_refuses(to_arrow, values: Any):
    """``to_arrow(values)``, or, where Arrow cannot convert a column of Python objects (a pandas Series of
    ``object`` dtype holding an int among its strings), its rows as a list, which the native code reads row
    by row and names the row that is wrong, as it does for a list."""
    pa = _pyarrow()

    try:
        return to_arrow(values)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        tolist = getattr(values, "tolist", None)
        if tolist is None or isinstance(values, (pa.Array, pa.ChunkedArray)):
            raise
        return tolist()


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
    progress: Optional[Any] = None,
    strings: bool = False,
) -> Union[numpy.ndarray, pyarrow.Array, pyarrow.ChunkedArray]:
    """Sketches a column of documents on all cores (the GIL released).

    ``texts``: a list, a NumPy array of strings, a ``pyarrow`` Array or ChunkedArray, a pandas or polars
    Series, a Hugging Face ``datasets`` column (``ds["text"]``, read from its Arrow table); ``str`` values are
    text, taken as they are, ``bytes`` values documents in any medium, detected (``media=`` names the medium
    of both). Returns a NumPy array: one
    ``uint64`` per document for a SimHash scheme (the fingerprint's value, as ``Sketch.value``), or a 2-D
    ``uint32`` array of signatures (one row per document) for a MinHash scheme. ``errors="raise"`` (default)
    raises on the first document that cannot be sketched, naming its row; ``errors="zero"`` (or ``"keep"``, as
    :func:`dedup` names it) leaves its row at zero and warns with the count. ``progress``: see
    :func:`dedup`.

    ``strings=True`` returns instead a ``pyarrow`` string array of the self-describing forms
    (``simhash-doc-v1:…``, ``minhash-oph-v1:k=128,…:…``: ``str(Sketch)``, as ``neardup hash`` prints them,
    which parse back with ``Sketch.parse`` in any implementation), for any scheme, bottom-k included; a row
    that cannot be sketched is null (with ``errors="zero"``).
    """
    import numpy as np

    _check_errors(errors, "raise", "zero", "keep")
    if strings:
        _pyarrow("sketches(strings=True) needs pyarrow (it returns a pyarrow string array)")
    column, n = _column_input(texts)
    with _progress(progress, "documents", "sketching") as progress:
        kind, width, values, failures = _native.sketch_column(
            column,
            scheme,
            media=media,
            progress=progress,
            strings=strings,
            **_scheme_params(num_perm, seed, shingle, char_shingle),
        )
    _report(failures, errors)
    if kind == "strings":
        return _string_column(n, width, *values)
    # ``values`` is a bytearray written by the native code and referenced by nothing else: the array views it.
    if kind == "simhash":
        return np.frombuffer(values, dtype="<u8")
    return np.frombuffer(values, dtype="<u4").reshape(n, width)


def _check_errors(errors: str, *allowed: str) -> None:
    """Refuses an ``errors`` argument the function does not know, before any work."""
    if errors not in allowed:
        names = [repr(a) for a in allowed]
        choices = " or ".join(names) if len(names) == 2 else "one of " + ", ".join(names)
        raise ValueError(f"errors must be {choices}, not {errors!r}")


class _ProgressBar:
    """What ``progress=True`` shows: a tqdm bar where tqdm is installed (``tqdm.auto``: a widget in a
    notebook), else a line on standard error rewritten in place at most twice a second."""

    def __init__(self, unit: str, what: str) -> None:
        self._unit, self._what = unit, what
        self._last = 0.0  # when a line was last written
        self._shown = False
        self._latest: Optional[tuple] = None  # the report not yet written
        try:
            tqdm = importlib.import_module("tqdm.auto").tqdm
        except ImportError:
            self._bar = None
        else:
            if unit == "B":
                self._bar = tqdm(desc=what, unit="B", unit_scale=True, unit_divisor=1024)
            else:  # "12.3k documents/s", as Hugging Face datasets writes " examples"
                self._bar = tqdm(desc=what, unit=f" {unit}", unit_scale=True)

    def __call__(self, done: int, total: Optional[int]) -> None:
        if self._bar is not None:
            if total is not None and self._bar.total != total:
                self._bar.total = total
                self._bar.refresh()
            self._bar.update(done - self._bar.n)
            return
        if time.monotonic() - self._last >= 0.5 or (total is not None and done >= total):
            self._write(done, total)
        else:
            self._latest = (done, total)

    def _write(self, done: int, total: Optional[int]) -> None:
        self._latest = None
        self._last = time.monotonic()
        number = (lambda n: f"{n / 2**20:,.1f}") if self._unit == "B" else (lambda n: f"{n:,}")
        unit = "MiB" if self._unit == "B" else self._unit
        line = f"{self._what}: {number(done)}" + ("" if total is None else f" of {number(total)}") + f" {unit}"
        sys.stderr.write(f"\r{line}")
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            return
        if self._latest is not None:  # the last report came too soon after the one before
            self._write(*self._latest)
        if self._shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


@contextlib.contextmanager
def _progress(progress: Any, unit: str, what: str) -> Iterator[Any]:
    """The callable a long call reports to: ``progress`` itself, a bar for ``True`` (closed when the call
    ends, however it ends), nothing for ``None`` or ``False``. Anything else is refused before any work."""
    if progress is True:
        bar = _ProgressBar(unit, what)
        try:
            yield bar
        finally:
            bar.close()
    elif progress is None or progress is False:
        yield None
    elif callable(progress):
        yield progress
    else:
        kind = type(progress).__name__
        raise TypeError(f"progress must be True (a bar), a callable progress(done, total), or None, not {kind}")


def explain(
    a: Any,
    b: Any,
    scheme: Optional[str] = None,
    *,
    k: Optional[int] = None,
    threshold: Optional[float] = None,
    ngram: int = 3,
    top: int = 10,
    context: int = 2,
    max_rows: int = 200,
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
) -> dict[str, Any]:
    """Why two documents match, or do not: the object ``neardup explain --json`` writes, as a dict.

    ``a`` and ``b`` are documents as for :func:`sketch` (a ``str`` is text; ``bytes`` a document in any
    medium, extracted; ``media`` names the medium), or :class:`Sketch` objects (an index's entries, from
    ``Index.get``), for which only what a sketch tells is given. ``scheme`` (and its parameters) as for
    :func:`sketch`; by default a given sketch's, else ``simhash-doc-v1``. The dict holds each document's ``sketch``
    (``input`` is None), the ``scheme``, the ``estimate`` (SimHash: ``distance``, ``similarity``, the
    ``cosine`` it estimates; MinHash: the estimated ``similarity``), the ``exact`` measures (the cosine of term
    frequencies, the Jaccard similarity of word ``ngram``-grams and, for MinHash, the exact value of what its
    scheme estimates), the ``verdict`` at ``k`` bits (SimHash, default 3) or ``threshold`` (MinHash, default
    0.8), the shared and unique ``features`` (``top`` of each), the differing SimHash ``bits`` with the tokens
    that pushed each, and the aligned ``diff`` of the texts (``context`` lines around each change, at most
    ``max_rows`` rows)."""
    import json

    return json.loads(
        _native.explain(
            a,
            b,
            scheme,
            k=k,
            threshold=threshold,
            ngram=ngram,
            top=top,
            context=context,
            max_rows=max_rows,
            media=media,
            **_scheme_params(num_perm, seed, shingle, char_shingle),
        )
    )


def calibrate(
    texts: Any,
    ids: Optional[Any] = None,
    scheme: str = "simhash-doc-v1",
    *,
    truth: Any = None,
    truth_threshold: float = 0.8,
    target_precision: Optional[float] = None,
    target_recall: Optional[float] = None,
    threshold: float = 0.8,
    sample: int = 2000,
    random_pairs: int = 10000,
    sample_seed: int = 0,
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
    errors: str = "skip",
    progress: Optional[Any] = None,
) -> dict[str, Any]:
    """Which ``k`` (SimHash) or ``threshold`` (MinHash) fits these documents: the object ``neardup calibrate``
    writes to ``calibration.json``, as a dict.

    ``texts`` and ``ids`` as for :func:`dedup` (ids unique; default the row numbers). ``sample`` documents
    (default 2,000) are chosen at random by ``sample_seed`` from all of them in id order, so the same
    documents give the same sample whatever their order, and every pair of them is scored: its Hamming
    distance (SimHash) or its estimated similarity (MinHash). Ctrl-C stops the scoring of a large sample.

    ``truth``, the pairs known to be near-duplicates (or not): the path of a TSV file as the command reads
    it (``id_a<TAB>id_b<TAB>similarity``, or a 0/1 label; a header line is skipped), or an iterable of
    ``(id_a, id_b)`` or ``(id_a, id_b, similarity)`` rows (ids strings or integers; a pair without a
    similarity is a near-duplicate), or a table whose first columns are those (a pyarrow Table, a pandas or
    polars DataFrame; more columns are ignored, as in the file). A pair is a
    positive when its similarity is at least ``truth_threshold`` (default 0.8); pairs the truth does not
    list are negatives.

    The dict holds ``method``, ``score`` (``"distance"`` or ``"estimated similarity"``), ``documents_read``
    (those sketched), ``documents`` (those scored), ``pairs``, ``candidates`` and ``random`` (how many pairs
    of each), the ``histogram`` of candidate and random pairs' scores, with truth the ``positives`` and the
    ``sweep`` (per setting: ``detected``, ``true_positives``, ``precision``, ``recall``, ``f1``: what
    ``neardup dedup --pairs`` reports at each k from 0 to 7, or at each threshold from 0.5 to 0.95 with
    ``verify="estimate"``), the ``recommendation`` (``setting_name``, ``setting``, ``why``, ``row``: the
    best F1, or the best recall at ``target_precision``, or the best precision at ``target_recall``;
    without truth, SimHash's largest k at which fewer than 0.1 % of ``random_pairs`` random pairs fall and
    MinHash's S-curve midpoint) and, for MinHash, the ``s_curve`` of the banding ``dedup`` uses at
    ``threshold``. ``neardup calibrate`` draws the same numbers as charts and an HTML report.

    Documents that cannot be sketched are left out, with a warning (``errors="raise"`` raises instead).
    ``progress`` as for :func:`dedup`, while the documents are sketched.
    """
    _check_errors(errors, "skip", "raise")
    import os

    truth_text = truth_pairs = None
    if isinstance(truth, (str, os.PathLike)):
        with open(truth, encoding="utf-8") as f:
            truth_text = (f.read(), os.fspath(truth))
    elif truth is not None:
        truth_pairs = [_truth_pair(row, n) for n, row in enumerate(_truth_rows(truth))]
    column, _ = _column_input(texts)
    with _progress(progress, "documents", "calibrate") as progress:
        report, failures = _native.calibrate_column(
            column,
            None if ids is None else _id_input(ids),
            scheme,
            truth_text=truth_text,
            truth_pairs=truth_pairs,
            truth_threshold=truth_threshold,
            target_precision=target_precision,
            target_recall=target_recall,
            threshold=threshold,
            sample_size=sample,
            random_pairs=random_pairs,
            sample_seed=sample_seed,
            media=media,
            progress=progress,
            **_scheme_params(num_perm, seed, shingle, char_shingle),
        )
    _report(failures, errors)
    import json

    return json.loads(report)


def _truth_rows(truth: Any) -> Any:
    """The rows of a truth that is not a file: a table's (a pyarrow Table, a pandas or polars DataFrame)
    first three columns, or two, as the file's (id_a, id_b, similarity; more are ignored), or the rows of
    any other iterable."""
    if hasattr(truth, "column_names") and hasattr(truth, "column"):  # pyarrow
        return zip(*(truth.column(i).to_pylist() for i in range(min(3, len(truth.column_names)))))
    if hasattr(truth, "columns") and hasattr(truth, "__getitem__"):  # pandas, polars
        return zip(*(list(truth[name]) for name in list(truth.columns)[:3]))
    if isinstance(truth, (bytes, bytearray)):
        raise TypeError("truth is a file's path, a table, or an iterable of (id_a, id_b[, similarity]) rows, not bytes")
    return truth


def _truth_pair(row: Any, n: int) -> tuple[str, str, float]:
    """One row of truth as ``(id_a, id_b, similarity)``: ids as the ids of a column are read (integers as
    their decimal text), a missing similarity 1."""

    def id_of(value: Any) -> str:
        if isinstance(value, str):
            return value
        if not isinstance(value, bool):
            try:
                return str(operator.index(value))  # an int, or a NumPy integer
            except TypeError:
                pass
        raise TypeError(f"truth, pair {n}: ids are strings or integers, not {type(value).__name__}")

    fields = None
    # A string's characters or a mapping's keys are not a pair of ids.
    if not isinstance(row, (str, bytes, collections.abc.Mapping)):
        try:
            fields = tuple(row)
        except TypeError:
            pass
    if fields is None:
        raise TypeError(
            f"truth, pair {n}: expected an (id_a, id_b) or (id_a, id_b, similarity) row, not {type(row).__name__}"
        )
    if len(fields) not in (2, 3):
        raise ValueError(
            f"truth, pair {n}: expected (id_a, id_b) or (id_a, id_b, similarity), got {len(fields)} fields"
        )
    similarity = 1.0 if len(fields) == 2 else fields[2]
    if isinstance(similarity, bool) or not isinstance(similarity, (int, float)):
        try:
            similarity = float(similarity)  # a NumPy number
        except (TypeError, ValueError):
            raise TypeError(
                f"truth, pair {n}: the similarity is a number, not {type(fields[2]).__name__}"
            ) from None
    return id_of(fields[0]), id_of(fields[1]), float(similarity)


def _shown(text: str) -> str:
    """``text`` with its control characters escaped (a NUL as ``\\0``, others as ``\\xNN``): messages name
    files and records, whose escape sequences must not drive a terminal or a notebook."""
    if text.isprintable():
        return text
    return "".join(
        ("\\0" if c == "\0" else f"\\x{ord(c):02x}") if unicodedata.category(c) == "Cc" else c for c in text
    )


class _Failures:
    """The failures of a run of several calls (``(row, message, kind)``, rows counted across the calls): the
    first 1,000, for the warning that names the first, and how many there were."""

    def __init__(self) -> None:
        self.first: list = []
        self.count = 0

    def add(self, failures: list) -> None:
        self.first.extend(failures[: max(0, 1000 - len(self.first))])
        self.count += len(failures)

    def report(self, errors: str, **how: Any) -> None:
        _report(self.first, errors, self.count, **how)


def _report(
    failures,
    errors: str,
    count=None,
    things=("document", "documents"),
    what="could not be sketched",
    more=" more rows",
) -> None:
    """Raises (``errors="raise"``) or warns about ``failures``, ``(place, message)`` pairs or ``(place,
    message, kind)`` triples (a place that is a number is a row; the kind names the ``neardup.Error`` the
    first one raises, such as ``"NoTokens"``), naming the first; ``count`` of them in all (default: as many
    as listed), ``things`` the singular and plural of what failed."""
    if not failures:
        return
    place, message, *kind = failures[0]
    first = _shown(f"{f'row {place}' if isinstance(place, int) else place}: {message}")
    count = len(failures) if count is None else count
    if errors == "raise":
        error = getattr(_native, kind[0], Error) if kind else Error
        raise error(first + (f" (and {count - 1}{more})" if count > 1 else ""))
    warnings.warn(f"{count} {things[count != 1]} {what}; the first, {first}", RuntimeWarning, stacklevel=3)


def dedup(
    texts: Any,
    ids: Optional[Any] = None,
    scheme: str = "simhash-doc-v1",
    *,
    k: Optional[int] = None,
    threshold: Optional[float] = None,
    verify: Optional[str] = None,
    measure: Optional[str] = None,
    verify_ngram: Optional[int] = None,
    clustering: str = "centres",
    representative: str = "smallest-id",
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
    errors: str = "keep",
    progress: Optional[Any] = None,
) -> pyarrow.Table:
    """Finds near-duplicate documents and groups them in clusters safe to act on.

    ``texts`` as for :func:`sketches`; ``ids`` (same length; strings, or integers read as their decimal text
    as the CLI reads them; default the row numbers as strings, by position: a pandas index is not read)
    must be unique. The arguments mean what ``neardup dedup``'s flags of the same names mean:

    * SimHash schemes pair documents within ``k`` bits (default 3). With ``verify="exact"`` such a pair must
      also reach ``threshold`` (default 0.8) by an exact measure of the two texts: ``measure="jaccard"``
      (default; of their word ``verify_ngram``-grams, default 3) or ``"cosine"`` (of their term
      frequencies). Without it the distance alone decides, and a threshold is refused.
    * MinHash schemes pair documents at similarity ``threshold`` or more (default 0.8), verified exactly
      by default (``verify="estimate"`` trusts the signatures' estimate, ``"none"`` the LSH candidates);
      ``k``, ``measure`` and ``verify_ngram`` are refused.
    ``clustering="centres"`` (default) keeps every member within the threshold of its representative;
    ``"components"`` gives connected components. ``representative``: ``"smallest-id"`` (default),
    ``"first"`` (input order) or ``"longest"``.

    Returns a ``pyarrow.Table`` with one row per document, in input order, and the CLI's columns: ``id``,
    ``cluster`` (``uint64``, null for a document in no cluster), ``representative`` (the id kept for its
    cluster), ``duplicate_of`` (for a removed document, the kept id it duplicates; null for the kept ones)
    and ``score`` (its distance or similarity to that one). Keep the rows where ``duplicate_of`` is null.
    Documents that cannot be sketched (empty, no words, broken) are kept alone, with a warning
    (``errors="raise"`` raises instead). The result depends on neither thread count nor input order (except
    the representative ``representative="first"`` keeps, the first in input order).

    ``progress=True`` shows a bar of the documents sketched (tqdm's where tqdm is installed, else a line on
    standard error). A callable is called instead as ``progress(documents_sketched, documents)`` as the
    documents are sketched (most of the time a run takes, unless clusters are very large), on the calling
    thread; an exception it raises stops the run. Ctrl-C stops it too, while it sketches and while it
    finds the pairs and clusters.
    """
    _check_errors(errors, "keep", "raise")
    if isinstance(ids, str) and any(ids in (s["name"], *s["aliases"]) for s in _native.schemes()):
        # dedup(texts, "minhash"): sketches and dedup_files take the scheme second, dedup takes the ids.
        raise TypeError(
            f"expected a column of ids (a list, array or Series), not the scheme's name {ids!r}: dedup's "
            f"second argument is ids; write scheme={ids!r}"
        )
    _pyarrow("neardup.dedup needs pyarrow (it returns a pyarrow.Table)")
    column, _ = _column_input(texts)
    with _progress(progress, "documents", "dedup") as progress:
        columns, failures = _native.dedup_column(
            column,
            None if ids is None else _id_input(ids),
            scheme,
            k=k,
            threshold=threshold,
            verify=verify,
            measure=measure,
            verify_ngram=verify_ngram,
            clustering=clustering,
            representative=representative,
            media=media,
            progress=progress,
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
    verify: Optional[str] = None,
    measure: Optional[str] = None,
    verify_ngram: Optional[int] = None,
    clustering: str = "centres",
    representative: str = "smallest-id",
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
    errors: str = "keep",
    progress: Optional[Any] = None,
) -> pyarrow.Table:
    """Deduplicates datasets on disk, read as ``neardup dedup`` reads them: JSON Lines (``.jsonl``, ``.json``,
    ``.ndjson``, plain, ``.gz`` or ``.zst``), Parquet, or directories of such shards (``paths``: one path or a
    list); a directory's other files (hidden ones and markers such as ``_SUCCESS`` aside) are left out, and a
    ``UserWarning`` names them. Records stream through the sketching on all cores, a batch at a time, so a
    dataset larger than memory is fine: what is held is each document's id and sketch (and, with exact
    verification, its shingle set).

    Each record's id is its ``id_field`` and its text its ``text_field`` (dotted paths reach nested fields;
    ``media_field`` names a field giving a record's medium). The other arguments are :func:`dedup`'s, and the
    result is the same table: one row per document, in input order, with the columns ``id``, ``cluster``,
    ``representative``, ``duplicate_of`` and ``score``. The clusters are the CLI's for the same files.

    ``output`` (and ``removed``) write the deduplicated dataset as ``neardup dedup --output`` (``--removed``)
    does: the kept records with every field as they were (JSONL lines byte for byte; Parquet rows with the
    input's schema), in input order, and the removed ones with ``duplicate_of`` and ``score`` added. JSONL
    goes to JSONL and Parquet to Parquet; the format follows the name; a file is renamed into place only
    when complete.

    Records that are not documents (a line that is not JSON, no text, an id seen before; a record without an id
    is a document known by its place, ``FILE:LINE`` or ``FILE:ROW``) and files
    that cannot be read to their end are reported in one warning and the run goes on (they are kept in the
    split, as the CLI keeps them); documents that cannot be sketched are kept alone. ``errors="raise"``
    raises instead, naming the first, and then writes nothing. When not one record is a document (most
    often a misspelt ``text_field``), ``ValueError`` is raised, naming the field, and nothing is written; when
    not one line is a JSON object (files of documents, such as ``.html``, given here), it says the input is
    not JSON Lines (:func:`dedup` takes such documents' contents).

    ``progress=True`` shows a bar of the bytes read (tqdm's where tqdm is installed, else a line on standard
    error). A callable is called instead as ``progress(bytes_read, total_bytes)`` after each batch and each
    file (compressed bytes for ``.gz``/``.zst``), on the calling thread; an exception it raises stops the
    run. Ctrl-C stops it between batches, and while it finds the pairs and
    clusters (then nothing is written).
    """
    import os

    _check_errors(errors, "keep", "raise")
    _pyarrow("neardup.dedup_files needs pyarrow (it returns a pyarrow.Table)")
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    with _progress(progress, "B", "dedup_files") as progress:
        columns, problems, count = _native.dedup_files(
            [os.fsdecode(p) for p in paths],
            scheme,
            id_field=id_field,
            text_field=text_field,
            media_field=media_field,
            k=k,
            threshold=threshold,
            verify=verify,
            measure=measure,
            verify_ngram=verify_ngram,
            clustering=clustering,
            representative=representative,
            media=media,
            output=None if output is None else os.fspath(output),
            removed=None if removed is None else os.fspath(removed),
            strict=errors == "raise",
            progress=progress,
            **_scheme_params(num_perm, seed, shingle, char_shingle),
        )
    _report(problems, errors, count, ("record or file", "records or files"), "could not be used", more=" more")
    return _cluster_table(*columns)


class Dedup:
    """:func:`dedup` fed a batch at a time, for documents that arrive in pieces and need not fit in memory
    together: a ``pyarrow.RecordBatchReader`` (from Parquet, a database, DuckDB), a Hugging Face dataset
    streamed with ``iter(batch_size=...)``, a generator of your own. Each batch is sketched on all cores
    when it is added (the GIL released) and then let go; what is held is each document's id and sketch (and,
    with exact verification, its shingle set), as :func:`dedup_files` holds them::

        run = neardup.Dedup("minhash", threshold=0.8)
        run.add_batches(pyarrow.parquet.ParquetFile("corpus.parquet").iter_batches(), id_field="id")
        table = run.clusters()

    The arguments are :func:`dedup`'s. Rows are numbered across the batches in the order added, and
    :meth:`clusters` returns the table :func:`dedup` returns for all of them joined into one column (the same
    clusters, representatives and scores): one row per document, in order, with ``id``, ``cluster``,
    ``representative``, ``duplicate_of`` and ``score``; it may be called again after more are added. Ids
    must be unique across the batches (a repeated one is refused when its batch is added, naming both rows);
    without ids, a row's id is its row number. Documents that cannot be sketched are kept alone, with a
    warning from :meth:`clusters` naming the first by its row; ``errors="raise"`` makes :meth:`add` raise
    instead, adding nothing of that batch. Ctrl-C stops an :meth:`add` (adding nothing of its batch) or
    :meth:`clusters`. Threads may share a ``Dedup``: their calls take turns.
    """

    def __init__(
        self,
        scheme: str = "simhash-doc-v1",
        *,
        k: Optional[int] = None,
        threshold: Optional[float] = None,
        verify: Optional[str] = None,
        measure: Optional[str] = None,
        verify_ngram: Optional[int] = None,
        clustering: str = "centres",
        representative: str = "smallest-id",
        media: Optional[str] = None,
        num_perm: Optional[int] = None,
        seed: Optional[int] = None,
        shingle: Optional[int] = None,
        char_shingle: Optional[int] = None,
        errors: str = "keep",
    ) -> None:
        _check_errors(errors, "keep", "raise")
        self._errors = errors
        # The native run is changed by one call at a time: another thread's call waits its turn (without
        # the GIL) rather than fail on the borrow.
        self._turn = threading.RLock()
        self._native = _native.NativeDedup(
            scheme,
            k=k,
            threshold=threshold,
            verify=verify,
            measure=measure,
            verify_ngram=verify_ngram,
            clustering=clustering,
            representative=representative,
            media=media,
            **_scheme_params(num_perm, seed, shingle, char_shingle),
        )
        self._failures = _Failures()

    @property
    def scheme(self) -> str:
        """The scheme's name, with its parameters."""
        return self._native.scheme

    def __len__(self) -> int:
        """The number of documents (rows) added."""
        with self._turn:
            return len(self._native)

    def __repr__(self) -> str:
        return f"neardup.Dedup(scheme={self.scheme!r}, documents={len(self)})"

    def add(self, texts: Any, ids: Optional[Any] = None, *, progress: Optional[Any] = None) -> int:
        """Sketches a column of documents and adds its rows. ``texts`` and ``ids`` as for :func:`dedup`
        (``ids`` None: each row's number, counted across the batches); ``progress`` as for :func:`dedup`,
        over this column. Returns the number of rows added so far."""
        column, _ = _column_input(texts)
        id_column = None if ids is None else _id_input(ids)
        with self._turn, _progress(progress, "documents", "Dedup.add") as progress:
            failures = self._native.add_column(
                column, id_column, keep_going=self._errors == "keep", progress=progress
            )
            if failures:
                if self._errors == "raise":
                    _report(failures, "raise")
                self._failures.add(failures)
            return len(self._native)

    def add_batches(
        self,
        batches: Any,
        *,
        text_field: str = "text",
        id_field: Optional[str] = "id",
        progress: Optional[Any] = None,
    ) -> int:
        """Adds each batch of ``batches``, as :meth:`add` would: its ``text_field`` column holds the documents
        and its ``id_field`` column their ids, as :func:`dedup_files` reads records (a batch without an
        ``id`` column, the default, gives each row its number; ``id_field=None`` numbers every row; another
        name must be a column of every batch). ``batches`` is a ``pyarrow.RecordBatchReader`` or
        any iterable of pyarrow RecordBatches or Tables, pandas or polars DataFrames, or mappings of columns
        (what a Hugging Face dataset's ``iter(batch_size=...)`` yields); one Table, DataFrame, mapping or
        Hugging Face ``Dataset`` is one batch, and a streamed Hugging Face ``IterableDataset`` is read 10,000
        records at a time. ``progress=True`` shows a count of the documents added; a callable is called
        as ``progress(documents, None)`` after each batch (the total is not known ahead). Returns the number of rows added so far."""
        with _progress(progress, "documents", "Dedup.add_batches") as progress:
            for texts, ids in _batch_columns(batches, text_field, id_field):
                self.add(texts, ids)
                if progress is not None:
                    progress(len(self), None)
        return len(self)

    def clusters(self) -> pyarrow.Table:
        """The clusters of every document added so far, as :func:`dedup` returns them for the batches joined
        into one column. Needs pyarrow."""
        _pyarrow("neardup.Dedup.clusters needs pyarrow (it returns a pyarrow.Table)")
        with self._turn:
            columns = self._native.clusters()
            self._failures.report("keep")
        return _cluster_table(*columns)

    def pairs(self) -> pyarrow.Table:
        """Every pair of documents added so far that the run finds near (within ``k`` bits, or at
        ``threshold`` or more, verified as the run verifies), once, as ``neardup dedup --pairs`` lists them:
        a ``pyarrow.Table`` of ``a`` and ``b`` (their ids, ``a < b`` in byte order) and ``score`` (their
        distance, or similarity), in the command's order. The pairs are what clusters are made of, before any
        clustering: to evaluate a threshold against labels, or to cluster another way. n near-copies of one
        document are n(n-1)/2 pairs, all held in memory. Needs pyarrow."""
        import numpy as np
        pa = _pyarrow("neardup.Dedup.pairs needs pyarrow (it returns a pyarrow.Table)")

        with self._turn:
            a, b, scores_b = self._native.pairs()
            self._failures.report("keep")
        scores = np.frombuffer(scores_b, dtype="<f8")
        n = len(scores)
        return pa.table({"a": _string_column(n, *a), "b": _string_column(n, *b), "score": pa.array(scores)})


def _batch_columns(batches: Any, text_field: str, id_field: Optional[str], ids_required: bool = False) -> Any:
    """Each batch's documents and ids, for ``add_batches``: ``batches`` a ``pyarrow.RecordBatchReader`` or any
    iterable of batches, one batch (:func:`_is_batch`), or a streamed Hugging Face dataset, read 10,000
    records at a time. The ids are None without ``id_field``, and for a batch without the default ``id``
    column unless ``ids_required``."""
    if type(batches).__name__ == "IterableDataset" and hasattr(batches, "iter"):
        batches = batches.iter(batch_size=10_000)
    elif _is_batch(batches):
        batches = [batches]
    for number, batch in enumerate(batches):
        names = _batch_names(batch, number)
        texts = _batch_column(batch, names, text_field, number, "text_field")
        ids = None
        if id_field is not None and (ids_required or id_field != "id" or id_field in names):
            ids = _batch_column(batch, names, id_field, number, "id_field")
        yield texts, ids


def _is_batch(value: Any) -> bool:
    """Whether ``value`` is one batch of columns (a mapping, a pyarrow Table or RecordBatch, a DataFrame, a
    Hugging Face Dataset) rather than an iterable of batches."""
    if isinstance(value, collections.abc.Mapping):
        return True
    if hasattr(value, "read_next_batch"):  # a pyarrow RecordBatchReader: its batches
        return False
    return getattr(value, "column_names", None) is not None or (
        getattr(value, "columns", None) is not None and len(getattr(value, "shape", ())) == 2
    )


def _batch_column(batch: Any, names: list[str], field: str, number: int, role: str) -> Any:
    """The column ``field`` of batch ``number`` (whose columns are ``names``), or an error that names the
    batch, the field and its columns."""
    if field not in names:
        raise KeyError(f"batch {number} has no column {field!r} (its columns: {names[:8]}): set {role}=")
    column = batch.column(field) if type(batch).__module__.startswith("pyarrow") else batch[field]
    if isinstance(column, (str, bytes)):
        raise TypeError(
            f"batch {number}'s {field!r} is one {type(column).__name__}, not a column: these are records, "
            "not batches (a streamed Hugging Face dataset gives batches with .iter(batch_size=10_000))"
        )
    return column


def _batch_names(batch: Any, number: int) -> list[str]:
    """The column names of batch ``number``, or a TypeError if it is not a batch of columns."""
    if isinstance(batch, collections.abc.Mapping):
        found: Any = list(batch)
    else:
        found = getattr(batch, "column_names", None)
        if found is None:
            found = getattr(batch, "columns", None)
        if found is None or isinstance(batch, (str, bytes)):
            raise TypeError(
                f"batch {number} is a {type(batch).__name__}, not a batch of columns (a pyarrow RecordBatch "
                "or Table, a DataFrame, a mapping of columns)"
            )
    return [str(name) for name in found]


class Index(_native.NativeIndex):
    """Stored sketches and exact-radius queries, in memory (``path`` None) or in the same files as
    ``neardup index`` (or in Redis, ``redis://HOST:PORT/NAME``).

    ``Index(path=None, scheme=None, *, k=None, threshold=None, expected=None, num_perm=None, seed=None,
    shingle=None, char_shingle=None, read_only=False)`` opens the index at ``path``, or creates it for
    ``scheme`` (default ``simhash-doc-v1``). SimHash: ``k`` is the largest distance queries may ask for
    (default 3) and ``expected`` the number of entries the tables are designed for. MinHash: ``threshold``
    (default 0.8) chooses the LSH bands. ``read_only=True`` opens an existing index beside its writer (another
    process): it sees what the writer committed at each ``refresh()``, and refuses writes.

    One document at a time: ``add(id, document)``, ``query(document)``, ``get``, ``remove``, ``id in index``.
    A column at a time, sketched on all cores with the GIL released: :meth:`add_many` and :meth:`query_many`.
    ``close()`` (or a ``with`` block) lets the files and the writer's lock go; ``entries()``, ``stats()``,
    ``verify()`` and ``merge()`` do what ``neardup index export``, ``stats``, ``verify`` and ``merge`` do.
    """

    def add_many(
        self,
        ids: Any,
        documents: Any,
        *,
        media: Optional[str] = None,
        errors: str = "raise",
        progress: Optional[Any] = None,
    ) -> int:
        """Sketches a column of documents and stores each under its id, as :meth:`add` one by one would
        (a later row replaces an earlier one with the same id), in durable transactions of 10,000.

        ``documents`` as for :func:`sketches` (``str`` text, ``bytes`` documents in any medium); ``ids`` the
        same length, strings or integers (their decimal text), none null (a list of them needs no pyarrow).
        ``errors="raise"`` (default) raises naming the first document that cannot be sketched, and stores
        nothing; ``errors="skip"`` stores the others and warns with the count. ``progress`` as for
        :func:`dedup`. Returns how many were stored. Ctrl-C stops it between transactions: those stored stay
        stored, and once storing has begun the ``KeyboardInterrupt`` says how many rows were.
        """
        _check_errors(errors, "raise", "skip")
        column, _ = _column_input(documents)
        with _progress(progress, "documents", "Index.add_many") as progress:
            stored, failures = self._add_column(
                _id_input(ids), column, media=media, keep_going=errors == "skip", progress=progress
            )
        _report(failures, errors, what="could not be sketched (not stored)")
        return stored

    def add_batches(
        self,
        batches: Any,
        *,
        id_field: str = "id",
        text_field: str = "text",
        media: Optional[str] = None,
        errors: str = "raise",
        progress: Optional[Any] = None,
    ) -> int:
        """Stores each batch of ``batches`` as :meth:`add_many` stores a column: the documents of its
        ``text_field`` column under the ids of its ``id_field`` column. ``batches`` as for
        :meth:`Dedup.add_batches` (a ``pyarrow.RecordBatchReader``, a streamed Hugging Face dataset, any
        iterable of RecordBatches, Tables, DataFrames or mappings of columns), one batch in memory at a time.
        ``errors="raise"`` (default) raises at the first batch with a document that cannot be sketched,
        naming it by its row (counted across the batches), having stored the batches before it and nothing of
        that one; ``errors="skip"`` stores the others and warns once, at the end, with the count.
        ``progress=True`` shows a count of the rows read; a callable is called as ``progress(rows, None)``
        after each batch. Returns how many were stored."""
        _check_errors(errors, "raise", "skip")
        stored = rows = 0
        failures = _Failures()
        with _progress(progress, "documents", "Index.add_batches") as progress:
            for texts, ids in _batch_columns(batches, text_field, id_field, ids_required=True):
                column, n = _column_input(texts)
                added, failed = self._add_column(
                    _id_input(ids), column, media=media, keep_going=errors == "skip", progress=None
                )
                failed = [(rows + row, message, kind) for row, message, kind in failed]
                if failed and errors == "raise":
                    _report(failed, errors)
                failures.add(failed)
                stored += added
                rows += n
                if progress is not None:
                    progress(rows, None)
        failures.report(errors, what="could not be sketched (not stored)")
        return stored

    def query_many(
        self,
        documents: Any,
        *,
        k: Optional[int] = None,
        threshold: Optional[float] = None,
        media: Optional[str] = None,
        errors: str = "raise",
        progress: Optional[Any] = None,
        limit: Optional[int] = None,
    ) -> pyarrow.Table:
        """Queries the index with every document of a column, sketched and answered on all cores.

        ``documents`` as for :func:`sketches`; ``k`` or ``threshold`` narrows the index's radius, as in
        :meth:`query`. Returns a ``pyarrow.Table`` with one row per match: ``row`` (the query's row in
        ``documents``, ``int64``), ``id`` (the stored id) and ``score`` (its distance, or estimated
        similarity), queries in row order and each one's matches closest first, as :meth:`query` lists them.
        ``limit`` keeps each query's first ``limit`` matches (ties at the cut in ``query``'s order): against
        an index with large clusters, every query otherwise returns all of its cluster.
        ``errors="raise"`` (default) raises naming the first document that cannot be sketched;
        ``errors="skip"`` warns and gives it no matches. ``progress`` as for :func:`dedup`. Needs pyarrow
        (``pip install './crates/neardup-py[arrow]'``).
        """
        import numpy as np
        pa = _pyarrow("Index.query_many needs pyarrow (it returns a pyarrow.Table)")

        _check_errors(errors, "raise", "skip")
        column, _ = _column_input(documents)
        with _progress(progress, "documents", "Index.query_many") as progress:
            rows_b, id_column, scores_b, failures = self._query_column(
                column, k=k, threshold=threshold, media=media, progress=progress, limit=limit
            )
        _report(failures, errors, what="could not be sketched (no matches)")
        rows = np.frombuffer(rows_b, dtype="<i8")
        return pa.table(
            {
                "row": _masked(pa.int64(), rows),
                "id": _string_column(len(rows), *id_column),
                "score": _masked(pa.float64(), np.frombuffer(scores_b, dtype="<f8")),
            }
        )

    def entries(self) -> pyarrow.Table:
        """Every entry, sorted by id: a ``pyarrow.Table`` of ``id`` and ``sketch`` (the self-describing string,
        as ``neardup index export`` prints it), the same table for the same entries whatever the store and the
        order they were added in. ``index.add_sketches(zip(ids, sketches))``, another index or ``neardup index
        add-fingerprints`` take them back. Holds every entry in memory (``neardup index export --store-order``
        streams a large index instead). Needs pyarrow."""
        pa = _pyarrow("Index.entries needs pyarrow (it returns a pyarrow.Table)")

        n, ids, sketches = self._entries()
        return pa.table({"id": _string_column(n, *ids), "sketch": _string_column(n, *sketches)})


def _cluster_table(cluster_b, score_b, id_column, rep_column, dup_column):
    """The result table of :func:`dedup` and :func:`dedup_files` from the native columns: each row's cluster
    (``uint64``, 0: none) and score (``float64``, NaN: none) as bytes, and the three string columns built
    natively as Arrow buffers (offsets' width, offsets, data, validity or None)."""
    import numpy as np
    pa = _pyarrow()

    cluster = np.frombuffer(cluster_b, dtype="<u8")
    score = np.frombuffer(score_b, dtype="<f8")
    n = len(cluster)
    return pa.table(
        {
            "id": _string_column(n, *id_column),
            "cluster": _masked(pa.uint64(), cluster, cluster == 0),
            "representative": _string_column(n, *rep_column),
            "duplicate_of": _string_column(n, *dup_column),
            "score": _masked(pa.float64(), score, np.isnan(score)),
        }
    )


# Arrays are built from buffers here, not with `pa.array` or `to_numpy`: those look for pandas first and
# import it if it is installed, which costs a third of a second on the first call.


def _masked(arrow_type, values, nulls=None):
    """An Arrow array of a NumPy array's values (of `arrow_type`'s width), null where `nulls` is true."""
    import numpy as np
    pa = _pyarrow()

    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if nulls is not None and nulls.any() else None
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(np.ascontiguousarray(values))])


def _string_column(n, width, offsets, data, validity):
    """An Arrow string array of ``n`` rows from a string column built natively: the offsets' width (4:
    ``string``, 8: ``large_string``), the offsets, the data and the validity bitmap (None: no nulls)."""
    pa = _pyarrow()

    kind = pa.string() if width == 4 else pa.large_string()
    buffers = [None if validity is None else pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(kind, n, buffers)
