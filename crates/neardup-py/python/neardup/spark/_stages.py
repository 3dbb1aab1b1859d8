"""What runs on Spark's executors: the engine's stages (``neardup._native.Stages``) over Arrow batches, for
``DataFrame.mapInArrow``. Each function takes the run's settings (a dict, pickled with the closure) and builds
its ``Stages`` once per task; rows go to the native code as Arrow buffers, never one Python object per row."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _native
from .. import _buffers, _string_array

SIGNED = "id string, node binary, sketch binary, profile binary, length long, error string"
BUCKETS = "part int, records binary"
PAIRS = "a binary, b binary, run binary"
EDGES = "a binary, b binary, score double"
CLUSTERED = "id string, representative string, duplicate_of string, score double, rep_length long"


def _fixed_width(data: bytes, n: int, width: int) -> pa.Array:
    """``n`` binary values of ``width`` bytes each, from their concatenation."""
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])


def _column(batch, name: str):
    return _buffers(_string_array(batch.column(name)))


def _per_batch(settings: dict, each):
    """A ``mapInArrow`` function: the run's ``Stages`` built once per task, then ``each(stages, batch)`` for
    every batch."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        stages = _native.Stages(**settings)
        for batch in batches:
            yield each(stages, batch)

    return run


def _sign(stages, batch) -> pa.RecordBatch:
    n = batch.num_rows
    sketches, offsets, data, lengths, nodes, failures = stages.sign(_column(batch, "text"))
    ok = np.ones(n, dtype=bool)
    messages = [None] * n
    for row, message in failures:
        ok[row] = False
        messages[row] = message
    valid = pa.array(ok)
    null = pa.scalar(None, pa.large_binary())
    sketch = pc.if_else(valid, _fixed_width(sketches, n, stages.sketch_width), null)
    node = pc.if_else(valid, _fixed_width(nodes, n, 16), null)
    if stages.keeps_profiles:
        profile = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    else:
        profile = pa.nulls(n, pa.binary())
    return pa.RecordBatch.from_arrays(
        [batch.column("id"), node, sketch, profile, pa.array(np.frombuffer(lengths, dtype="<i8")),
         pa.array(messages, pa.string())],
        names=["id", "node", "sketch", "profile", "length", "error"],
    )


def sign(settings: dict):
    """Stages 1 and 2: ``id, text`` → ``id, node, sketch, profile, length, error``: ``node`` is 16 bytes, the
    same for identical sketches and profiles (a failed row keeps its id and message, and has no node)."""
    return _per_batch(settings, _sign)


def buckets(settings: dict, parts: int):
    """Stages 3 and 2: ``node, sketch`` → ``part, records``: each bucket of each node (its bands, or its
    SimHash tables' key prefixes, and its node's copy bucket, where the node's documents meet to be counted)
    is a record (bucket, node, and SimHash's fingerprint), and a batch's records are packed by part (one of ``parts``, a function
    of the bucket): a row per part. Shuffled by part, Spark moves a few rows per task instead of 17 per
    document."""

    def each(stages, batch) -> pa.RecordBatch:
        numbers, offsets, data = stages.buckets(_column(batch, "sketch"), _column(batch, "node"), parts)
        n = len(numbers) // 4
        records = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        return pa.RecordBatch.from_arrays(
            [pa.array(np.frombuffer(numbers, dtype="<i4")), records], names=["part", "records"]
        )

    return _per_batch(settings, each)


