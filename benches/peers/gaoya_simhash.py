#!/usr/bin/env python3
"""Peer for the end-to-end SimHash benchmark: gaoya's 64-bit SimHash of every document of a JSONL corpus.

gaoya (pip install gaoya) is the fastest Python-facing SimHash peer measured on this project's machines.
It tokenizes in Rust (lowercased words, 5-gram shingles, as its docs suggest for near-duplicates); neardup's
simhash-doc-v1 uses normalized word unigrams. Both take text in and give a 64-bit fingerprint out, on one thread.

Paired whole-process timing, with the same input, one thread each:
    /usr/bin/time -v python3 benches/peers/gaoya_simhash.py corpus.jsonl
    /usr/bin/time -v neardup hash --jsonl -j 1 corpus.jsonl > /dev/null
"""
import json
import sys

import gaoya


def main():
    index = gaoya.simhash.SimHashStringIndex(hash_size=64, num_blocks=6, hamming_distance=3, analyzer="word",
                                             lowercase=True, ngram_range=(5, 5))
    n = 0
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            index.index.doc2signature(json.loads(line)["text"])
            n += 1
    print(n)


if __name__ == "__main__":
    main()
