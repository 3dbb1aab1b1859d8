#!/usr/bin/env python3
"""Golden vectors for the datasketch-compatible MinHash schemes, made with the real datasketch.

    python3 -m venv venv && venv/bin/pip install datasketch==2.0.0 numpy
    venv/bin/python tools/vectors/make_datasketch_vectors.py > testdata/vectors/minhash-datasketch/datasketch-2.0.0.json

The Rust test `datasketch_vectors` (crates/neardup-sketch/tests/vectors.rs) recomputes every case. Each case is a
token list fed to `MinHash(num_perm, seed, scheme).update(token.encode("utf-8"))` one token at a time; the file
records the permutation parameters of some (num_perm, seed) pairs, the final hash values, and the LeanMinHash
serialization (byteorder "<") as hex.
"""
import json
import random
import sys

import datasketch
import numpy as np
from datasketch import LeanMinHash, MinHash
from datasketch.hashfunc import sha1_hash32

TEXTS = [
    "",
    "a",
    "hello world",
    "the quick brown fox jumps over the lazy dog",
    "Straße café naïve 東京 タワー 😀 emoji and accents",
]


def token_sets():
    sets = [t.split() for t in TEXTS]
    rng = random.Random(20261122)
    words = [w for t in TEXTS for w in t.split()] + ["%x" % rng.getrandbits(40) for _ in range(200)]
    for size in (1, 5, 50, 500, 3000):
        sets.append([rng.choice(words) + str(rng.randrange(size * 3)) for _ in range(size)])
    return sets


def main():
    out = {
        "generator": "tools/vectors/make_datasketch_vectors.py",
        "datasketch": datasketch.__version__ if hasattr(datasketch, "__version__") else "2.0.0",
        "numpy": np.__version__,
        "sha1_hash32": {t: sha1_hash32(t.encode("utf-8")) for t in ["", "a", "hello", "東京", "😀"]},
        "permutations": [],
        "cases": [],
    }
    for scheme in ("affine32", "legacy"):
        for num_perm, seed in [(4, 1), (128, 1), (128, 0), (7, 42), (256, 4294967295)]:
            a, b = MinHash(num_perm=num_perm, seed=seed, scheme=scheme).permutations
            out["permutations"].append(
                {"scheme": scheme, "num_perm": num_perm, "seed": seed, "a": [int(x) for x in a], "b": [int(x) for x in b]}
            )
    configs = [(128, 1), (16, 7), (1, 1), (256, 123456789), (200, 0)]
    for scheme in ("affine32", "legacy"):
        for i, tokens in enumerate(token_sets()):
            num_perm, seed = configs[i % len(configs)]
            m = MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
            for t in tokens:
                m.update(t.encode("utf-8"))
            lean = LeanMinHash(m)
            buf = bytearray(lean.bytesize(byteorder="<"))
            lean.serialize(buf, byteorder="<")
            out["cases"].append(
                {
                    "scheme": scheme,
                    "num_perm": num_perm,
                    "seed": seed,
                    "tokens": tokens,
                    "hashvalues": [int(x) for x in m.hashvalues],
                    "lean_le_hex": buf.hex(),
                }
            )
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
