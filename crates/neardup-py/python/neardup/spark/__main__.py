"""``python -m neardup.spark dedup``: Parquet in, the deduplicated dataset and the cluster table out, on Spark.

Runs as it is (a local Spark on every core, or ``--master``) or under ``spark-submit`` (the master comes from
there)::

    python -m neardup.spark dedup --input corpus/ --output kept/ --table clusters/ --scheme minhash
    spark-submit --master spark://host:7077 "$(python -c 'import neardup.spark.__main__ as m; print(m.__file__)')" dedup ...
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

# The package, imported before this module, has pyspark or refused to import: these cost nothing more.
from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import neardup
import neardup.spark as ns

EPILOG = """\
The clusters equal `neardup dedup`'s on the same records and settings (the cluster table of
`neardup dedup --table`), whatever the partitions, executors or input order. Documents are grouped into
clusters safe to act on: each removed document is within the threshold of the kept one it names.

Outputs are directories of Parquet files (Spark writes one file per task): --output the kept records
(every column), --removed the removed records with duplicate_of and score, --table the cluster table
(id, cluster, representative, duplicate_of, score). A summary with the cluster-size distribution goes to
stderr; clusters larger than --warn-cluster-size are named.

Examples:
    python -m neardup.spark dedup --input corpus.parquet --output kept --table clusters
    python -m neardup.spark dedup --input shards/ --scheme simhash -k 3 --output kept --master local[8]
    spark-submit --master spark://10.0.0.1:7077 $(python -c 'import neardup.spark.__main__ as m; print(m.__file__)') \\
        dedup --input hdfs:///corpus --output hdfs:///kept --scheme minhash --threshold 0.8
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m neardup.spark",
        description="Near-duplicate clusters on Spark, equal to neardup dedup's.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    commands = p.add_subparsers(dest="command", required=True)
    d = commands.add_parser(
        "dedup",
        help="deduplicate Parquet records",
        description="Deduplicate Parquet records: the kept records, the removed ones and the cluster table.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    d.add_argument("--input", required=True, action="append", metavar="PATH",
                   help="Parquet file or directory of Parquet files (repeatable; any path Spark reads)")
    d.add_argument("--output", metavar="DIR", help="write the kept records here (Parquet, every column)")
    d.add_argument("--removed", metavar="DIR", help="write the removed records here, with duplicate_of and score")
    d.add_argument("--table", metavar="DIR", help="write the cluster table here")
    d.add_argument("--id-field", default="id", metavar="FIELD", help="the id column (dots reach into structs) [default: id]")
    d.add_argument("--text-field", default="text", metavar="FIELD", help="the text column [default: text]")
    d.add_argument("--scheme", default="minhash",
                   help="minhash (minhash-oph-v1), datasketch, wminhash-v1, pminhash-v1 or simhash-doc-v1 [default: minhash]")
    d.add_argument("-k", "--k", type=int, help="SimHash: the largest Hamming distance of a pair, 0 to 7 [default: 3]")
    d.add_argument("--threshold", type=float, help="MinHash: the similarity of a pair [default: 0.8]")
    d.add_argument("--verify", choices=["exact", "estimate", "none"],
                   help="how candidates are checked [default: exact for MinHash, none for SimHash]")
    d.add_argument("--measure", choices=["jaccard", "cosine"], help="SimHash with --verify exact: the measure [default: jaccard]")
    d.add_argument("--verify-ngram", type=int, metavar="N", help="SimHash with --verify exact --measure jaccard: word n-grams [default: 3]")
    d.add_argument("--clustering", choices=["centres", "components"], default="centres",
                   help="centres (every member within the threshold of its representative) or components [default: centres]")
    d.add_argument("--keep", choices=["smallest-id", "longest"], default="smallest-id",
                   help="which member of a cluster is kept [default: smallest-id]")
    d.add_argument("--num-perm", type=int, metavar="K", help="MinHash: values per signature [default: 128]")
    d.add_argument("--seed", type=int, help="MinHash: the permutations' seed [default: 0]")
    d.add_argument("--shingle", type=int, metavar="N", help="MinHash: word n-grams [default: 5]")
    d.add_argument("--char-shingle", type=int, metavar="N", help="MinHash: character n-grams instead")
    d.add_argument("--media", help="read every text as this medium (text, html, xml, pdf, epub) [default: text for strings, detected for binary]")
    d.add_argument("--warn-cluster-size", type=int, default=1000, metavar="N", help="name clusters larger than this [default: 1000]")
    d.add_argument("--partitions", type=int, metavar="N", help="shuffle partitions [default: the session's if set, else twice the cores or one per 50,000 documents, whichever is more]")
    d.add_argument("--max-rounds", type=int, default=64, metavar="N", help="give up connected components after N rounds [default: 64]")
    d.add_argument("--master", help="Spark master when not run by spark-submit [default: local[*]]")
    d.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting for the session this command starts (repeatable), e.g. spark.driver.memory=8g")
    d.add_argument("--checkpoint-dir", metavar="DIR", help="reliable checkpoints for the components (survive lost executors)")
    d.add_argument("--overwrite", action="store_true", help="replace existing output directories")
    d.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    d.add_argument("--strict", action="store_true", help="exit with status 1 when some documents could not be sketched")
    return p


