"""A drop-in replacement for datasketch 2.0's ``MinHash``, ``LeanMinHash`` and ``MinHashLSH``.

The classes keep datasketch's constructor arguments, attributes, methods, values and exceptions (the
``hashvalues`` NumPy array is the same dtype and values, ``LeanMinHash.serialize`` writes the same bytes,
``MinHashLSH`` picks the same ``(b, r)`` and answers the same queries); the hashing, permuting and the LSH
band tables run in native code (``neardup._native``).

Differences from datasketch, all deliberate:

- ``MinHashLSH`` keeps its tables in memory: ``storage_config`` may only be ``None`` or ``{"type": "dict"}``
  (Redis and Cassandra storage raise ``ValueError``).
- ``MinHashLSH.keys`` and ``MinHashLSH.hashtables`` are read-only views of the native tables (membership,
  iteration, ``get``, ``itemcounts``, ``size``) rather than datasketch's storage objects.
- ``add_to_query_buffer`` records the query's result when it is called (datasketch's in-memory storage
  shares its live bucket sets with the buffer, so an insert or remove between the two calls may show).
- ``gpu_mode`` is accepted and checked as datasketch checks it (``"always"`` without CuPy/CUDA raises
  ``RuntimeError``) but the work always runs on the CPU; the values are the same.

Parts of the docstrings and of the semantics are taken from datasketch (MIT licence, Copyright (c) 2015
ekzhu).
"""

from __future__ import annotations

import copy
import ctypes
import functools
import hashlib
import pickle
import struct
import warnings
from collections import defaultdict
from collections.abc import Hashable, Iterable
from typing import Any, Callable, Optional, TypeVar

import numpy as np

from . import _native

__all__ = [
    "MinHash",
    "LeanMinHash",
    "MinHashLSH",
    "MinHashLSHInsertionSession",
    "MinHashLSHDeletionSession",
    "sha1_hash32",
    "sha1_hash64",
]


# ---------------------------------------------------------------------------------------------------------
# Hash functions (datasketch.hashfunc)


def sha1_hash32(data):
    """A 32-bit hash function based on SHA1: the first 4 bytes of the digest, little-endian."""
    return struct.unpack("<I", hashlib.sha1(data).digest()[:4])[0]


def sha1_hash64(data):
    """A 64-bit hash function based on SHA1: the first 8 bytes of the digest, little-endian."""
    return struct.unpack("<Q", hashlib.sha1(data).digest()[:8])[0]


# ---------------------------------------------------------------------------------------------------------
# Constants (datasketch.minhash)

# The size of a hash value in number of bytes
hashvalue_byte_size = len(bytes(np.int64(42).data))

# http://en.wikipedia.org/wiki/Mersenne_prime
_mersenne_prime = np.uint64((1 << 61) - 1)
_max_hash = np.uint64((1 << 32) - 1)
_hash_range = 1 << 32

_SCHEME_LEGACY = "legacy"
_SCHEME_AFFINE32 = "affine32"
_SCHEME_AFFINE64 = "affine64"
_VALID_SCHEMES = (_SCHEME_AFFINE32, _SCHEME_AFFINE64, _SCHEME_LEGACY)

_SCHEME_DTYPES: dict[str, Any] = {
    _SCHEME_LEGACY: np.uint64,
    _SCHEME_AFFINE32: np.uint32,
    _SCHEME_AFFINE64: np.uint64,
}
_SCHEME_MAX_HASHES: dict[str, Any] = {
    _SCHEME_LEGACY: _max_hash,
    _SCHEME_AFFINE32: np.uint32((1 << 32) - 1),
    _SCHEME_AFFINE64: np.uint64((1 << 64) - 1),
}
_SCHEME_WIDTHS = {
    _SCHEME_AFFINE32: 32,
    _SCHEME_AFFINE64: 64,
}
_SCHEME_CODES = {
    _SCHEME_AFFINE32: 1,
    _SCHEME_AFFINE64: 2,
}
_SCHEME_CODES_INV = {code: scheme for scheme, code in _SCHEME_CODES.items()}

# The default hash function of each scheme; the native kernels compute exactly these.
_DEFAULT_HASHFUNCS = {
    _SCHEME_AFFINE32: sha1_hash32,
    _SCHEME_AFFINE64: sha1_hash64,
    _SCHEME_LEGACY: sha1_hash32,
}

_FMIX_CONSTANTS = {
    32: (np.uint32(16), np.uint32(0x85EBCA6B), np.uint32(13), np.uint32(0xC2B2AE35), np.uint32(16)),
    64: (np.uint64(33), np.uint64(0xFF51AFD7ED558CCD), np.uint64(33), np.uint64(0xC4CEB9FE1A85EC53), np.uint64(33)),
}


def _fmix(hv, width: int):
    """The MurmurHash3 finalizer, a fixed avalanching bijection on [0, 2^width) (element-wise, wrapping)."""
    s1, m1, s2, m2, s3 = _FMIX_CONSTANTS[width]
    hv = hv ^ (hv >> s1)
    hv = hv * m1
    hv = hv ^ (hv >> s2)
    hv = hv * m2
    return hv ^ (hv >> s3)


def _check_scheme_consistency(known: Optional[str], minhash) -> Optional[str]:
    """Check the scheme of a MinHash given to an LSH index against the scheme of the MinHash previously
    given to it, and return the scheme the index should remember (sketches without a scheme are exempt).
    """
    scheme = getattr(minhash, "scheme", None)
    if scheme is None:
        return known
    if known is None:
        return scheme
    if scheme != known:
        raise ValueError(
            "MinHash scheme %r does not match scheme %r of the MinHash previously given to this index" % (scheme, known)
        )
    return known


_GPU_OK_CACHE: Optional[bool] = None


def _gpu_available() -> bool:
    """Whether CuPy and a CUDA device are present (checked once)."""
    global _GPU_OK_CACHE
    if _GPU_OK_CACHE is not None:
        return _GPU_OK_CACHE
    try:
        import cupy as cp  # noqa: PLC0415 (imported only when gpu_mode="always" asks)

        _GPU_OK_CACHE = cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        _GPU_OK_CACHE = False
    return _GPU_OK_CACHE


# ---------------------------------------------------------------------------------------------------------
# Helpers for the native kernels

# Typed loosely: NumPy arrays have the buffer protocol, which NumPy's stubs do not declare before Python 3.12.
_c_char_from_buffer: Callable[[Any], ctypes.c_char] = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def _addr(arr: np.ndarray) -> int:
    """The data address of a C-contiguous NumPy array (which the caller keeps alive)."""
    try:
        # About 4x faster than __array_interface__; needs a writeable buffer of at least one byte.
        return _addressof(_c_char_from_buffer(arr))
    except (TypeError, ValueError, BufferError):
        return arr.__array_interface__["data"][0]


@functools.lru_cache(maxsize=64)
def _cached_permutations(scheme: str, num_perm: int, seed: int):
    return _native.ds_permutations(scheme, num_perm, seed)


def _native_permutations(scheme: str, num_perm: int, seed: int):
    """The permutation parameters (a, b) as little-endian bytes; small ones cached (each MinHash still
    gets its own arrays)."""
    if num_perm <= 4096:
        return _cached_permutations(scheme, num_perm, seed)
    return _native.ds_permutations(scheme, num_perm, seed)


def _is_plain_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


# ---------------------------------------------------------------------------------------------------------
# MinHash


def _union_values(mhs, mismatch: str) -> np.ndarray:
    """The element-wise minimum of at least two MinHash of one seed, size and scheme (datasketch's checks and
    messages: `mismatch` differs by a full stop between MinHash.union and LeanMinHash.union)."""
    if len(mhs) < 2:
        raise ValueError("Cannot union less than 2 MinHash")
    num_perm, seed, scheme = len(mhs[0]), mhs[0].seed, mhs[0].scheme
    if any((seed != m.seed or num_perm != len(m) or scheme != m.scheme) for m in mhs):
        raise ValueError(mismatch)
    return np.minimum.reduce([m.hashvalues for m in mhs])