def pairs(settings: dict):
    """Stage 4's grouping (and stage 2's count): a partition's ``part, records`` rows (whole parts: the rows
    are partitioned by part) → the distinct pairs ``a, b`` (``a < b``) of nodes sharing a bucket of a few
    nodes (SimHash: within k bits, as Manku's batch method pairs a table's groups), and ``(n, n)`` for each
    node ``n`` with two or more documents, with a null ``run``; and each node of a larger bucket as ``a`` with
    the bucket as ``run`` (and a null ``b``), for ``join_runs``: n near-copies of one document share buckets
    that hold n(n−1)/2 pairs. The partition's rows are gathered first, since a bucket's records may span
    Arrow batches."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        stages = _native.Stages(**settings)
        gathered = [batch for batch in batches if batch.num_rows]
        if not gathered:
            return
        table = pa.Table.from_batches(gathered)
        a, b, run_keys, run_nodes = stages.pairs(_column(table, "records"))
        n, m = len(a) // 16, len(run_nodes) // 16
        yield pa.RecordBatch.from_arrays(
            [
                pa.concat_arrays([_fixed_width(a, n, 16), _fixed_width(run_nodes, m, 16)]),
                pa.concat_arrays([_fixed_width(b, n, 16), pa.nulls(m, pa.large_binary())]),
                pa.concat_arrays([pa.nulls(n, pa.large_binary()), _fixed_width(run_keys, m, 10)]),
            ],
            names=["a", "b", "run"],
        )

    return run


def _by_key(settings: dict, key: str, each):
    """A ``mapInArrow`` function over rows sorted by ``key``, a partition holding every row of each of its
    keys: ``each(stages, table)`` over whole keys' rows, the run's ``Stages`` built once per task. A key's rows
    may straddle Arrow batches: the rows of the last key in a batch wait for the next batch."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        stages = _native.Stages(**settings)
        pending = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            table = pa.Table.from_batches([batch])
            if pending is not None:
                table = pa.concat_tables([pending, table])
            keys = table.column(key)
            cut = pc.index(keys, keys[-1]).as_py()
            if cut > 0:
                yield each(stages, table.slice(0, cut))
            pending = table.slice(cut)
        if pending is not None and pending.num_rows:
            yield each(stages, pending)

    return run


def _join_runs(stages, table: pa.Table) -> pa.RecordBatch:
    table = table.combine_chunks()
    a, b, score = stages.join_runs(*(_column(table, name) for name in ("run", "node", "sketch", "profile")))
    n = len(a) // 16
    return pa.RecordBatch.from_arrays(
        [_fixed_width(a, n, 16), _fixed_width(b, n, 16), pa.array(np.frombuffer(score, dtype="<f8"))],
        names=["a", "b", "score"],
    )


def join_runs(settings: dict):
    """Stage 4 for the buckets kept whole: rows sorted by ``run`` (a bucket's rows in one partition, each node
    with its sketch and profile) → judged pairs ``a, b, score`` that connect what each bucket's pairs
    connect (about one per node where the nodes are near-copies)."""
    return _by_key(settings, "run", _join_runs)


def _judge(stages, batch) -> pa.RecordBatch:
    scores = np.frombuffer(
        stages.judge(*(_column(batch, name) for name in ("a_sketch", "a_profile", "b_sketch", "b_profile"))),
        dtype="<f8",
    )
    keep = pa.array(~np.isnan(scores))
    return pa.RecordBatch.from_arrays(
        [pc.filter(batch.column("a"), keep), pc.filter(batch.column("b"), keep), pc.filter(pa.array(scores), keep)],
        names=["a", "b", "score"],
    )


def judge(settings: dict):
    """Stage 4: candidate pairs with both nodes' sketches and profiles → the pairs, with their scores."""
    return _per_batch(settings, _judge)


def _cluster_table(stages, table: pa.Table) -> pa.RecordBatch:
    """Stage 6 over whole components (``table``'s rows, sorted by label): the rows in clusters of two or
    more, with their representative, ``duplicate_of``, score and the representative's length."""
    table = table.combine_chunks()
    lengths = table.column("length").to_numpy().astype("<i8")
    rep_b, dup_b, score_b = stages.clusters(
        *(_column(table, name) for name in ("label", "id", "sketch", "profile")), lengths.tobytes()
    )
    rep = np.frombuffer(rep_b, dtype="<i8")
    dup = np.frombuffer(dup_b, dtype="<i8")
    score = np.frombuffer(score_b, dtype="<f8")
    rows = np.flatnonzero(rep >= 0)
    ids = table.column("id").combine_chunks()
    dup_rows = dup[rows]
    has_dup = dup_rows >= 0
    return pa.RecordBatch.from_arrays(
        [
            ids.take(pa.array(rows)),
            ids.take(pa.array(rep[rows])),
            ids.take(pa.array(np.where(has_dup, dup_rows, 0), mask=~has_dup)),
            pa.array(score[rows], mask=np.isnan(score[rows])),
            pa.array(lengths[rep[rows]]),
        ],
        names=["id", "representative", "duplicate_of", "score", "rep_length"],
    )


def cluster(settings: dict):
    """Stage 6: rows sorted by ``label`` (a component's rows in one partition, each with its sketch and
    profile) → clustered rows."""
    return _by_key(settings, "label", _cluster_table)
