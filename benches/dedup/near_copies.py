#!/usr/bin/env python3
"""Writes near-copies for timing `neardup dedup`'s exact verification, as JSON Lines.

    python3 benches/dedup/near_copies.py near60k.jsonl
    /usr/bin/time -f '%e s %M KB' neardup dedup near60k.jsonl --scheme minhash --threshold 0.5 --table t.tsv

Each of --bases texts of --words words (drawn from a vocabulary of 20,000) gets --copies copies, each with
1 to --max-edits words replaced: with the defaults, 60,000 documents whose pairs within a base spread from a
word 5-gram Jaccard of about 0.95 down to below 0.5, so that most candidates sharing an LSH band are judged
near the threshold. Deterministic for a --seed (Python's `random`).
"""

import argparse
import json
import random


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("output")
    p.add_argument("--bases", type=int, default=30)
    p.add_argument("--copies", type=int, default=2000)
    p.add_argument("--words", type=int, default=300)
    p.add_argument("--max-edits", type=int, default=25)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    rng = random.Random(args.seed)
    vocabulary = [f"t{i}" for i in range(20_000)]
    with open(args.output, "w") as out:
        for base in range(args.bases):
            words = [rng.choice(vocabulary) for _ in range(args.words)]
            for copy in range(args.copies):
                edited = list(words)
                for _ in range(rng.randint(1, args.max_edits)):
                    edited[rng.randrange(args.words)] = rng.choice(vocabulary)
                record = {"id": f"b{base:02d}c{copy:04d}", "text": " ".join(edited)}
                out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
