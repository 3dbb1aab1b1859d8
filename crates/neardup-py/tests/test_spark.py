"""neardup.spark on a real Spark (pyspark 4, local[2]) against one machine: the `neardup` command's cluster table
and `neardup.dedup`, on real text from ../shared/eval and on planted clusters and chains.

Spark needs Java 17 and pyspark; without them these tests skip, unless NEARDUP_REQUIRE_SPARK=1 (CI) makes that a
failure. Each Spark job costs seconds, so the tests are few and each checks much.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import warnings

import pytest

import neardup

from test_native import EVAL, cli

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _spark_missing(java: bool = True) -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    if java and shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "java is not installed"
    return None


def _require(missing: str | None) -> None:
    """Skips the test when something it needs is missing, unless NEARDUP_REQUIRE_SPARK=1 makes that a failure."""
    if missing:
        if os.environ.get("NEARDUP_REQUIRE_SPARK") == "1":
            pytest.fail(f"NEARDUP_REQUIRE_SPARK=1 but {missing}")
        pytest.skip(missing)


@pytest.fixture(scope="module")
def spark():
    _require(_spark_missing())
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("neardup tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def rows_of(table) -> list[tuple]:
    """A cluster table (pyarrow Table or list of Rows) as sorted tuples, scores rounded past float noise."""
    if hasattr(table, "to_pylist"):
        table = table.to_pylist()
    out = []
    for r in table:
        r = r.asDict() if hasattr(r, "asDict") else r
        if r["cluster"] is None:
            continue
        score = None if r["score"] is None else round(r["score"], 12)
        out.append((r["id"], r["cluster"], r["representative"], r["duplicate_of"], score))
    return sorted(out)


def planted(seed: int = 7) -> tuple[list[str], list[str]]:
    """Families of documents, each a chain of small edits (so connected components would join far-apart
    members), exact copies, and documents that cannot be sketched (empty, only punctuation)."""
    rnd = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    ids, texts = [], []
    for family in range(60):
        base = [rnd.choice(words) for _ in range(rnd.randint(30, 90))]
        for edit in range(rnd.randint(1, 7)):
            ids.append(f"f{family:02d}-e{edit}")
            texts.append(" ".join(base))
            for _ in range(rnd.randint(1, 4)):
                base[rnd.randrange(len(base))] = rnd.choice(words)
    for i in range(5):
        ids.append(f"copy-{i}")
        texts.append(texts[i * 7])
    ids += ["empty", "punctuation"]
    texts += ["", "... !!! ..."]
    return ids, texts


@pytest.fixture(scope="module")
def eval_parquet(tmp_path_factory) -> pathlib.Path:
    """1,500 records of the evaluation corpus as Parquet (id, text and one more column)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not EVAL.is_file() or shutil.which("zstd") is None:
        pytest.skip("../shared/eval is absent (or zstd is not installed)")
    out = subprocess.run(["zstd", "-dc", str(EVAL)], check=True, capture_output=True).stdout
    records = [json.loads(line) for line in out.splitlines()[:1500]]
    path = tmp_path_factory.mktemp("eval") / "sample.parquet"
    pq.write_table(
        pa.table(
            {
                "id": [str(r["id"]) for r in records],
                "text": [r["text"] for r in records],
                "n": list(range(len(records))),
            }
        ),
        path,
    )
    return path


