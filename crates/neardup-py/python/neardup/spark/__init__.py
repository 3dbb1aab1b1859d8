"""neardup.spark: near-duplicate clusters of a Spark DataFrame, exactly those of one machine.

``neardup.spark.dedup(df, text_col="text", id_col="id", scheme="minhash", threshold=0.8)`` (or
``scheme="simhash-doc-v1", k=3``) returns a DataFrame with the CLI's cluster table: one row per document in a
cluster of two or more, with ``id``, ``cluster``, ``representative`` (the id kept), ``duplicate_of`` (for a
removed document, the kept id it duplicates; null for the kept one) and ``score``. ``neardup.spark.filter(df,
clusters)`` is the deduplicated dataset. ``python -m neardup.spark dedup --input … --output …`` (also under
``spark-submit``) does both from Parquet to Parquet.

**The same answer everywhere.** On the same input and settings the clusters, representatives, ``duplicate_of``
and scores equal ``neardup dedup``'s and ``neardup.dedup``'s, for any number of partitions and executors and
any input order. The job runs the engine's distributed stages (``neardup::dedup::distributed``):

1. **sign** (``mapInArrow``, the wheel on the executors): each document's sketch, its exact profile (the
   shingle hashes, when candidates are verified exactly) and its length; the signed rows stay where they were
   signed (persisted) and are never shuffled whole;
2. **nodes**: documents with identical sketches and profiles are one node, named by a 16-byte key (a SHA-256
   digest of both, made when signing); only the keys are shuffled, to count each node's copies (in the
   buckets' shuffle: each document has a row in its node's copy bucket);
3. **buckets**: each node's LSH band keys (the same 64-bit keys as one machine's), or for SimHash its key
   prefix in each table of Manku's block-permuted design: one shuffle groups every table and band;
4. **pairs**: nodes sharing a bucket are candidates; the candidates' sketches and profiles (the profiles' bytes
   are the cost of exact verification) are picked out of the signed rows, once per node, joined to the
   candidates and judged by the engine. A MinHash bucket of more than a few nodes (n near-copies of one
   document share buckets of n(n−1)/2 pairs) is not listed pair by pair: its nodes meet in one task, where
   the engine judges about one pair per node into edges that connect what all of its pairs connect. SimHash
   without a check has nothing to judge (its buckets' pairs within k are the pairs): each bucket gives only
   those that join its nodes into its connected sets;
5. **components** of the pairs: large-star / small-star with minimum labels, iterated until the edges are
   its fixed point (checked after every round), each round checkpointed;
6. **clusters**: each component's documents (and each node's copies) together in one task, clustered by the
   engine itself (safe centres by default: every member within the threshold of its representative);
7. **numbers**: clusters numbered in the order of their representatives, as on one machine.

Executors need the ``neardup`` wheel installed (with ``pyarrow`` and ``numpy``), as any Python UDF needs its
packages: ``pip install neardup`` on every worker, or ship a packed environment with ``spark.archives``.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable, Optional

from .. import _optional_module

# Checked here, where every import of the package passes, before the modules below import pyspark.
_optional_module(
    "pyspark",
    "neardup.spark needs pyspark 4 (and Java 17 or later): pip install 'pyspark>=4,<5' pandas pyarrow, "
    "or install neardup with them: pip install './crates/neardup-py[spark]'",
    needed_by=__name__,
)

from .. import _native
from ._components import NotConverged

__all__ = ["dedup", "filter", "cluster_report", "NotConverged", "UnsketchedWarning"]


class UnsketchedWarning(RuntimeWarning):
    """Some documents could not be sketched (empty, no words, broken): they are kept alone."""


def _check_ids(docs) -> None:
    """Refuses null and repeated ids: their clusters could not be told apart."""
    from pyspark.sql import functions as F

    bad = docs.groupBy("id").count().where(F.col("id").isNull() | (F.col("count") > 1)).limit(1).collect()
    if bad:
        row = bad[0]
        if row["id"] is None:
            raise ValueError(f"{row['count']} documents have a null id: every document needs one")
        raise ValueError(f"the id {row['id']!r} is used by {row['count']} documents: ids must be unique")


def _report_failures(signed, errors: str) -> int:
    from pyspark.sql import functions as F

    failed = signed.where(F.col("error").isNotNull())
    count = failed.count()
    if count:
        first = failed.orderBy("id").select("id", "error").first()
        message = (
            f"{count} {'document' if count == 1 else 'documents'} could not be sketched (kept alone); the first "
            f"by id, {first['id']!r}: {first['error']}"
        )
        if errors == "raise":
            raise _native.Error(message)
        warnings.warn(message, UnsketchedWarning, stacklevel=4)  # the caller of dedup
    return count


def dedup(
    df,
    text_col: str = "text",
    id_col: str = "id",
    scheme: str = "minhash",
    *,
    k: Optional[int] = None,
    threshold: Optional[float] = None,
    verify: Optional[str] = None,
    measure: Optional[str] = None,
    verify_ngram: Optional[int] = None,
    clustering: str = "centres",
    representative: str = "smallest-id",
    media: Optional[str] = None,
    num_perm: Optional[int] = None,
    seed: Optional[int] = None,
    shingle: Optional[int] = None,
    char_shingle: Optional[int] = None,
    errors: str = "keep",
    large_cluster: int = 1000,
    max_rounds: int = 64,
    partitions: Optional[int] = None,
    progress: Optional[Callable[[str], None]] = None,
):
    """The near-duplicate clusters of ``df``, as a DataFrame of the CLI's cluster table.

    ``text_col`` holds text (``string``: taken as it is) or documents (``binary``: any medium, detected, or
    ``media=``); ``id_col`` unique ids (integers are compared as their decimal text, as the CLI does).
    ``scheme``: ``minhash`` (``minhash-oph-v1``), ``datasketch``, ``wminhash-v1``, … with ``threshold``
    (default 0.8), verified exactly by default (``verify="estimate"`` or ``"none"``); or ``simhash-doc-v1``
    with ``k`` (default 3; ``verify="exact"`` also checks ``measure`` at ``threshold``, as ``neardup dedup
    --verify exact``). ``clustering="centres"`` (default) keeps every member within the threshold of its
    representative; ``"components"`` gives connected components. ``representative``: ``"smallest-id"``
    (default) or ``"longest"`` (input order has no meaning across machines).

    Returns ``id string, cluster long, representative string, duplicate_of string, score double``: one row per
    document in a cluster of two or more (documents alone are not listed). Documents that cannot be sketched
    are kept alone with a warning (``errors="raise"`` raises). Clusters larger than ``large_cluster`` are named
    in a warning. ``partitions`` sets the job's shuffle partitions (default: the session's
    ``spark.sql.shuffle.partitions`` when it was set, else twice the default parallelism, or one per 50,000
    documents when that is more: Spark's default of 200 makes small jobs several times slower, and too few
    partitions make large ones run out of memory; after the candidates, the same rule on the rows left).
    ``progress`` is called with a line as each stage finishes (``print`` will do).
    """
    settings, stages = _checked_settings(
        scheme=scheme, k=k, threshold=threshold, verify=verify, measure=measure, verify_ngram=verify_ngram,
        clustering=clustering, representative=representative, media=media, num_perm=num_perm, seed=seed,
        shingle=shingle, char_shingle=char_shingle, errors=errors, large_cluster=large_cluster,
        max_rounds=max_rounds, partitions=partitions,
    )
    spark = df.sparkSession
    # The shuffle partitions: given, else the session's when it set them, else sized by _dedup to the input.
    chosen = spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions")
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    if partitions is not None:
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        with warnings.catch_warnings():
            # pyspark warns about pandas versions when Arrow functions run; neardup does not use pandas.
            warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
            return _dedup(
                df, text_col, id_col, settings, stages, errors, max_rounds, progress,
                size_partitions=partitions is None and not chosen,
            )
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)


def _checked_settings(
    errors: Optional[str] = None,
    max_rounds: Optional[int] = None,
    partitions: Optional[int] = None,
    **settings: Any,
) -> tuple[dict, Any]:
    """:func:`dedup`'s arguments but the DataFrame, its columns and ``progress``, those given (the defaults are
    :func:`dedup`'s), checked without Spark (a bad value or combination raises ``ValueError`` or
    :class:`neardup.Error`, naming it), so that a run is refused before a job, or a JVM, starts. Returns the
    run's settings (``settings`` are the scheme's and the clustering's: ``scheme``, ``k``, ``threshold``, …,
    ``large_cluster``) as every executor builds its ``Stages`` from them, ``None`` (the scheme's default) left
    out, and the driver's ``Stages``."""
    if errors is not None and errors not in ("keep", "raise"):
        raise ValueError(f"errors must be 'keep' or 'raise', not {errors!r}")
    if max_rounds is not None and max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, not {max_rounds}")
    if partitions is not None and partitions < 1:
        raise ValueError(f"partitions must be at least 1, not {partitions}")
    settings = {key: value for key, value in settings.items() if value is not None}
    return settings, _native.Stages(**settings)


# Documents per partition when the job chooses: a partition of signed rows (a 512-byte signature, and the
# profile: 8 bytes per distinct shingle) stays within tens of megabytes for short documents and a few hundred
# for long ones. Larger ones fail: a persisted block read back from disk is one heap buffer (10^7 short
# documents in 5 partitions ran out of a 12 GB heap), and a shuffle partition is one task's memory.
ROWS_PER_PARTITION = 50_000


def _partitions_needed(rows: int) -> int:
    """The fewest partitions that hold ``rows`` documents at most ``ROWS_PER_PARTITION`` each."""
    return -(-rows // ROWS_PER_PARTITION)


def _partitions_for(rows: int, parallelism: int) -> int:
    """The shuffle partitions for ``rows`` documents: twice the cores (Spark's default of 200 made a
    1,500-document job five times slower on 2 cores), or more to keep each partition at most
    ``ROWS_PER_PARTITION`` rows."""
    return max(2, 2 * parallelism, _partitions_needed(rows))


# A side of a join up to this many rows is sent whole to every task (broadcast): the signed rows it filters
# are then read where they are, not shuffled. Larger ones are joined by a shuffle of both sides.
BROADCAST_ROWS = 2_000_000


def _small(df):
    """``df`` marked for a broadcast join when it has at most ``BROADCAST_ROWS`` rows (it is counted: persist
    it first when it is costly to compute)."""
    from pyspark.sql import functions as F

    return F.broadcast(df) if df.count() <= BROADCAST_ROWS else df


def _dedup(df, text_col: str, id_col: str, settings: dict, stages, errors: str, max_rounds: int, progress,
           size_partitions: bool):
    from pyspark.sql import functions as F
    from pyspark import StorageLevel

    from . import _stages
    from ._components import components

    started = time.monotonic()

    def stage(message: str) -> None:
        if progress is not None:
            progress(f"[{time.monotonic() - started:7.1f} s] {message}")

    for name in (text_col, id_col):
        if name not in df.columns:
            raise ValueError(f"the DataFrame has no column {name!r} (columns: {', '.join(df.columns)})")

    docs = df.select(F.col(id_col).cast("string").alias("id"), F.col(text_col).alias("text"))
    # Spread the input over the cores (one Parquet file under a split's size is one partition, and signing
    # would run as one task) and over enough partitions that each signed partition stays small.
    spark = df.sparkSession
    parallelism = spark.sparkContext.defaultParallelism
    rows = docs.count()
    if size_partitions:
        spark.conf.set("spark.sql.shuffle.partitions", str(_partitions_for(rows, parallelism)))
    signing = max(parallelism, _partitions_needed(rows))
    # The ids alone are read for the check (the text is not), before the input is spread.
    _check_ids(docs.select("id"))
    stage("ids checked: present and unique")
    if docs.rdd.getNumPartitions() < signing:
        docs = docs.repartition(signing)
    keep = StorageLevel.MEMORY_AND_DISK
    # The signed rows stay where they were signed, persisted; only node keys, bucket keys and the few
    # candidates' sketches are shuffled (each signed row is hundreds of bytes: a 512-byte signature, the
    # profile).
    signed = docs.mapInArrow(_stages.sign(settings), _stages.SIGNED).persist(keep)
    failed = _report_failures(signed, errors)
    stage(f"signed ({failed} could not be sketched)")
    ok = signed.where(F.col("error").isNull()).drop("error")

    # 2–4. Identical sketches and profiles share a node key. Buckets, and candidates: the distinct pairs of
    # nodes sharing a bucket (copies have their node's buckets, and a bucket's nodes are a set), judged.
    if not stages.bands:  # SimHash: the tables suit the number of distinct fingerprints
        settings = dict(settings, distinct=max(ok.select("node").distinct().count(), 1))
        stage(f"{settings['distinct']} distinct fingerprints")
    # One shuffle gathers each bucket's records in one task, where the engine pairs its nodes; most buckets
    # hold one node and give no pair. The records travel packed, a row per part (8 parts per shuffle
    # partition, so that partitions get even shares): a row per bucket and node cost Spark more than all
    # the rest of the job. (A `groupBy` with `collect_set` cost more still: its partial aggregation kept a
    # set for each of the millions of buckets.) Each document also has a record in its node's copy bucket,
    # so the same shuffle finds the nodes with copies, as pairs (n, n): counting them with a `groupBy` of
    # their own read every signed row again.
    parts = 8 * int(spark.conf.get("spark.sql.shuffle.partitions"))
    keys = ok.select("node", "sketch").mapInArrow(_stages.buckets(settings, parts), _stages.BUCKETS)
    found = (
        keys.repartition("part")
        .mapInArrow(_stages.pairs(settings), _stages.PAIRS)
        .distinct()
        .persist(keep)
    )
    # The pairs are few next to the input's rows, but sit in as many partitions: read in that many tasks,
    # each writing a file for every shuffle partition, they cost more than their rows (44 s of a 490 s run
    # at 10^7 documents on one core). Counted, they are read in partitions sized to their number.
    # Both counts in one job: the rows, and those of large buckets (a run).
    found_rows, run_rows = found.agg(F.count(F.lit(1)), F.count("run")).first()
    stage(f"{found_rows - run_rows} candidate pairs and nodes with copies; {run_rows} nodes in large buckets")
    pairs = found.coalesce(_partitions_for(found_rows, parallelism))
    # Rows with a run (and no b) are nodes of a large bucket: neither a candidate pair nor a copy.
    candidates = pairs.where(F.col("a") != F.col("b"))
    repeated = pairs.where(F.col("a") == F.col("b")).select(F.col("a").alias("node"))
    # One pass over the signed rows picks out the few that the rest of the job needs: the candidates' (their
    # sketches and profiles are judged) and the copies' (their nodes are clustered, as components of their
    # own, and pair with themselves). Every document of a component is among them.
    wanted = (
        pairs.select(F.explode(F.array("a", "b")).alias("node")).where(F.col("node").isNotNull()).distinct()
    ).persist(keep)
    picked = ok.join(_small(wanted), "node", "left_semi").persist(keep)
    if size_partitions:
        # What is left is small: shuffles of a few rows in many partitions cost a task each.
        spark.conf.set("spark.sql.shuffle.partitions", str(_partitions_for(picked.count(), parallelism)))
    sketches = picked.select("node", "sketch", "profile").dropDuplicates(["node"]).persist(keep)
    side = lambda s: sketches.select(  # noqa: E731
        F.col("node").alias(s), F.col("sketch").alias(f"{s}_sketch"), F.col("profile").alias(f"{s}_profile")
    )
    if stages.candidates_are_pairs:
        # SimHash without a check: the pairs within k are the pairs, so each bucket gave only those that join
        # its nodes into its connected sets (at most one a node, where crowded short texts put millions of
        # pairs in a few buckets), and nothing is left to judge: the components are those of every pair.
        edges = candidates.select("a", "b")
    else:
        edges = (
            candidates.join(side("a"), "a")
            .join(side("b"), "b")
            .select("a", "b", "a_sketch", "a_profile", "b_sketch", "b_profile")
            .mapInArrow(_stages.judge(settings), _stages.EDGES)
        )
    if run_rows:
        # A large bucket's nodes meet in one task, where the engine judges about one pair per node into the
        # edges that connect what all of the bucket's pairs connect (n near-copies: n(n−1)/2 pairs).
        in_runs = (
            pairs.where(F.col("run").isNotNull())
            .select("run", F.col("a").alias("node"))
            .join(sketches, "node")
            .repartition("run")
            .sortWithinPartitions("run", "node")
            .select("run", "node", "sketch", "profile")
        )
        edges = edges.unionByName(in_runs.mapInArrow(_stages.join_runs(settings), _stages.EDGES))

    # 5. Components of the pairs.
    labels, rounds = components(edges.select("a", "b"), max_rounds=max_rounds)
    stage(f"pairs judged; their connected components converged in {rounds} rounds")

    # 6. Every document of every node in a component, or with copies (a component of its own), with its
    # sketch and profile; each component's rows in one task.
    alone = repeated.join(labels, "node", "left_anti").select("node", F.col("node").alias("label"))
    labelled = labels.unionByName(alone).persist(keep)
    members = (
        picked.join(_small(labelled), "node")
        .select("label", "id", "sketch", "profile", "length")
        .repartition("label")
        .sortWithinPartitions("label", "id")
    )
    clustered = members.mapInArrow(_stages.cluster(settings), _stages.CLUSTERED).persist(keep)

    # 7. Cluster numbers in the representatives' order (longest first when the longest is kept, then by id),
    # as one machine numbers them.
    reps = clustered.where(F.col("duplicate_of").isNull()).select(
        F.col("id").alias("representative"), "rep_length"
    )
    order = ([F.col("rep_length").desc()] if stages.keeps_longest else []) + [F.col("representative")]
    numbered = (
        reps.orderBy(*order)
        .withColumn("_part", F.spark_partition_id())
        .withColumn("_at", F.monotonically_increasing_id())
        .persist(keep)
    )
    stage("components clustered")
    offsets, total = {}, 0
    for row in numbered.groupBy("_part").count().orderBy("_part").collect():
        offsets[row["_part"]] = total
        total += row["count"]
    base = F.create_map(*[x for p, o in offsets.items() for x in (F.lit(p), F.lit(o))]) if offsets else None
    numbers = numbered.select(
        "representative",
        (
            (base[F.col("_part")] if base is not None else F.lit(0))
            + (F.col("_at") - F.col("_part").cast("long") * (1 << 33))
            + 1
        ).alias("cluster"),
    )
    result = (
        clustered.join(numbers, "representative")
        .select("id", F.col("cluster").cast("long"), "representative", "duplicate_of", "score")
        .persist(keep)
    )
    stage("clusters numbered")
    # One job: it also computes (and caches) the result.
    for message in _large_clusters(_sizes(result), settings["large_cluster"]):
        warnings.warn(message, RuntimeWarning, stacklevel=3)  # the caller of dedup
    for df_ in (signed, found, wanted, picked, sketches, labelled):
        df_.unpersist()
    return result


def filter(df, clusters, id_col: str = "id"):  # noqa: A001 (the name the issue and users expect)
    """``df`` without the removed documents of ``clusters`` (the rows whose ``duplicate_of`` is set): every
    column kept, documents alone and documents that could not be sketched included."""
    from pyspark.sql import functions as F

    removed = clusters.where(F.col("duplicate_of").isNotNull()).select(F.col("id").alias("__neardup_removed"))
    # Few removed ids are sent to every task, and the records are filtered where they are read.
    return df.join(_small(removed), F.col(id_col).cast("string") == F.col("__neardup_removed"), "left_anti")


def cluster_report(clusters, large_cluster: int = 1000) -> dict[str, Any]:
    """The cluster-size report of a cluster table, as the CLI's summary gives it: ``clusters``,
    ``duplicates`` (members that are not representatives), ``sizes`` (``(smallest, largest, clusters)`` per
    power-of-two bucket: 2, 3–4, 5–8, …), ``largest`` (up to five ``(representative, size)``) and ``warnings``
    naming clusters above ``large_cluster``."""
    from pyspark.sql import functions as F

    sizes = _sizes(clusters)
    buckets = (
        # The bucket of a size is the bit length of size − 1 (2; 3–4; 5–8; …), as the CLI's summary.
        sizes.withColumn("bits", (F.floor(F.log2(F.col("size") - 1)) + 1).cast("int"))
        .groupBy("bits")
        .agg(F.count(F.lit(1)).alias("n"), F.sum("size").alias("members"))
        .orderBy("bits")
        .collect()
    )
    report: dict[str, Any] = {
        "clusters": sum(r["n"] for r in buckets),
        "duplicates": sum(r["members"] - r["n"] for r in buckets),
        "sizes": [(max(2, (1 << r["bits"] >> 1) + 1), 1 << r["bits"], r["n"]) for r in buckets],
    }
    largest = sizes.orderBy(F.col("size").desc(), F.col("cluster")).limit(5).collect()
    report["largest"] = [(r["representative"], r["size"]) for r in largest]
    report["warnings"] = _large_clusters(sizes, large_cluster)
    return report


def _sizes(clusters):
    from pyspark.sql import functions as F

    return clusters.groupBy("cluster", "representative").agg(F.count(F.lit(1)).alias("size"))


def _large_clusters(sizes, large_cluster: int) -> list[str]:
    """The CLI's warning for each cluster above ``large_cluster`` members (the first 20)."""
    from pyspark.sql import functions as F

    return [
        f"cluster {r['cluster']} has {r['size']} members (representative {r['representative']}): check it "
        "before acting on it"
        for r in sizes.where(F.col("size") > large_cluster).orderBy("cluster").limit(20).collect()
    ]
