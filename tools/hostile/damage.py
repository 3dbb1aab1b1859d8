#!/usr/bin/env python3
"""Damage a real index file in many ways and check that every command on it is an error or a right answer.

Usage:
    python3 tools/hostile/damage.py --bin target/debug/neardup [--copies 221] [--seed 7]

Builds an index of 3,000 fingerprints, then makes damaged copies of its file: single bit flips, truncations,
zeroed 4 KiB pages and runs of random bytes, anywhere in the file. On each copy it runs `index stats` and an
exact `index query` of one stored fingerprint, and classifies each answer:

    error  a non-zero exit status with a message naming the index file (the damage was detected)
    ok     exit 0 with the right answer: 3,000 entries, and the stored id found (the damage hit unused space)
    wrong  exit 0 with another answer: a lost entry, a wrong id (silent damage: a failure)
    panic  exit 101, "panicked" on stderr, or a signal (a failure)
    hang   no answer within 60 s (a failure)

It prints the count of each class per kind of damage and ends with `N passed, N failed` (a copy passes when
both commands are error or ok). The exit status is 1 on any failure.
"""
import argparse
import base64
import os
import random
import shutil
import subprocess
import sys
import tempfile

ENTRIES = 3000


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--copies", type=int, default=221)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    scratch = tempfile.mkdtemp(prefix="neardup-damage-")
    try:
        base = os.path.join(scratch, "base")
        lines = []
        for i in range(ENTRIES):
            raw = rng.getrandbits(64).to_bytes(8, "big")
            lines.append(f"id-{i}\tsimhash-doc-v1:" + base64.b32encode(raw).decode().rstrip("=").lower())
        subprocess.run([args.bin, "index", "create", base], check=True, capture_output=True)
        subprocess.run([args.bin, "index", "add-fingerprints", base, "-"], input="\n".join(lines).encode(),
                       check=True, capture_output=True)
        (name,) = os.listdir(base)
        data = open(os.path.join(base, name), "rb").read()
        probe_id, probe = lines[1234].split("\t")
        kinds = ["flip", "truncate", "zero-page", "garbage"]
        counts = {}
        passed = failed = 0
        for n in range(args.copies):
            kind = kinds[n % len(kinds)]
            blob = bytearray(data)
            if kind == "flip":
                blob[rng.randrange(len(blob))] ^= 1 << rng.randrange(8)
            elif kind == "truncate":
                blob = blob[: rng.randrange(len(blob))]
            elif kind == "zero-page":
                page = rng.randrange(max(1, len(blob) // 4096))
                blob[page * 4096:(page + 1) * 4096] = bytes(len(blob[page * 4096:(page + 1) * 4096]))
            else:
                at, size = rng.randrange(len(blob)), rng.randrange(1, 512)
                blob[at:at + size] = bytes(rng.randrange(256) for _ in range(size))
                blob = blob[: len(data)]
            copy = os.path.join(scratch, f"copy-{n}")
            os.makedirs(copy)
            open(os.path.join(copy, name), "wb").write(bytes(blob))
            verdicts = []
            for cmd, right in (
                (["index", "stats", copy], lambda out: f"entries\t{ENTRIES}" in out),
                (["index", "query", "-k", "0", copy, probe], lambda out: f"\t{probe_id}\t" in out),
            ):
                try:
                    p = subprocess.run([args.bin] + cmd, capture_output=True, timeout=60)
                except subprocess.TimeoutExpired:
                    verdicts.append("hang")
                    continue
                err = p.stderr.decode(errors="replace")
                if p.returncode == 101 or p.returncode < 0 or "panicked" in err:
                    verdicts.append("panic")
                elif p.returncode != 0:
                    verdicts.append("error" if copy in err else "unnamed")
                else:
                    verdicts.append("ok" if right(p.stdout.decode(errors="replace")) else "wrong")
            shutil.rmtree(copy)
            for v in verdicts:
                counts[(kind, v)] = counts.get((kind, v), 0) + 1
            if all(v in ("ok", "error") for v in verdicts):
                passed += 1
            else:
                failed += 1
                print(f"copy {n} ({kind}): {verdicts}")
        print("damage      answer   count   (two commands per copy)")
        for (kind, verdict), count in sorted(counts.items()):
            print(f"{kind:<11} {verdict:<8} {count:>5}")
        print(f"{passed} passed, {failed} failed")
        sys.exit(1 if failed else 0)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