class MinHash:
    """MinHash is a probabilistic data structure for computing `Jaccard similarity`_ between sets.

    Args:
        num_perm (int): Number of random permutation functions. Ignored if `hashvalues` is not None.
        seed (int): The random seed controls the set of random permutation functions.
        gpu_mode ({'disable', 'detect', 'always'}): GPU use in :meth:`update_batch` in datasketch.
            Here the work always runs on the CPU; ``'always'`` still raises ``RuntimeError`` if
            CuPy/CUDA is unavailable, as datasketch does.
        hashfunc (Optional[Callable]): The hash function used by this MinHash. It takes the input passed to
            :meth:`update` and returns an integer that fits 32 bits ("affine32", "legacy") or 64 bits
            ("affine64"). If None, SHA1-based :func:`sha1_hash32` or :func:`sha1_hash64` (per the scheme
            width) is used, computed in native code.
        hashobj (**deprecated**): No-op, replaced by `hashfunc`.
        hashvalues (Optional[Iterable]): The internal state, e.g. the :attr:`hashvalues` of another
            MinHash. `scheme` must then be given explicitly.
        permutations (Optional[Tuple[Iterable, Iterable]]): The permutation parameters, e.g. the
            :attr:`permutations` of another MinHash. `scheme` must then be given explicitly.
        scheme (Optional[str]): ``"affine32"`` (default), ``"affine64"`` or ``"legacy"`` (datasketch
            before 2.0.0). MinHash of different schemes cannot be compared, merged or unioned.

    .. _`Jaccard similarity`: https://en.wikipedia.org/wiki/Jaccard_index
    """

    def __init__(
        self,
        num_perm: int = 128,
        seed: int = 1,
        gpu_mode: str = "disable",
        hashfunc: Optional[Callable] = None,
        hashobj: Optional[object] = None,  # Deprecated.
        hashvalues=None,
        permutations=None,
        scheme: Optional[str] = None,
    ) -> None:
        if scheme is None:
            if hashvalues is not None or permutations is not None:
                raise ValueError(
                    "scheme must be specified explicitly when initializing from existing "
                    "hash values or permutations: pass the scheme of the MinHash they came "
                    "from, or scheme='legacy' for values created by datasketch before 2.0.0."
                )
            scheme = _SCHEME_AFFINE32
        elif scheme not in _VALID_SCHEMES:
            raise ValueError("scheme must be one of %s, got %r" % (", ".join(_VALID_SCHEMES), scheme))
        self.scheme = scheme
        if hashvalues is not None:
            num_perm = len(hashvalues)
        if num_perm < 1:
            raise ValueError("num_perm must be positive")
        if num_perm > _hash_range:
            raise ValueError("Cannot have more than %d number of permutation functions" % _hash_range)
        self.seed = seed
        self.num_perm = num_perm
        if hashfunc is None:
            hashfunc = sha1_hash64 if scheme == _SCHEME_AFFINE64 else sha1_hash32
        if not callable(hashfunc):
            raise ValueError("The hashfunc must be a callable.")
        self.hashfunc = hashfunc
        if hashobj is not None:
            warnings.warn("hashobj is deprecated, use hashfunc instead.", DeprecationWarning, stacklevel=2)
        if hashvalues is not None:
            self.hashvalues = self._parse_hashvalues(hashvalues)
        else:
            self.hashvalues = self._init_hashvalues(num_perm)
        if permutations is not None:
            self.permutations = self._parse_permutations(permutations)
        else:
            self.permutations = self._init_permutations(num_perm)
        if len(self) != len(self.permutations[0]):
            raise ValueError("Numbers of hash values and permutations mismatch")
        self._gpu_mode = gpu_mode
        self._a_gpu = None
        self._b_gpu = None
        # The permutations checked above: copy() shares them without checking them again.
        self.__dict__["_perms_ok"] = self.permutations

    # -- state ------------------------------------------------------------------------------------------

    def _init_hashvalues(self, num_perm: int) -> np.ndarray:
        if self.scheme == _SCHEME_LEGACY:
            return np.ones(num_perm, dtype=np.uint64) * _max_hash
        return np.full(num_perm, _SCHEME_MAX_HASHES[self.scheme], dtype=_SCHEME_DTYPES[self.scheme])

    def _init_permutations(self, num_perm: int) -> np.ndarray:
        seed = self.seed
        if _is_plain_int(seed) and 0 <= int(seed) < (1 << 32):
            a_bytes, b_bytes = _native_permutations(self.scheme, int(num_perm), int(seed))
            dtype = np.dtype(_SCHEME_DTYPES[self.scheme]).newbyteorder("<")
            if self.scheme == _SCHEME_LEGACY:
                # datasketch builds an (num_perm, 2) array and transposes it: keep that layout.
                pairs = np.empty((num_perm, 2), dtype=np.uint64)
                pairs[:, 0] = np.frombuffer(a_bytes, dtype=dtype)
                pairs[:, 1] = np.frombuffer(b_bytes, dtype=dtype)
                return pairs.T
            perms = np.empty((2, num_perm), dtype=_SCHEME_DTYPES[self.scheme])
            perms[0] = np.frombuffer(a_bytes, dtype=dtype)
            perms[1] = np.frombuffer(b_bytes, dtype=dtype)
            return perms
        # Any other seed (None, arrays, out of range): NumPy decides, as in datasketch.
        gen = np.random.RandomState(seed)
        if self.scheme == _SCHEME_LEGACY:
            return np.array(
                [
                    (
                        gen.randint(1, _mersenne_prime, dtype=np.uint64),
                        gen.randint(0, _mersenne_prime, dtype=np.uint64),
                    )
                    for _ in range(num_perm)
                ],
                dtype=np.uint64,
            ).T
        width = _SCHEME_WIDTHS[self.scheme]
        scalar = _SCHEME_DTYPES[self.scheme]
        a = gen.randint(0, 1 << (width - 1), num_perm, dtype=scalar) * scalar(2) + scalar(1)
        b = gen.randint(0, 1 << width, num_perm, dtype=scalar)
        return np.array([a, b])

    def _to_scheme_array(self, values, what: str) -> np.ndarray:
        """Convert values to an array of the scheme's dtype without loss."""
        if isinstance(values, np.ndarray):
            if (
                values.dtype.kind in "iu"
                and values.size
                and (int(values.max()) > int(_SCHEME_MAX_HASHES[self.scheme]) or int(values.min()) < 0)
            ):
                raise ValueError("%s out of range for scheme %r" % (what, self.scheme))
            return values.astype(_SCHEME_DTYPES[self.scheme])
        try:
            return np.array(values, dtype=_SCHEME_DTYPES[self.scheme])
        except OverflowError as err:
            raise ValueError("%s out of range for scheme %r: %s" % (what, self.scheme, err)) from err

    def _parse_hashvalues(self, hashvalues) -> np.ndarray:
        if self.scheme == _SCHEME_LEGACY:
            return np.array(hashvalues, dtype=np.uint64)
        return self._to_scheme_array(hashvalues, "hash values")

    def _parse_permutations(self, permutations):
        if self.scheme == _SCHEME_LEGACY:
            return permutations
        dtype = _SCHEME_DTYPES[self.scheme]
        if (
            isinstance(permutations, np.ndarray)
            and permutations.dtype == dtype
            and permutations.ndim == 2
            and permutations.shape[0] == 2
        ):
            parsed = permutations
        else:
            a = self._to_scheme_array(permutations[0], "permutation parameters")
            b = self._to_scheme_array(permutations[1], "permutation parameters")
            parsed = np.array([a, b])
        if np.any(parsed[0] & dtype(1) == 0):
            raise ValueError("all `a` permutation parameters must be odd for scheme %r" % self.scheme)
        return parsed

    def _hash_input_array(self, hvs) -> np.ndarray:
        """Convert hash function outputs to an array of the scheme's dtype (ValueError if out of range)."""
        try:
            return np.array(hvs, dtype=_SCHEME_DTYPES[self.scheme])
        except OverflowError as err:
            raise ValueError(
                "hashfunc returned a value out of range for scheme %r: %s. "
                "Use a hash function matching the scheme width, or scheme='affine64' "
                "for 64-bit hash values." % (self.scheme, err)
            ) from err

    # -- native plumbing --------------------------------------------------------------------------------

    def _kernel_arrays(self):
        """The permutation arrays as C-contiguous arrays of the scheme's dtype, with their addresses,
        and a fresh C-contiguous copy of the hash values to update (never the user's array)."""
        perms = self.permutations
        cache = self.__dict__.get("_perm_cache")
        if cache is None or cache[0] is not perms or cache[1] != self.scheme:
            dtype = _SCHEME_DTYPES[self.scheme]
            a = np.ascontiguousarray(perms[0], dtype=dtype)
            b = np.ascontiguousarray(perms[1], dtype=dtype)
            if a.ndim != 1 or a.shape != b.shape:
                raise ValueError("The permutation parameters must be two sequences of the same length")
            cache = (perms, self.scheme, a, b, _addr(a), _addr(b), a.shape[0])
            self.__dict__["_perm_cache"] = cache
        hv = np.array(self.hashvalues, dtype=_SCHEME_DTYPES[self.scheme], order="C", copy=True)
        if hv.ndim != 1 or hv.shape[0] != cache[6]:
            raise ValueError(
                "operands could not be broadcast together with shapes %s %s" % (hv.shape, (cache[6],))
            )
        return cache, hv

    def _update_hashes(self, hashes: np.ndarray) -> None:
        """Apply already computed hash values (an array of the scheme's dtype) with the native kernel."""
        hashes = np.ascontiguousarray(hashes, dtype=_SCHEME_DTYPES[self.scheme])
        cache, hv = self._kernel_arrays()
        n = hashes.shape[0]
        if n:
            _native.ds_update_hashes(self.scheme, cache[4], cache[5], _addr(hv), cache[6], _addr(hashes), n)
        self.hashvalues = hv

    # -- updates ----------------------------------------------------------------------------------------

    def update(self, b) -> None:
        """Update this MinHash with a new value, hashed with the hash function given by `hashfunc`.

        With the default hash function the value must be bytes (``"value".encode("utf-8")``).
        """
        hashfunc = self.hashfunc
        scheme = self.scheme
        if hashfunc is _DEFAULT_HASHFUNCS.get(scheme):
            cache, hv = self._kernel_arrays()
            try:
                _native.ds_update(scheme, cache[4], cache[5], _addr(hv), cache[6], (b,))
            except TypeError:
                pass  # hashed again below, so that hashlib raises its own error
            else:
                self.hashvalues = hv
                return
        hv = hashfunc(b)
        if scheme == _SCHEME_LEGACY:
            if type(hv) is not int:
                # Anything but a plain int: NumPy's arithmetic decides, exactly as in datasketch.
                a, b = self.permutations
                phv = np.bitwise_and((a * hv + b) % _mersenne_prime, _max_hash)
                self.hashvalues = np.minimum(phv, self.hashvalues)
                return
            hashes = np.array([hv], dtype=np.uint64)
        else:
            hashes = self._hash_input_array([hv])
        self._update_hashes(hashes)

    def update_batch(self, b: Iterable) -> None:
        """Update this MinHash with new values, hashed with the hash function given by `hashfunc`.

        Args:
            b (Iterable): Values to be hashed (bytes with the default hash function).
        """
        hashfunc = self.hashfunc
        scheme = self.scheme
        if hashfunc is _DEFAULT_HASHFUNCS.get(scheme) and self._gpu_mode != "always":
            items = b if isinstance(b, (list, tuple)) else list(b)
            if not items:
                return
            cache, hv = self._kernel_arrays()
            try:
                _native.ds_update(scheme, cache[4], cache[5], _addr(hv), cache[6], items)
            except TypeError:
                b = items  # hashed again below, so that hashlib raises its own error
            else:
                self.hashvalues = hv
                return
        hv_list = [hashfunc(_b) for _b in b]
        if not hv_list:
            return
        if self._gpu_mode == "always" and not _gpu_available():
            raise RuntimeError("GPU mode 'always' requested but CuPy/CUDA device is unavailable.")
        if scheme == _SCHEME_LEGACY:
            hashes = np.array(hv_list, dtype=np.uint64)
        else:
            hashes = self._hash_input_array(hv_list)
        self._update_hashes(hashes.reshape(-1))

    # -- comparisons and set operations -------------------------------------------------------------------

    def jaccard(self, other: MinHash) -> float:
        """Estimate the Jaccard similarity between the sets represented by this MinHash and the other.

        Raises:
            ValueError: If the two MinHashes have different numbers of permutation functions, seeds
                or permutation schemes.
        """
        if getattr(other, "scheme", None) != self.scheme:
            raise ValueError("Cannot compute Jaccard given MinHash with different permutation schemes")
        if other.seed != self.seed:
            raise ValueError("Cannot compute Jaccard given MinHash with different seeds")
        if len(self) != len(other):
            raise ValueError(
                "Cannot compute Jaccard given MinHash with different numbers of permutation functions"
            )
        return float(np.count_nonzero(self.hashvalues == other.hashvalues)) / float(len(self))

    def count(self) -> float:
        """Estimate the cardinality of the set represented by this MinHash."""
        k = len(self)
        return float(k) / np.sum(self.hashvalues / float(_SCHEME_MAX_HASHES[self.scheme])) - 1.0

    def merge(self, other: MinHash) -> None:
        """Merge the other MinHash into this one, making this one the union of both.

        Raises:
            ValueError: If the two MinHashes have different numbers of permutation functions, seeds
                or permutation schemes.
        """
        if getattr(other, "scheme", None) != self.scheme:
            raise ValueError("Cannot merge MinHash with different permutation schemes")
        if other.seed != self.seed:
            raise ValueError("Cannot merge MinHash with different seeds")
        if len(self) != len(other):
            raise ValueError("Cannot merge MinHash with different numbers of permutation functions")
        self.hashvalues = np.minimum(other.hashvalues, self.hashvalues)

    def digest(self) -> np.ndarray:
        """Export the hash values (a copy of the internal state)."""
        return copy.copy(self.hashvalues)

    def is_empty(self) -> bool:
        """Whether the MinHash is in its just-initialized state."""
        return not np.any(self.hashvalues != _SCHEME_MAX_HASHES[self.scheme])

    def clear(self) -> None:
        """Reset all hash values."""
        self.hashvalues = self._init_hashvalues(len(self))

    def copy(self) -> MinHash:
        """Return a copy (sharing the read-only permutations, as datasketch does)."""
        d = self.__dict__
        perms = d.get("permutations")
        hv = d.get("hashvalues")
        scheme = d.get("scheme")
        if (
            d.get("_perms_ok") is perms
            and perms is not None
            and type(hv) is np.ndarray
            and hv.ndim == 1
            and scheme in _SCHEME_DTYPES
            and hv.dtype == _SCHEME_DTYPES[scheme]
            and 0 < hv.shape[0] == len(perms[0])
            and callable(d.get("hashfunc"))
        ):
            # What the constructor would make of these (already checked) values, without the checks.
            m = object.__new__(MinHash)
            m.__dict__.update(
                scheme=scheme,
                seed=d.get("seed"),
                num_perm=hv.shape[0],
                hashfunc=d["hashfunc"],
                hashvalues=hv.astype(hv.dtype),
                permutations=perms,
                _gpu_mode=d.get("_gpu_mode"),
                _a_gpu=None,
                _b_gpu=None,
                _perms_ok=perms,
            )
            cache = d.get("_perm_cache")
            if cache is not None and cache[0] is perms:
                m.__dict__["_perm_cache"] = cache
            return m
        m = MinHash(
            seed=self.seed,
            hashfunc=self.hashfunc,
            hashvalues=self.digest(),
            permutations=self.permutations,
            gpu_mode=self._gpu_mode,
            scheme=self.scheme,
        )
        cache = self.__dict__.get("_perm_cache")
        if cache is not None and cache[0] is m.permutations:
            m.__dict__["_perm_cache"] = cache
        return m

    def __len__(self) -> int:
        """The number of hash values."""
        return len(self.hashvalues)

    def __eq__(self, other: object) -> bool:
        """Equal if of the same type, scheme, seed and hash values."""
        return (
            type(self) is type(other)
            and isinstance(other, MinHash)
            and self.scheme == other.scheme
            and self.seed == other.seed
            and np.array_equal(self.hashvalues, other.hashvalues)
        )

    @classmethod
    def union(cls, *mhs: MinHash) -> MinHash:
        """Create a MinHash which is the union of the (at least 2) MinHash objects passed."""
        hashvalues = _union_values(
            mhs, "The unioning MinHash must have the same seed, number of permutation functions and scheme"
        )
        num_perm, seed, scheme = len(mhs[0]), mhs[0].seed, mhs[0].scheme
        permutations = mhs[0].permutations
        return cls(
            num_perm=num_perm,
            seed=seed,
            hashfunc=mhs[0].hashfunc,
            hashvalues=hashvalues,
            permutations=permutations,
            gpu_mode=mhs[0]._gpu_mode,
            scheme=scheme,
        )

    @classmethod
    def bulk(cls, b: Iterable, **minhash_kwargs) -> list:
        """Compute MinHashes in bulk: one MinHash per iterable of bytes in `b`."""
        return list(cls.generator(b, **minhash_kwargs))

    @classmethod
    def generator(cls, b: Iterable, **minhash_kwargs):
        """Compute MinHashes in a generator: one MinHash per iterable of bytes in `b`."""
        m = cls(**minhash_kwargs)
        for _b in b:
            _m = m.copy()
            _m.update_batch(_b)
            yield _m

    # -- pickling ---------------------------------------------------------------------------------------

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_perm_cache", None)
        state.pop("_perms_ok", None)
        state["_a_gpu"] = None
        state["_b_gpu"] = None
        return state

    def __setstate__(self, state):
        # MinHash pickled before version 2.0.0 predates permutation schemes: legacy.
        state = dict(state)
        state.pop("_perm_cache", None)
        state.pop("_perms_ok", None)
        state.setdefault("scheme", _SCHEME_LEGACY)
        self.__dict__.update(state)


