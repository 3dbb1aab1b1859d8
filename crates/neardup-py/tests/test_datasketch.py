"""neardup.datasketch against the real datasketch 2.0.0: the same values, results and errors.

Real text comes from the evaluation data (`../shared/eval/versions/text.jsonl.zst`, read with `zstd`); the
tests that need it skip when it is absent. Runs in well under a minute on two cores.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import pickle
import random
import re
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

ds = pytest.importorskip("datasketch")
if getattr(ds, "__version__", "2.0.0") != "2.0.0":  # pragma: no cover
    pytest.skip("these tests compare with datasketch 2.0.0", allow_module_level=True)
import datasketch.lsh as ds_lsh  # noqa: E402

from neardup import datasketch as nd  # noqa: E402

SCHEMES = ("affine32", "affine64", "legacy")
REPO = Path(__file__).resolve().parents[3]
EVAL = Path(os.environ.get("NEARDUP_EVAL_DIR", REPO.parent / "shared" / "eval"))


def md5_32(b):
    return int.from_bytes(hashlib.md5(b).digest()[:4], "little")


def md5_64(b):
    return int.from_bytes(hashlib.md5(b).digest()[:8], "little")


def same_hashvalues(a, b):
    assert type(a.hashvalues) is np.ndarray and type(b.hashvalues) is np.ndarray
    assert a.hashvalues.dtype == b.hashvalues.dtype
    assert a.hashvalues.shape == b.hashvalues.shape
    assert np.array_equal(a.hashvalues, b.hashvalues)


def same_error(f_ds, f_nd, message=True):
    """Both raise, the same exception type (and message)."""
    with pytest.raises(Exception) as e_ds:
        f_ds()
    with pytest.raises(Exception) as e_nd:
        f_nd()
    assert type(e_nd.value) is type(e_ds.value), (e_ds.value, e_nd.value)
    if message:
        assert str(e_nd.value) == str(e_ds.value)
    return e_nd.value


def random_items(rng, n, max_len=40):
    return [bytes(rng.getrandbits(8) for _ in range(rng.randrange(max_len))) for _ in range(n)]


# ---------------------------------------------------------------------------------------------------------
# Real documents


def _shingles(words):
    return sorted({" ".join(words[i : i + 5]).encode("utf-8") for i in range(max(1, len(words) - 4))})


@functools.lru_cache(maxsize=None)
def _load_documents():
    """About 2,000 documents as (key, word 5-shingles): a sample of the versioned documentation (the same
    pages in several releases, so real near-duplicates) plus edited copies of some; None without the data."""
    path = EVAL / "versions" / "text.jsonl.zst"
    if not path.is_file() or shutil.which("zstd") is None:
        return None
    out = subprocess.run(["zstd", "-dc", str(path)], check=True, capture_output=True).stdout
    docs = []
    for line in out.decode("utf-8").splitlines():
        d = json.loads(line)
        words = re.findall(r"\w+", d["text"].lower())[-250:]  # the tail: past the kernel pages' sidebar
        if len(words) >= 20:
            docs.append((d["id"], words))
    rng = random.Random(20240501)
    docs = sorted(rng.sample(docs, min(1800, len(docs))))
    edited = []
    for key, words in rng.sample(docs, min(200, len(docs))):
        words = list(words)
        for k in range(rng.randrange(1, 5)):
            words[rng.randrange(len(words))] = f"edited{k}"
        edited.append((key + "#edited", words))
    return [(key, _shingles(words)) for key, words in docs + edited]


@pytest.fixture(scope="module")
def documents():
    docs = _load_documents()
    if docs is None:
        pytest.skip(f"no evaluation data at {EVAL / 'versions' / 'text.jsonl.zst'} or no zstd (see ../shared/eval/README.md)")
    return docs


@pytest.fixture(scope="module")
def real_items():
    """Shingles of a few real documents (none without the data)."""
    docs = _load_documents() or []
    return [s for _, shingles in docs[:4] for s in shingles][:400]


@pytest.fixture(scope="module")
def doc_minhashes(documents):
    """(keys, datasketch MinHashes, neardup MinHashes) of the documents, num_perm=128, default scheme."""
    keys = [k for k, _ in documents]
    mds = ds.MinHash.bulk([s for _, s in documents], num_perm=128)
    mnd = nd.MinHash.bulk([s for _, s in documents], num_perm=128)
    return keys, mds, mnd


def test_real_text_hashvalues(documents, doc_minhashes):
    keys, mds, mnd = doc_minhashes
    assert len(keys) >= 1000
    for a, b in zip(mds, mnd):
        same_hashvalues(a, b)
    # update (one item at a time) and other schemes, seeds and sizes, on a few documents.
    for scheme in SCHEMES:
        for num_perm, seed in ((16, 7), (256, 2**32 - 1)):
            for _, shingles in documents[:3]:
                a = ds.MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
                b = nd.MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
                for s in shingles[:60]:
                    a.update(s)
                    b.update(s)
                same_hashvalues(a, b)
                a.update_batch(shingles)
                b.update_batch(shingles)
                same_hashvalues(a, b)


# ---------------------------------------------------------------------------------------------------------
# MinHash


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("num_perm", (16, 128, 256))
@pytest.mark.parametrize("seed", (1, 7, 2**32 - 1))
def test_minhash_values(scheme, num_perm, seed, real_items):
    rng = random.Random(num_perm * 31 + seed)
    items = random_items(rng, 300) + [b""] + real_items
    hashfuncs = [None, md5_32] + ([md5_64] if scheme != "affine32" else [])
    for hashfunc in hashfuncs:
        kw = dict(num_perm=num_perm, seed=seed, scheme=scheme)
        if hashfunc is not None:
            kw["hashfunc"] = hashfunc
        a, b = ds.MinHash(**kw), nd.MinHash(**kw)
        assert b.permutations.dtype == a.permutations.dtype
        assert b.permutations.shape == a.permutations.shape
        assert np.array_equal(b.permutations, a.permutations)
        same_hashvalues(a, b)
        assert (b.num_perm, b.seed, b.scheme) == (a.num_perm, a.seed, a.scheme)
        for it in items[:25]:
            a.update(it)
            b.update(it)
        same_hashvalues(a, b)
        a.update_batch(items[25:])
        b.update_batch(items[25:])
        same_hashvalues(a, b)
        a.update_batch(iter(items[:7]))
        b.update_batch(iter(items[:7]))
        a.update_batch([])
        b.update_batch([])
        same_hashvalues(a, b)
        assert b.count() == a.count()


def test_permutations_layout_and_seeds():
    for scheme in SCHEMES:
        a = ds.MinHash(num_perm=32, seed=5, scheme=scheme)
        b = nd.MinHash(num_perm=32, seed=5, scheme=scheme)
        assert b.permutations.flags["C_CONTIGUOUS"] == a.permutations.flags["C_CONTIGUOUS"]
        # Seeds NumPy accepts but the kernel does not take (None, a NumPy integer, an array).
        for seed in (np.uint32(9), [1, 2, 3]):
            a = ds.MinHash(num_perm=8, seed=seed, scheme=scheme)
            b = nd.MinHash(num_perm=8, seed=seed, scheme=scheme)
            assert np.array_equal(b.permutations, a.permutations)
        assert len(nd.MinHash(num_perm=8, seed=None, scheme=scheme).permutations[0]) == 8
        for seed in (-1, 2**32, 2**64):
            same_error(
                lambda: ds.MinHash(num_perm=8, seed=seed, scheme=scheme),
                lambda: nd.MinHash(num_perm=8, seed=seed, scheme=scheme),
            )


def test_update_inputs():
    rng = np.random.RandomState(3)
    for scheme in SCHEMES:
        a, b = ds.MinHash(num_perm=64, scheme=scheme), nd.MinHash(num_perm=64, scheme=scheme)
        for item in (b"bytes", bytearray(b"bytearray"), memoryview(b"memoryview"), np.int64(42)):
            a.update(item)
            b.update(item)
        same_hashvalues(a, b)
        # NumPy integers hash through the buffer protocol with the default hashfunc (datasketch's own
        # example: update_batch(np.random.randint(...))).
        arr = rng.randint(0, 30, size=40)
        a.update_batch(arr)
        b.update_batch(arr)
        a.update_batch((bytearray(b"x"), memoryview(b"y"), b"z"))
        b.update_batch((bytearray(b"x"), memoryview(b"y"), b"z"))
        same_hashvalues(a, b)
        for bad in ("text", 12, None, 1.5):
            same_error(lambda: a.update(bad), lambda: b.update(bad))
            same_error(lambda: a.update_batch([b"ok", bad]), lambda: b.update_batch([b"ok", bad]))
        same_error(lambda: a.update_batch("text"), lambda: b.update_batch("text"))
        same_hashvalues(a, b)  # a failed update changes nothing


def test_custom_hashfunc_values_and_errors():
    for scheme in SCHEMES:
        for hashfunc in (md5_32, lambda x: len(x), lambda x: np.uint32(len(x) * 7)):
            a = ds.MinHash(num_perm=32, scheme=scheme, hashfunc=hashfunc)
            b = nd.MinHash(num_perm=32, scheme=scheme, hashfunc=hashfunc)
            for s in ("a", "bb", "ccc"):
                a.update(s.encode())
                b.update(s.encode())
            a.update_batch([b"dd", b"eee"])
            b.update_batch([b"dd", b"eee"])
            same_hashvalues(a, b)
    # hash values that do not fit the scheme
    for scheme, value in (("affine32", 2**32), ("affine32", -1), ("affine64", 2**64), ("affine64", -5)):
        a = ds.MinHash(num_perm=8, scheme=scheme, hashfunc=lambda x: value)
        b = nd.MinHash(num_perm=8, scheme=scheme, hashfunc=lambda x: value)
        same_error(lambda: a.update(b"x"), lambda: b.update(b"x"))
        same_error(lambda: a.update_batch([b"x"]), lambda: b.update_batch([b"x"]))
    # legacy takes any 64-bit value (the arithmetic wraps), and rejects negative ones
    a = ds.MinHash(num_perm=16, scheme="legacy", hashfunc=md5_64)
    b = nd.MinHash(num_perm=16, scheme="legacy", hashfunc=md5_64)
    a.update(b"wide")
    b.update(b"wide")
    a.update_batch([b"x", b"y"])
    b.update_batch([b"x", b"y"])
    same_hashvalues(a, b)
    a = ds.MinHash(num_perm=8, scheme="legacy", hashfunc=lambda x: -1)
    b = nd.MinHash(num_perm=8, scheme="legacy", hashfunc=lambda x: -1)
    same_error(lambda: a.update(b"x"), lambda: b.update(b"x"))
    same_error(lambda: a.update_batch([b"x"]), lambda: b.update_batch([b"x"]))


def test_update_never_mutates_held_arrays():
    for scheme in SCHEMES:
        m = nd.MinHash(num_perm=32, scheme=scheme)
        held = m.hashvalues
        before = held.copy()
        m.update(b"a")
        assert m.hashvalues is not held and np.array_equal(held, before)
        held = m.hashvalues
        before = held.copy()
        m.update_batch([b"b", b"c"] * 200)
        assert m.hashvalues is not held and np.array_equal(held, before)
        # initial values given by the user stay theirs
        mine = m.digest()
        mine_before = mine.copy()
        n = nd.MinHash(hashvalues=mine, permutations=m.permutations, scheme=scheme)
        n.update(b"zzz")
        assert np.array_equal(mine, mine_before)
        # a read-only or non-contiguous hashvalues array is fine
        n.hashvalues = np.ascontiguousarray(np.repeat(n.hashvalues, 2)[::2])
        n.hashvalues.setflags(write=False)
        n.update(b"y")
        assert n.hashvalues.flags["WRITEABLE"]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_minhash_methods(scheme):
    rng = random.Random(11)
    x = random_items(rng, 200)
    y = x[:120] + random_items(rng, 80)
    pairs = []
    for lib in (ds, nd):
        m1 = lib.MinHash(num_perm=128, seed=3, scheme=scheme)
        m2 = lib.MinHash(num_perm=128, seed=3, scheme=scheme)
        m1.update_batch(x)
        m2.update_batch(y)
        pairs.append((lib, m1, m2))
    (_, a1, a2), (_, b1, b2) = pairs
    assert b1.jaccard(b2) == a1.jaccard(a2)
    assert b1.count() == a1.count()
    assert len(b1) == len(a1) == 128
    assert b1.is_empty() is a1.is_empty() is False
    assert nd.MinHash(scheme=scheme).is_empty() and ds.MinHash(scheme=scheme).is_empty()
    d = b1.digest()
    assert d is not b1.hashvalues and np.array_equal(d, a1.digest()) and d.dtype == a1.digest().dtype
    ua, ub = ds.MinHash.union(a1, a2), nd.MinHash.union(b1, b2)
    same_hashvalues(ua, ub)
    assert type(ub) is nd.MinHash and ub.scheme == scheme
    c = b1.copy()
    assert c == b1 and c is not b1 and c.hashvalues is not b1.hashvalues
    extra = random_items(rng, 400)
    c.update(b"only in the copy")
    c.update_batch(extra)
    assert c != b1
    ca = a1.copy()
    ca.update(b"only in the copy")
    ca.update_batch(extra)
    same_hashvalues(ca, c)
    a1.merge(a2)
    b1.merge(b2)
    same_hashvalues(a1, b1)
    same_hashvalues(ua, b1)
    assert b1 == nd.MinHash.union(b1, b2) and not (b1 == a1)  # other library: another type
    b1.clear()
    a1.clear()
    same_hashvalues(a1, b1)
    assert b1.is_empty()
    # bulk and generator
    data = [x[:50], y[:70], [], x[100:]]
    for ma, mb in zip(ds.MinHash.bulk(data, num_perm=64, seed=9, scheme=scheme), nd.MinHash.bulk(data, num_perm=64, seed=9, scheme=scheme)):
        same_hashvalues(ma, mb)
    gen = nd.MinHash.generator(iter(data), num_perm=64, seed=9, scheme=scheme)
    for ma, mb in zip(ds.MinHash.generator(data, num_perm=64, seed=9, scheme=scheme), gen):
        same_hashvalues(ma, mb)
    # gpu_mode="detect" runs (on the CPU) and gives the same values
    g = nd.MinHash(num_perm=64, seed=9, scheme=scheme, gpu_mode="detect")
    g.update_batch(x[:50])
    same_hashvalues(g, ds.MinHash.bulk([x[:50]], num_perm=64, seed=9, scheme=scheme)[0])


def test_minhash_pickle_and_copy():
    for scheme in SCHEMES:
        for hashfunc in (None, md5_32):
            m = nd.MinHash(num_perm=64, seed=4, scheme=scheme, hashfunc=hashfunc)
            m.update_batch([b"a", b"b", b"c"])
            m2 = pickle.loads(pickle.dumps(m))
            assert m2 == m and m2.hashfunc is m.hashfunc
            assert np.array_equal(m2.permutations, m.permutations)
            m.update(b"d")
            m2.update(b"d")
            assert m2 == m
            m3 = copy.deepcopy(m)
            m3.update_batch([b"e"])
            m.update_batch([b"e"])
            assert m3 == m
    # replacing the permutations is honoured (the cached kernel arguments follow)
    a = nd.MinHash(num_perm=16, seed=1)
    b = nd.MinHash(num_perm=16, seed=2)
    a.permutations = b.permutations
    a.seed = 2
    a.update(b"x")
    b.update(b"x")
    assert a == b


def test_minhash_misuse():
    same_error(lambda: ds.MinHash(scheme="bogus"), lambda: nd.MinHash(scheme="bogus"))
    same_error(lambda: ds.MinHash(hashvalues=[1, 2]), lambda: nd.MinHash(hashvalues=[1, 2]))
    same_error(lambda: ds.MinHash(num_perm=0), lambda: nd.MinHash(num_perm=0))
    same_error(lambda: ds.MinHash(hashfunc=5), lambda: nd.MinHash(hashfunc=5))
    same_error(
        lambda: ds.MinHash(hashvalues=[1, 2, 3], permutations=([1, 3], [0, 0]), scheme="affine32"),
        lambda: nd.MinHash(hashvalues=[1, 2, 3], permutations=([1, 3], [0, 0]), scheme="affine32"),
    )
    same_error(
        lambda: ds.MinHash(permutations=([2, 3], [0, 0]), num_perm=2, scheme="affine32"),
        lambda: nd.MinHash(permutations=([2, 3], [0, 0]), num_perm=2, scheme="affine32"),
    )
    same_error(
        lambda: ds.MinHash(hashvalues=[2**40], scheme="affine32"),
        lambda: nd.MinHash(hashvalues=[2**40], scheme="affine32"),
    )
    with pytest.warns(DeprecationWarning):
        nd.MinHash(num_perm=4, hashobj=object())
    base = {lib: lib.MinHash(num_perm=16) for lib in (ds, nd)}
    bads = [
        {lib: lib.MinHash(num_perm=16, scheme="affine64") for lib in (ds, nd)},
        {lib: lib.MinHash(num_perm=16, seed=2) for lib in (ds, nd)},
        {lib: lib.MinHash(num_perm=32) for lib in (ds, nd)},
    ]
    for op in ("jaccard", "merge"):
        for bad in bads:
            same_error(lambda: getattr(base[ds], op)(bad[ds]), lambda: getattr(base[nd], op)(bad[nd]))
    m = {lib: {s: lib.MinHash(num_perm=16, scheme=s) for s in SCHEMES} for lib in (ds, nd)}
    same_error(lambda: ds.MinHash.union(m[ds]["legacy"]), lambda: nd.MinHash.union(m[nd]["legacy"]))
    same_error(
        lambda: ds.MinHash.union(m[ds]["legacy"], m[ds]["affine64"]),
        lambda: nd.MinHash.union(m[nd]["legacy"], m[nd]["affine64"]),
    )
    try:
        import cupy  # noqa: F401

        has_cupy = True
    except Exception:
        has_cupy = False
    if not has_cupy:
        a = ds.MinHash(num_perm=8, gpu_mode="always")
        b = nd.MinHash(num_perm=8, gpu_mode="always")
        same_error(lambda: a.update_batch([b"x"]), lambda: b.update_batch([b"x"]))
        same_error(lambda: a.update_batch(["x"]), lambda: b.update_batch(["x"]))  # hashing fails first
        a.update_batch([])
        b.update_batch([])
        a.update(b"x")  # update() does not look at gpu_mode
        b.update(b"x")
        same_hashvalues(a, b)


# ---------------------------------------------------------------------------------------------------------
# LeanMinHash


def test_lean_minhash():
    rng = random.Random(5)
    items = random_items(rng, 100)
    for scheme in SCHEMES:
        a = ds.MinHash(num_perm=64, seed=13, scheme=scheme)
        b = nd.MinHash(num_perm=64, seed=13, scheme=scheme)
        a.update_batch(items)
        b.update_batch(items)
        la, lb = ds.LeanMinHash(a), nd.LeanMinHash(b)
        same_hashvalues(la, lb)
        assert (lb.seed, lb.scheme) == (la.seed, la.scheme)
        for byteorder in ("@", "=", "<", ">", "!"):
            assert lb.bytesize(byteorder) == la.bytesize(byteorder)
            ba, bb = bytearray(la.bytesize(byteorder)), bytearray(lb.bytesize(byteorder))
            la.serialize(ba, byteorder)
            lb.serialize(bb, byteorder)
            assert bytes(bb) == bytes(ba)
            # across the two libraries, both directions
            x = nd.LeanMinHash.deserialize(bytes(ba), byteorder)
            y = ds.LeanMinHash.deserialize(bb, byteorder)
            assert type(x) is nd.LeanMinHash
            same_hashvalues(x, la)
            same_hashvalues(y, lb)
            assert (x.seed, x.scheme) == (la.seed, la.scheme)
            assert x == lb and hash(x) == hash(lb)
        same_error(lambda: la.serialize(bytearray(3)), lambda: lb.serialize(bytearray(3)))
        same_error(lambda: la.update(b"x"), lambda: lb.update(b"x"))
        same_error(lambda: la.update_batch([b"x"]), lambda: lb.update_batch([b"x"]), message=False)
        lp = pickle.loads(pickle.dumps(lb))
        assert lp == lb and type(lp) is nd.LeanMinHash
        assert lb.copy() == lb and lb.copy() is not lb
        assert lb.jaccard(b) == la.jaccard(a) == 1.0
        assert lb.count() == la.count()
        c = nd.LeanMinHash(seed=lb.seed, hashvalues=lb.hashvalues, scheme=scheme)
        assert c == lb
        same_hashvalues(ds.LeanMinHash.union(la, la), nd.LeanMinHash.union(lb, lb))
        same_error(lambda: ds.LeanMinHash(), lambda: nd.LeanMinHash())
        same_error(
            lambda: ds.LeanMinHash(seed=1, hashvalues=la.hashvalues),
            lambda: nd.LeanMinHash(seed=1, hashvalues=lb.hashvalues),
        )
        other = "affine64" if scheme != "affine64" else "legacy"
        same_error(lambda: ds.LeanMinHash(a, scheme=other), lambda: nd.LeanMinHash(b, scheme=other))
    same_error(
        lambda: ds.LeanMinHash.deserialize(b"\0" * 8 + b"\xff\xff\xff\xff" + b"\x09" + b"\0" * 16),
        lambda: nd.LeanMinHash.deserialize(b"\0" * 8 + b"\xff\xff\xff\xff" + b"\x09" + b"\0" * 16),
    )


# ---------------------------------------------------------------------------------------------------------
# MinHashLSH parameters


@pytest.fixture()
def cached_ds_integrals(monkeypatch):
    """datasketch's own integrals (scipy), cached: _optimal_param then costs one quad per (threshold,
    b, r) across the weights."""
    monkeypatch.setattr(ds_lsh, "_false_positive_probability", functools.lru_cache(None)(ds_lsh._false_positive_probability))
    monkeypatch.setattr(ds_lsh, "_false_negative_probability", functools.lru_cache(None)(ds_lsh._false_negative_probability))


def test_lsh_params_match(cached_ds_integrals):
    for num_perm in (16, 32, 64, 128, 256):
        for threshold in (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95):
            for weights in ((0.5, 0.5), (0.2, 0.8), (0.8, 0.2)):
                expected = ds_lsh._optimal_param(threshold, num_perm, *weights)
                assert nd._optimal_param(threshold, num_perm, *weights) == expected, (num_perm, threshold, weights)
    lsh = nd.MinHashLSH(threshold=0.9, num_perm=128)
    assert (lsh.b, lsh.r) == (5, 25)
    for b, r in ((1, 1), (5, 25), (20, 6), (128, 1)):
        for t in (0.0, 0.37, 0.9, 1.0):
            assert abs(nd._false_positive_probability(t, b, r) - ds_lsh._false_positive_probability(t, b, r)) < 1e-12
            assert abs(nd._false_negative_probability(t, b, r) - ds_lsh._false_negative_probability(t, b, r)) < 1e-12


def test_lsh_attributes_and_misuse():
    for kw in (dict(threshold=0.5, num_perm=64), dict(num_perm=128, params=(16, 8)), dict(threshold=0.8, num_perm=32, weights=(0.3, 0.7))):
        a, b = ds.MinHashLSH(**kw), nd.MinHashLSH(**kw)
        assert (b.b, b.r, b.h, b.hashranges, b.prepickle) == (a.b, a.r, a.h, a.hashranges, a.prepickle)
        assert b.is_empty() and a.is_empty()
        assert len(b.hashtables) == len(a.hashtables)
    for kw in (
        dict(threshold=1.5),
        dict(threshold=-0.1),
        dict(num_perm=1),
        dict(weights=(0.5, 0.6)),
        dict(weights=(-0.5, 1.5)),
        dict(num_perm=128, params=(20, 10)),
        dict(num_perm=128, params=(1, 10)),
    ):
        same_error(lambda: ds.MinHashLSH(**kw), lambda: nd.MinHashLSH(**kw))
    kw = dict(storage_config={"type": "bogus"})
    same_error(lambda: ds.MinHashLSH(**kw), lambda: nd.MinHashLSH(**kw), message=False)
    for tp in ("redis", "cassandra", "bogus"):
        with pytest.raises(ValueError, match=f"memory.*{tp}"):
            nd.MinHashLSH(storage_config={"type": tp, "redis": {"host": "localhost"}})
    assert nd.MinHashLSH(storage_config={"type": "dict"}).b == 5


# ---------------------------------------------------------------------------------------------------------
# MinHashLSH on real documents


def _as_set(keys):
    out = set(keys)
    assert len(out) == len(keys)  # no repeats
    return out


@pytest.mark.parametrize("threshold", (0.5, 0.8, 0.9))
@pytest.mark.parametrize("weights", ((0.5, 0.5), (0.3, 0.7)))
def test_lsh_real_documents(doc_minhashes, threshold, weights):
    keys, mds, mnd = doc_minhashes
    a = ds.MinHashLSH(threshold=threshold, num_perm=128, weights=weights)
    b = nd.MinHashLSH(threshold=threshold, num_perm=128, weights=weights)
    assert (b.b, b.r) == (a.b, a.r)
    half = len(keys) // 2
    for k, m in zip(keys[:half], mds[:half]):
        a.insert(k, m)
    for k, m in zip(keys[:half], mnd[:half]):
        b.insert(k, m)
    with a.insertion_session(buffer_size=100) as s:
        for k, m in zip(keys[half:], mds[half:]):
            s.insert(k, m)
    with b.insertion_session(buffer_size=100) as s:
        for k, m in zip(keys[half:], mnd[half:]):
            s.insert(k, m)
    nontrivial = 0
    for ma, mb in zip(mds, mnd):
        ra, rb = set(a.query(ma)), _as_set(b.query(mb))
        assert rb == ra
        nontrivial += len(ra) > 1
    assert nontrivial > 20  # the data has near-duplicates
    assert b.get_counts() == a.get_counts()
    # the band tables as read-only views: every bucket's members, as datasketch's
    for i in (0, a.b // 2, a.b - 1):
        ta, tb = a.hashtables[i], b.hashtables[i]
        assert len(tb) == len(ta) and set(tb) == set(ta)
        assert any(len(ta[h]) > 1 for h in ta)
        for h in ta:
            assert tb.get(h) == ta.get(h) and tb[h] == ta[h]
        width = len(next(iter(ta)))
        for absent in (b"", b"\0" * width, b"\0" * (width + 1), "text"):
            assert tb.get(absent) == ta.get(absent) == set()
    subset = keys[::37] + ["not a key"]
    assert b.get_subset_counts(*subset) == a.get_subset_counts(*subset)
    assert set(b.keys) == set(a.keys)
    assert all(k in b for k in keys[::50]) and "not a key" not in b
    for q in (1, 2, a.b):
        for ma, mb in zip(mds[::97], mnd[::97]):
            assert b._query_b(mb, q) == a._query_b(ma, q)
    # remove a third (directly and in a session), then query again
    gone = keys[::3]
    for k in gone[:100]:
        a.remove(k)
        b.remove(k)
    with a.deletion_session() as s:
        for k in gone[100:]:
            s.remove(k)
    with b.deletion_session() as s:
        for k in gone[100:]:
            s.remove(k)
    assert not b.is_empty() and not a.is_empty()
    for ma, mb in zip(mds[::5], mnd[::5]):
        assert _as_set(b.query(mb)) == set(a.query(ma))
    assert b.get_counts() == a.get_counts()
    assert gone[0] not in b and keys[1] in b
    # buffered queries: the intersection of their results
    for group in (mnd[:1], mnd[:3], mnd[10:12]):
        for m in group:
            b.add_to_query_buffer(m)
        for m in (mds[mnd.index(m)] for m in group):
            a.add_to_query_buffer(m)
        assert _as_set(b.collect_query_buffer()) == set(a.collect_query_buffer())
    assert b.collect_query_buffer() == a.collect_query_buffer() == []


def test_lsh_merge_and_pickle_real_documents(doc_minhashes):
    keys, mds, mnd = doc_minhashes
    n = min(600, len(keys))
    parts = {}
    for lib, ms in ((ds, mds), (nd, mnd)):
        x = lib.MinHashLSH(threshold=0.7, num_perm=128)
        y = lib.MinHashLSH(threshold=0.7, num_perm=128)
        for k, m in zip(keys[: n // 2], ms[: n // 2]):
            x.insert(k, m)
        for k, m in zip(keys[n // 2 : n], ms[n // 2 : n]):
            y.insert(k, m)
        x.merge(y, check_overlap=True)
        parts[lib] = x
    a, b = parts[ds], parts[nd]
    assert b._native  # a merge without overlaps stays in the native tables
    c = pickle.loads(pickle.dumps(b))
    for ma, mb in zip(mds[:n:3], mnd[:n:3]):
        assert _as_set(b.query(mb)) == set(a.query(ma))
        assert _as_set(c.query(mb)) == set(a.query(ma))
    assert b.get_counts() == a.get_counts() == c.get_counts()
    c.remove(keys[0])
    assert keys[0] in b and keys[0] not in c


def test_lsh_large_index_known_answers():
    """200,000 entries (100 MB of values, band tables of 2^18 entries): the index's memory is mapped ahead of
    the inserts by helper threads, its tables grow many times and freed slots are reused, and every answer
    is still exact. Row 2i+1 shares exactly one band (i mod 16) with row 2i and nothing else with any row."""
    n, bands, rows = 200_000, 16, 8
    rng = np.random.default_rng(11)
    values = rng.integers(0, 1 << 32, size=(n, bands * rows), dtype=np.uint64).astype(np.uint32)
    for i in range(0, n, 2):
        band = (i // 2) % bands
        values[i + 1, band * rows : (band + 1) * rows] = values[i, band * rows : (band + 1) * rows]
    lsh = nd.MinHashLSH(num_perm=bands * rows, params=(bands, rows))

    def lean(row):
        return nd.LeanMinHash(seed=1, hashvalues=row, scheme="affine32")

    sigs = [lean(row) for row in values]
    for i, m in enumerate(sigs):
        lsh.insert(i, m)
    assert lsh._native
    for i in range(0, n, 997):
        assert sorted(lsh.query(sigs[i])) == [i - i % 2, i - i % 2 + 1]
    # Remove every fourth entry, then put other values in the freed slots under new keys.
    for i in range(0, n, 4):
        lsh.remove(i)
    fresh = rng.integers(0, 1 << 32, size=(n // 4, bands * rows), dtype=np.uint64).astype(np.uint32)
    for j, row in enumerate(fresh):
        lsh.insert(("new", j), lean(row))
    for i in range(0, n, 499):
        pair = [i - i % 2, i - i % 2 + 1]
        assert sorted(lsh.query(sigs[i])) == [k for k in pair if k % 4]
    for j in range(0, n // 4, 211):
        assert lsh.query(lean(fresh[j])) == [("new", j)]
    counts = lsh.get_counts()
    assert [sum(c.values()) for c in counts] == [n] * bands
    # Each band: the pairs that share it are one bucket of 2 (or 1 where a member was removed).
    assert max(max(c.values()) for c in counts) == 2


# ---------------------------------------------------------------------------------------------------------
# MinHashLSH semantics on small data


def _random_minhashes(lib, n, scheme="affine32", num_perm=64, seed=1, base=None):
    rng = random.Random(seed)
    base = base or random_items(rng, 60)
    out = []
    for i in range(n):
        items = base[: rng.randrange(20, 60)] + random_items(rng, rng.randrange(0, 20))
        m = lib.MinHash(num_perm=num_perm, scheme=scheme)
        m.update_batch(items)
        out.append(m)
    return out


def _both(n=40, scheme="affine32", **lsh_kw):
    mds = _random_minhashes(ds, n, scheme)
    mnd = _random_minhashes(nd, n, scheme)
    return ds.MinHashLSH(num_perm=64, **lsh_kw), nd.MinHashLSH(num_perm=64, **lsh_kw), mds, mnd


def _check_same(a, b, mds, mnd):
    for ma, mb in zip(mds, mnd):
        assert _as_set(b.query(mb)) == set(a.query(ma))
    assert b.get_counts() == a.get_counts()
    assert b.is_empty() == a.is_empty()
    assert set(b.keys) == set(a.keys)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_lsh_keys_and_schemes(scheme):
    keys = [0, "s", ("t", 1), None, 2.5, b"bytes", frozenset({1})]
    for prepickle in (None, True):
        a, b, mds, mnd = _both(len(keys), scheme=scheme, threshold=0.5, prepickle=prepickle)
        assert b.prepickle == a.prepickle
        for k, ma, mb in zip(keys, mds, mnd):
            a.insert(k, ma)
            b.insert(k, mb)
        _check_same(a, b, mds, mnd)
        for k in keys:
            assert (k in b) == (k in a) is True
        # the keys and band tables, as read-only views
        for k in a.keys:
            assert k in b.keys and b.keys.get(k) == a.keys.get(k) == list(b.keys[k])
        assert len(b.keys) == len(a.keys) and b.keys.get(b"absent") == a.keys.get(b"absent") == []
        for i in (0, a.b - 1):
            assert b.hashtables[i].itemcounts() == a.hashtables[i].itemcounts()
            assert set(b.hashtables[i].keys()) == set(a.hashtables[i].keys())
            for h in list(a.hashtables[i].keys())[:3]:
                assert h in b.hashtables[i] and b.hashtables[i].get(h) == a.hashtables[i].get(h)
        for q in (0, 1, -1, a.b):
            assert b._query_b(mnd[0], q) == a._query_b(mds[0], q)
        assert ("absent" in b) == ("absent" in a)
        assert b.get_subset_counts(*keys[:3], "absent") == a.get_subset_counts(*keys[:3], "absent")
        for k in keys[::2]:
            a.remove(k)
            b.remove(k)
        _check_same(a, b, mds, mnd)
        for k in keys[1::2]:
            a.remove(k)
            b.remove(k)
        assert b.is_empty() and a.is_empty()
        _check_same(a, b, mds, mnd)
        # ids are reused: insert again
        for k, ma, mb in zip(reversed(keys), mds, mnd):
            a.insert(k, ma)
            b.insert(k, mb)
        _check_same(a, b, mds, mnd)
        # LeanMinHash works the same
        assert _as_set(b.query(nd.LeanMinHash(mnd[0]))) == set(a.query(ds.LeanMinHash(mds[0])))


def test_lsh_misuse():
    a, b, mds, mnd = _both(3, threshold=0.5)
    a.insert("k", mds[0])
    b.insert("k", mnd[0])
    same_error(lambda: a.insert("k", mds[1]), lambda: b.insert("k", mnd[1]))
    same_error(lambda: a.remove("missing"), lambda: b.remove("missing"))
    same_error(lambda: a.remove(["unhashable"]), lambda: b.remove(["unhashable"]), message=False)
    wrong = {lib: lib.MinHash(num_perm=32) for lib in (ds, nd)}
    same_error(lambda: a.insert("w", wrong[ds]), lambda: b.insert("w", wrong[nd]))
    same_error(lambda: a.query(wrong[ds]), lambda: b.query(wrong[nd]))
    same_error(lambda: a.add_to_query_buffer(wrong[ds]), lambda: b.add_to_query_buffer(wrong[nd]))
    same_error(lambda: a._query_b(mds[0], a.b + 1), lambda: b._query_b(mnd[0], b.b + 1))
    for scheme in ("affine64", "legacy"):
        other = {lib: lib.MinHash(num_perm=64, scheme=scheme) for lib in (ds, nd)}
        same_error(lambda: a.insert("x", other[ds]), lambda: b.insert("x", other[nd]))
        same_error(lambda: a.query(other[ds]), lambda: b.query(other[nd]))
        same_error(lambda: a._query_b(other[ds], 1), lambda: b._query_b(other[nd], 1))
    assert "x" not in b
    # merging
    a2, b2 = ds.MinHashLSH(num_perm=64, threshold=0.5), nd.MinHashLSH(num_perm=64, threshold=0.5)
    a2.insert("k", mds[1])
    b2.insert("k", mnd[1])
    same_error(lambda: a.merge(a2, check_overlap=True), lambda: b.merge(b2, check_overlap=True))
    same_error(
        lambda: a.merge(ds.MinHashLSH(num_perm=64, threshold=0.9)),
        lambda: b.merge(nd.MinHashLSH(num_perm=64, threshold=0.9)),
    )
    same_error(lambda: a.merge(ds.MinHashLSH(num_perm=128)), lambda: b.merge(nd.MinHashLSH(num_perm=128)))
    same_error(lambda: a.merge(object()), lambda: b.merge(object()))
    a3, b3 = ds.MinHashLSH(num_perm=64, threshold=0.5), nd.MinHashLSH(num_perm=64, threshold=0.5)
    a3.insert("z", ds.MinHash(num_perm=64, scheme="legacy"))
    b3.insert("z", nd.MinHash(num_perm=64, scheme="legacy"))
    same_error(lambda: a.merge(a3), lambda: b.merge(b3))


def test_lsh_plain_calls_are_native_and_others_are_not():
    """Inserts and queries of the plain case are one native call each; what it does not cover (another
    dtype, a sequence that is not an array, a duplicate key allowed) gives datasketch's answers the Python
    way."""
    a, b, mds, mnd = _both(30, threshold=0.5)
    for i, (ma, mb) in enumerate(zip(mds[:10], mnd[:10])):
        a.insert(i, ma)
        b.insert(i, mb)
    assert b._index is not None and b._index.dtype == np.uint32 and b._index.scheme == "affine32"
    assert b._index.query_key(mnd[0]) is not None
    # Another dtype of the same width: not the fast path's, the same answers.
    class Duck:
        scheme = "affine32"

        def __init__(self, values):
            self.hashvalues = values

        def __len__(self):
            return len(self.hashvalues)

    as_int32 = {lib: Duck(m.hashvalues.astype(np.int32)) for lib, m in ((ds, mds[11]), (nd, mnd[11]))}
    assert b._index.query_key(as_int32[nd]) is None
    assert _as_set(b.query(as_int32[nd])) == set(a.query(as_int32[ds]))
    a.insert("int32", as_int32[ds])
    b.insert("int32", as_int32[nd])
    _check_same(a, b, mds, mnd)
    assert b._index is not None, "int32 values of width 4 stay in the native tables"
    for i, (ma, mb) in enumerate(zip(mds[10:], mnd[10:])):
        a.insert(10 + i, ma)
        b.insert(10 + i, mb)
    _check_same(a, b, mds, mnd)
    # A key inserted twice without the check: datasketch's lists model that, in Python.
    a.insert(3, mds[4], check_duplication=False)
    b.insert(3, mnd[4], check_duplication=False)
    assert b._index is None
    _check_same(a, b, mds, mnd)


def test_lsh_duplicates_merge_and_buffers():
    # check_duplication=False lets a key in twice: datasketch's tables then hold it under both MinHashes
    a, b, mds, mnd = _both(6, threshold=0.5)
    for lib_lsh, ms in ((a, mds), (b, mnd)):
        lib_lsh.insert("d", ms[0])
        lib_lsh.insert("d", ms[1], check_duplication=False)
        lib_lsh.insert("e", ms[2])
    _check_same(a, b, mds, mnd)
    assert b.get_subset_counts("d", "e") == a.get_subset_counts("d", "e")
    a.remove("d")
    b.remove("d")
    _check_same(a, b, mds, mnd)
    # merge: overlapping keys without the check, into itself, and of native into Python tables
    a, b, mds, mnd = _both(8, threshold=0.5)
    a2, b2 = ds.MinHashLSH(num_perm=64, threshold=0.5), nd.MinHashLSH(num_perm=64, threshold=0.5)
    for i in range(5):
        a.insert(i, mds[i])
        b.insert(i, mnd[i])
    for i in range(3, 8):
        a2.insert(i, mds[i])
        b2.insert(i, mnd[i])
    a.merge(a2)
    b.merge(b2)
    _check_same(a, b, mds, mnd)
    a2.merge(a2)
    b2.merge(b2)
    _check_same(a2, b2, mds, mnd)
    a2.remove(4)
    b2.remove(4)
    _check_same(a2, b2, mds, mnd)
    # query buffers, before and after inserts
    a, b, mds, mnd = _both(10, threshold=0.3)
    assert b.collect_query_buffer() == a.collect_query_buffer() == []
    a.add_to_query_buffer(mds[0])
    b.add_to_query_buffer(mnd[0])
    assert b.collect_query_buffer() == a.collect_query_buffer() == []
    for i in range(10):
        a.insert(i, mds[i])
        b.insert(i, mnd[i])
    for q in ((0,), (0, 1), (2, 3, 4)):
        for i in q:
            a.add_to_query_buffer(mds[i])
            b.add_to_query_buffer(mnd[i])
        assert _as_set(b.collect_query_buffer()) == set(a.collect_query_buffer())
    # a buffered query survives the move to the Python tables (a duplicate insert)
    a.add_to_query_buffer(mds[1])
    b.add_to_query_buffer(mnd[1])
    a.insert(0, mds[5], check_duplication=False)
    b.insert(0, mnd[5], check_duplication=False)
    a.add_to_query_buffer(mds[2])
    b.add_to_query_buffer(mnd[2])
    assert _as_set(b.collect_query_buffer()) == set(a.collect_query_buffer())
    _check_same(a, b, mds, mnd)
    c = pickle.loads(pickle.dumps(b))
    _check_same(a, c, mds, mnd)


def test_lsh_custom_hashfunc_and_weighted():
    hashfunc = lambda x: hashlib.sha1(x).digest()[:4]  # noqa: E731
    a, b, mds, mnd = _both(30, threshold=0.5, hashfunc=hashfunc)
    for i in range(30):
        a.insert(i, mds[i])
        b.insert(i, mnd[i])
    _check_same(a, b, mds, mnd)
    for i in range(0, 30, 3):
        a.remove(i)
        b.remove(i)
    _check_same(a, b, mds, mnd)
    assert b.get_subset_counts(1, 2, 3) == a.get_subset_counts(1, 2, 3)
    # weighted MinHash (no scheme; 2-D hash values) goes to the Python tables
    gen = ds.WeightedMinHashGenerator(dim=50, sample_size=64, seed=3)
    rng = np.random.RandomState(4)
    wms = [gen.minhash(rng.randint(1, 5, size=50).astype(float)) for _ in range(10)]
    a, b = ds.MinHashLSH(num_perm=64, threshold=0.3), nd.MinHashLSH(num_perm=64, threshold=0.3)
    for i, w in enumerate(wms):
        a.insert(i, w)
        b.insert(i, w)
    for w in wms:
        assert _as_set(b.query(w)) == set(a.query(w))
    assert b.get_counts() == a.get_counts()


# ---------------------------------------------------------------------------------------------------------
# Random sequences of calls: each call made on both libraries' objects, in the same states, must return the
# same value or raise the same exception with the same message. They reach states the tests above do not
# name (a LeanMinHash of a cleared sketch merged into one of another seed, a session inside a pickled index).


def _outcome(call):
    """What a call gave, comparable across the two libraries: ("ok", value) or ("error", type, message)."""
    try:
        return ("ok", _comparable(call()))
    except Exception as e:
        return ("error", type(e).__name__, str(e))


def _comparable(value):
    if isinstance(value, (ds.MinHash, nd.MinHash)):
        hv = value.hashvalues
        return (type(value).__name__, value.scheme, value.seed, hv.dtype.str, hv.tolist())
    if isinstance(value, (ds.MinHashLSH, nd.MinHashLSH)):
        return "MinHashLSH"
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.tolist())
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, float):
        return round(value, 12)
    if isinstance(value, dict):
        return {repr(k): _comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_comparable(v) for v in value]
    if isinstance(value, set):  # query results: keys of mixed types
        return sorted(map(repr, value))
    return value


def _replay(seed, steps, make_state, calls):
    """Runs `steps` calls chosen by `seed` on each library's state; the first that differs fails the test."""
    rng = random.Random(seed)
    states = {lib: make_state(lib, random.Random(seed)) for lib in (ds, nd)}
    for step in range(steps):
        name = rng.choice(sorted(calls))
        choice = rng.getstate()
        results = {}
        for lib in (ds, nd):
            rng.setstate(choice)  # both libraries get the same arguments
            results[lib] = _outcome(lambda: calls[name](lib, states[lib], rng))
        assert results[nd] == results[ds], f"seed {seed}, step {step}: {name}"


