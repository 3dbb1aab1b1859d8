#!/usr/bin/env python3
"""Benchmark of the Python package against its peers (datasketch, rensa) and the `neardup` command, in one run.

    python benches/python/bench.py [--mb 100] [--lsh-n 1000000] [--repeat 3] [--neardup-bin target/release/neardup]

Run it with a Python that has the release wheel and the peers installed:

    python3 -m venv /tmp/bench && /tmp/bench/bin/pip install ./crates/neardup-py pyarrow datasketch==2.0.0 rensa
    cargo build --release -p neardup-cli
    /tmp/bench/bin/python benches/python/bench.py

Text is the first --mb megabytes (of text, UTF-8) of ../shared/eval/corpus (needs the `zstd` command). Every
measurement runs in its own process; the rows take turns, one run each a round, for --repeat rounds, so that a
slow spell of a shared machine falls on all of them alike. Each process first does the same work on the first
1 % of its input, untimed, so that what a process pays once (thread pools, allocator arenas, tables built on
first use: 0.1-0.2 s for neardup on two cores) is not timed. The table gives medians and each row's ratio to
the rows it is compared with. What is timed:

1. **MinHash from text**: a 128-value signature of every document's word 5-grams, text already in memory.
   datasketch and rensa with their usual Python shingling (`re` words of the lower-cased text, joined by spaces):
   `datasketch.MinHash.update_batch` per document, rensa's `RMinHash.update` per document and its batch
   `RMinHash.digest_matrix_from_token_sets` (1,000 documents a call). neardup three ways: the drop-in
   (`neardup.datasketch.MinHash.update_batch`, the same Python shingling: its signatures must equal
   datasketch's, and are checked), and natively from text with `neardup.sketches` (its own Unicode tokenizer,
   all cores and one thread) for `minhash-datasketch-affine32` (datasketch's values) and `minhash-oph-v1`,
   from the list of `str` and (the last row) from a `pyarrow.large_string` array made before the clock starts,
   as text read from Parquet arrives.
2. **MinHashLSH**: --lsh-n signatures (pairs of token sets 18/22 alike), bands 16 x 8, threshold 0.8: insert
   every one, then query every one. datasketch and `neardup.datasketch` index the same `LeanMinHash` values
   (and must answer the same); rensa its own `RMinHash` of the same token sets, one by one and in its batch
   calls (`insert_many`, `query_all`). Building the signatures is not timed.
3. **dedup**: the whole process, JSONL in, cluster table (Parquet) out: `neardup dedup --jsonl FILE --table
   T.parquet` against `python -c "neardup.dedup(...)"` reading the same file with pyarrow and writing the same
   table, for simhash-doc-v1 (k = 3) and minhash-oph-v1 (threshold 0.8), all cores; the `neardup.dedup`
   call alone (the Arrow column in, the table out), timed inside the Python process; and the whole process
   with `neardup.dedup_files` reading the JSONL itself, as the CLI does.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "eval" / "corpus"
WORD = re.compile(r"\w+")
NUM_PERM = 128
LSH_BANDS, LSH_ROWS = 16, 8


def shingles(text, n=5):
    """Word 5-grams as the peers' users write them (text-dedup, rensa's and datasketch's examples)."""
    tokens = WORD.findall(text.lower())
    if len(tokens) < n:
        return [" ".join(tokens)] if tokens else []
    return [" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def load_texts(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


# --- workers: each runs in its own process and prints one JSON line ------------------------------------------

def minhash_worker(peer, corpus, repeat):
    texts = load_texts(corpus)
    column = None
    if peer.startswith("neardup.sketches-arrow:"):
        # Text already in Arrow, as read from Parquet: the column is made before the clock starts.
        import pyarrow
        column = pyarrow.array(texts, type=pyarrow.large_string())
    # One untimed pass over the first 1 % first, for every row: what a process pays once (thread pools,
    # allocator arenas, lazily built tables) is not the work being compared.
    warm = len(texts) // 100
    minhash_of(peer, texts[:warm], None if column is None else column.slice(0, warm))
    times, digest = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        sigs = minhash_of(peer, texts, column)
        times.append(time.perf_counter() - start)
        if peer in ("datasketch", "neardup.datasketch"):
            import hashlib
            import numpy as np
            digest = hashlib.sha1(np.asarray(sigs, dtype=np.uint64).tobytes()).hexdigest()
        del sigs
    print(json.dumps({"times": times, "docs": len(texts), "digest": digest}))


def minhash_of(peer, texts, column):
    """The signatures of `texts` (or of the Arrow `column` holding them) as `peer` makes them."""
    if peer in ("datasketch", "neardup.datasketch"):
        if peer == "datasketch":
            import datasketch as lib
        else:
            from neardup import datasketch as lib
        sigs = []
        for t in texts:
            m = lib.MinHash(num_perm=NUM_PERM)
            m.update_batch([s.encode("utf-8") for s in shingles(t)])
            sigs.append(m.hashvalues)
        return sigs
    if peer == "rensa":
        import rensa
        sigs = []
        for t in texts:
            m = rensa.RMinHash(NUM_PERM, 42)
            m.update(shingles(t))
            sigs.append(m.digest())
        return sigs
    if peer == "rensa-batch":
        import rensa
        return [rensa.RMinHash.digest_matrix_from_token_sets([shingles(t) for t in texts[i:i + 1000]], NUM_PERM, 42)
                for i in range(0, len(texts), 1000)]
    if peer.startswith("neardup.sketches"):
        import neardup
        source = column if column is not None else texts
        return [neardup.sketches(source, scheme=peer.split(":", 1)[1], num_perm=NUM_PERM, errors="zero")]
    raise SystemExit(f"unknown peer {peer}")


def lsh_token_sets(n):
    """n token sets of 20 tokens; every odd one is the even one before it with 2 tokens replaced (Jaccard 18/22)."""
    import numpy as np
    rng = np.random.default_rng(7)
    tokens = rng.integers(0, 1 << 40, size=(n, 20), dtype=np.uint64)
    tokens[1::2] = tokens[0::2][: n // 2]
    tokens[1::2, :2] = rng.integers(0, 1 << 40, size=(n // 2, 2), dtype=np.uint64)
    return tokens


def lsh_worker(peer, values_path, n, repeat):
    import numpy as np
    if peer in ("datasketch", "neardup.datasketch", "neardup.datasketch-session"):
        lib = lsh_library(peer)
        values = np.load(values_path)
        sigs = [lib.LeanMinHash(seed=1, hashvalues=row, scheme="affine32") for row in values]
        del values
    elif peer in ("rensa", "rensa-batch"):
        import rensa
        token_sets = [[str(t) for t in row] for row in lsh_token_sets(n)]
        sigs = rensa.RMinHash.from_token_sets(token_sets, NUM_PERM, 42)
        del token_sets
    else:
        raise SystemExit(f"unknown peer {peer}")
    # An untimed index of the first 1 % first, as in the MinHash part.
    lsh_run(peer, sigs[: len(sigs) // 100])
    times, answers = [], None
    for _ in range(repeat):
        insert, query, answers = lsh_run(peer, sigs)
        times.append({"insert": insert, "query": query, "total": insert + query})
    print(json.dumps({"times": times, "answers": answers}))


def lsh_library(peer):
    if peer == "datasketch":
        import datasketch
        return datasketch
    from neardup import datasketch
    return datasketch


def lsh_run(peer, sigs):
    """Inserts every signature into a new index of `peer`'s, then queries every one: the seconds of each,
    and the number of answers."""
    if peer in ("rensa", "rensa-batch"):
        import rensa
        lsh = rensa.RMinHashLSH(0.8, NUM_PERM, LSH_BANDS)
        start = time.perf_counter()
        if peer == "rensa":
            for i, m in enumerate(sigs):
                lsh.insert(i, m)
            inserted = time.perf_counter()
            answers = sum(len(lsh.query(m)) for m in sigs)
        else:
            lsh.insert_many(sigs)
            inserted = time.perf_counter()
            answers = sum(len(a) for a in lsh.query_all(sigs))
    else:
        lsh = lsh_library(peer).MinHashLSH(threshold=0.8, num_perm=NUM_PERM, params=(LSH_BANDS, LSH_ROWS))
        start = time.perf_counter()
        if peer.endswith("-session"):
            with lsh.insertion_session() as session:
                for i, m in enumerate(sigs):
                    session.insert(i, m)
        else:
            for i, m in enumerate(sigs):
                lsh.insert(i, m)
        inserted = time.perf_counter()
        answers = sum(len(lsh.query(m)) for m in sigs)
    end = time.perf_counter()
    return inserted - start, end - inserted, answers


DEDUP_PY = """
import sys, time, pyarrow.json, pyarrow.parquet, neardup
table = pyarrow.json.read_json(sys.argv[1], read_options=pyarrow.json.ReadOptions(block_size=64 << 20))
scheme = sys.argv[3]
start = time.perf_counter()
result = neardup.dedup(table["text"], ids=table["id"], scheme=scheme)
print(time.perf_counter() - start)
pyarrow.parquet.write_table(result, sys.argv[2])
"""

DEDUP_FILES_PY = """
import sys, pyarrow.parquet, neardup
pyarrow.parquet.write_table(neardup.dedup_files(sys.argv[1], sys.argv[3]), sys.argv[2])
"""


# --- the driver ------------------------------------------------------------------------------------------------

def prepare_corpus(workdir, mb):
    path = workdir / f"corpus-{mb}mb.jsonl"
    if path.exists():
        return path
    if not CORPUS.is_dir():
        raise SystemExit(f"{CORPUS} is absent: this benchmark reads ../shared/eval/corpus")
    budget, total = mb * 1_000_000, 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        for shard in sorted(CORPUS.glob("corpus-*.jsonl.zst")):
            proc = subprocess.Popen(["zstd", "-dc", str(shard)], stdout=subprocess.PIPE, text=True, encoding="utf-8")
            for line in proc.stdout:
                record = json.loads(line)
                out.write(json.dumps({"id": record["id"], "text": record["text"]}, ensure_ascii=False) + "\n")
                total += len(record["text"].encode("utf-8"))
                if total >= budget:
                    break
            proc.kill()
            proc.wait()
            if total >= budget:
                break
    tmp.rename(path)
    return path


def run_worker(args, env=None):
    out = subprocess.run([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True, check=True,
                         env={**os.environ, **(env or {})})
    return json.loads(out.stdout.strip().splitlines()[-1])


def in_turns(rows, worker_args, repeat, part):
    """Runs each row's worker (`rows`: (peer, label, environment)) once a round, the rows in turn, for `repeat`
    rounds, and gives each label its worker's result with the times of every round. On a shared machine
    whose speed drifts over minutes, a slow spell then falls on every row alike, not on the rows that
    happened to run during it: the ratios compare runs made under the same conditions."""
    measured = {}
    for round_number in range(1, repeat + 1):
        for peer, label, env in rows:
            print(f"{part}: {label} (round {round_number} of {repeat}) ...", file=sys.stderr, flush=True)
            result = run_worker(worker_args(peer), env)
            if label in measured:
                if result.get("answers", result.get("digest")) != measured[label].get(
                        "answers", measured[label].get("digest")):
                    raise SystemExit(f"{part}: {label} gave another result in round {round_number}")
                result["times"] = measured[label]["times"] + result["times"]
            measured[label] = result
    return measured


def wall(cmd, env=None):
    """The command's wall time, and the last line it printed (what a script measured inside)."""
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env={**os.environ, **(env or {})})
    lines = out.stdout.strip().splitlines()
    return time.perf_counter() - start, (lines[-1] if lines else "")


def bench_minhash(corpus, mb, repeat, results):
    rows = [
        ("datasketch", "datasketch", {}),
        ("rensa", "rensa", {}),
        ("rensa-batch", "rensa batch", {}),
        ("neardup.datasketch", "neardup.datasketch (drop-in)", {}),
        ("neardup.sketches:minhash-datasketch-affine32", "neardup.sketches datasketch scheme, 1 thread",
         {"RAYON_NUM_THREADS": "1"}),
        ("neardup.sketches:minhash-datasketch-affine32", "neardup.sketches datasketch scheme, all cores", {}),
        ("neardup.sketches:minhash-oph-v1", "neardup.sketches minhash-oph-v1, 1 thread", {"RAYON_NUM_THREADS": "1"}),
        ("neardup.sketches:minhash-oph-v1", "neardup.sketches minhash-oph-v1, all cores", {}),
        ("neardup.sketches-arrow:minhash-oph-v1", "the same, text already in a pyarrow array, all cores", {}),
    ]
    measured = in_turns(rows, lambda peer: ["_minhash", peer, str(corpus), "1"], repeat, "minhash")
    if measured["datasketch"]["digest"] != measured["neardup.datasketch (drop-in)"]["digest"]:
        raise SystemExit("neardup.datasketch's signatures differ from datasketch's")
    print(f"\n## MinHash from text: {mb} MB, {measured['datasketch']['docs']:,} documents, {NUM_PERM} values, "
          f"word 5-grams (median of {repeat} rounds, the rows in turns)\n")
    print("| | seconds | MB/s | vs datasketch | vs rensa | vs rensa batch |")
    print("|---|---:|---:|---:|---:|---:|")
    base = {k: statistics.median(measured[k]["times"]) for k in ("datasketch", "rensa", "rensa batch")}
    for label, r in measured.items():
        t = statistics.median(r["times"])
        print(f"| {label} | {t:.2f} | {mb / t:.1f} | {base['datasketch'] / t:.1f}x | {base['rensa'] / t:.2f}x "
              f"| {base['rensa batch'] / t:.2f}x |")
        results[f"minhash/{label}"] = t


def bench_lsh(workdir, n, repeat, results):
    import numpy as np
    from neardup import datasketch as nd
    values_path = workdir / f"lsh-{n}.npy"
    if not values_path.exists():
        tokens = lsh_token_sets(n)
        values = np.empty((n, NUM_PERM), dtype=np.uint32)
        for i, row in enumerate(tokens):
            m = nd.MinHash(num_perm=NUM_PERM)
            m.update_batch([str(t).encode() for t in row])
            values[i] = m.hashvalues
        np.save(values_path, values)
    # The values neardup.datasketch computed are datasketch's: check a sample against datasketch itself.
    import datasketch
    values = np.load(values_path, mmap_mode="r")
    for i, row in enumerate(lsh_token_sets(n)[:200]):
        m = datasketch.MinHash(num_perm=NUM_PERM)
        m.update_batch([str(t).encode() for t in row])
        if not np.array_equal(m.hashvalues, values[i]):
            raise SystemExit(f"signature {i} differs from datasketch's")
    rows = [("datasketch", "datasketch", {}), ("rensa", "rensa", {}), ("rensa-batch", "rensa batch", {}),
            ("neardup.datasketch", "neardup.datasketch (drop-in)", {}),
            ("neardup.datasketch-session", "neardup.datasketch, insertion_session", {})]
    measured = in_turns(rows, lambda peer: ["_lsh", peer, str(values_path), str(n), "1"], repeat, "lsh")
    if measured["datasketch"]["answers"] != measured["neardup.datasketch (drop-in)"]["answers"]:
        raise SystemExit("neardup.datasketch's MinHashLSH answers differ from datasketch's")
    print(f"\n## MinHashLSH: {n:,} signatures, {LSH_BANDS} bands x {LSH_ROWS} rows, insert all then query all "
          f"(median of {repeat} rounds, the rows in turns)\n")
    print("| | insert s | query s | total s | answers | vs datasketch | vs rensa | vs rensa batch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    med = {label: {k: statistics.median(t[k] for t in r["times"]) for k in ("insert", "query", "total")}
           for label, r in measured.items()}
    for label, m in med.items():
        print(f"| {label} | {m['insert']:.2f} | {m['query']:.2f} | {m['total']:.2f} | {measured[label]['answers']:,} "
              f"| {med['datasketch']['total'] / m['total']:.1f}x | {med['rensa']['total'] / m['total']:.2f}x "
              f"| {med['rensa batch']['total'] / m['total']:.2f}x |")
        results[f"lsh/{label}"] = m


def bench_dedup(corpus, workdir, binary, mb, repeat, results):
    print(f"\n## dedup: {mb} MB of JSONL to a Parquet cluster table, whole process, all cores "
          f"(median of {repeat})\n")
    print("| scheme | CLI s | Python s | Python / CLI | the `neardup.dedup` call s | call / CLI "
          "| Python, `dedup_files` s | `dedup_files` / CLI |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for scheme in ("simhash-doc-v1", "minhash-oph-v1"):
        cli, py, call, files = [], [], [], []
        for _ in range(repeat):
            print(f"dedup: {scheme} ...", file=sys.stderr, flush=True)
            cli.append(wall([binary, "dedup", "--jsonl", str(corpus), "--scheme", scheme,
                             "--table", str(workdir / "cli.parquet")])[0])
            t, inside = wall([sys.executable, "-c", DEDUP_PY, str(corpus), str(workdir / "py.parquet"), scheme])
            py.append(t)
            call.append(float(inside))
            files.append(wall([sys.executable, "-c", DEDUP_FILES_PY, str(corpus), str(workdir / "files.parquet"),
                               scheme])[0])
        import pyarrow.parquet as pq
        # The CLI's table has the clustered documents; Python's has every document (cluster null if none).
        fields = ("id", "cluster", "representative", "duplicate_of")
        a = pq.read_table(workdir / "cli.parquet")
        for name in ("py.parquet", "files.parquet"):
            b = pq.read_table(workdir / name)
            b = b.filter(b["cluster"].is_valid())
            if sorted(zip(*(a[c].to_pylist() for c in fields))) != sorted(zip(*(b[c].to_pylist() for c in fields))):
                raise SystemExit(f"{scheme}: Python's clusters ({name}) differ from the CLI's")
        c, p, d, f = (statistics.median(x) for x in (cli, py, call, files))
        print(f"| {scheme} | {c:.2f} | {p:.2f} | {p / c:.2f} | {d:.2f} | {d / c:.2f} | {f:.2f} | {f / c:.2f} |")
        results[f"dedup/{scheme}"] = {"cli": c, "python": p, "call": d, "dedup_files": f}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "_minhash":
        return minhash_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    if len(sys.argv) > 1 and sys.argv[1] == "_lsh":
        return lsh_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=100, help="megabytes of text (default 100)")
    ap.add_argument("--lsh-n", type=int, default=1_000_000, help="signatures in the LSH benchmark (default 10^6)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; medians are shown")
    ap.add_argument("--neardup-bin", default=str(ROOT / "target" / "release" / "neardup"))
    ap.add_argument("--only", default="minhash,lsh,dedup", help="comma-separated parts to run")
    ap.add_argument("--workdir", default=str(ROOT / "target" / "bench-python"))
    ap.add_argument("--out", help="also write the medians as JSON here")
    args = ap.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    parts = set(args.only.split(","))
    corpus = prepare_corpus(workdir, args.mb)
    results = {}
    if "minhash" in parts:
        bench_minhash(corpus, args.mb, args.repeat, results)
    if "lsh" in parts:
        bench_lsh(workdir, args.lsh_n, args.repeat, results)
    if "dedup" in parts:
        bench_dedup(corpus, workdir, args.neardup_bin, args.mb, args.repeat, results)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