def _first_line(error: BaseException) -> str:
    """The first line of an error's message (Spark's run on with the JVM's stack), or its type's name."""
    message = str(error).strip()
    return message.splitlines()[0] if message else type(error).__name__


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if not (args.output or args.removed or args.table):
        print("error: nothing to write: give --output, --removed or --table", file=sys.stderr)
        return 2
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # ns.dedup's arguments but the DataFrame, its columns and progress.
    options = dict(
        scheme=args.scheme, k=args.k, threshold=args.threshold, verify=args.verify, measure=args.measure,
        verify_ngram=args.verify_ngram, clustering=args.clustering, representative=args.keep, media=args.media,
        num_perm=args.num_perm, seed=args.seed, shingle=args.shingle, char_shingle=args.char_shingle,
        large_cluster=args.warn_cluster_size, max_rounds=args.max_rounds, partitions=args.partitions,
    )
    try:
        # Before the JVM starts (seconds): a setting that cannot run is refused at once.
        ns._checked_settings(**options)
    except (ValueError, neardup.Error) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    builder = SparkSession.builder.appName("neardup dedup")
    if args.master:
        builder = builder.master(args.master)
    for setting in args.conf:
        key, sep, value = setting.partition("=")
        if not sep:
            print(f"error: --conf {setting}: expected KEY=VALUE", file=sys.stderr)
            return 2
        builder = builder.config(key, value)
    # A session already running in this process (main() called from a notebook or a job) is used and left
    # running; a session this command starts, it stops. getOrCreate reuses a running context even where this
    # thread has no active session, and a Spark Connect session has no context: each test misses one.
    ours = SparkSession.getActiveSession() is None and SparkContext._active_spark_context is None
    try:
        spark = builder.getOrCreate()
    except PySparkException as e:
        # The JVM's launcher has printed its reason just above (no `java`, a master URL or setting it refused).
        print(
            f"error: Spark did not start: {_first_line(e).rstrip('.')}. The lines above say why: a --master or "
            "--conf value Spark refused, or no Java 17 or later (`java` on PATH or in JAVA_HOME)",
            file=sys.stderr,
        )
        return 2
    try:
        return _run(spark, args, options)
    finally:
        if ours:
            spark.stop()