_WORDS = [f"w{i}".encode() for i in range(50)] + ["ü".encode(), b""]


def _minhash_calls():
    def pick(rng, state):
        return state[rng.randrange(len(state))]

    def replace(rng, state, value):
        state[rng.randrange(len(state))] = value
        return value

    def from_hashvalues(lib, state, rng):
        m = pick(rng, state)
        return lib.MinHash(num_perm=len(m), hashvalues=m.hashvalues, scheme=m.scheme, seed=m.seed)

    def from_permutations(lib, state, rng):
        m = pick(rng, state)
        return lib.MinHash(permutations=m.permutations, scheme=m.scheme, seed=rng.choice([m.seed, 9]))

    def lean_round_trip(lib, state, rng):
        lean = lib.LeanMinHash(pick(rng, state))
        order = rng.choice("@<>!")
        buf = bytearray(lean.bytesize(byteorder=order))
        lean.serialize(buf, byteorder=order)
        back = lib.LeanMinHash.deserialize(bytes(buf), byteorder=order)
        return [bytes(buf), back, back == lean, pickle.loads(pickle.dumps(lean)) == lean, hash(back) == hash(lean)]

    return {
        "update": lambda lib, s, rng: [pick(rng, s).update(w) for w in rng.sample(_WORDS, rng.randint(0, 9))],
        "update_batch": lambda lib, s, rng: pick(rng, s).update_batch(rng.sample(_WORDS, rng.randint(0, 9))),
        "update bad": lambda lib, s, rng: pick(rng, s).update(rng.choice(["text", 3, None, [b"a"]])),
        "jaccard": lambda lib, s, rng: pick(rng, s).jaccard(pick(rng, s)),
        "count": lambda lib, s, rng: pick(rng, s).count(),
        "merge": lambda lib, s, rng: pick(rng, s).merge(pick(rng, s)),
        "union": lambda lib, s, rng: lib.MinHash.union(pick(rng, s), pick(rng, s)),
        "digest": lambda lib, s, rng: pick(rng, s).digest(),
        "is_empty": lambda lib, s, rng: pick(rng, s).is_empty(),
        "clear": lambda lib, s, rng: pick(rng, s).clear(),
        "copy": lambda lib, s, rng: replace(rng, s, pick(rng, s).copy()),
        "==": lambda lib, s, rng: pick(rng, s) == pick(rng, s),
        "len": lambda lib, s, rng: len(pick(rng, s)),
        "LeanMinHash": lambda lib, s, rng: lib.LeanMinHash(pick(rng, s)),
        "LeanMinHash update": lambda lib, s, rng: lib.LeanMinHash(pick(rng, s)).update(b"x"),
        "LeanMinHash bytes": lean_round_trip,
        "pickle": lambda lib, s, rng: replace(rng, s, pickle.loads(pickle.dumps(pick(rng, s)))),
        "bulk": lambda lib, s, rng: lib.MinHash.bulk([rng.sample(_WORDS, 3), [b"a"], []], num_perm=16, seed=3),
        "generator": lambda lib, s, rng: list(lib.MinHash.generator([rng.sample(_WORDS, 2), []], num_perm=8)),
        "from hashvalues": from_hashvalues,
        "from permutations": from_permutations,
    }


