#!/usr/bin/env python3
"""The Spark job against the `neardup` command on the same records, in one run: documents per second per core.

    python benches/spark/bench.py [--mb 100] [--short 10000000] [--cores 1 2] [--scheme minhash]
                                  [--neardup-bin target/release/neardup] [--work /tmp/neardup-spark-bench]

Run it with a Python that has the release wheel, pyarrow and pyspark 4 (and Java 17):

    python3 -m venv /tmp/bench && /tmp/bench/bin/pip install "./crates/neardup-py[spark]"
    cargo build --release -p neardup-cli
    /tmp/bench/bin/python benches/spark/bench.py

Two datasets, written once as Parquet under --work: the first --mb megabytes of text of ../shared/eval/corpus
(needs `zstd`), and --short generated short documents (20 to 40 words of a 50,000-word vocabulary, Zipf-like)
with planted near-duplicates: 10% are edits of an earlier document (one to three words replaced) and 2% exact
copies. For each dataset and each core count C, timed as whole processes:

1. **CLI**: `neardup dedup DATA.parquet --output kept.parquet --table table.parquet -j C`;
2. **Spark job**: `python -m neardup.spark dedup --input DATA --output kept --table table --master local[C]`
   (the JVM's start included), whose table must equal the CLI's;
3. **Spark signing and banding**: stages 1 and 3 alone (sketch, profile, node key, band keys, on the
   executors), counted, on a session already started.

Figures are documents per second per core (documents / seconds / C) and each Spark row's ratio to the CLI at
the same C. --driver-memory (default 12g) is the local session's heap: local mode runs executors in the driver.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "eval" / "corpus"


def corpus_parquet(path: Path, mb: int) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.exists():
        return pq.ParquetFile(path).metadata.num_rows
    ids, texts, size = [], [], 0
    for shard in sorted(CORPUS.glob("corpus-*.jsonl.zst")):
        proc = subprocess.Popen(["zstd", "-dc", str(shard)], stdout=subprocess.PIPE)
        for line in proc.stdout:
            record = json.loads(line)
            ids.append(str(record["id"]))
            texts.append(record["text"])
            size += len(record["text"].encode())
            if size >= mb << 20:
                break
        proc.kill()
        proc.wait()
        if size >= mb << 20:
            break
    pq.write_table(pa.table({"id": ids, "text": texts}), path)
    return len(ids)


def short_parquet(path: Path, n: int) -> int:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.exists():
        return pq.ParquetFile(path).metadata.num_rows
    rng = np.random.default_rng(11)
    vocabulary = np.array([f"w{i}" for i in range(50_000)], dtype=object)
    writer = None
    chunk = 1_000_000
    made: list[list[int]] = []
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        lengths = rng.integers(20, 41, m)
        words = np.minimum(rng.zipf(1.3, lengths.sum()) - 1, 49_999)
        docs = np.split(words, np.cumsum(lengths)[:-1])
        kind = rng.random(m)
        texts = []
        for i, doc in enumerate(docs):
            if made and kind[i] < 0.12:
                earlier = list(made[rng.integers(len(made))])
                if kind[i] >= 0.02:  # an edit: one to three words replaced
                    for _ in range(rng.integers(1, 4)):
                        earlier[rng.integers(len(earlier))] = int(rng.integers(50_000))
                doc = earlier
            doc = list(doc)
            if len(made) < 200_000:
                made.append(doc)
            elif rng.random() < 0.01:
                made[rng.integers(len(made))] = doc
            texts.append(" ".join(vocabulary[doc]))
        table = pa.table({"id": [f"s{start + i:09d}" for i in range(m)], "text": texts})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()
    return n


def timed(cmd: list[str], env=None) -> float:
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return elapsed


def table_rows(path: Path):
    import pyarrow.parquet as pq

    t = pq.read_table(path).to_pylist()
    return sorted(
        (r["id"], r["cluster"], r["representative"], r["duplicate_of"],
         None if r["score"] is None else round(r["score"], 12))
        for r in t
    )


SIGN_AND_BAND = """
import os, sys, time
from pyspark.sql import SparkSession
from neardup.spark import _stages
import neardup
data, cores, scheme, memory = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
spark = (SparkSession.builder.master(f"local[{cores}]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", memory).getOrCreate())
df = spark.read.parquet(data)
settings = {"scheme": scheme}
started = time.monotonic()
signed = df.select("id", "text").mapInArrow(_stages.sign(settings), _stages.SIGNED)
nodes = signed.where("error is null").select("node", "sketch")
n = nodes.mapInArrow(_stages.buckets(settings, 8 * 2 * cores), _stages.BUCKETS).count()
print(time.monotonic() - started, n)
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=int, default=100)
    p.add_argument("--short", type=int, default=10_000_000)
    p.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    p.add_argument("--scheme", default="minhash")
    p.add_argument("--neardup-bin", default=str(ROOT / "target" / "release" / "neardup"))
    p.add_argument("--work", default="/tmp/neardup-spark-bench")
    p.add_argument("--driver-memory", default="12g")
    p.add_argument("--only", choices=["corpus", "short"], help="one dataset")
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    datasets = []
    if args.only in (None, "corpus"):
        datasets.append((f"eval corpus, {args.mb} MB", work / f"corpus-{args.mb}mb.parquet",
                         lambda path: corpus_parquet(path, args.mb)))
    if args.only in (None, "short"):
        datasets.append((f"{args.short:,} short documents", work / f"short-{args.short}.parquet",
                         lambda path: short_parquet(path, args.short)))
    results = []
    for name, data, make in datasets:
        n = make(data)
        print(f"# {name}: {n:,} documents ({data})", flush=True)
        for cores in args.cores:
            out = work / f"out-{data.stem}-{cores}"
            subprocess.run(["rm", "-rf", str(out)], check=True)
            out.mkdir(parents=True)
            cli = timed([args.neardup_bin, "dedup", str(data), "--scheme", args.scheme, "-j", str(cores),
                         "--output", str(out / "cli-kept.parquet"), "--table", str(out / "cli-table.parquet")])
            print(f"  CLI: {cli:.1f} s", flush=True)
            job = timed([sys.executable, "-m", "neardup.spark", "dedup", "--input", str(data), "--scheme",
                         args.scheme, "--master", f"local[{cores}]", "--quiet", "--output", str(out / "kept"),
                         "--table", str(out / "table"), "--conf", f"spark.driver.memory={args.driver_memory}"],
                        env=env)
            print(f"  Spark job: {job:.1f} s", flush=True)
            same = table_rows(out / "cli-table.parquet") == table_rows(out / "table")
            sign = subprocess.run([sys.executable, "-c", SIGN_AND_BAND, str(data), str(cores), args.scheme,
                                   args.driver_memory], capture_output=True, text=True, env=env)
            if sign.returncode != 0:
                sys.exit(sign.stderr[-3000:])
            sign_s = float(sign.stdout.split()[0])
            row = dict(dataset=name, documents=n, cores=cores, cli_s=cli, spark_s=job, sign_band_s=sign_s,
                       same_clusters=same)
            results.append(row)
            per_core = lambda s: n / s / cores  # noqa: E731
            print(
                f"{name}, {cores} core(s): CLI {cli:.1f} s ({per_core(cli):,.0f} docs/s/core); Spark job "
                f"{job:.1f} s ({per_core(job):,.0f} docs/s/core, {job / cli:.2f}x the CLI's time); signing and "
                f"banding {sign_s:.1f} s ({per_core(sign_s):,.0f} docs/s/core); same clusters: {same}",
                flush=True,
            )
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