def cli_table(path: pathlib.Path, out: pathlib.Path, *args: str):
    import pyarrow.parquet as pq

    table = out / "table.parquet"
    done = subprocess.run(
        [cli(), "dedup", str(path), "--table", str(table), "--output", str(out / "kept.parquet"), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return pq.read_table(table)


@pytest.mark.parametrize(
    "scheme,args",
    [
        ("minhash", {"threshold": 0.7}),
        ("simhash-doc-v1", {"k": 4}),
        # With a check the pairs within k are judged (without one, stage 4's pairs are the pairs).
        ("simhash-doc-v1", {"k": 6, "verify": "exact", "threshold": 0.8}),
    ],
    ids=["minhash", "simhash", "simhash-checked"],
)
def test_clusters_equal_the_cli_on_real_text(spark, eval_parquet, tmp_path, scheme, args):
    import neardup.spark as ns

    flags = ["--scheme", scheme] + [x for key, v in args.items() for x in (f"--{key}", str(v))]
    expected = rows_of(cli_table(eval_parquet, tmp_path, *flags))
    assert len(expected) > 20, "the sample should hold clusters"
    got = rows_of(ns.dedup(spark.read.parquet(str(eval_parquet)), scheme=scheme, **args).collect())
    assert got == expected


def test_the_same_clusters_for_any_partitions_and_order(spark):
    import neardup.spark as ns

    ids, texts = planted()
    unsketched = "2 documents could not be sketched"  # the planted empty documents, in every run below
    with pytest.warns(RuntimeWarning, match=unsketched):
        expected = rows_of(neardup.dedup(texts, ids, "minhash", threshold=0.5))
    assert len({r[1] for r in expected}) > 20
    df = spark.createDataFrame(list(zip(ids, texts)), "id string, text string")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one = ns.dedup(df.coalesce(1), scheme="minhash", threshold=0.5, large_cluster=5)
        got = rows_of(one.collect())
    assert got == expected
    messages = [str(w.message) for w in caught]
    assert any(unsketched in m for m in messages), messages
    assert any("members (representative" in m and "check it" in m for m in messages), messages
    # Safe clusters: every removed member is within the threshold of the kept one it names.
    assert all(r[4] >= 0.5 for r in got if r[3] is not None)

    # Another order, more partitions than rows per partition: the same rows.
    shuffled = list(zip(ids, texts))
    random.Random(3).shuffle(shuffled)
    df7 = spark.createDataFrame(shuffled, "id string, text string").repartition(7)
    with pytest.warns(ns.UnsketchedWarning, match=unsketched):
        assert rows_of(ns.dedup(df7, scheme="minhash", threshold=0.5, partitions=5).collect()) == expected

    # The deduplicated dataset: every row but the removed ones, the unsketchable ones included.
    kept = {r["id"] for r in ns.filter(df7, one).collect()}
    removed = {r[0] for r in got if r[3] is not None}
    assert kept == set(ids) - removed and "empty" in kept

    # Connected components, on SimHash: chains join, exactly as on one machine.
    with pytest.warns(RuntimeWarning, match=unsketched):
        expected_components = rows_of(neardup.dedup(texts, ids, "simhash-doc-v1", k=6, clustering="components"))
    with pytest.warns(ns.UnsketchedWarning, match=unsketched):
        got_components = ns.dedup(df7, scheme="simhash-doc-v1", k=6, clustering="components").collect()
    assert rows_of(got_components) == expected_components


def near_copies(seed: int = 5) -> tuple[list[str], list[str]]:
    """Three templates, each with 40 near-copies (one or two words of 40 replaced): buckets of dozens of
    nodes, which stage 4 keeps whole instead of listing their pairs."""
    rnd = random.Random(seed)
    ids, texts = [], []
    for template in range(3):
        base = [f"t{template}w{i}" for i in range(40)]
        for copy in range(40):
            words = list(base)
            for _ in range(rnd.randint(1, 2)):
                words[rnd.randrange(len(words))] = f"own{template}x{copy}x{rnd.randrange(1000)}"
            ids.append(f"t{template}-c{copy:02d}")
            texts.append(" ".join(words))
    return ids, texts


@pytest.mark.parametrize(
    "scheme,args",
    [
        ("minhash", {"threshold": 0.6}),
        ("minhash", {"threshold": 0.6, "clustering": "components", "verify": "estimate"}),
        ("minhash", {"threshold": 0.6, "verify": "none"}),
    ],
    ids=["minhash", "minhash-components", "minhash-unverified"],
)
def test_large_buckets_give_the_clusters_of_every_pair(spark, scheme, args):
    import neardup.spark as ns

    ids, texts = near_copies()
    expected = rows_of(neardup.dedup(texts, ids, scheme, **args))
    assert len(expected) > 60
    lines = []
    df = spark.createDataFrame(list(zip(ids, texts)), "id string, text string").repartition(3)
    got = rows_of(ns.dedup(df, scheme=scheme, progress=lines.append, large_cluster=200, **args).collect())
    assert got == expected
    kept_whole = [line for line in lines if "nodes in large buckets" in line]
    assert kept_whole and " 0 nodes in large buckets" not in kept_whole[0], lines


def test_large_buckets_are_joined_with_about_one_judgement_per_node():
    """Stage 4 without Spark: the nodes of a bucket kept whole come back as run rows, and ``join_runs`` gives
    edges that connect them (near-copies: one component, so one edge fewer than nodes)."""
    _require(_spark_missing(java=False))
    import pyarrow as pa

    from neardup.spark import _stages

    ids, texts = near_copies()
    settings = {"scheme": "minhash", "threshold": 0.5}
    signed = next(_stages.sign(settings)(iter([pa.RecordBatch.from_pydict({"id": ids[:40], "text": texts[:40]})])))
    rows = next(_stages.buckets(settings, 1)(iter([signed.select(["node", "sketch"])])))
    found = next(_stages.pairs(settings)(iter([rows])))
    run_rows = found.filter(found.column("run").is_valid())
    assert run_rows.num_rows > 40 and run_rows.column("b").null_count == run_rows.num_rows
    sketch_of = dict(zip(signed.column("node").to_pylist(), signed.column("sketch").to_pylist()))
    profile_of = dict(zip(signed.column("node").to_pylist(), signed.column("profile").to_pylist()))
    table = pa.table({"run": run_rows.column("run"), "node": run_rows.column("a")}).sort_by([("run", "ascending"), ("node", "ascending")])
    nodes = table.column("node").to_pylist()
    table = table.append_column("sketch", pa.array([sketch_of[n] for n in nodes], pa.large_binary()))
    table = table.append_column("profile", pa.array([profile_of[n] for n in nodes], pa.binary()))
    edges = list(_stages.join_runs(settings)(iter(table.to_batches(max_chunksize=7))))
    a = [x for batch in edges for x in batch.column("a").to_pylist()]
    b = [x for batch in edges for x in batch.column("b").to_pylist()]
    scores = [x for batch in edges for x in batch.column("score").to_pylist()]
    buckets = len(set(table.column("run").to_pylist()))
    assert len(a) <= len(nodes) - buckets  # a spanning forest of each bucket
    assert all(x < y for x, y in zip(a, b)) and all(s >= 0.5 for s in scores)
    # Joined, the edges connect all 40 near-copies.
    parent = {n: n for n in set(nodes)}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for x, y in zip(a, b):
        parent[find(x)] = find(y)
    assert len({find(n) for n in parent}) == 1


def test_without_pyspark_the_import_says_what_to_install(tmp_path):
    # pyspark hidden from the import system (None in sys.modules), in a process of its own; without this a user
    # got ModuleNotFoundError from a module inside the package.
    code = (
        "import sys\nsys.modules['pyspark'] = None\n"
        "try:\n    import neardup.spark\nexcept ImportError as e:\n    print(e)\nelse:\n    print('imported')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "neardup.spark needs pyspark 4" in out.stdout, out.stdout
    assert "[spark]" in out.stdout, out.stdout

    # The command says it in one line, not a traceback (pyspark hidden by a sitecustomize, which Python imports
    # at startup, before `-m` imports the package).
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['pyspark'] = None\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    out = subprocess.run(
        [sys.executable, "-m", "neardup.spark", "--help"], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "neardup.spark needs pyspark 4" in out.stderr, out.stderr


def test_partitions_grow_with_the_input():
    _require(_spark_missing(java=False))
    from neardup.spark import ROWS_PER_PARTITION, _partitions_for

    assert _partitions_for(0, 1) == 2
    assert _partitions_for(1_500, 2) == 4  # twice the cores for small inputs
    assert _partitions_for(ROWS_PER_PARTITION * 4, 2) == 4
    assert _partitions_for(ROWS_PER_PARTITION * 4 + 1, 2) == 5
    assert _partitions_for(10_000_000, 2) == 200  # 4 partitions ran out of a 12 GB heap


def test_packed_bucket_records_give_the_same_pairs_for_any_number_of_parts():
    """Stages 3 and 4 without Spark: however the records are split into parts and parts into tasks, the
    pairs are those of the buckets, and a node with copies pairs with itself (and only it)."""
    _require(_spark_missing(java=False))
    import pyarrow as pa
    import pyarrow.compute as pc

    from neardup import _native
    from neardup.spark import _stages

    base = "the quick brown fox jumps over the lazy dog near the river bank today "
    texts = [base * 3, base * 3, base * 3 + "again", "something else entirely, with other words in it " * 3]
    documents = pa.RecordBatch.from_pydict({"id": [str(i) for i in range(len(texts))], "text": texts})
    batch = next(_stages.sign({"scheme": "minhash"})(iter([documents])))
    nodes = batch.column("node").to_pylist()
    assert nodes[0] == nodes[1] != nodes[2]  # identical texts are one node

    def pairs_with(parts: int, tasks: int) -> set:
        rows = next(_stages.buckets({"scheme": "minhash"}, parts)(iter([batch.select(["node", "sketch"])])))
        assert rows.num_rows <= parts
        found = set()
        for task in range(tasks):  # the parts a task gets: any split of the parts will do
            mine = rows.filter(pc.equal(pc.bit_wise_and(rows.column("part"), tasks - 1), task))
            for out in _stages.pairs({"scheme": "minhash"})(iter([mine])):
                found |= set(zip(out.column("a").to_pylist(), out.column("b").to_pylist()))
        return found

    expected = pairs_with(1, 1)
    assert (nodes[0], nodes[0]) in expected  # the copies
    assert tuple(sorted((nodes[0], nodes[2]))) in expected  # the near-duplicate
    assert not any(nodes[3] in pair for pair in expected)
    for parts, tasks in ((2, 2), (16, 4), (1000, 8)):
        assert pairs_with(parts, tasks) == expected
    assert _native.Stages("minhash").buckets_per_node == 16


def test_refusals_name_the_problem(spark):
    import neardup.spark as ns

    df = spark.createDataFrame([("a", "one two three"), ("a", "four five six")], "id string, text string")
    with pytest.raises(ValueError, match="the id 'a' is used by 2 documents"):
        ns.dedup(df)
    with pytest.raises(ValueError, match="no column 'body'"):
        ns.dedup(df, text_col="body")
    with pytest.raises(neardup.Error, match="input order has no meaning across machines"):
        ns.dedup(df, representative="first")
    with pytest.raises(neardup.Error):
        ns.dedup(df, scheme="no-such-scheme")
    with pytest.raises(ValueError, match='verify="estimate" applies to MinHash schemes'):
        ns.dedup(df, scheme="simhash", verify="estimate")


def test_command_line_refuses_settings_before_starting_spark(tmp_path):
    """A setting that cannot run is refused at once, before the JVM starts: here there is none to start (JAVA_HOME
    names no Java), so a refusal that came after the session would be pyspark's error about the gateway."""
    _require(_spark_missing(java=False))
    no_java = dict(os.environ, JAVA_HOME=str(tmp_path / "no-java"), PYSPARK_PYTHON=sys.executable)

    def command(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "neardup.spark", "dedup", "--input", str(tmp_path / "in"), "--table",
             str(tmp_path / "table"), *argv],
            capture_output=True, text=True, timeout=120, env=no_java,
        )

    for argv, message in [
        (["--scheme", "minhash", "-k", "3"], "k is a Hamming distance for SimHash"),
        (["--threshold", "1.5"], "threshold 1.5 is not a similarity"),
        (["--scheme", "simhash", "--verify", "estimate"], 'verify="estimate" applies to MinHash schemes'),
        (["--keep", "smallest-id", "--partitions", "0"], "partitions must be at least 1, not 0"),
        (["--max-rounds", "0"], "max_rounds must be at least 1, not 0"),
    ]:
        done = command(*argv)
        assert done.returncode == 2 and message in done.stderr, (argv, done.stderr[-2000:])
        assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr, done.stderr[-2000:]
    # Settings that can run: then Spark cannot start, and the command says so in one line (the launcher, above
    # it, says why).
    done = command()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "error: Spark did not start" in done.stderr and "Java 17" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "table").exists()


def test_command_line_entry_equals_the_cli(spark, eval_parquet, tmp_path, capsys):
    """`python -m neardup.spark dedup` from Parquet to Parquet: the CLI's kept records and cluster table."""
    import pyarrow.parquet as pq

    expected = rows_of(cli_table(eval_parquet, tmp_path, "--scheme", "simhash", "-k", "3", "--keep", "longest"))
    out = tmp_path / "spark"
    done = subprocess.run(
        [
            sys.executable, "-m", "neardup.spark", "dedup", "--input", str(eval_parquet), "--master", "local[2]",
            "--scheme", "simhash", "-k", "3", "--keep", "longest", "--output", str(out / "kept"),
            "--table", str(out / "table"), "--removed", str(out / "removed"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1500 documents" in done.stderr and "clusters" in done.stderr
    assert rows_of(pq.read_table(out / "table")) == expected
    kept_cli = pq.read_table(tmp_path / "kept.parquet")
    kept = pq.read_table(out / "kept")
    assert sorted(kept.column("id").to_pylist()) == sorted(kept_cli.column("id").to_pylist())
    assert kept.column_names == kept_cli.column_names
    removed = pq.read_table(out / "removed")
    assert {"duplicate_of", "score"} <= set(removed.column_names)
    assert kept.num_rows + removed.num_rows == 1500

    # The refusals below run the same entry in this process, in the session the tests already have: a process
    # of its own starts a JVM each, about 9 s, and the run above already covers that start.
    from neardup.spark.__main__ import main

    def refused_by_entry(*argv):
        capsys.readouterr()
        status = main(["dedup", "--input", str(eval_parquet), *argv])
        return status, capsys.readouterr().err

    # Writing over an existing output is refused unless asked.
    status, err = refused_by_entry("--table", str(out / "table"))
    assert status == 2 and "already exists" in err, err

    # An output that is, holds or lies inside an input or another output is refused, --overwrite or not
    # (the table over the input deleted it before the job read it).
    before = sorted(p.name for p in eval_parquet.parent.iterdir())
    for table, extra in [
        (eval_parquet, ["--overwrite"]),
        (eval_parquet.parent, []),
        (out / "kept", ["--output", str(out / "kept" / "inner"), "--overwrite"]),
        (out / "other", ["--checkpoint-dir", str(out / "other" / "checkpoints")]),
    ]:
        status, err = refused_by_entry("--table", str(table), *extra)
        assert status == 2 and ("overlap" in err or "lies inside --table" in err), err
    assert sorted(p.name for p in eval_parquet.parent.iterdir()) == before
    assert pq.read_table(eval_parquet).num_rows == 1500

    # A run that succeeds in a session it did not start (main() called from a notebook) leaves that session
    # running: the entry stops only a session it started.
    small = tmp_path / "small.parquet"
    pq.write_table(pq.read_table(eval_parquet).slice(0, 40), small)
    assert main(["dedup", "--input", str(small), "--table", str(out / "small"), "--quiet"]) == 0
    columns = ["id", "cluster", "representative", "duplicate_of", "score"]
    assert pq.read_table(out / "small").column_names == columns
    assert spark.range(3).count() == 3  # the session the refusals and the run found is still there


@pytest.mark.parametrize("document", ["README.md", "docs/spark.md"])
def test_the_documented_spark_examples_run(spark, document, tmp_path):
    """The ```python examples that use neardup.spark, run as written on the test's session (test_docs.py runs
    the others): a DataFrame `df` of the planted corpus, which docs/spark.md reads from `corpus/`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from test_docs import corpus, python_blocks

    ids, texts = corpus()
    (tmp_path / "corpus").mkdir()
    pq.write_table(pa.table({"id": ids, "text": texts}), tmp_path / "corpus" / "part-0.parquet")
    names = {"spark": spark, "df": spark.read.parquet(str(tmp_path / "corpus"))}
    blocks = [b for b in python_blocks(document) if "neardup.spark" in b]
    assert blocks, f"{document} has no neardup.spark example"
    for number, block in enumerate(blocks, 1):
        # The session's JVM resolves relative paths against its own working directory, not the test's.
        block = block.replace('"corpus/"', repr(str(tmp_path / "corpus")))
        exec(compile(block, f"{document} (python example {number})", "exec"), names)
    # The last clusters are SimHash's at k = 3: the exact copies at least, each family keeping a document.
    kept = names["kept"].count()
    assert 100 <= kept <= 200, kept
    assert names["clusters"].count() >= 200