def _minhash_state(lib, rng):
    num_perm = rng.choice([1, 2, 16, 128, 256])
    scheme, seed = rng.choice(SCHEMES), rng.choice([1, 2, 42])
    # The third may differ in seed or scheme: every call that combines two sketches meets both cases.
    other = dict(scheme=rng.choice(SCHEMES + (scheme, scheme)), seed=rng.choice([seed, 3]))
    return [lib.MinHash(num_perm=num_perm, scheme=scheme, seed=seed) for _ in range(2)] + [
        lib.MinHash(num_perm=num_perm, **other)
    ]


@pytest.mark.parametrize("seed", range(60))
def test_random_minhash_calls_equal_datasketch(seed):
    _replay(seed, 50, _minhash_state, _minhash_calls())


_LSH_KEYS = ["a", "b", 3, b"x", ("t", 1), 7.5, "c", "d"]


def _lsh_calls(settings):
    """The calls on a one-item state, the index (a list, so that unpickling can replace it), made with
    `settings`."""

    def sketch(lib, lsh, rng, num_perm=None):
        m = lib.MinHash(num_perm=num_perm or lsh.h, seed=1)
        m.update_batch(rng.sample(_WORDS, rng.randint(0, 8)))
        return lib.LeanMinHash(m) if rng.random() < 0.3 else m

    def insertion_session(lib, state, rng):
        with state[0].insertion_session(buffer_size=rng.randint(1, 5)) as session:
            for key in _LSH_KEYS[: rng.randint(0, 4)]:
                session.insert(key, sketch(lib, state[0], rng), check_duplication=rng.random() < 0.5)

    def deletion_session(lib, state, rng):
        with state[0].deletion_session(buffer_size=2) as session:
            for key in rng.sample(_LSH_KEYS, rng.randint(0, 3)):
                session.remove(key)

    def query_buffer(lib, state, rng):
        for _ in range(rng.randint(1, 3)):
            state[0].add_to_query_buffer(sketch(lib, state[0], rng))
        return set(state[0].collect_query_buffer())

    def merge(lib, state, rng):
        other = lib.MinHashLSH(**settings)
        other.insert(rng.choice(_LSH_KEYS + ["m"]), sketch(lib, other, rng))
        state[0].merge(other, check_overlap=rng.random() < 0.5)

    def unpickle(lib, state, rng):
        state[0] = pickle.loads(pickle.dumps(state[0]))

    return {
        "insert": lambda lib, s, rng: s[0].insert(
            rng.choice(_LSH_KEYS), sketch(lib, s[0], rng), check_duplication=rng.random() < 0.5
        ),
        "insert other num_perm": lambda lib, s, rng: s[0].insert("z", sketch(lib, s[0], rng, 2 * s[0].h)),
        "query": lambda lib, s, rng: set(s[0].query(sketch(lib, s[0], rng))),
        "remove": lambda lib, s, rng: s[0].remove(rng.choice(_LSH_KEYS)),
        "in": lambda lib, s, rng: rng.choice(_LSH_KEYS) in s[0],
        "is_empty": lambda lib, s, rng: s[0].is_empty(),
        "get_counts": lambda lib, s, rng: s[0].get_counts(),
        "get_subset_counts": lambda lib, s, rng: s[0].get_subset_counts(*rng.sample(_LSH_KEYS, 2)),
        "insertion_session": insertion_session,
        "deletion_session": deletion_session,
        "query buffer": query_buffer,
        "merge": merge,
        "pickle": unpickle,
    }


