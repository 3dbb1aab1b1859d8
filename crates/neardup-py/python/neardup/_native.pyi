"""Type stubs of the native module (Rust, PyO3). Users import these names from ``neardup``."""

from os import PathLike
from typing import Any, Callable, Iterable, Literal, Optional, SupportsIndex, Union, final

from typing_extensions import Self, TypeAlias

__version__: str

class Error(Exception):
    """Every error the neardup engine raises."""

class SchemeMismatch(Error):
    """Two fingerprints or sketches of different schemes or parameters cannot be compared."""

class MediaError(Error):
    """A document's text could not be extracted (unsupported, broken, binary, or over a limit)."""

class NoTokens(Error):
    """A document has no words after extraction and normalization, so it has no fingerprint."""

class ParseError(Error):
    """A string is not a fingerprint or sketch, or names an unknown scheme."""

class UnsupportedError(Error):
    """A scheme, parameter or radius this operation cannot use."""

class IndexError(Error):
    """An index could not be created, opened, read or written."""

# Stub-only aliases: what the functions below accept.
_Document: TypeAlias = Union[bytes, bytearray, memoryview, str]
# An id: a str, UTF-8 bytes (their text), or an integer of any kind (Python's, NumPy's: its decimal text).
_Id: TypeAlias = Union[str, bytes, SupportsIndex]
_SketchLike: TypeAlias = Union["Sketch", str]
# A column of documents, ids or values: a list, or what `neardup/__init__.py` passes of an Arrow column.
_Column: TypeAlias = Any
_Progress: TypeAlias = Optional[Callable[[int, int], object]]
# Rows that could not be analyzed: (row, message, the neardup.Error kind to raise, such as "NoTokens").
_Failures: TypeAlias = list[tuple[int, str, str]]
# An Arrow string column: (offset width 4 or 8, offsets, data, validity or None).
_StringColumn: TypeAlias = tuple[int, bytes, bytes, Optional[bytes]]
# The cluster table's columns: cluster and score values, then id, representative, duplicate_of.
_TableColumns: TypeAlias = tuple[bytes, bytes, _StringColumn, _StringColumn, _StringColumn]

@final
class Sketch:
    """A fingerprint (``simhash-doc-v1:…``) or a MinHash-family signature; its string form parses back."""

    def __new__(cls, text: str) -> Self: ...
    @staticmethod
    def parse(text: str) -> Sketch: ...
    @property
    def scheme(self) -> str: ...
    @property
    def value(self) -> Optional[int]:
        """SimHash: the 64-bit value; None for a signature."""
    @property
    def values(self) -> Optional[list[int]]:
        """MinHash: the signature's values; None for a fingerprint."""
    def distance(self, other: Sketch) -> int: ...
    def similarity(self, other: Sketch) -> float: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

def sketch(
    data: _Document,
    scheme: str = "simhash-doc-v1",
    *,
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
) -> Sketch: ...
def fingerprint(data: _Document, scheme: str = "simhash-doc-v1", *, media: Optional[str] = None) -> Sketch: ...
def compare(a: _SketchLike, b: _SketchLike) -> dict[str, Any]: ...
def explain(
    a: Union[_Document, Sketch],
    b: Union[_Document, Sketch],
    scheme: Optional[str] = None,
    *,
    k: Optional[int] = None,
    threshold: Optional[float] = None,
    ngram: Optional[int] = None,
    top: Optional[int] = None,
    context: Optional[int] = None,
    max_rows: Optional[int] = None,
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
) -> str: ...
def schemes() -> list[dict[str, Any]]: ...
def str_reader_enabled() -> bool: ...
def _isolate_pdfs(python: str, module: str) -> None: ...
def _pdf_worker() -> int: ...

