#!/usr/bin/env python3
"""Kill the index writer with SIGKILL at random moments and check that nothing acknowledged is lost.

Usage:
    python3 tools/hostile/kill9.py --bin target/debug/neardup [--trials 50] [--seed 1] [--dir DIR]

One index, many trials. Each trial starts a writer and kills it (SIGKILL) after a random delay, at any
moment: before it read anything, in the middle of a batch, during a commit, after it finished.

  add     `index add-fingerprints --ack --batch B -` fed new (id, fingerprint) lines; every line covered by an
          `ok N` acknowledgement read before the kill must be stored for good.
  remove  `index remove DIR -` fed a sample of stored ids; if the writer exited 0 before the kill, every one of
          them must be gone; if it was killed, each is present or gone (never anything else).
  merge   `index merge DIR` (an index in segments): killed while it writes the new segment, swaps the manifest
          or removes the old files; nothing may change (the writer also merges by itself during adds, once
          the log reaches an eighth of the index, so adds are killed in merges too).

With --aimed N, N more trials each aim at one of the brief moments of a flush or a merge that random kills
rarely hit (NEARDUP_CRASH_AT=POINT@K makes the writer abort the Kth time it reaches POINT: a segment of a
flush or of a background merge renamed into place, the new manifest synced, renamed, the swap done, one old
file removed); a writer that never reaches its point exits normally, and is counted so.

After every trial: the index opens (`index stats`), its entry count is within what the trials allow, and an
exact query (`-k 0`) of every id that must be present finds it under its own fingerprint. The report ends
with `N passed, N failed` (a trial passes when every check after it holds); the exit status is 1 on any
failure. Only this machine's files are touched (a scratch directory, removed at the end unless --keep).
"""
import argparse
import base64
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time


def fingerprint(rng):
    """Any 64 bits are a simhash-doc-v1 fingerprint: base32 (lowercase, no padding) of 8 bytes."""
    raw = rng.getrandbits(64).to_bytes(8, "big")
    return "simhash-doc-v1:" + base64.b32encode(raw).decode().rstrip("=").lower()


def run(cmd, stdin=b""):
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=120)


class Trial:
    def __init__(self, args, index, rng):
        self.args, self.index, self.rng = args, index, rng

    def writer(self, cmd, lines, max_delay=None, crash_at=None):
        """Starts cmd, feeds lines, kills it after a random delay; returns (exit code or None, stdout lines).
        With crash_at, no kill: the writer aborts at that point by itself (None then too), or finishes."""
        env = {**os.environ, "NEARDUP_CRASH_AT": crash_at} if crash_at else None
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, preexec_fn=no_core_files)
        out = []

        def read():
            for line in proc.stdout:
                out.append(line.decode().strip())

        def feed():
            try:
                for line in lines:
                    proc.stdin.write(line.encode() + b"\n")
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass

        reader = threading.Thread(target=read)
        feeder = threading.Thread(target=feed)
        reader.start()
        feeder.start()
        if crash_at:
            code = proc.wait(timeout=120)
            killed = code == -signal.SIGABRT
        else:
            time.sleep(self.rng.uniform(0, max_delay or self.args.max_delay))
            killed = proc.poll() is None
            if killed:
                proc.send_signal(signal.SIGKILL)
            code = proc.wait()
        feeder.join()
        reader.join()
        return (None if killed else code), out