# ---------------------------------------------------------------------------------------------------------
# LeanMinHash

_SCHEME_VALUE_FMTS = {
    _SCHEME_LEGACY: "I",
    _SCHEME_AFFINE32: "I",
    _SCHEME_AFFINE64: "Q",
}


class LeanMinHash(MinHash):
    """Lean MinHash: MinHash with a smaller memory footprint and faster deserialization, its state frozen
    (no `update()`). It keeps only `seed`, `hashvalues` and `scheme`.

    Args:
        minhash (optional): The :class:`MinHash` to initialize from. If not set, `seed` and `hashvalues`
            must be set.
        seed (optional): The random seed of the permutation functions (with `hashvalues`).
        hashvalues (optional): The hash values (with `seed`).
        scheme (optional): The permutation scheme the `hashvalues` came from; required with `seed` and
            `hashvalues` (``"legacy"`` for values created by datasketch before 2.0.0).
    """

    __slots__ = ("hashvalues", "scheme", "seed")

    def _initialize_slots(self, seed, hashvalues, scheme=_SCHEME_LEGACY):
        if scheme not in _VALID_SCHEMES:
            raise ValueError("scheme must be one of %s, got %r" % (", ".join(_VALID_SCHEMES), scheme))
        self.seed = seed
        self.scheme = scheme
        self.hashvalues = self._parse_hashvalues(hashvalues)
        if scheme != _SCHEME_LEGACY and len(self.hashvalues) == 0:
            raise ValueError("hashvalues must not be empty")

    def __init__(
        self,
        minhash: Optional[MinHash] = None,
        seed: Optional[int] = None,
        hashvalues: Optional[Iterable] = None,
        scheme: Optional[str] = None,
    ):
        if minhash is not None:
            if scheme is not None and scheme != minhash.scheme:
                raise ValueError(
                    "scheme %r conflicts with the scheme %r of the given MinHash" % (scheme, minhash.scheme)
                )
            self._initialize_slots(minhash.seed, minhash.hashvalues, minhash.scheme)
        elif hashvalues is not None and seed is not None:
            if scheme is None:
                raise ValueError(
                    "scheme must be specified explicitly when initializing from existing "
                    "hash values: pass the scheme of the MinHash they came from, or "
                    "scheme='legacy' for hash values created by datasketch before 2.0.0."
                )
            self._initialize_slots(seed, hashvalues, scheme)
        else:
            raise ValueError(
                "Init parameters cannot be None: make sure to set either minhash or both of hash values and seed"
            )

    def update(self, b) -> None:
        """Not available on a LeanMinHash: raises TypeError."""
        raise TypeError("Cannot update a LeanMinHash")

    def copy(self) -> LeanMinHash:
        """Return a copy."""
        lmh = object.__new__(LeanMinHash)
        lmh._initialize_slots(self.seed, self.hashvalues, self.scheme)
        return lmh

    def _value_fmt(self) -> str:
        return _SCHEME_VALUE_FMTS[self.scheme]

    def bytesize(self, byteorder="@") -> int:
        """The byte size after serialization, for a struct byte order character (default native)."""
        if self.scheme == _SCHEME_LEGACY:
            return struct.calcsize("%sqi%dI" % (byteorder, len(self)))
        return struct.calcsize("%sqiB%d%s" % (byteorder, len(self), self._value_fmt()))

    def serialize(self, buf, byteorder="@") -> None:
        """Serialize this lean MinHash into an allocated buffer (``bytearray(lmh.bytesize())``).

        Legacy format: 8-byte seed, 4-byte number of hash values, 4 bytes per hash value. Affine formats:
        8-byte seed, 4-byte *negated* number of hash values, 1-byte scheme code (1 "affine32",
        2 "affine64"), then 4 or 8 bytes per hash value.
        """
        if len(buf) < self.bytesize(byteorder):
            raise ValueError("The buffer does not have enough space for holding this MinHash.")
        if self.scheme == _SCHEME_LEGACY:
            fmt = "%sqi%dI" % (byteorder, len(self))
            struct.pack_into(fmt, buf, 0, self.seed, len(self), *self.hashvalues)
        else:
            fmt = "%sqiB%d%s" % (byteorder, len(self), self._value_fmt())
            struct.pack_into(fmt, buf, 0, self.seed, -len(self), _SCHEME_CODES[self.scheme], *self.hashvalues)

    @classmethod
    def deserialize(cls, buf, byteorder="@") -> LeanMinHash:
        """Deserialize a lean MinHash from a buffer (buffers without a scheme field are legacy)."""
        fmt_seed_size = "%sqi" % byteorder
        try:
            seed, num_perm = struct.unpack_from(fmt_seed_size, buf, 0)
        except TypeError:
            buf = memoryview(buf)
            seed, num_perm = struct.unpack_from(fmt_seed_size, buf, 0)
        if num_perm >= 0:
            scheme = _SCHEME_LEGACY
            offset = struct.calcsize(fmt_seed_size)
        else:
            num_perm = -num_perm
            (scheme_code,) = struct.unpack_from(byteorder + "B", buf, struct.calcsize(fmt_seed_size))
            if scheme_code not in _SCHEME_CODES_INV:
                raise ValueError("Unknown permutation scheme code: %d" % scheme_code)
            scheme = _SCHEME_CODES_INV[scheme_code]
            offset = struct.calcsize("%sqiB0%s" % (byteorder, _SCHEME_VALUE_FMTS[scheme]))
        fmt_hash = "%s%d%s" % (byteorder, num_perm, _SCHEME_VALUE_FMTS[scheme])
        hashvalues = struct.unpack_from(fmt_hash, buf, offset)
        lmh = object.__new__(LeanMinHash)
        lmh._initialize_slots(seed, hashvalues, scheme)
        return lmh

    def __getstate__(self):
        buf = bytearray(self.bytesize())
        if self.scheme == _SCHEME_LEGACY:
            fmt = "qi%dI" % len(self)
            struct.pack_into(fmt, buf, 0, self.seed, len(self), *self.hashvalues)
        else:
            fmt = "qiB%d%s" % (len(self), self._value_fmt())
            struct.pack_into(fmt, buf, 0, self.seed, -len(self), _SCHEME_CODES[self.scheme], *self.hashvalues)
        return buf

    def __setstate__(self, buf):
        try:
            seed, num_perm = struct.unpack_from("qi", buf, 0)
        except TypeError:
            buf = memoryview(buf)
            seed, num_perm = struct.unpack_from("qi", buf, 0)
        if num_perm >= 0:
            scheme = _SCHEME_LEGACY
            offset = struct.calcsize("qi")
        else:
            num_perm = -num_perm
            (scheme_code,) = struct.unpack_from("B", buf, struct.calcsize("qi"))
            if scheme_code not in _SCHEME_CODES_INV:
                raise ValueError("Unknown permutation scheme code: %d" % scheme_code)
            scheme = _SCHEME_CODES_INV[scheme_code]
            offset = struct.calcsize("qiB0%s" % _SCHEME_VALUE_FMTS[scheme])
        hashvalues = struct.unpack_from("%d%s" % (num_perm, _SCHEME_VALUE_FMTS[scheme]), buf, offset)
        self._initialize_slots(seed, hashvalues, scheme)

    def __hash__(self) -> int:
        return hash((self.scheme, self.seed, tuple(self.hashvalues)))

    @classmethod
    def union(cls, *lmhs: MinHash) -> LeanMinHash:
        """Create a new lean MinHash by unioning multiple lean MinHash."""
        hashvalues = _union_values(
            lmhs, "The unioning MinHash must have the same seed, number of permutation functions and scheme."
        )
        lmh = object.__new__(LeanMinHash)
        lmh._initialize_slots(lmhs[0].seed, hashvalues, lmhs[0].scheme)
        return lmh


