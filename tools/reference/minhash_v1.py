#!/usr/bin/env python3
"""An independent implementation of docs/spec/minhash-v1.md (sections 1 to 7 and "From documents"), written
from the spec, checked against the golden vectors:

    pip install xxhash regex
    python3 tools/reference/minhash_v1.py testdata/vectors/minhash-v1/vectors.json

The token-list vectors are in vectors.json; the document-level ones (text -> tokens -> sketch) in
documents.json beside it, checked too, with the doc-v1 tokens of tools/reference/simhash_doc_v1.py (numbers
kept). It prints how many outputs match and exits non-zero on the first mismatch.
"""
import base64
import hashlib
import json
import math
import os
import struct
import sys

import xxhash

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simhash_doc_v1  # noqa: E402  (the doc-v1 token profile, steps 1 to 3)

M64 = (1 << 64) - 1
C = 0x9E3779B97F4A7C15


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def mulhi(x, k):
    return (x * k) >> 64


def token_hash(token):
    return xxhash.xxh3_64_intdigest(token.encode("utf-8"))


def poly(hashes):
    p = 0
    for t in hashes:
        p = (p * C + t) & M64
    return mix64(p)


def word_shingles(tokens, n):
    t = [token_hash(x) for x in tokens]
    if not t:
        return []
    if len(t) < n:
        return [poly(t)]
    return [poly(t[i : i + n]) for i in range(len(t) - n + 1)]


def char_shingles(text, n):
    if not text:
        return []
    if len(text) < n:
        return [xxhash.xxh3_64_intdigest(text.encode("utf-8"))]
    return [xxhash.xxh3_64_intdigest(text[i : i + n].encode("utf-8")) for i in range(len(text) - n + 1)]


def oph(features, k, seed):
    key = mix64(seed ^ 0x6F70680000000001)
    fill_key = mix64(seed ^ 0x6F70680000000002)
    xs = [mix64(h ^ key) for h in features]
    bins = [None] * k
    for x in xs:
        b = mulhi(x, k)
        v = x & 0xFFFFFFFF
        if bins[b] is None or v < bins[b]:
            bins[b] = v
    r = 1
    while any(b is None for b in bins):
        r += 1
        rk = mix64(fill_key ^ r)
        fresh = {}
        for x in xs:
            y = mix64(x ^ rk)
            b = mulhi(y, k)
            if bins[b] is None:
                v = y & 0xFFFFFFFF
                fresh[b] = min(v, fresh.get(b, v))
        for b, v in fresh.items():
            bins[b] = v
    return bins


def ln_series(m):
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    p = 1.0 / 47.0
    for o in range(45, 0, -2):
        p = p * s2 + 1.0 / o
    return (2.0 * s) * p


LN_TABLE = []
for i in range(256):
    centre = 1.0 + (2 * i + 1) / 512.0
    LN_TABLE.append((ln_series(centre), 1.0 / centre, centre))