def no_core_files():
    """An aimed abort leaves no core file behind."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# The moments of a flush or a merge that --aimed trials abort at (crates/neardup-index/src/store/segments/crash.rs).
CRASH_POINTS = ["flush-segment-renamed", "manifest-synced", "manifest-renamed", "flush-manifest-swapped",
                "flush-old-file-removed", "merge-segment-renamed", "merge-manifest-swapped", "merge-old-file-removed"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-delay", type=float, default=0.4, help="seconds before the kill, at most")
    ap.add_argument("--dir", help="scratch directory (default: a new temporary one)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--store", default="segments", choices=["segments", "redb"])
    ap.add_argument("--aimed", type=int, default=0, help="trials more, each aborting the writer at one moment of "
                    "a flush or merge (segments only)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    scratch = args.dir or tempfile.mkdtemp(prefix="neardup-kill9-")
    index = os.path.join(scratch, "index")
    if run([args.bin, "index", "create", index, "-n", "1e5", "--store", args.store]).returncode != 0:
        sys.exit("cannot create the index")
    fps = {}  # id -> fingerprint, for every id ever sent
    must = set()  # ids acknowledged and never sent to a remove since
    maybe = set()  # ids whose state a kill left open
    passed = failed = 0
    stats = {"add": 0, "remove": 0, "merge": 0, "killed": 0, "acknowledged": 0, "removed": 0}
    aimed = {p: {"aborted": 0, "not reached": 0} for p in CRASH_POINTS}
    next_id = 0
    aimed_trials = args.aimed if args.store == "segments" else 0
    for trial in range(args.trials + aimed_trials):
        t = Trial(args, index, rng)
        problems = []
        draw = rng.random()
        crash_at = None
        if trial >= args.trials:
            point = CRASH_POINTS[(trial - args.trials) % len(CRASH_POINTS)]
            # An add of a few flushes' worth of changes (16,384 each) reaches every point: its second flush
            # starts a background merge. `index merge` reaches the flush's points.
            crash_at = f"{point}@{1 if point.startswith('merge') else rng.randrange(1, 4)}"
            draw = 0.1 if must and not point.startswith("merge") and rng.random() < 0.3 else 0.5
        if must and args.store == "segments" and draw < 0.2:
            stats["merge"] += 1
            # A merge takes longer than a batch: give the kill the whole of it to land in.
            code, _ = t.writer([args.bin, "index", "merge", index], [], max_delay=args.max_delay * 3,
                               crash_at=crash_at)
            if code is None:
                stats["killed"] += 1
            elif code != 0:
                problems.append(f"merge exited {code}")
        elif not must or draw < 0.7:
            stats["add"] += 1
            count = rng.randrange(100, 20_000) if crash_at is None else rng.randrange(40_000, 80_000)
            lines = []
            for _ in range(count):
                ident = f"t{trial}-{next_id}"
                next_id += 1
                fps[ident] = fingerprint(rng)
                lines.append(f"{ident}\t{fps[ident]}")
            batch = rng.choice([1, 7, 100, 1000] if crash_at is None else [100, 1000])
            code, out = t.writer([args.bin, "index", "add-fingerprints", index, "--ack", "--batch", str(batch), "-"],
                                 lines, crash_at=crash_at)
            acked = max((int(x[3:]) for x in out if x.startswith("ok ")), default=0)
            stats["acknowledged"] += acked
            ids = [line.split("\t")[0] for line in lines]
            must.update(ids[:acked])
            if code is None:
                stats["killed"] += 1
                maybe.update(ids[acked:])
            elif code == 0:
                must.update(ids)
            else:
                problems.append(f"add exited {code}")
        else:
            stats["remove"] += 1
            sample = rng.sample(sorted(must), min(len(must), rng.randrange(1, 2_000)))
            code, _ = t.writer([args.bin, "index", "remove", index, "-"], sample)
            must.difference_update(sample)
            if code is None:
                stats["killed"] += 1
                maybe.update(sample)
            elif code == 0:
                stats["removed"] += len(sample)
                gone = set(sample)
                found = query(args.bin, index, [fps[i] for i in sample])
                back = [i for i in sample if i in found]
                if back:
                    problems.append(f"{len(back)} removed ids still there, e.g. {back[0]}")
                maybe.difference_update(gone)
            else:
                problems.append(f"remove exited {code}")
        # The index opens and holds what it must.
        st = run([args.bin, "index", "stats", index])
        if st.returncode != 0:
            problems.append("index does not open: " + st.stderr.decode(errors="replace").strip())
        else:
            entries = next(int(l.split("\t")[1]) for l in st.stdout.decode().splitlines() if l.startswith("entries\t"))
            if not len(must) <= entries <= len(must) + len(maybe):
                problems.append(f"{entries} entries, expected {len(must)} to {len(must) + len(maybe)}")
            found = query(args.bin, index, [fps[i] for i in must])
            lost = [i for i in must if i not in found]
            if lost:
                problems.append(f"{len(lost)} acknowledged ids lost, e.g. {lost[0]}")
        if crash_at:
            aimed[crash_at.split("@")[0]]["aborted" if code is None else "not reached"] += 1
        if problems:
            failed += 1
            print(f"trial {trial}: FAILED: " + "; ".join(problems))
        else:
            passed += 1
    print(f"trials: {stats['add']} adds, {stats['remove']} removes, {stats['merge']} merges, "
          f"{stats['killed']} killed mid-run; "
          f"{stats['acknowledged']} inserts acknowledged, {stats['removed']} removals completed; "
          f"{len(must)} ids checked present at the end")
    if aimed_trials:
        print("aimed: " + "; ".join(f"{p} {c['aborted']} aborted, {c['not reached']} not reached"
                                    for p, c in aimed.items()))
    if not args.keep and not args.dir:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def query(binary, index, fingerprints):
    """The ids an exact query of these fingerprints finds."""
    if not fingerprints:
        return set()
    out = run([binary, "index", "query", "-k", "0", index, "-"], ("\n".join(fingerprints) + "\n").encode())
    return {line.split("\t")[1] for line in out.stdout.decode().splitlines() if line.count("\t") >= 2}


if __name__ == "__main__":
    main()