# ---------------------------------------------------------------------------------------------------------
# LSH parameters: datasketch integrates with scipy.integrate.quad; here a composite Gauss-Legendre rule
# (16 nodes on each of 64 subintervals), accurate to ~1e-15 on these polynomial integrands.

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)
_GL_SUBINTERVALS = 64


def _quadrature(lo: float, hi: float):
    """Nodes and weights of the composite Gauss-Legendre rule on [lo, hi]."""
    edges = np.linspace(lo, hi, _GL_SUBINTERVALS + 1)
    half = (edges[1:] - edges[:-1]) / 2.0
    mid = (edges[1:] + edges[:-1]) / 2.0
    nodes = (mid[:, None] + half[:, None] * _GL_NODES[None, :]).ravel()
    weights = (half[:, None] * _GL_WEIGHTS[None, :]).ravel()
    return nodes, weights


def _false_positive_probability(threshold, b, r):
    """The integral over s in [0, threshold] of 1 - (1 - s^r)^b."""
    s, w = _quadrature(0.0, float(threshold))
    return float(np.dot(1.0 - (1.0 - s ** float(r)) ** float(b), w))


def _false_negative_probability(threshold, b, r):
    """The integral over s in [threshold, 1] of (1 - s^r)^b."""
    s, w = _quadrature(float(threshold), 1.0)
    return float(np.dot(1.0 - (1.0 - (1.0 - s ** float(r)) ** float(b)), w))


