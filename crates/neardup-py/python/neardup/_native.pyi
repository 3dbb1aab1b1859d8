"""Type stubs of the native module (Rust, PyO3). Users import these names from ``neardup``."""

from os import PathLike
from typing import Any, Iterable, Optional, Union

from typing_extensions import Self

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

Document = Union[bytes, bytearray, str]
SketchLike = Union["Sketch", str]

class Sketch:
    """A fingerprint (``simhash-doc-v1:…``) or a MinHash-family signature; its string form parses back."""

    def __init__(self, text: str) -> None: ...
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
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

def sketch(
    data: Document,
    scheme: str = "simhash-doc-v1",
    *,
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
) -> Sketch: ...
def fingerprint(data: Document, scheme: str = "simhash-doc-v1", *, media: Optional[str] = None) -> Sketch: ...
def compare(a: SketchLike, b: SketchLike) -> dict[str, Any]: ...
def schemes() -> list[dict[str, Any]]: ...

class NativeIndex:
    """Stored sketches and exact-radius queries, in memory (path None) or in ``neardup index`` files."""

    def __init__(
        self,
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
    ) -> None: ...
    @property
    def scheme(self) -> str: ...
    @property
    def location(self) -> str: ...
    def refresh(self) -> bool:
        """Catches up with what other writers committed; whether anything changed."""
    def __len__(self) -> int: ...
    def __contains__(self, id: Union[str, int]) -> bool: ...
    def get(self, id: Union[str, int]) -> Optional[Sketch]: ...
    def add(
        self, id: Union[str, int], document: Optional[Document] = None, *, sketch: Optional[SketchLike] = None, media: Optional[str] = None
    ) -> Sketch: ...
    def add_sketches(self, entries: Iterable[tuple[Union[str, int], SketchLike]]) -> int: ...
    def query(
        self,
        document: Optional[Document] = None,
        *,
        sketch: Optional[SketchLike] = None,
        k: Optional[int] = None,
        threshold: Optional[float] = None,
        media: Optional[str] = None,
    ) -> list[tuple[str, Union[int, float]]]: ...
    def remove(self, id: Union[str, int]) -> bool: ...
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
    def __exit__(self, *exc: object) -> bool: ...
    # Internal: the column methods under neardup.Index.add_many and query_many (neardup/__init__.py).
    def _add_column(
        self,
        ids: Any,
        documents: Any,
        *,
        media: Optional[str] = None,
        keep_going: bool = False,
        progress: Optional[Any] = None,
    ) -> tuple[int, list[tuple[int, str]]]: ...
    def _query_column(
        self,
        documents: Any,
        *,
        k: Optional[int] = None,
        threshold: Optional[float] = None,
        media: Optional[str] = None,
        progress: Optional[Any] = None,
    ) -> tuple[bytes, tuple[int, bytes, bytes, Optional[bytes]], bytes, list[tuple[int, str]]]: ...

# Internal: batch work over Arrow buffers, and the datasketch kernels (see neardup/datasketch.py).
def sketch_column(*args: Any, **kwargs: Any) -> Any: ...
def dedup_column(*args: Any, **kwargs: Any) -> Any: ...
def dedup_files(*args: Any, **kwargs: Any) -> Any: ...
def ds_permutations(scheme: str, num_perm: int, seed: int) -> tuple[bytes, bytes]: ...
def ds_update(scheme: str, a_ptr: int, b_ptr: int, values_ptr: int, num_perm: int, items: Any) -> None: ...
def ds_update_hashes(
    scheme: str, a_ptr: int, b_ptr: int, values_ptr: int, num_perm: int, hashes_ptr: int, count: int
) -> None: ...

class BandIndex:
    dtype: Optional[Any]
    scheme: Optional[str]
    def __init__(self, b: int, r: int, width: int) -> None: ...
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

class Stages:
    """Internal: the stages of one `neardup.spark` run (neardup/spark/_stages.py), built from its settings."""

    def __init__(
        self,
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
    ) -> None: ...
    @property
    def method(self) -> str: ...
    @property
    def bands(self) -> Optional[tuple[int, int, float]]: ...
    @property
    def buckets_per_node(self) -> int: ...
    @property
    def keeps_profiles(self) -> bool: ...
    @property
    def keeps_longest(self) -> bool: ...
    @property
    def sketch_width(self) -> int: ...
    def sign(self, *args: Any, **kwargs: Any) -> Any: ...
    def buckets(self, *args: Any, **kwargs: Any) -> Any: ...
    def pairs(self, *args: Any, **kwargs: Any) -> Any: ...
    def judge(self, *args: Any, **kwargs: Any) -> Any: ...
    def clusters(self, *args: Any, **kwargs: Any) -> Any: ...
