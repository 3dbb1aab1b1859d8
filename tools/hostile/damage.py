#!/usr/bin/env python3
"""Damage a real index's files in many ways and check that every command on them is an error or a right answer.

Usage:
    python3 tools/hostile/damage.py --bin target/debug/neardup [--copies 221] [--seed 7] [--store segments|redb]

Builds an index of 3,000 fingerprints (merged into one segment, for an index in segments), then makes damaged
copies of it, each with one file damaged (the segment, the manifest or the log, in turn, for segments; the
database file for redb): single bit flips, truncations, zeroed 4 KiB pages and runs of random bytes, anywhere
in the file. On each copy it runs `index stats`, an exact `index query` of one stored fingerprint and
`index verify`, and classifies each answer:

    error  a non-zero exit status with a message naming the damaged file (the damage was detected)
    ok     exit 0 with the right answer: 3,000 entries, the stored id found, the index whole
    wrong  exit 0 with another answer: a lost entry, a wrong id, damage not found by verify
    panic  exit 101, "panicked" on stderr, or a signal (a failure)
    hang   no answer within 60 s (a failure)

A copy passes when no command panics or hangs, and either every command is right (the damage hit nothing
that matters) or the damage is reported by name: by every command (redb, which checks what it reads), or at
least by `index verify` (segments: opening checks the manifest, the log and each segment's frame; queries
read the mapped data unchecked, like Lucene's, and `verify` reads every block against its checksum). It
prints the count of each class per file and kind of damage and ends with `N passed, N failed`; the exit
status is 1 on any failure.
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
    ap.add_argument("--store", default="segments", choices=["segments", "redb"])
    args = ap.parse_args()
    rng = random.Random(args.seed)
    scratch = tempfile.mkdtemp(prefix="neardup-damage-")
    try:
        base = os.path.join(scratch, "base")
        lines = []
        for i in range(ENTRIES):
            raw = rng.getrandbits(64).to_bytes(8, "big")
            lines.append(f"id-{i}\tsimhash-doc-v1:" + base64.b32encode(raw).decode().rstrip("=").lower())
        subprocess.run([args.bin, "index", "create", "--store", args.store, base], check=True, capture_output=True)
        subprocess.run([args.bin, "index", "add-fingerprints", base, "-"], input="\n".join(lines).encode(),
                       check=True, capture_output=True)
        if args.store == "segments":
            subprocess.run([args.bin, "index", "merge", base], check=True, capture_output=True)
        files = {name: open(os.path.join(base, name), "rb").read() for name in sorted(os.listdir(base))
                 if name != "LOCK"}
        names = sorted(files)
        probe_id, probe = lines[1234].split("\t")
        kinds = ["flip", "truncate", "zero-page", "garbage"]
        counts = {}
        passed = failed = 0
        for n in range(args.copies):
            kind = kinds[n % len(kinds)]
            name = names[(n // len(kinds)) % len(names)]
            data = files[name]
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
            for other, content in files.items():
                open(os.path.join(copy, other), "wb").write(bytes(blob) if other == name else content)
            damaged = os.path.join(copy, name)
            verdicts = []
            for cmd, right in (
                (["index", "stats", copy], lambda out: f"entries\t{ENTRIES}" in out),
                (["index", "query", "-k", "0", copy, probe], lambda out: f"\t{probe_id}\t" in out),
                (["index", "verify", copy], lambda out: True),
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
                    verdicts.append("error" if damaged in err else "unnamed")
                else:
                    verdicts.append("ok" if right(p.stdout.decode(errors="replace")) else "wrong")
            shutil.rmtree(copy)
            label = name.split("-")[0] if args.store == "segments" else "file"
            for v in verdicts:
                counts[(label, kind, v)] = counts.get((label, kind, v), 0) + 1
            sound = not any(v in ("panic", "hang") for v in verdicts)
            right = all(v == "ok" for v in verdicts)
            if args.store == "redb":
                reported = all(v in ("ok", "error") for v in verdicts[:2])
            else:
                reported = verdicts[2] == "error"
            if sound and (right or reported):
                passed += 1
            else:
                failed += 1
                print(f"copy {n} ({kind}): {verdicts}")
        print("file      damage      answer   count   (three commands per copy: stats, query, verify)")
        for (label, kind, verdict), count in sorted(counts.items()):
            print(f"{label:<9} {kind:<11} {verdict:<8} {count:>5}")
        print(f"{passed} passed, {failed} failed")
        sys.exit(1 if failed else 0)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