@functools.lru_cache(maxsize=64)
def _error_tables(threshold: float, num_perm: int):
    """False positive and false negative probabilities of every (b, r) with b*r <= num_perm, in
    datasketch's search order (b ascending, then r ascending)."""
    s0, w0 = _quadrature(0.0, float(threshold))
    s1, w1 = _quadrature(float(threshold), 1.0)
    fp_by_r = {}
    fn_by_r = {}
    p0 = np.ones_like(s0)
    p1 = np.ones_like(s1)
    for r in range(1, num_perm + 1):
        p0 = p0 * s0  # s^r
        p1 = p1 * s1
        max_b = num_perm // r
        # (1 - s^r)^b for b = 1..max_b, by repeated multiplication.
        fp_r = np.empty(max_b)
        fn_r = np.empty(max_b)
        last0 = np.ones_like(s0)
        last1 = np.ones_like(s1)
        for lo in range(0, max_b, 256):  # in chunks, to bound the memory for large num_perm
            rows = min(256, max_b - lo)
            q0 = np.cumprod(np.broadcast_to(1.0 - p0, (rows, p0.size)), axis=0) * last0
            q1 = np.cumprod(np.broadcast_to(1.0 - p1, (rows, p1.size)), axis=0) * last1
            fp_r[lo : lo + rows] = (1.0 - q0) @ w0
            fn_r[lo : lo + rows] = q1 @ w1
            last0 = q0[-1]
            last1 = q1[-1]
        fp_by_r[r] = fp_r
        fn_by_r[r] = fn_r
    pairs = []
    fps = []
    fns = []
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            pairs.append((b, r))
            fps.append(fp_by_r[r][b - 1])
            fns.append(fn_by_r[r][b - 1])
    return pairs, np.array(fps), np.array(fns)


@functools.lru_cache(maxsize=256)
def _optimal_param(threshold, num_perm, false_positive_weight, false_negative_weight):
    """Compute the `MinHashLSH` parameter (b, r) that minimizes the weighted sum of probabilities of
    false positive and false negative (the first minimum in datasketch's search order)."""
    if num_perm < 1:
        return (0, 0)
    pairs, fps, fns = _error_tables(threshold, num_perm)
    errors = fps * false_positive_weight + fns * false_negative_weight
    return pairs[int(np.argmin(errors))]  # the first minimum, as datasketch's strict `<` keeps


# ---------------------------------------------------------------------------------------------------------
# In-memory storage (datasketch.storage.DictListStorage / DictSetStorage), for MinHashLSH with a custom
# hashfunc and for the rare cases the native tables do not model (see MinHashLSH._to_python_tables).


class _DictListStorage:
    """``defaultdict(list)`` with datasketch's storage API."""

    def __init__(self):
        self._dict = defaultdict(list)

    def __getitem__(self, key):
        return self.get(key)

    def __delitem__(self, key):
        return self.remove(key)

    def __len__(self):
        return self.size()

    def __iter__(self):
        yield from self.keys()

    def __contains__(self, item):
        return self.has_key(item)

    @property
    def buffer_size(self) -> int:
        return getattr(self, "_buffer_size", 50000)

    @buffer_size.setter
    def buffer_size(self, value: int):
        self._buffer_size = value

    def keys(self):
        return self._dict.keys()

    def get(self, key):
        return self._dict.get(key, [])

    def getmany(self, *keys):
        return [self.get(key) for key in keys]

    def remove(self, *keys, **kwargs):
        for key in keys:
            del self._dict[key]

    def remove_val(self, key, val, **kwargs):
        self._dict[key].remove(val)

    def insert(self, key, *vals, **kwargs):
        self._dict[key].extend(vals)

    def size(self):
        return len(self._dict)

    def itemcounts(self, **kwargs):
        return {k: len(v) for k, v in self._dict.items()}

    def has_key(self, key):
        return key in self._dict

    def status(self):
        return {"keyspace_size": len(self)}

    def empty_buffer(self):
        pass

    def add_to_select_buffer(self, keys):
        if not hasattr(self, "_select_buffer"):
            self._select_buffer = self.getmany(*keys)
        else:
            self._select_buffer.extend(self.getmany(*keys))

    def collect_select_buffer(self):
        if not hasattr(self, "_select_buffer"):
            return []
        buffer = list(self._select_buffer)
        del self._select_buffer[:]
        return buffer