def ln_det(u):
    bits = struct.unpack("<Q", struct.pack("<d", u))[0]
    e = ((bits >> 52) & 0x7FF) - 1023
    m = struct.unpack("<d", struct.pack("<Q", (bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000))[0]
    ln_centre, inverse_centre, centre = LN_TABLE[(bits >> 44) & 0xFF]
    r = (m - centre) * inverse_centre
    return e * math.log(2.0) + (ln_centre + r * (1.0 + r * (-0.5 + r * (1.0 / 3.0))))


class Stream:
    def __init__(self, seed):
        self.s = seed

    def next(self):
        self.s = (self.s + C) & M64
        return mix64(self.s)

    def exp(self):
        return -ln_det(((self.next() >> 11) + 1) * 2.0**-53)


def weighted(features, k, seed, probability):
    stream_key = mix64(seed ^ 0x776D680000000001)
    value_key = mix64(seed ^ 0x776D680000000002)
    times = [math.inf] * k
    values = [0] * k

    def q():
        return max(times)

    def offer(time, r, value):
        c = mulhi(r, k)
        if time < times[c]:
            times[c] = time
            values[c] = value

    for h, w in features:
        if probability:
            st = Stream(mix64(h ^ stream_key))
            v = 1.0 / w
            time = st.exp() * v
            while time < q():
                r = st.next()
                offer(time, r, mix64(h ^ value_key) & 0xFFFFFFFF)
                time += st.exp() * v
        else:
            for j in range(math.ceil(w)):
                sigma = mix64((h ^ stream_key) ^ mix64(j + 1))
                st = Stream(sigma)
                time = st.exp()
                while time < q():
                    r = st.next()
                    if (r & 0xFFFFFFFF) * 2.0**-32 < w - j:
                        offer(time, r, mix64(r ^ sigma ^ value_key) & 0xFFFFFFFF)
                    time += st.exp()
    return values


def bottomk(features, k, seed):
    key = mix64(seed ^ 0x626F740000000001)
    return sorted({mix64(h ^ key) for h in features})[:k]


def char_shingle_strings(text, n):
    if not text:
        return []
    if len(text) < n:
        return [text]
    return [text[i : i + n] for i in range(len(text) - n + 1)]


# Section 3: the datasketch schemes.
M32 = 0xFFFFFFFF
MERSENNE61 = (1 << 61) - 1


class MT19937:
    def __init__(self, seed):
        self.mt = [seed & M32]
        for i in range(1, 624):
            prev = self.mt[-1]
            self.mt.append((1812433253 * (prev ^ (prev >> 30)) + i) & M32)
        self.index = 624

    def u32(self):
        if self.index >= 624:
            for i in range(624):
                y = (self.mt[i] & 0x80000000) | (self.mt[(i + 1) % 624] & 0x7FFFFFFF)
                self.mt[i] = self.mt[(i + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            self.index = 0
        y = self.mt[self.index]
        self.index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        return y ^ (y >> 18)

    def u64(self):
        high = self.u32()
        return (high << 32) | self.u32()

    def randint(self, low, high):
        """low <= v < high by masked rejection (NumPy's legacy randint)."""
        r = high - low - 1
        if r == 0:
            return low
        if r == M32:
            return low + self.u32()
        mask = (1 << r.bit_length()) - 1
        draw = self.u32 if r < (1 << 32) else self.u64
        while True:
            v = draw() & mask
            if v <= r:
                return low + v


def sha1_hash32(item):
    return int.from_bytes(hashlib.sha1(item).digest()[:4], "little")


def fmix32(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


def datasketch(items, k, seed, legacy):
    rng = MT19937(seed)
    if legacy:
        ab = []
        for _ in range(k):
            a = rng.randint(1, MERSENNE61)
            ab.append((a, rng.randint(0, MERSENNE61)))
    else:
        a = [(2 * rng.randint(0, 1 << 31) + 1) & M32 for _ in range(k)]
        ab = list(zip(a, [rng.randint(0, 1 << 32) for _ in range(k)]))
    values = [M32] * k
    for item in items:
        if legacy:
            hv = sha1_hash32(item)
            perm = [(((a * hv + b) & M64) % MERSENNE61) & M32 for a, b in ab]
        else:
            hv = fmix32(sha1_hash32(item))
            perm = [(a * hv + b) & M32 for a, b in ab]
        values = [min(v, p) for v, p in zip(values, perm)]
    return values


def b32(data):
    return base64.b32encode(data).decode().rstrip("=").lower()


def text(scheme, params, data):
    return "%s:%s:%s" % (scheme, params, b32(data))


def u32s(values):
    return b"".join(struct.pack("<I", v) for v in values)


def bbit(values, b):
    bits = 0
    for i, v in enumerate(values):
        bits |= (v & ((1 << b) - 1)) << (i * b)
    return bits.to_bytes((len(values) * b + 7) // 8, "little")


def tf(tokens):
    counts = {}
    for t in tokens:
        h = token_hash(t)
        counts[h] = counts.get(h, 0) + 1
    return sorted((h, float(c)) for h, c in counts.items())


def main():
    vectors = json.load(open(sys.argv[1], encoding="utf-8"))
    checked = 0

    def check(name, got, want):
        nonlocal checked
        if got != want:
            sys.exit("MISMATCH %s:\n got  %s\n want %s" % (name, got, want))
        checked += 1

    hexes = lambda hs: ["%016x" % h for h in hs]
    for case in vectors["cases"]:
        tokens = case["tokens"]
        name = case["name"]
        check(name + " token_hashes", hexes(token_hash(t) for t in tokens), case["token_hashes"])
        for n in (1, 3, 5):
            check("%s n=%d" % (name, n), hexes(word_shingles(tokens, n)), case["word_shingles_n%d" % n])
        check(name + " chars", hexes(char_shingles(" ".join(tokens), 4)), case["char_shingles_n4_of_joined_tokens"])
        s5, s3 = word_shingles(tokens, 5), word_shingles(tokens, 3)
        o128 = oph(s5, 128, 0) if s5 else None
        check(name + " oph128", o128 and text("minhash-oph-v1", "k=128,seed=0,f=w5", u32s(o128)), case["minhash-oph-v1 k=128 seed=0 w5"])
        o16 = oph(s3, 16, 42) if s3 else None
        check(name + " oph16", o16 and text("minhash-oph-v1", "k=16,seed=42,f=w3", u32s(o16)), case["minhash-oph-v1 k=16 seed=42 w3"])
        for b in (1, 2):
            got = o128 and text("minhash-oph-v1", "k=128,seed=0,f=w5,b=%d" % b, bbit(o128, b))
            check("%s b=%d" % (name, b), got, case["minhash-oph-v1 k=128 seed=0 w5 b=%d" % b])
        for scheme, prob in (("wminhash-v1", False), ("pminhash-v1", True)):
            got = tf(tokens) and text(scheme, "k=32,seed=0,f=t", u32s(weighted(tf(tokens), 32, 0, prob)))
            check("%s %s" % (name, scheme), got or None, case["%s k=32 seed=0 tf" % scheme])
        bk = bottomk(s3, 16, 0)
        check(name + " bottomk", text("bottomk-v1", "k=16,seed=0,f=w3", b"".join(struct.pack("<Q", h) for h in bk)), case["bottomk-v1 k=16 seed=0 w3"])
    frac = vectors["weighted_fractional"]
    features = [(int(h, 16), w) for h, w in frac["features"]]
    for scheme, prob in (("wminhash-v1", False), ("pminhash-v1", True)):
        got = text(scheme, "k=32,seed=7,f=h", u32s(weighted(features, 32, 7, prob)))
        check("fractional " + scheme, got, frac["%s k=32 seed=7" % scheme])
    folder = os.path.dirname(sys.argv[1])
    checked += check_documents(os.path.join(folder, "documents.json"))
    checked += check_datasketch(os.path.join(folder, "..", "minhash-datasketch", "datasketch-2.0.0.json"))
    print("%d outputs match" % checked)


def document_sketch(method, text):
    """ "From documents": the sketch string of extracted text under method `scheme(k=K,seed=S,f=F)`."""
    scheme, params = method.rstrip(")").split("(")
    p = dict(item.split("=") for item in params.split(","))
    k, seed, f = int(p["k"]), int(p["seed"]), p["f"]
    n = int(f[1:])
    tokens = simhash_doc_v1.tokens(text, keep_numbers=True)
    if not tokens:
        return None  # no tokens, no sketch
    joined = " ".join(tokens)
    if scheme.startswith("minhash-datasketch-"):
        if f[0] == "w":
            windows = [tokens] if len(tokens) < n else [tokens[i : i + n] for i in range(len(tokens) - n + 1)]
            items = [" ".join(w).encode("utf-8") for w in windows]
        else:
            items = [c.encode("utf-8") for c in char_shingle_strings(joined, n)]
        values = datasketch(items, k, seed, scheme.endswith("legacy"))
        return text_form(scheme, k, seed, f, u32s(values))
    hashes = word_shingles(tokens, n) if f[0] == "w" else char_shingles(joined, n)
    if scheme == "minhash-oph-v1":
        return text_form(scheme, k, seed, f, u32s(oph(hashes, k, seed)))
    if scheme in ("wminhash-v1", "pminhash-v1"):
        counts = {}
        for h in hashes:
            counts[h] = counts.get(h, 0) + 1
        features = [(h, float(c)) for h, c in counts.items()]
        return text_form(scheme, k, seed, f, u32s(weighted(features, k, seed, scheme == "pminhash-v1")))
    if scheme == "bottomk-v1":
        return text_form(scheme, k, seed, f, b"".join(struct.pack("<Q", h) for h in bottomk(hashes, k, seed)))
    sys.exit("unknown scheme " + scheme)


def check_datasketch(path):
    """Section 3 against the vectors made by datasketch 2.0.0 itself."""
    vectors = json.load(open(path, encoding="utf-8"))
    checked = 0
    for item, want in vectors["sha1_hash32"].items():
        if sha1_hash32(item.encode("utf-8")) != want:
            sys.exit("MISMATCH sha1_hash32(%r)" % item)
        checked += 1
    for case in vectors["cases"]:
        items = [t.encode("utf-8") for t in case["tokens"]]
        got = datasketch(items, case["num_perm"], case["seed"], case["scheme"] == "legacy")
        if got != case["hashvalues"]:
            sys.exit("MISMATCH datasketch %s num_perm=%d seed=%d" % (case["scheme"], case["num_perm"], case["seed"]))
        checked += 1
    return checked


def text_form(scheme, k, seed, f, data):
    return text(scheme, "k=%d,seed=%d,f=%s" % (k, seed, f), data)


def check_documents(path):
    vectors = json.load(open(path, encoding="utf-8"))
    checked = 0
    for case in vectors["cases"]:
        tokens = simhash_doc_v1.tokens(case["text"], keep_numbers=True)
        if tokens != case["tokens"]:
            sys.exit("MISMATCH %s tokens:\n got  %s\n want %s" % (case["name"], tokens, case["tokens"]))
        if (case["error"] == "no-tokens") != (not tokens):
            sys.exit("MISMATCH %s error: %s with %d tokens" % (case["name"], case["error"], len(tokens)))
        for method in vectors["methods"]:
            got, want = document_sketch(method, case["text"]), case["sketches"][method]
            if got != want:
                sys.exit("MISMATCH %s %s:\n got  %s\n want %s" % (case["name"], method, got, want))
            checked += 1
    return checked + len(vectors["cases"])


if __name__ == "__main__":
    main()
