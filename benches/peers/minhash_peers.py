#!/usr/bin/env python3
"""Peers for the end-to-end MinHash benchmarks: text in, 128-value signature out, for every document of a
JSONL corpus, on one thread (whole process, for paired timing with `neardup hash --jsonl --scheme minhash`).

usage: minhash_peers.py PEER corpus.jsonl
  gaoya        gaoya's MinHashStringIndex.tokenize_and_minhash (tokenizes in Rust: lowercased words, 5-grams)
  rensa        rensa.RMinHash(128).update over Python word 5-grams (re \\w+ on lowercased text)
  datasketch   datasketch.MinHash(128).update over the same 5-grams, bytes as UTF-8
  datasketch-lsh  the same signatures, then MinHashLSH(threshold=0.8) insert and query of every document

Install: pip install gaoya rensa datasketch
    /usr/bin/time -v python3 benches/peers/minhash_peers.py rensa corpus.jsonl
    /usr/bin/time -v neardup hash --jsonl --scheme minhash -j 1 corpus.jsonl > /dev/null
"""
import json
import re
import sys

WORD = re.compile(r"\w+")


def shingles(text, n=5):
    tokens = WORD.findall(text.lower())
    if len(tokens) < n:
        return [" ".join(tokens)] if tokens else []
    return [" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def main():
    peer, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    n = 0
    if peer == "gaoya":
        import gaoya
        index = gaoya.minhash.MinHashStringIndex(hash_size=32, jaccard_threshold=0.8, num_bands=16, band_size=8,
                                                 analyzer="word", lowercase=True, ngram_range=(5, 5))
        for t in texts:
            index.minhash_index.tokenize_and_minhash(t)
            n += 1
    elif peer == "rensa":
        import rensa
        for t in texts:
            m = rensa.RMinHash(num_perm=128, seed=42)
            m.update(shingles(t))
            m.digest()
            n += 1
    elif peer in ("datasketch", "datasketch-lsh"):
        import datasketch
        sigs = []
        for t in texts:
            m = datasketch.MinHash(num_perm=128)
            m.update_batch([s.encode("utf-8") for s in shingles(t)])
            sigs.append(m)
            n += 1
        if peer == "datasketch-lsh":
            lsh = datasketch.MinHashLSH(threshold=0.8, num_perm=128)
            for i, m in enumerate(sigs):
                lsh.insert(i, m)
            n = sum(len(lsh.query(m)) for m in sigs)
    else:
        sys.exit(f"unknown peer {peer!r} (gaoya, rensa, datasketch, datasketch-lsh)")
    print(n)


if __name__ == "__main__":
    main()