class _DictSetStorage(_DictListStorage):
    """``defaultdict(set)`` with datasketch's storage API."""

    def __init__(self):
        self._dict = defaultdict(set)

    def get(self, key):
        return self._dict.get(key, set())

    def insert(self, key, *vals, **kwargs):
        self._dict[key].update(vals)


class _NativeKeys:
    """Read-only view of the keys of a natively indexed `MinHashLSH` (datasketch's ``lsh.keys``): the
    stored keys (pickled if `prepickle`), each with its band bucket keys."""

    buffer_size = 50000

    def __init__(self, lsh: MinHashLSH):
        self._lsh = lsh

    def __contains__(self, key) -> bool:
        return key in self._lsh._key_to_id

    has_key = __contains__

    def __iter__(self):
        return iter(list(self._lsh._key_to_id))

    def keys(self):
        return self._lsh._key_to_id.keys()

    def __len__(self) -> int:
        return len(self._lsh._key_to_id)

    def size(self) -> int:
        return len(self._lsh._key_to_id)

    def get(self, key):
        i = self._lsh._key_to_id.get(key)
        if i is None:
            return []
        return self._lsh._index.band_keys(i)

    __getitem__ = get

    def getmany(self, *keys):
        return [self.get(key) for key in keys]

    def itemcounts(self, **kwargs):
        b = self._lsh.b
        return {k: b for k in self._lsh._key_to_id}

    def status(self):
        return {"keyspace_size": len(self)}

    def empty_buffer(self):
        pass


class _NativeBandTable:
    """Read-only view of one band table of a natively indexed `MinHashLSH` (datasketch's
    ``lsh.hashtables[i]``): its counts are made per call, a bucket's keys are found by the bucket's hash."""

    buffer_size = 50000

    def __init__(self, lsh: MinHashLSH, band: int):
        self._lsh = lsh
        self._band = band

    def itemcounts(self, **kwargs):
        if self._lsh._index is None:
            return {}
        return self._lsh._index.band_counts(self._band)

    def keys(self):
        return self.itemcounts().keys()

    def __iter__(self):
        return iter(list(self.keys()))

    def size(self) -> int:
        return len(self.itemcounts())

    __len__ = size

    def has_key(self, key) -> bool:
        return key in self.itemcounts()

    __contains__ = has_key

    def get(self, key):
        lsh = self._lsh
        if lsh._index is None:
            return set()
        if not isinstance(key, (bytes, bytearray, memoryview)):
            return set()
        return {lsh._id_to_key[i] for i in lsh._index.band_members(self._band, bytes(key))}

    __getitem__ = get

    def getmany(self, *keys):
        return [self.get(key) for key in keys]

    def status(self):
        return {"keyspace_size": len(self)}

    def empty_buffer(self):
        pass


_FREE_ID = object()


# ---------------------------------------------------------------------------------------------------------
# MinHashLSH