def _run(spark, args: argparse.Namespace, options: dict) -> int:
    """The command in a running session: checks the paths, runs the job, writes the outputs and the summary;
    returns the exit status."""
    started = time.monotonic()
    jvm, jsc = spark.sparkContext._jvm, spark.sparkContext._jsc
    if jvm is None or jsc is None:
        # The paths are checked through Hadoop's file systems, in the driver's JVM.
        print("error: this command needs a Spark session with a JVM driver, not Spark Connect", file=sys.stderr)
        return 2
    hadoop = jsc.hadoopConfiguration()

    def qualified(path):
        p = jvm.org.apache.hadoop.fs.Path(path)
        return str(p.getFileSystem(hadoop).makeQualified(p)).rstrip("/")

    named = (("--output", args.output), ("--removed", args.removed), ("--table", args.table))
    outputs = [(option, path) for option, path in named if path]
    # An output directory that is, holds or lies inside an input or another output would be replaced (with
    # --overwrite, deleted before the job reads it; the table is written from checkpointed clusters, which no
    # longer name the input for Spark to refuse) or read as part of the input by the next run.
    places = [("--input", path, qualified(path)) for path in args.input]
    for option, path in outputs:
        mine = qualified(path)
        for other_option, other, theirs in places:
            if mine == theirs or theirs.startswith(mine + "/") or mine.startswith(theirs + "/"):
                print(
                    f"error: {option} {path} and {other_option} {other} overlap (one is, holds or lies inside the "
                    "other): write each output to a directory of its own, outside the inputs",
                    file=sys.stderr,
                )
                return 2
        places.append((option, path, mine))
    if args.checkpoint_dir:
        # Spark writes its checkpoints in a directory of their own below it: beside the inputs and outputs is
        # fine, inside one is not (the next run reads them as input, or an overwrite deletes them mid-job).
        mine = qualified(args.checkpoint_dir)
        for other_option, other, theirs in places:
            if mine == theirs or mine.startswith(theirs + "/"):
                print(
                    f"error: --checkpoint-dir {args.checkpoint_dir} is or lies inside {other_option} {other}: "
                    "give Spark's checkpoints a directory outside the inputs and outputs",
                    file=sys.stderr,
                )
                return 2
        spark.sparkContext.setCheckpointDir(args.checkpoint_dir)
    if not args.overwrite:
        # Refuse before the job, not after it: Spark would only find out when it writes.
        for option, path in outputs:
            p = jvm.org.apache.hadoop.fs.Path(path)
            if p.getFileSystem(hadoop).exists(p):
                print(f"error: {option} {path} already exists (--overwrite replaces it)", file=sys.stderr)
                return 2
    try:
        df = spark.read.parquet(*args.input)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clusters = ns.dedup(
                df,
                text_col=args.text_field,
                id_col=args.id_field,
                progress=None if args.quiet else lambda line: print(line, file=sys.stderr, flush=True),
                **options,
            )
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
        unsketched = any(issubclass(w.category, ns.UnsketchedWarning) for w in caught)
        mode = "overwrite" if args.overwrite else "errorifexists"
        if args.table:
            clusters.write.mode(mode).parquet(args.table)
        if args.output:
            ns.filter(df, clusters, id_col=args.id_field).write.mode(mode).parquet(args.output)
        if args.removed:
            removed = clusters.where(F.col("duplicate_of").isNotNull()).select(
                F.col("id").alias("__neardup_id"), "duplicate_of", "score"
            )
            df.join(ns._small(removed), F.col(args.id_field).cast("string") == F.col("__neardup_id")).drop(
                "__neardup_id"
            ).write.mode(mode).parquet(args.removed)
        report = ns.cluster_report(clusters, args.warn_cluster_size)
        documents = df.count()
    except (ValueError, neardup.Error, ns.NotConverged, PySparkException) as e:
        # Spark's own messages (a path that exists, a column that does not) come first in theirs.
        print(f"error: {_first_line(e)}", file=sys.stderr)
        return 2
    elapsed = time.monotonic() - started
    sizes = ", ".join(f"{lo}-{hi}: {n}" if lo != hi else f"{lo}: {n}" for lo, hi, n in report["sizes"])
    print(
        f"{documents} documents, {report['clusters']} clusters, {report['duplicates']} duplicates removed "
        f"in {elapsed:.1f} s" + (f"; cluster sizes {sizes}" if sizes else ""),
        file=sys.stderr,
    )
    if report["largest"]:
        largest = ", ".join(f"{rep} ({size})" for rep, size in report["largest"])
        print(f"largest clusters: {largest}", file=sys.stderr)
    return 1 if (unsketched and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