class NativeIndex:
    """Stored sketches and exact-radius queries, in memory (path None) or in ``neardup index`` files."""

    def __new__(
        cls,
        path: Union[str, PathLike[str], None] = None,
        scheme: Optional[str] = None,
        *,
        k: Optional[int] = None,
        threshold: Optional[float] = None,
        expected: Optional[float] = None,
        num_perm: Optional[int] = None,
        seed: Optional[int] = None,
        shingle: Optional[int] = None,
        char_shingle: Optional[int] = None,
        read_only: bool = False,
    ) -> Self: ...
    @property
    def scheme(self) -> str: ...
    @property
    def location(self) -> str: ...
    def refresh(self) -> bool:
        """Catches up with what other writers committed; whether anything changed."""
    def __len__(self) -> int: ...
    def __contains__(self, id: _Id, /) -> bool: ...
    def get(self, id: _Id) -> Optional[Sketch]: ...
    def add(
        self,
        id: _Id,
        document: Union[_Document, Sketch, None] = None,
        *,
        sketch: Optional[_SketchLike] = None,
        media: Optional[str] = None,
    ) -> Sketch: ...
    def add_sketches(self, entries: Iterable[tuple[_Id, _SketchLike]]) -> int: ...
    def query(
        self,
        document: Union[_Document, Sketch, None] = None,
        *,
        sketch: Optional[_SketchLike] = None,
        k: Optional[int] = None,
        threshold: Optional[float] = None,
        media: Optional[str] = None,
    ) -> list[tuple[str, Union[int, float]]]: ...
    def remove(self, id: _Id) -> bool: ...
    # Internal: the columns under neardup.Index.entries (neardup/__init__.py).
    def _entries(self) -> tuple[int, Any, Any]: ...
    def stats(self) -> dict[str, Any]:
        """What `neardup index stats --json` prints: entries, scheme, kind, k or threshold, design, sizes."""
    def verify(self) -> None:
        """Reads every file against its checksums; raises IndexError naming a damaged one."""
    def merge(self) -> None:
        """Writes an index in segments into one segment now."""
    def close(self) -> None:
        """Lets the files (and the writer's lock) go; later calls raise IndexError."""
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> Literal[False]:
        """Closes the index; an exception in the block goes on."""
    # Internal: the column methods under neardup.Index.add_many and query_many (neardup/__init__.py).
    def _add_column(
        self,
        ids: Any,
        documents: Any,
        *,
        media: Optional[str] = None,
        keep_going: bool = False,
        progress: Optional[Any] = None,
    ) -> tuple[int, _Failures]: ...
    def _query_column(
        self,
        documents: Any,
        *,
        k: Optional[int] = None,
        threshold: Optional[float] = None,
        media: Optional[str] = None,
        progress: Optional[Any] = None,
        limit: Optional[int] = None,
    ) -> tuple[bytes, _StringColumn, bytes, _Failures]: ...

# Internal: batch work over Arrow buffers, and the datasketch kernels (see neardup/datasketch.py).
# `sketch_column`: (kind, width, values, failures), the values (typed Any: `kind` says which) a bytearray of
# fixed-width values, or for kind "strings" the (offsets, data, validity) of a string column whose offsets
# are `width` bytes;
# `dedup_files`: the table's columns, the problems found (place, message) and the records read.
def sketch_column(
    column: _Column,
    scheme: str,
    *,
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
    progress: _Progress = None,
    strings: bool = False,
) -> tuple[str, int, Any, _Failures]: ...
def dedup_column(
    column: _Column,
    ids: Optional[_Column],
    scheme: str,
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
    progress: _Progress = None,
) -> tuple[_TableColumns, _Failures]: ...
def calibrate_column(
    column: _Column,
    ids: Optional[_Column],
    scheme: str,
    *,
    truth_text: Optional[tuple[str, str]] = None,
    truth_pairs: Optional[list[tuple[str, str, float]]] = None,
    truth_threshold: float = 0.8,
    target_precision: Optional[float] = None,
    target_recall: Optional[float] = None,
    threshold: float = 0.8,
    sample_size: Optional[int] = None,
    random_pairs: Optional[int] = None,
    sample_seed: Optional[int] = None,
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
    progress: _Progress = None,
) -> tuple[str, _Failures]: ...
@final
class NativeDedup:
    """The engine's dedup run fed a column at a time (``neardup.Dedup`` holds one)."""

    def __new__(
        cls,
        scheme: str,
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
    ) -> Self: ...
    def add_column(
        self, column: _Column, ids: Optional[_Column], *, keep_going: bool, progress: _Progress = None
    ) -> _Failures: ...
    def clusters(self) -> _TableColumns: ...
    def pairs(self) -> tuple[_StringColumn, _StringColumn, bytes]: ...
    def __len__(self) -> int: ...
    @property
    def scheme(self) -> str: ...