def _lsh_settings(rng):
    return dict(
        threshold=rng.choice([0.3, 0.5, 0.7, 0.9]),
        num_perm=rng.choice([16, 32, 64, 128]),
        weights=rng.choice([(0.5, 0.5), (0.2, 0.8), (0.9, 0.1)]),
        prepickle=rng.random() < 0.3,
    )


@pytest.mark.parametrize("seed", range(60))
def test_random_lsh_calls_equal_datasketch(seed):
    settings = _lsh_settings(random.Random(seed))
    made = {lib: _outcome(lambda: lib.MinHashLSH(**settings)) for lib in (ds, nd)}
    assert made[nd] == made[ds]
    if made[ds][0] == "ok":  # some settings have too few bands for datasketch, and so for the drop-in
        _replay(seed, 50, lambda lib, rng: [lib.MinHashLSH(**settings)], _lsh_calls(settings))


# ---------------------------------------------------------------------------------------------------------
# Threads


def test_threads_give_the_same_values():
    rng = random.Random(8)
    batches = [random_items(rng, 1500, max_len=24) for _ in range(6)]
    for scheme, hashfunc in (("affine32", None), ("affine64", None), ("legacy", None), ("affine32", md5_32)):
        kw = dict(num_perm=128, scheme=scheme, hashfunc=hashfunc)
        expected = []
        for batch in batches:
            m = nd.MinHash(**kw)
            for i in range(0, len(batch), 300):
                m.update_batch(batch[i : i + 300])
            expected.append(m.hashvalues)
        got = [None] * len(batches)
        errors = []

        def work(i):
            try:
                m = nd.MinHash(**kw)
                for j in range(0, len(batches[i]), 300):
                    m.update_batch(batches[i][j : j + 300])
                got[i] = m.hashvalues
            except Exception as e:  # pragma: no cover
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batches))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        for e, g in zip(expected, got):
            assert g.dtype == e.dtype and np.array_equal(g, e)
        ref = ds.MinHash(**{k: v for k, v in kw.items() if v is not None})
        ref.update_batch(batches[0])
        assert np.array_equal(ref.hashvalues, expected[0])