class MinHashLSH:
    """The MinHash LSH index, for queries with a Jaccard similarity threshold.
    Reference: Chapter 3, Mining of Massive Datasets (http://www.mmds.org/).

    Args:
        threshold (float): The Jaccard similarity threshold between 0.0 and 1.0; the index is optimized
            for it by minimizing the weighted false positive and false negative probabilities.
        num_perm (int): The number of permutation functions of the indexed MinHash.
        weights (Tuple[float, float]): ``(false_positive_weight, false_negative_weight)``, summing to 1.
        params (Optional[Tuple[int, int]]): The LSH parameters (number of bands, band size), bypassing the
            optimization (`threshold` and `weights` are then ignored).
        storage_config (Optional[Dict]): Only ``None`` or ``{"type": "dict"}``: neardup.datasketch keeps
            its tables in memory.
        prepickle (Optional[bool]): If True, all keys are pickled to bytes before insertion.
        hashfunc (Optional[Callable[[bytes], bytes]]): If given, used to compress the band keys (a
            pure-Python index is used then).

    Example:
        .. code-block:: python

            lsh = MinHashLSH(threshold=0.9, num_perm=128)
            print(lsh.b, lsh.r)
            # 5 25
    """

    # The tables are one of two backends, which `_native` names: the native band tables (`_index`, a
    # `_native.BandIndex` made at the first insert, for the width of its values; `keys` a `_NativeKeys`,
    # `hashtables` of `_NativeBandTable`), or datasketch's pure-Python ones (`keys` a `_DictListStorage`,
    # `hashtables` of `_DictSetStorage`), for what only they model. Each path uses the backend's own methods.
    _native: bool
    _index: Any
    _width: Optional[int]
    keys: Any
    hashtables: list[Any]

    def __init__(
        self,
        threshold: float = 0.9,
        num_perm: int = 128,
        weights=(0.5, 0.5),
        params=None,
        storage_config: Optional[dict] = None,
        prepickle: Optional[bool] = None,
        hashfunc: Optional[Callable[[bytes], bytes]] = None,
    ) -> None:
        storage_config = storage_config if storage_config else {"type": "dict"}
        self._buffer_size = 50000
        if threshold > 1.0 or threshold < 0.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if any(w < 0.0 or w > 1.0 for w in weights):
            raise ValueError("Weight must be in [0.0, 1.0]")
        if sum(weights) != 1.0:
            raise ValueError("Weights must sum to 1.0")
        self.h = num_perm
        if params is not None:
            self.b, self.r = params
            if self.b * self.r > num_perm:
                raise ValueError(
                    "The product of b and r in params is "
                    f"{self.b} * {self.r} = {self.b * self.r} -- it must be less than num_perm {num_perm}. "
                    "Did you forget to specify num_perm?"
                )
        else:
            false_positive_weight, false_negative_weight = weights
            self.b, self.r = _optimal_param(threshold, num_perm, false_positive_weight, false_negative_weight)
        if self.b < 2:
            raise ValueError("The number of bands are too small (b < 2)")

        storage_type = storage_config["type"]
        if storage_type != "dict":
            raise ValueError(
                f"neardup.datasketch keeps its tables in memory: storage type {storage_type!r} is not supported "
                "(use storage_config=None or {'type': 'dict'})"
            )
        self.prepickle = storage_type == "redis" if prepickle is None else prepickle
        self._require_bytes_keys = not (storage_type == "dict" or self.prepickle)

        self.hashfunc = hashfunc
        if hashfunc:
            self._H = self._hashed_byteswap
        else:
            self._H = self._byteswap

        self.hashranges = [(i * self.r, (i + 1) * self.r) for i in range(self.b)]
        self._minhash_scheme = None
        self._query_buffer: list = []
        if hashfunc:
            self._init_python_tables()
        else:
            self._init_native_tables()

    @property
    def _minhash_scheme(self) -> Optional[str]:
        """The MinHash scheme the index has seen (None until one with a scheme is inserted)."""
        return self.__dict__.get("_scheme_seen")

    @_minhash_scheme.setter
    def _minhash_scheme(self, scheme: Optional[str]) -> None:
        self.__dict__["_scheme_seen"] = scheme
        index = self.__dict__.get("_index")
        if index is not None:
            index.scheme = scheme

    # -- table backends ---------------------------------------------------------------------------------

    def _init_native_tables(self) -> None:
        self._native = True
        self._index = None  # created at the first insert, for the width of its values
        self._width = None
        self._key_to_id: dict = {}
        self._id_to_key: list = []
        self._free_ids: list = []
        self.keys = _NativeKeys(self)
        self.hashtables = [_NativeBandTable(self, i) for i in range(self.b)]

    def _init_python_tables(self) -> None:
        self._native = False
        self._index = None
        self.keys = _DictListStorage()
        self.hashtables = [_DictSetStorage() for _ in range(self.b)]

    def _to_python_tables(self) -> None:
        """Move a native index into the pure-Python tables, for what they alone model (a key inserted
        twice with check_duplication=False, values of another width or shape)."""
        if not self._native:
            return
        keys = _DictListStorage()
        tables = [_DictSetStorage() for _ in range(self.b)]
        for key, i in self._key_to_id.items():
            hs = self._index.band_keys(i)
            keys.insert(key, *hs)
            for h, table in zip(hs, tables):
                table.insert(h, key)
        pending = self._query_buffer
        for name in ("_key_to_id", "_id_to_key", "_free_ids", "_width"):
            self.__dict__.pop(name, None)
        self._init_python_tables()
        self.keys, self.hashtables = keys, tables
        for table in [self.keys, *self.hashtables]:
            table.buffer_size = self._buffer_size
        # Buffered query results carry over: each query's candidates in the first table.
        for j, table in enumerate(self.hashtables):
            table._select_buffer = [set(c) if j == 0 else set() for c in pending]
        self._query_buffer = []

    def _native_bytes(self, hashvalues, create: bool):
        """The hash values' bytes for the native tables, or None if they cannot hold them (the pure-Python
        tables then decide). Raw bytes are what datasketch compares, whatever the dtype."""
        if not isinstance(hashvalues, np.ndarray) or hashvalues.ndim != 1 or hashvalues.dtype.kind not in "uif":
            return None
        width = hashvalues.dtype.itemsize
        if self._width != width:
            if width not in (4, 8) or not create or self._key_to_id:
                return None
            self._new_native_index(width)
        if hashvalues.shape[0] < self.b * self.r:
            return None
        if self._index.dtype is None:
            self._index.dtype = hashvalues.dtype
        return hashvalues.tobytes()

    def _new_native_index(self, width: int) -> None:
        """Native band tables for values of `width` bytes. Unless keys are pickled, they share this index's
        key tables, so that a plain insert or query (see `insert`) is one native call; without them the
        native calls decline and the Python code decides."""
        index = _native.BandIndex(self.b, self.r, width)
        if not self.prepickle:
            index.bind_keys(self._key_to_id, self._id_to_key, self._free_ids, _FREE_ID, self.h, np.ndarray)
        index.scheme = self._minhash_scheme
        self._index, self._width = index, width

    def _new_id(self) -> int:
        if self._free_ids:
            return self._free_ids.pop()
        self._id_to_key.append(_FREE_ID)
        return len(self._id_to_key) - 1

    def _native_candidates(self, minhash, bands=None):
        """The stored keys sharing a band with the MinHash (None if the native tables cannot answer)."""
        data = self._native_bytes(minhash.hashvalues, create=False)
        if data is None:
            if self._index is None or isinstance(minhash.hashvalues, np.ndarray):
                # No stored band key can equal these values' (of another width or shape), but compute
                # them as datasketch does, for its errors.
                for start, end in self.hashranges:
                    self._H(minhash.hashvalues[start:end])
                return []
            return None
        if bands is None:
            ids = self._index.query(data)
        else:
            ids = self._index.query(data, bands) if bands > 0 else []
        id_to_key = self._id_to_key
        return [id_to_key[i] for i in ids]

    # -- buffer size and sessions -------------------------------------------------------------------------

    @property
    def buffer_size(self) -> int:
        """The number of operations an insertion or deletion session buffers (datasketch's storage option;
        the in-memory tables apply every operation at once, whatever it is)."""
        return self._buffer_size

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        self.keys.buffer_size = value
        for t in self.hashtables:
            t.buffer_size = value
        self._buffer_size = value

    def insertion_session(self, buffer_size: int = 50000) -> MinHashLSHInsertionSession:
        """Create a context manager for fast insertion into this index."""
        return MinHashLSHInsertionSession(self, buffer_size=buffer_size)

    def deletion_session(self, buffer_size: int = 50000) -> MinHashLSHDeletionSession:
        """Create a context manager for fast deletion from this index."""
        return MinHashLSHDeletionSession(self, buffer_size=buffer_size)

    # -- insert, merge, remove ----------------------------------------------------------------------------

    def insert(self, key: Hashable, minhash, check_duplication: bool = True):
        """Insert a key to the index, together with a MinHash (or weighted MinHash) of the set referenced
        by the key.

        Args:
            key (Hashable): The unique identifier of the set.
            minhash (Union[MinHash, WeightedMinHash]): The MinHash of the set.
            check_duplication (bool): Raise ValueError if the key is already stored (default True).
        """
        # The plain case (a NumPy MinHash of the index's dtype and scheme, a new key) is one native call;
        # it returns False, having changed nothing, for everything else.
        index = self._index
        if index is not None and index.insert_key(key, minhash, check_duplication):
            return
        self._insert(key, minhash, check_duplication=check_duplication, buffer=False)

    def _insert(self, key: Hashable, minhash, check_duplication: bool = True, buffer: bool = False):
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        self._minhash_scheme = _check_scheme_consistency(getattr(self, "_minhash_scheme", None), minhash)
        if self._require_bytes_keys and not isinstance(key, bytes):
            raise TypeError(
                f"prepickle=False requires bytes keys for non-dict storage, got {type(key).__name__}. "
                "Either pass bytes keys or use prepickle=True for automatic serialization."
            )
        if self.prepickle:
            key = pickle.dumps(key)
        if self._native:
            if key in self._key_to_id:
                if check_duplication:
                    raise ValueError("The given key already exists")
                self._to_python_tables()
            else:
                data = self._native_bytes(minhash.hashvalues, create=True)
                if data is not None:
                    i = self._new_id()
                    self._index.insert(i, data)
                    self._id_to_key[i] = key
                    self._key_to_id[key] = i
                    return
                self._to_python_tables()
        elif check_duplication and key in self.keys:
            raise ValueError("The given key already exists")
        Hs = [self._H(minhash.hashvalues[start:end]) for start, end in self.hashranges]
        self.keys.insert(key, *Hs, buffer=buffer)
        for H, hashtable in zip(Hs, self.hashtables):
            hashtable.insert(H, key, buffer=buffer)

    def merge(self, other: MinHashLSH, check_overlap: bool = False):
        """Merge the other MinHashLSH into this one, making this one the union of both (only num_perm,
        b and r are checked for equivalence).

        Raises:
            ValueError: If the two MinHashLSH have different initialization parameters, or if
                `check_overlap` is True and there are overlapping keys.
        """
        self._merge(other, check_overlap=check_overlap, buffer=False)

    def __equivalent(self, other: MinHashLSH) -> bool:
        return type(self) is type(other) and self.h == other.h and self.b == other.b and self.r == other.r

    def _merge(self, other: MinHashLSH, check_overlap: bool = False, buffer: bool = False) -> None:
        if not self.__equivalent(other):
            if type(self) is not type(other):
                raise ValueError(f"Cannot merge type MinHashLSH and type {type(other).__name__}.")
            raise ValueError("Cannot merge MinHashLSH with different initialization parameters.")
        known, other_known = getattr(self, "_minhash_scheme", None), getattr(other, "_minhash_scheme", None)
        if known is not None and other_known is not None and known != other_known:
            raise ValueError(
                "Cannot merge MinHashLSH indexed with MinHash scheme %r into one indexed with scheme %r"
                % (other_known, known)
            )
        if check_overlap and set(self.keys).intersection(set(other.keys)):
            raise ValueError("The keys are overlapping, duplicate key exists.")
        if known is None:
            self._minhash_scheme = other_known
        if self._native:
            if other is self:
                if not self._key_to_id:
                    return
                self._to_python_tables()  # every key a duplicate: datasketch's lists model that
            elif other._native:
                if not other._key_to_id:
                    return
                overlap = any(k in self._key_to_id for k in other._key_to_id)
                if not overlap and (self._width == other._width or not self._key_to_id):
                    if self._width != other._width:
                        assert other._width is not None  # set by other's first insert
                        self._new_native_index(other._width)
                    for key, j in list(other._key_to_id.items()):
                        i = self._new_id()
                        self._index.insert(i, other._index.values(j))
                        self._id_to_key[i] = key
                        self._key_to_id[key] = i
                    return
                self._to_python_tables()
            else:
                self._to_python_tables()
        for key in list(other.keys):
            Hs = list(other.keys.get(key))
            self.keys.insert(key, *Hs, buffer=buffer)
            for H, hashtable in zip(Hs, self.hashtables):
                hashtable.insert(H, key, buffer=buffer)

    def remove(self, key: Hashable) -> None:
        """Remove the key from the index.

        Raises:
            ValueError: If the key does not exist.
        """
        self._remove(key, buffer=False)

    def _remove(self, key: Hashable, buffer: bool = False) -> None:
        if self.prepickle:
            key = pickle.dumps(key)
        if self._native:
            i = self._key_to_id.get(key)
            if i is None:
                raise ValueError("The given key does not exist")
            self._index.remove(i)
            del self._key_to_id[key]
            self._id_to_key[i] = _FREE_ID
            self._free_ids.append(i)
            return
        if key not in self.keys:
            raise ValueError("The given key does not exist")
        for H, hashtable in zip(self.keys[key], self.hashtables):
            hashtable.remove_val(H, key, buffer=buffer)
            if not hashtable.get(H):
                hashtable.remove(H, buffer=buffer)
        self.keys.remove(key, buffer=buffer)

    # -- queries ----------------------------------------------------------------------------------------

    def query(self, minhash) -> list:
        """Given the MinHash of the query set, retrieve the keys that reference sets with Jaccard
        similarities likely greater than the threshold (approximate: filter again with
        :meth:`MinHash.jaccard`).

        Returns:
            list: a list of unique keys.
        """
        index = self._index
        if index is not None:
            found = index.query_key(minhash)
            if found is not None:
                return found
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        _check_scheme_consistency(getattr(self, "_minhash_scheme", None), minhash)
        candidates = self._native_candidates(minhash) if self._native else None
        if candidates is not None and not self.prepickle:
            return candidates  # a fresh list of unique keys
        if candidates is None:
            found = set()
            for (start, end), hashtable in zip(self.hashranges, self.hashtables):
                H = self._H(minhash.hashvalues[start:end])
                for key in hashtable.get(H):
                    found.add(key)
            candidates = list(found)
        if self.prepickle:
            return [pickle.loads(key) for key in candidates]
        return list(candidates)

    def add_to_query_buffer(self, minhash) -> None:
        """Buffer a query (see :meth:`collect_query_buffer`)."""
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        _check_scheme_consistency(getattr(self, "_minhash_scheme", None), minhash)
        candidates = self._native_candidates(minhash) if self._native else None
        if candidates is not None:
            self._query_buffer.append(set(candidates))
            return
        for (start, end), hashtable in zip(self.hashranges, self.hashtables):
            H = self._H(minhash.hashvalues[start:end])
            hashtable.add_to_select_buffer([H])

    def collect_query_buffer(self) -> list:
        """Execute and return the buffered queries: the intersection of the results of all buffered
        queries, as a list of unique keys."""
        if self._native:
            per_query_result_sets = self._query_buffer
            self._query_buffer = []
            if not per_query_result_sets:
                return []
        else:
            collected_result_lists = [hashtable.collect_select_buffer() for hashtable in self.hashtables]
            if not any(collected_result_lists):
                return []
            per_query_result_sets = [
                set().union(*query_result_lists) for query_result_lists in zip(*collected_result_lists)
            ]
            if not per_query_result_sets:
                return []
        candidates = set.intersection(*per_query_result_sets)
        if self.prepickle:
            return [pickle.loads(key) for key in candidates]
        return list(candidates)

    def _query_b(self, minhash, b):
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        _check_scheme_consistency(getattr(self, "_minhash_scheme", None), minhash)
        if b > len(self.hashtables):
            raise ValueError("b must be less or equal to the number of hash tables")
        candidates = None
        if self._native:
            candidates = self._native_candidates(minhash, bands=len(self.hashranges[:b]))
        if candidates is None:
            found = set()
            for (start, end), hashtable in zip(self.hashranges[:b], self.hashtables[:b]):
                H = self._H(minhash.hashvalues[start:end])
                if H in hashtable:
                    for key in hashtable[H]:
                        found.add(key)
            candidates = found
        if self.prepickle:
            return {pickle.loads(key) for key in candidates}
        return set(candidates)

    def __contains__(self, key: Hashable) -> bool:
        """True only if the key is in the index."""
        if self.prepickle:
            key = pickle.dumps(key)
        return key in self.keys

    def is_empty(self) -> bool:
        """True only if the index is empty."""
        if self._native:
            return self._index is None or self._index.is_empty()
        return any(t.size() == 0 for t in self.hashtables)

    def _byteswap(self, hs):
        return bytes(hs.byteswap().data)

    def _hashed_byteswap(self, hs):
        if self.hashfunc is None:
            raise RuntimeError("Hash function not configured.")
        return self.hashfunc(bytes(hs.byteswap().data))

    def get_counts(self) -> list:
        """Per hash table (band), a dict from bucket key to the number of keys in the bucket."""
        if self._native:
            if self._index is None:
                return [{} for _ in range(self.b)]
            return list(self._index.counts())
        return [hashtable.itemcounts() for hashtable in self.hashtables]

    def get_subset_counts(self, *keys: Hashable) -> list:
        """The bucket allocation counts (see :meth:`get_counts`) restricted to the given keys."""
        key_set: list[Hashable] = [pickle.dumps(key) for key in set(keys)] if self.prepickle else list(set(keys))
        hashtables = [_DictSetStorage() for _ in range(self.b)]
        Hss = self.keys.getmany(*key_set)
        for key, Hs in zip(key_set, Hss):
            for H, hashtable in zip(Hs, hashtables):
                hashtable.insert(H, key)
        return [hashtable.itemcounts() for hashtable in hashtables]

    # -- pickling ---------------------------------------------------------------------------------------

    def __getstate__(self):
        state = self.__dict__.copy()
        if state.get("_native"):
            index = state.pop("_index")
            key_to_id = state.pop("_key_to_id")
            for name in ("keys", "hashtables", "_id_to_key", "_free_ids"):
                state.pop(name, None)
            state["_native_entries"] = [(key, index.values(i)) for key, i in key_to_id.items()]
        return state

    def __setstate__(self, state):
        state = dict(state)
        entries = state.pop("_native_entries", None)
        if "_minhash_scheme" in state:  # pickled before the scheme became a property
            state["_scheme_seen"] = state.pop("_minhash_scheme")
        self.__dict__.update(state)
        if state.get("_native"):
            width = state.get("_width")
            self._init_native_tables()
            if width is not None:
                self._new_native_index(width)
                for key, values in entries or ():
                    i = self._new_id()
                    self._index.insert(i, values)
                    self._id_to_key[i] = key
                    self._key_to_id[key] = i


_SessionT = TypeVar("_SessionT", bound="_Session")


class _Session:
    """A context manager over a MinHashLSH that flushes its buffers on exit (as datasketch's sessions)."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int):
        self.lsh = lsh
        self.lsh.buffer_size = buffer_size

    def __enter__(self: _SessionT) -> _SessionT:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()

    def close(self) -> None:
        self.lsh.keys.empty_buffer()
        for hashtable in self.lsh.hashtables:
            hashtable.empty_buffer()


class MinHashLSHInsertionSession(_Session):
    """Context manager for batch insertion of documents into a MinHashLSH."""

    def insert(self, key: Hashable, minhash, check_duplication=True) -> None:
        """Insert a unique key to the index, together with a MinHash of the set referenced by the key."""
        index = self.lsh._index
        if index is not None and index.insert_key(key, minhash, check_duplication):
            return
        self.lsh._insert(key, minhash, check_duplication=check_duplication, buffer=True)


class MinHashLSHDeletionSession(_Session):
    """Context manager for batch deletion of documents from a MinHashLSH."""

    def remove(self, key: Hashable) -> None:
        """Remove a key from the index (ValueError if it does not exist)."""
        self.lsh._remove(key, buffer=True)