def dedup_files(
    paths: list[str],
    scheme: str,
    *,
    id_field: str = "id",
    text_field: str = "text",
    media_field: Optional[str] = None,
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
    output: Union[str, PathLike[str], None] = None,
    removed: Union[str, PathLike[str], None] = None,
    strict: bool = False,
    progress: _Progress = None,
) -> tuple[_TableColumns, list[tuple[str, str]], int]: ...
def ds_permutations(scheme: str, num_perm: int, seed: int) -> tuple[bytes, bytes]: ...
def ds_update(scheme: str, a_ptr: int, b_ptr: int, values_ptr: int, num_perm: int, items: Any) -> None: ...
def ds_update_hashes(
    scheme: str, a_ptr: int, b_ptr: int, values_ptr: int, num_perm: int, hashes_ptr: int, count: int
) -> None: ...

@final
class BandIndex:
    dtype: Optional[Any]
    scheme: Optional[str]
    def __new__(cls, b: int, r: int, width: int) -> Self: ...
    def insert(self, id: int, data: bytes) -> None: ...
    def query(self, data: bytes, bands: Optional[int] = None) -> list[int]: ...
    def remove(self, id: int) -> None: ...
    def contains(self, id: int) -> bool: ...
    def __len__(self) -> int: ...
    def is_empty(self) -> bool: ...
    def band_keys(self, id: int) -> list[bytes]: ...
    def band_counts(self, band: int) -> dict[bytes, int]: ...
    def band_members(self, band: int, key: bytes) -> list[int]: ...
    def values(self, id: int) -> bytes: ...
    def counts(self) -> list[dict[bytes, int]]: ...
    def ids(self) -> list[int]: ...
    def bind_keys(
        self, key_to_id: dict, id_to_key: list, free_ids: list, free_marker: object, num_perm: int, ndarray: type
    ) -> None: ...
    def insert_key(self, key: Any, minhash: Any, check_duplication: bool) -> bool: ...
    def query_key(self, minhash: Any) -> Optional[list[Any]]: ...

@final
class Stages:
    """Internal: the stages of one `neardup.spark` run (neardup/spark/_stages.py), built from its settings."""

    def __new__(
        cls,
        scheme: str,
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
        large_cluster: int = 1000,
        distinct: int = 1,
    ) -> Self: ...
    @property
    def method(self) -> str: ...
    @property
    def bands(self) -> Optional[tuple[int, int, float]]: ...
    @property
    def candidates_are_pairs(self) -> bool: ...
    @property
    def buckets_per_node(self) -> int: ...
    @property
    def keeps_profiles(self) -> bool: ...
    @property
    def keeps_longest(self) -> bool: ...
    @property
    def sketch_width(self) -> int: ...
    def sign(
        self, column: _Column, parallel: bool = False
    ) -> tuple[bytes, bytes, bytes, bytes, bytes, list[tuple[int, str]]]: ...
    def buckets(self, sketches: _Column, nodes: _Column, parts: int) -> list[bytes]: ...
    def pairs(self, records: _Column) -> list[bytes]: ...
    def join_runs(self, runs: _Column, nodes: _Column, sketches: _Column, profiles: _Column) -> list[bytes]: ...
    def judge(self, a_sketches: _Column, a_profiles: _Column, b_sketches: _Column, b_profiles: _Column) -> bytes: ...
    def clusters(
        self, labels: _Column, ids: _Column, sketches: _Column, profiles: _Column, lengths: bytes
    ) -> list[bytes]: ...
