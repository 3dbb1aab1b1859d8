"""Connected components on Spark: large-star / small-star (Kiveris, Lattanzi, Mirrokni, Rastogi and
Vassilvitskii, "Connected Components in MapReduce and Beyond", SoCC 2014), with minimum labels.

Edges are kept oriented from the larger node to the smaller (string order of node ids). Each round is a
large-star then a small-star; both keep every component connected and move every node's edge toward the
component's minimum. The fixed point is a star per component, every node pointing at the component's minimum
node, which is then its label. The loop stops when the edges are that fixed point, checked after every round
(no node both points and is pointed at, none points at two), not after a fixed number of rounds (label
propagation capped at a fixed count gives labels that depend on the executor count); it takes O(log n) rounds. Each round's edges are checkpointed, so the lineage does not
grow with the rounds.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


class NotConverged(RuntimeError):
    """The components did not converge within the allowed rounds."""


def _oriented(edges: DataFrame) -> DataFrame:
    """Each undirected edge once, as ``(src, dst)`` with ``src > dst``."""
    return (
        edges.where(F.col("a") != F.col("b"))
        .select(F.greatest("a", "b").alias("src"), F.least("a", "b").alias("dst"))
        .distinct()
    )


def _large_star(edges: DataFrame) -> DataFrame:
    """Every node's larger neighbours are linked to the smallest node of its neighbourhood (itself included)."""
    both = edges.select(F.col("src").alias("u"), F.col("dst").alias("v")).unionByName(
        edges.select(F.col("dst").alias("u"), F.col("src").alias("v"))
    )
    smallest = both.groupBy("u").agg(F.min("v").alias("m")).select("u", F.least("u", "m").alias("m"))
    return (
        both.where(F.col("v") > F.col("u"))
        .join(smallest, "u")
        .select(F.col("v").alias("src"), F.col("m").alias("dst"))
        .distinct()
    )


def _small_star(edges: DataFrame) -> DataFrame:
    """Every node and its smaller neighbours are linked to the smallest of those neighbours."""
    smallest = edges.groupBy("src").agg(F.min("dst").alias("m"))
    linked = edges.join(smallest, "src")
    return (
        linked.select(F.col("dst").alias("src"), F.col("m").alias("dst"))
        .where(F.col("src") != F.col("dst"))
        .unionByName(linked.select("src", F.col("m").alias("dst")))
        .distinct()
    )


def _checkpoint(df: DataFrame, reliable: bool) -> DataFrame:
    return df.checkpoint(eager=True) if reliable else df.localCheckpoint(eager=True)


def _is_star_forest(edges: DataFrame) -> bool:
    """Whether every component is a star around its smallest node: no node both points and is pointed at,
    and no node points at two. Edges point from larger to smaller, so each centre is its component's
    minimum; large-star and small-star change nothing more (their fixed point)."""
    both = edges.select(F.col("dst").alias("node")).intersect(edges.select(F.col("src").alias("node")))
    forked = edges.groupBy("src").count().where(F.col("count") > 1).select(F.col("src").alias("node"))
    return both.unionByName(forked).isEmpty()


def components(edges: DataFrame, max_rounds: int = 64) -> tuple[DataFrame, int]:
    """``(node, label)`` for every node of the ``(a, b)`` edges, ``label`` the smallest node of its component;
    and the number of rounds taken. Checkpoints go to the context's checkpoint directory when one is set
    (``SparkContext.setCheckpointDir``: they survive a lost executor), else to executors' storage."""
    spark = edges.sparkSession
    reliable = spark.sparkContext.getCheckpointDir() is not None
    current = _checkpoint(_oriented(edges), reliable)
    for round_ in range(0, max_rounds + 1):
        if _is_star_forest(current):
            labels = current.select(F.col("src").alias("node"), F.col("dst").alias("label")).unionByName(
                current.select(F.col("dst").alias("node"), F.col("dst").alias("label")).distinct()
            )
            return labels, round_
        if round_ == max_rounds:
            break
        following = _checkpoint(_small_star(_large_star(current)), reliable)
        current.unpersist()
        current = following
    raise NotConverged(
        f"connected components did not converge in {max_rounds} rounds (large-star/small-star takes "
        "O(log n) rounds): raise max_rounds"
    )
