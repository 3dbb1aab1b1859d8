"""neardup's native API against the `neardup` command on the same inputs, and its own contracts.

The CLI is found at $NEARDUP_BIN, else target/debug/neardup or target/release/neardup of this checkout; the
real text comes from ../shared/eval (tests that need either skip cleanly without it).
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import neardup

ROOT = pathlib.Path(__file__).resolve().parents[3]
PAPER = ROOT / "testdata" / "vectors" / "simhash-doc-v1" / "inputs" / "paper.pdf"
EVAL = ROOT.parent / "shared" / "eval" / "corpus" / "corpus-00.jsonl.zst"
# Near-duplicate pages in 18 non-Latin scripts (Chinese, Japanese, Korean, Thai, Lao, Tamil, Arabic, ...).
EVAL_TLDR = ROOT.parent / "shared" / "eval-tldr" / "text.jsonl.zst"


def cli() -> str:
    for candidate in (
        os.environ.get("NEARDUP_BIN"),
        ROOT / "target" / "debug" / "neardup",
        ROOT / "target" / "release" / "neardup",
    ):
        if candidate and pathlib.Path(candidate).is_file():
            return str(pathlib.Path(candidate).resolve())  # tests may run it from another directory
    pytest.skip("the neardup binary is not built (cargo build -p neardup-cli, or set NEARDUP_BIN)")


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> tuple[pathlib.Path, list[dict]]:
    """The first 1,500 records of the evaluation corpus, as a JSON Lines file and as dicts."""
    if not EVAL.is_file() or shutil.which("zstd") is None:
        pytest.skip("../shared/eval is absent (or zstd is not installed)")
    out = subprocess.run(["zstd", "-dc", str(EVAL)], check=True, capture_output=True).stdout
    lines = out.splitlines()[:1500]
    path = tmp_path_factory.mktemp("eval") / "sample.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, [json.loads(line) for line in lines]


def run_cli(*args: str) -> str:
    done = subprocess.run([cli(), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("scheme", ["simhash-doc-v1", "minhash-oph-v1", "minhash-datasketch-affine32"])
def test_sketches_equal_the_cli(records, scheme):
    path, recs = records
    by_id = {}
    for line in run_cli("hash", "--json", "--scheme", scheme, str(path)).splitlines():
        row = json.loads(line)
        if "fingerprint" in row:
            by_id[row["id"]] = row["fingerprint"]
    texts = [r["text"] for r in recs]
    ours = [str(neardup.sketch(t, scheme)) if r["id"] in by_id else None for t, r in zip(texts, recs)]
    assert len(by_id) > 1000
    for r, s in zip(recs, ours):
        if s is not None:
            assert s == by_id[r["id"]], r["id"]
    # The self-describing strings of a whole column are the CLI's, null where the CLI has none.
    pa = pytest.importorskip("pyarrow")
    strings = neardup.sketches(pa.array(texts), scheme, errors="zero", strings=True).to_pylist()
    assert strings == [by_id.get(r["id"]) for r in recs]
    # The batch call gives the same values as one at a time.
    batch = neardup.sketches(texts, scheme, errors="keep")
    for i, r in enumerate(recs[:200]):
        if r["id"] not in by_id:
            continue
        one = neardup.Sketch.parse(by_id[r["id"]])
        if scheme.startswith("simhash"):
            assert int(batch[i]) == one.value
        else:
            assert batch[i].tolist() == one.values


@pytest.mark.parametrize(
    "scheme,flags,args",
    [
        ("simhash-doc-v1", [], {}),
        ("simhash-doc-v1", ["--k", "5", "--ngram", "2", "--top", "4", "--context", "0"],
         {"k": 5, "ngram": 2, "top": 4, "context": 0}),
        ("minhash-oph-v1", ["--threshold", "0.6", "--shingle", "3"], {"threshold": 0.6, "shingle": 3}),
    ],
)
def test_explain_is_the_clis_explain(records, tmp_path, scheme, flags, args):
    """neardup.explain gives the object `neardup explain --json` writes, for two near-copies of the
    evaluation corpus and for a PDF and a page in different media; from sketches, what a sketch tells."""
    path, recs = records
    table = neardup.dedup([r["text"] for r in recs], ids=[r["id"] for r in recs])
    row = next(r for r in table.to_pylist() if r["duplicate_of"] is not None and r["score"] > 0)
    texts = {r["id"]: r["text"] for r in recs}
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(texts[row["duplicate_of"]], encoding="utf-8")
    b.write_text(texts[row["id"]], encoding="utf-8")
    for x, y in [(a, b), (PAPER, a)]:
        theirs = json.loads(run_cli("explain", "--json", "--scheme", scheme, *flags, str(x), str(y)))
        ours = neardup.explain(x.read_bytes(), y.read_bytes(), scheme, **args)
        assert ours["a"]["input"] is None and theirs["a"]["input"] == str(x)
        for side in ("a", "b"):
            ours[side]["input"] = theirs[side]["input"]
        assert ours == theirs
    # A text's str is the text itself; the bytes of a .txt file, the same text.
    from_str = neardup.explain(texts[row["duplicate_of"]], texts[row["id"]], scheme, **args)
    assert from_str == neardup.explain(a.read_bytes(), b.read_bytes(), scheme, **args)
    # Sketches alone: the estimate, the verdict and (SimHash) the differing bits; no text, no diff.
    sketches = [neardup.sketch(texts[i], scheme, **({"shingle": 3} if "shingle" in args else {}))
                for i in (row["duplicate_of"], row["id"])]
    stored = neardup.explain(*sketches, **{k: v for k, v in args.items() if k in ("k", "threshold")})
    assert stored["estimate"] == from_str["estimate"] and stored["verdict"]["near_duplicate"] in (True, False)
    assert stored["diff"] is None and stored["features"] is None and stored["exact"] is None


def test_explain_refuses_settings_of_the_other_method_and_names_the_empty_document():
    with pytest.raises(ValueError, match="threshold applies to MinHash schemes"):
        neardup.explain("a b c", "a b d", threshold=0.5)
    with pytest.raises(ValueError, match="k is a Hamming distance for SimHash"):
        neardup.explain("a b c", "a b d", "minhash", k=3)
    with pytest.raises(ValueError, match="k = 9 is out of range"):
        neardup.explain("a b c", "a b d", k=9)
    with pytest.raises(neardup.NoTokens, match="^b: no tokens"):
        neardup.explain("some words here", "")
    # A sketch's scheme is taken unless another is named: then the two cannot be compared.
    signature = neardup.sketch("some words here", "minhash")
    assert neardup.explain(signature, "some words here")["verdict"]["near_duplicate"] is True
    with pytest.raises(neardup.SchemeMismatch):
        neardup.explain(signature, "some words here", "simhash")


def one_page_pdf(content: bytes, extra: bytes) -> bytes:
    """A minimal one-page PDF whose page dictionary carries `extra` and whose content stream is `content`
    (as the command line's hostile tests build it)."""
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R " + extra + b">>"
    stream = b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page, stream]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 5\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def test_a_pdf_that_crashes_the_extractor_costs_only_its_worker(tmp_path):
    """A million nested arrays overflow the PDF extractor's stack, which aborted the interpreter: every PDF is
    read by a worker process of it, and the crash is that document's error; the column goes on. Run in a
    child interpreter, so that a regression aborts the child, not the test run."""
    nested = tmp_path / "nested.pdf"
    nested.write_bytes(one_page_pdf(b"BT /F1 12 Tf 72 712 Td (Hello) Tj ET",
                                    b"/Foo " + b"[" * 1_000_000 + b"]" * 1_000_000 + b" "))
    script = """if True:
        import os, sys, warnings, neardup
        nested, paper = (open(path, "rb").read() for path in sys.argv[1:3])
        try:
            neardup.fingerprint(nested)
        except neardup.MediaError as e:
            print(e)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values = neardup.sketches([nested, paper], errors="zero")
        print(values.tolist() == [0, neardup.fingerprint(paper).value])
        print(*(w.message for w in caught))
        # Each thread that reads PDFs keeps one worker: 40 PDFs start no more workers than there are threads.
        sys.path.insert(0, sys.argv[3])
        from test_native import _child_processes
        print(len(set(neardup.sketches([paper] * 40).tolist())), _child_processes() <= os.cpu_count() + 1)
    """
    out = subprocess.run([sys.executable, "-c", script, str(nested), str(PAPER), str(pathlib.Path(__file__).parent)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    error, equal, warned, workers = out.stdout.splitlines()
    assert error.startswith("the PDF extractor crashed on this file ("), error
    assert equal == "True"
    assert "row 0" in warned and "the PDF extractor crashed" in warned, warned
    assert workers == "1 True"


def test_an_idle_pdf_worker_ends_itself_and_the_next_pdf_starts_another():
    """A thread keeps its worker between PDFs; one that waits NEARDUP_PDF_WORKER_IDLE_SECS (30 s unless set)
    for its next PDF exits, giving its memory back, and the next PDF is read by a new worker."""
    script = """if True:
        import sys, time, neardup
        sys.path.insert(0, sys.argv[2])
        from test_native import _child_processes
        paper = open(sys.argv[1], "rb").read()
        first = neardup.fingerprint(paper)
        print(_child_processes())
        time.sleep(2)
        print(_child_processes())
        print(neardup.fingerprint(paper) == first, _child_processes())
    """
    out = subprocess.run([sys.executable, "-c", script, str(PAPER), str(pathlib.Path(__file__).parent)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NEARDUP_PDF_WORKER_IDLE_SECS": "0.5"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["1", "0", "True 1"], out.stdout


def test_pdfs_are_read_in_process_where_the_interpreter_cannot_be_a_worker():
    """An embedded interpreter whose sys.executable is another program cannot start a worker: its PDFs are
    read on threads, as without isolation, rather than each failing as a crash."""
    script = """if True:
        import sys
        sys.executable = "/bin/false"
        import neardup
        print(neardup.fingerprint(open(sys.argv[1], "rb").read()))
    """
    out = subprocess.run([sys.executable, "-c", script, str(PAPER)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(neardup.fingerprint(PAPER.read_bytes()))


@pytest.mark.parametrize("scheme", ["simhash-doc-v1", "minhash-oph-v1"])
def test_non_latin_scripts_give_the_clis_sketches_clusters_and_pairs(tmp_path, scheme):
    """The 4,220 pages of ../shared/eval-tldr (18 scripts, those without spaces between words among them):
    Python's sketches, clusters (all rows in batches) and pairs are the command's."""
    pa = pytest.importorskip("pyarrow")
    if not EVAL_TLDR.is_file() or shutil.which("zstd") is None:
        pytest.skip("../shared/eval-tldr is absent (or zstd is not installed)")
    path = tmp_path / "tldr.jsonl"
    path.write_bytes(subprocess.run(["zstd", "-dc", str(EVAL_TLDR)], check=True, capture_output=True).stdout)
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len({r["lang"] for r in recs}) == 18
    texts, ids = [r["text"] for r in recs], [r["id"] for r in recs]

    theirs = {}
    for line in run_cli("hash", "--json", "--scheme", scheme, str(path)).splitlines():
        row = json.loads(line)
        theirs[row["id"]] = row.get("fingerprint")
    assert neardup.sketches(pa.array(texts), scheme, errors="zero", strings=True).to_pylist() == [
        theirs[i] for i in ids
    ]

    settings = ["--threshold", "0.5"] if scheme.startswith("minhash") else ["--k", "4"]
    args = {"threshold": 0.5} if scheme.startswith("minhash") else {"k": 4}
    run_cli("dedup", "--scheme", scheme, *settings, "--table", str(tmp_path / "table.jsonl"), str(path))
    table = [json.loads(line) for line in (tmp_path / "table.jsonl").read_text().splitlines()]
    run = neardup.Dedup(scheme, **args)
    run.add_batches(pa.table({"id": ids, "text": texts}).to_batches(max_chunksize=1000))
    ours = [r for r in run.clusters().to_pylist() if r["cluster"] is not None]
    fields = ("id", "cluster", "representative", "duplicate_of")
    assert len(table) > 1000
    assert sorted(tuple(r[f] for f in fields) for r in ours) == sorted(tuple(r[f] for f in fields) for r in table)

    pairs = [json.loads(line) for line in run_cli("dedup", "--pairs", "--json", "--scheme", scheme, *settings,
                                                  str(path)).splitlines()]
    assert [(p["a"], p["b"]) for p in run.pairs().to_pylist()] == [(p["a"], p["b"]) for p in pairs]


@pytest.mark.parametrize(
    "scheme,args",
    [
        ("simhash-doc-v1", {"k": 3}),
        ("minhash-oph-v1", {"threshold": 0.7}),
        # The representatives by length: the same token counts on both sides.
        ("simhash-doc-v1", {"k": 3, "representative": "longest"}),
        # SimHash pairs checked by the exact Jaccard similarity of word 3-grams: `--verify exact --threshold`.
        ("simhash-doc-v1", {"k": 3, "threshold": 0.6, "verify": "exact"}),
        ("minhash-oph-v1", {"threshold": 0.7, "verify": "estimate", "representative": "longest"}),
    ],
)
def test_dedup_clusters_equal_the_cli(records, tmp_path, scheme, args):
    path, recs = records
    table_path = tmp_path / "table.jsonl"
    flags = ["--k", str(args["k"])] if "k" in args else []
    if "threshold" in args:
        flags += ["--threshold", str(args["threshold"])]
    if "representative" in args:
        flags += ["--keep", args["representative"]]
    if "verify" in args:
        flags += ["--verify", args["verify"]]
    run_cli("dedup", "--scheme", scheme, *flags, "--table", str(table_path), str(path))
    theirs = [json.loads(line) for line in table_path.read_text().splitlines()]
    assert theirs, "the sample has near-duplicates"
    table = neardup.dedup([r["text"] for r in recs], ids=[r["id"] for r in recs], scheme=scheme, **args)
    ours = [row for row in table.to_pylist() if row["cluster"] is not None]
    fields = ("id", "cluster", "representative", "duplicate_of")
    ours, theirs = sorted(ours, key=lambda r: r["id"]), sorted(theirs, key=lambda r: r["id"])
    assert [{f: r[f] for f in fields} for r in ours] == [{f: r[f] for f in fields} for r in theirs]
    for a, b in zip(ours, theirs):
        assert (a["score"] is None and b["score"] is None) or a["score"] == pytest.approx(b["score"])


@pytest.mark.parametrize("scheme", ["simhash-doc-v1", "minhash-oph-v1"])
def test_dedup_files_equals_dedup_and_writes_the_clis_split(records, tmp_path, scheme):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path, recs = records
    expected = neardup.dedup([r["text"] for r in recs], ids=[r["id"] for r in recs], scheme=scheme)
    kept, removed = tmp_path / "kept.jsonl", tmp_path / "removed.jsonl"
    table = neardup.dedup_files(path, scheme, output=kept, removed=removed)
    assert table.equals(expected) and table.column("duplicate_of").null_count < len(recs)
    run_cli("dedup", "--scheme", scheme, "--output", str(tmp_path / "cli-kept.jsonl"),
            "--removed", str(tmp_path / "cli-removed.jsonl"), str(path))
    assert kept.read_bytes() == (tmp_path / "cli-kept.jsonl").read_bytes()
    assert removed.read_bytes() == (tmp_path / "cli-removed.jsonl").read_bytes()
    # Parquet shards in a directory, a nested text field: the same clusters.
    shards = tmp_path / "shards"
    shards.mkdir()
    nested = pa.table({"id": [r["id"] for r in recs], "doc": [{"body": r["text"]} for r in recs]})
    pq.write_table(nested.slice(0, 700), shards / "a.parquet")
    pq.write_table(nested.slice(700), shards / "b.parquet")
    assert neardup.dedup_files([shards], scheme, text_field="doc.body").equals(expected)


def test_dedup_files_reports_progress_and_stops_when_the_callback_raises(records):
    path, recs = records
    seen = []
    neardup.dedup_files(path, progress=lambda done, total: seen.append((done, total)))
    size = path.stat().st_size
    assert seen and seen[-1] == (size, size) and all(t == size for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)

    def stop(done, total):
        raise RuntimeError(f"stopped at {done}")

    with pytest.raises(RuntimeError, match="stopped at"):
        neardup.dedup_files(path, progress=stop)


def test_dedup_files_reports_bad_records_and_refuses_what_it_cannot_read(tmp_path):
    path = tmp_path / "bad.jsonl"
    lines = [
        {"id": "a", "text": "the cat sat on the mat and looked at the dog"},
        {"id": "b", "text": "the cat sat on the mat and looked at the dog"},
        {"id": "a", "text": "a record whose id was seen before"},
        {"id": "c"},
        {"id": "d", "text": "..."},
    ]
    path.write_text("\n".join(json.dumps(r) for r in lines[:2]) + "\nnot json\n"
                    + "\n".join(json.dumps(r) for r in lines[2:]) + "\n")
    with pytest.warns(RuntimeWarning, match="4 records or files could not be used; the first, .*bad.jsonl:3"):
        table = neardup.dedup_files(str(path), output=tmp_path / "kept.jsonl")
    assert table.column("id").to_pylist() == ["a", "b", "d"]
    assert table.column("duplicate_of").to_pylist() == [None, "a", None]
    # Every record that is not a removed duplicate is kept, bad lines included.
    assert (tmp_path / "kept.jsonl").read_text().count("\n") == 5
    with pytest.raises(neardup.Error, match=r"bad.jsonl:3: .*\(and 3 more\)"):
        neardup.dedup_files(path, output=tmp_path / "strict.jsonl", errors="raise")
    assert not (tmp_path / "strict.jsonl").exists()
    with pytest.raises(FileNotFoundError, match="no dataset to read: .*missing.jsonl"):
        neardup.dedup_files(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="standard input"):
        neardup.dedup_files("-")
    # Outputs that cannot be written are refused before anything is read, and no input is overwritten.
    calls = []
    with pytest.raises(ValueError, match="bad.jsonl is JSONL and this output is Parquet"):
        neardup.dedup_files(path, output=tmp_path / "kept.parquet", progress=lambda *a: calls.append(a))
    before = path.read_bytes()
    with pytest.raises(ValueError, match="this output is the input .*bad.jsonl: writing it would replace"):
        neardup.dedup_files(path, output=path, progress=lambda *a: calls.append(a))
    (tmp_path / "sub").mkdir()
    with pytest.raises(ValueError, match="this output is the input"):
        neardup.dedup_files(tmp_path, output=tmp_path / "kept.jsonl", removed=tmp_path / "sub" / ".." / "bad.jsonl")
    with pytest.raises(OSError, match=r"kept.jsonl: its directory .*nodir: no such file"):
        neardup.dedup_files(path, output=tmp_path / "nodir" / "kept.jsonl", progress=lambda *a: calls.append(a))
    assert calls == [] and path.read_bytes() == before
    # An output inside an input directory is written, with a warning: the next run over it reads it.
    inside = "again.jsonl: this output is inside the input directory .* will read it as input"
    with pytest.warns(UserWarning, match=inside), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # bad.jsonl's records, reported as above
        neardup.dedup_files(tmp_path, output=tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").exists()


def test_warnings_show_control_characters_escaped(tmp_path):
    """Record ids and file names reach warnings; an escape sequence in one must not drive a terminal or a
    notebook (which renders ANSI sequences in a warning)."""
    pytest.importorskip("pyarrow")
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "part.jsonl").write_text(
        json.dumps({"id": "\x1b[2Jcleared", "text": ""}) + "\n" + json.dumps({"id": "b", "text": "some words"}) + "\n"
    )
    (shards / "\x1b[31mred.txt").write_text("not a shard")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        neardup.dedup_files(shards)
    messages = [str(w.message) for w in caught]
    assert any("\\x1b[2Jcleared" in m for m in messages) and any("\\x1b[31mred.txt" in m for m in messages)
    assert not any("\x1b" in m for m in messages), messages


def test_dedup_files_names_the_files_a_directory_leaves_out(tmp_path):
    record = {"id": "a", "text": "the cat sat on the mat and looked at the dog"}
    (tmp_path / "part-0.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "_SUCCESS").write_text("")  # a marker, not data: left out silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert neardup.dedup_files(tmp_path).column("id").to_pylist() == ["a"]
    (tmp_path / "README.md").write_text("about these records\n")
    left_out = r"1 file in this directory is not read \(the first: .*README.md\): records are read only from .jsonl"
    with pytest.warns(UserWarning, match=left_out):
        assert neardup.dedup_files(tmp_path).column("id").to_pylist() == ["a"]


def test_ctrl_c_stops_long_runs(tmp_path, request):
    import _thread
    import signal

    # A process a shell starts in the background inherits SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler (interrupt_main would do nothing): install it for this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    texts = [" ".join(words[(i * 7 + j) % 12] + str(i % 997) for j in range(300)) for i in range(20_000)]
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    pa = pytest.importorskip("pyarrow")
    column = pa.array(texts * 3, pa.large_string())
    adding = neardup.Dedup("minhash")
    runs = (
        lambda: neardup.dedup_files(path),
        lambda: neardup.sketches(texts * 3, "minhash"),
        lambda: neardup.sketches(column, "minhash"),
        lambda: adding.add(column),
    )
    for run in runs:
        started = time.perf_counter()
        run()
        whole = time.perf_counter() - started
        # Interrupted a tenth of the way, a run stops at its next batch (or piece of a list), long before
        # its end; without the checks, the interrupt would land only once the native call returned.
        timer = threading.Timer(whole / 10, _thread.interrupt_main)
        timer.start()
        started = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            run()
            time.sleep(whole)  # the run ended first: the interrupt lands here, and the test fails on time
        timer.join()
        assert time.perf_counter() - started < whole * 0.6, whole
    # The interrupted add added nothing of its column, and the run takes more.
    assert len(adding) == len(column) and adding.add(["one more document"]) == len(column) + 1


def test_ctrl_c_stops_dedup_while_it_finds_pairs(tmp_path, request):
    import _thread
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in the test above
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    # 400 texts of 60 words, 100 variants of each (one word replaced): 2 million pairs within 7 bits,
    # each judged by the Jaccard of its word 3-grams.
    texts = []
    for base in range(400):
        words = [f"b{base}w{i}" for i in range(60)]
        for variant in range(100):
            texts.append(" ".join(words[:variant % 60] + [f"v{variant}"] + words[variant % 60 + 1 :]))
    path = tmp_path / "variants.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    settings = dict(k=7, verify="exact")
    runs = (
        ("dedup", lambda progress: neardup.dedup(texts, progress=progress, **settings)),
        ("dedup_files", lambda progress: neardup.dedup_files(path, progress=progress, **settings)),
    )
    for name, run in runs:
        marks = {}

        def sketched(done, total):
            if done == total:
                marks["sketched"] = time.perf_counter()

        whole = run(sketched)
        finding = time.perf_counter() - marks.pop("sketched")
        # Interrupted a fifth of the way through finding the pairs (after the last batch is sketched), the
        # run stops at the engine's next report, long before its end, and says where it stopped; without
        # the checks, the interrupt would land once the native call returned, saying nothing.
        def interrupt_later(done, total):
            if done == total and "sketched" not in marks:  # (the last batch of a file is reported twice)
                threading.Timer(finding / 5, _thread.interrupt_main).start()
                marks["sketched"] = time.perf_counter()

        with pytest.raises(KeyboardInterrupt, match=r"interrupted while finding the near-duplicates of 40000 "):
            run(interrupt_later)
            time.sleep(finding)  # the run ended first: the interrupt lands here, without the message
        assert time.perf_counter() - marks["sketched"] < finding * 0.6, (name, finding)
        # The next run is whole.
        assert run(None).equals(whole), name


@pytest.mark.parametrize("scheme", ["simhash-doc-v1", "minhash-oph-v1"])
def test_calibrate_is_the_clis_calibration(records, tmp_path, scheme):
    """neardup.calibrate gives the object `neardup calibrate` writes to calibration.json, on 400 pages of the
    evaluation corpus and near-copies, sampled down to 300, with truth from a file or from pairs, with or without it, in any
    order of the rows."""
    _, recs = records
    docs = tmp_path / "docs"
    docs.mkdir()
    ids, texts = [], []
    for r in recs[:200]:
        # Each page and a near-copy of it, one word in thirty dropped.
        words = r["text"].split(" ")
        for text in (r["text"], " ".join(w for j, w in enumerate(words) if j % 30 != 3)):
            (docs / f"{len(ids):04d}.txt").write_text(text, encoding="utf-8")
            ids.append(f"docs/{len(ids):04d}.txt")
            texts.append(text)
    # Truth: the pairs a looser run finds, with their similarities (the command reads any truth alike).
    run = neardup.Dedup("minhash", threshold=0.4, verify="estimate")
    run.add(texts, ids)
    pairs = run.pairs().to_pylist()
    assert len(pairs) > 100
    truth = tmp_path / "truth.tsv"
    truth.write_text("id_a\tid_b\tsimilarity\n" + "".join(f"{p['a']}\t{p['b']}\t{p['score']}\n" for p in pairs))
    settings = [
        ([], {}),
        (["--truth", "truth.tsv", "--target-precision", "0.9"], {"truth": truth, "target_precision": 0.9}),
        (["--truth", "truth.tsv", "--truth-threshold", "0.6", "--threshold", "0.7", "--sample-seed", "5",
          "--random-pairs", "500"],
         {"truth": truth, "truth_threshold": 0.6, "threshold": 0.7, "sample_seed": 5, "random_pairs": 500}),
    ]
    order = list(range(len(ids)))
    random.Random(1).shuffle(order)
    for flags, args in settings:
        out = tmp_path / f"cal{len(flags)}"
        done = subprocess.run(
            [cli(), "calibrate", "--scheme", scheme, "--sample", "300", "--out", str(out), *flags, "docs"],
            cwd=tmp_path, capture_output=True, text=True, timeout=600,
        )
        assert done.returncode == 0, done.stderr
        theirs = json.loads((out / "calibration.json").read_text())
        assert theirs["documents"] == 300 and theirs["documents_read"] == 400
        assert neardup.calibrate(texts, ids, scheme, sample=300, **args) == theirs, flags
        shuffled = neardup.calibrate([texts[i] for i in order], [ids[i] for i in order], scheme, sample=300, **args)
        assert shuffled == theirs, flags
        if "truth" in args:
            rows = [(p["a"], p["b"], p["score"]) for p in pairs]
            assert neardup.calibrate(texts, ids, scheme, sample=300, **{**args, "truth": rows}) == theirs
            assert theirs["positives"] > 0 and len(theirs["sweep"]) > 1


def test_calibrate_refuses_what_the_command_refuses_and_names_bad_truth(tmp_path):
    texts = [f"the report of week {i} on the state of the garden and the weather" for i in range(30)]
    ids = [f"w{i}" for i in range(30)]
    refusals = [
        (dict(scheme="bottomk-v1"), ValueError, "calibrate a SimHash or MinHash scheme"),
        (dict(sample=1), ValueError, "sample must keep at least two documents"),
        (dict(sample=-3), ValueError, "sample must be a whole number, 0 or more"),
        (dict(threshold=1.5), ValueError, "threshold 1.5 is not a similarity"),
        (dict(target_precision=0.9, target_recall=0.9), ValueError, "give one"),
        (dict(truth=[]), ValueError, "truth: no pairs"),
        (dict(truth=[("w1", "w2", 1.5)]), neardup.Error, r'truth, pair 0 \("w1", "w2"\): the similarity 1.5'),
        (dict(truth=[("w1", "w2"), ("w3",)]), ValueError, "truth, pair 1: expected"),
        (dict(truth=[("w1", 2.5)]), TypeError, "truth, pair 0: ids are strings or integers, not float"),
        (dict(truth=[("w1", "w2", "most")]), TypeError, "truth, pair 0: the similarity is a number"),
        (dict(errors="zero"), ValueError, "errors must be 'skip' or 'raise'"),
        (dict(truth=[{"a": "w1", "b": "w2"}]), TypeError, "truth, pair 0: expected an .* row, not dict"),
        (dict(truth=["w1\tw2\t1"]), TypeError, "truth, pair 0: expected an .* row, not str"),
        (dict(truth=b"w1\tw2\t1\n"), TypeError, "not bytes"),
    ]
    for args, kind, message in refusals:
        with pytest.raises(kind, match=message):
            neardup.calibrate(texts, ids, **args)
    bad = tmp_path / "bad.tsv"
    bad.write_text("w1\tw2\t1\nw3\tw4\tmaybe\n")
    with pytest.raises(neardup.Error, match="bad.tsv, line 2: 'maybe' is not a similarity"):
        neardup.calibrate(texts, ids, truth=bad)
    with pytest.raises(ValueError, match=r"rows 0 and 1 have the same id"):
        neardup.calibrate(texts[:2], ["same", "same"])
    # A table's first three columns are the truth, as the file's are (more are ignored).
    rows = [("w1", "w2", 1.0), ("w3", "w4", 0.5), ("w5", "w9", 0.9)]
    by_rows = neardup.calibrate(texts, ids, truth=rows)
    assert by_rows["positives"] == 2
    columns = {"a": [r[0] for r in rows], "b": [r[1] for r in rows], "sim": [r[2] for r in rows], "note": ["x"] * 3}
    for module, make in (("pyarrow", "table"), ("pandas", "DataFrame"), ("polars", "DataFrame")):
        table = getattr(pytest.importorskip(module), make)(columns)
        assert neardup.calibrate(texts, ids, truth=table) == by_rows, module
    # Integer ids and pairs without a similarity; documents that cannot be sketched are left out, named.
    numbered = neardup.calibrate(texts, list(range(30)), truth=[(0, 1), (2, 3)])
    assert numbered["positives"] == 2
    with pytest.warns(RuntimeWarning, match=r"2 documents could not be sketched; the first, row 30"):
        report = neardup.calibrate(texts + ["", "12 34"], ids + ["empty", "numbers"])
    assert report["documents_read"] == 30
    with pytest.raises(neardup.NoTokens, match="row 30"):
        neardup.calibrate(texts + [""], errors="raise")


def test_ctrl_c_stops_calibrate_while_it_scores(request):
    import _thread
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in the tests above
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    texts = [" ".join(f"w{(i * 31 + j) % 5000}" for j in range(40)) for i in range(4_000)]
    sketched = {}

    def progress(done, total):
        if done == total:
            sketched["at"] = time.perf_counter()

    whole = neardup.calibrate(texts, scheme="minhash", sample=4_000, progress=progress)
    scoring = time.perf_counter() - sketched["at"]
    assert whole["pairs"] == 4_000 * 3_999 // 2

    # Interrupted a fifth of the way through the scoring, the call stops at the engine's next report and
    # says where; without the checks, the interrupt would land once the native call returned.
    def interrupt_later(done, total):
        if done == total:
            threading.Timer(scoring / 5, _thread.interrupt_main).start()
            sketched["at"] = time.perf_counter()

    with pytest.raises(KeyboardInterrupt, match="interrupted while scoring the pairs of 4000 documents"):
        neardup.calibrate(texts, scheme="minhash", sample=4_000, progress=interrupt_later)
        time.sleep(scoring)  # the scoring ended first: the interrupt lands here, without the message
    assert time.perf_counter() - sketched["at"] < scoring * 0.6, scoring


@pytest.mark.parametrize(
    "scheme,args",
    [
        ("simhash-doc-v1", {"k": 3}),
        ("minhash-oph-v1", {"threshold": 0.7}),
        ("simhash-doc-v1", {"k": 3, "threshold": 0.6, "verify": "exact", "representative": "longest"}),
    ],
)
def test_dedup_fed_in_batches_equals_dedup_of_the_whole(records, scheme, args):
    """neardup.Dedup over batches of every kind gives neardup.dedup's table for the whole column (which the
    CLI's equals, above), and its clusters so far whenever asked."""
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    _, recs = records
    texts = [r["text"] for r in recs] + ["", "..."]  # two that cannot be sketched: kept alone, rows all the same
    ids = [r["id"] for r in recs] + ["empty", "punctuation"]
    with warnings.catch_warnings(record=True) as whole_warned:
        warnings.simplefilter("always")
        whole = neardup.dedup(texts, ids=ids, scheme=scheme, **args)
    assert whole.column("duplicate_of").null_count < len(recs)

    run = neardup.Dedup(scheme, **args)
    cuts = [0, 1, 400, 401, 1100, len(texts)]
    kinds = [list, pa.array, lambda v: pd.Series(v, dtype=object), pa.array, list]
    for (a, b), kind in zip(zip(cuts, cuts[1:]), kinds):
        assert run.add(kind(texts[a:b]), ids=kind(ids[a:b])) == b
        if b == 401:  # the clusters so far are those of the rows so far
            assert run.clusters().equals(neardup.dedup(texts[:b], ids=ids[:b], scheme=scheme, **args))
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        assert run.clusters().equals(whole)
    assert [str(w.message) for w in warned] == [str(w.message) for w in whole_warned]
    assert "2 documents could not be sketched; the first, row 1500" in str(warned[0].message)

    # A RecordBatchReader's batches, ids from a column; and without ids, each row's number is its id.
    table = pa.table({"id": ids, "text": texts})
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=333))
    seen = []
    run = neardup.Dedup(scheme, **args)
    with warnings.catch_warnings(record=True):
        assert run.add_batches(reader, id_field="id", progress=lambda done, total: seen.append((done, total))) == len(ids)
        assert run.clusters().equals(whole)
    assert seen == [(min(n, len(ids)), None) for n in range(333, len(ids) + 333, 333)]
    # A batch's `id` column is read by default (as dedup_files reads records); without one, or with
    # id_field=None, each row's number is its id.
    for batches, id_field, expected_ids in [
        ([table.slice(0, 700), table.slice(700).to_pandas()], "id", ids),
        ([table.slice(0, 700), table.slice(700).to_pandas()], None, None),
        ([table.select(["text"]).slice(0, 700), {"text": texts[700:]}], "id", None),
    ]:
        run = neardup.Dedup(scheme, **args)
        with warnings.catch_warnings(record=True):
            run.add_batches(batches, id_field=id_field)
            assert run.clusters().equals(neardup.dedup(texts, ids=expected_ids, scheme=scheme, **args))


@pytest.mark.parametrize(
    "scheme,flags,args",
    [
        ("simhash-doc-v1", ["--k", "4"], {"k": 4}),
        ("minhash-oph-v1", ["--threshold", "0.6"], {"threshold": 0.6}),
        ("simhash-doc-v1", ["--verify", "exact", "--threshold", "0.5"], {"verify": "exact", "threshold": 0.5}),
    ],
)
def test_the_pairs_of_a_run_are_the_clis(records, scheme, flags, args):
    path, recs = records
    out = run_cli("dedup", "--pairs", "--json", "--scheme", scheme, *flags, str(path))
    theirs = [json.loads(line) for line in out.splitlines()]
    assert len(theirs) > 10
    run = neardup.Dedup(scheme, **args)
    run.add([r["text"] for r in recs[:700]], ids=[r["id"] for r in recs[:700]])
    run.add([r["text"] for r in recs[700:]], ids=[r["id"] for r in recs[700:]])
    ours = run.pairs().to_pylist()
    key = "distance" if scheme.startswith("simhash") else "similarity"
    assert [(p["a"], p["b"]) for p in ours] == [(p["a"], p["b"]) for p in theirs]
    assert [p["score"] for p in ours] == pytest.approx([p[key] for p in theirs])


def test_dedup_fed_in_batches_refuses_what_it_cannot_use():
    pa = pytest.importorskip("pyarrow")
    run = neardup.Dedup("minhash")
    run.add(["the first document of this run", "and a second one"], ids=["a", "b"])
    with pytest.raises(ValueError, match='rows 1 and 3 have the same id "b"'):
        run.add(["a third", "a fourth"], ids=["c", "b"])
    with pytest.raises(ValueError, match='rows 2 and 3 have the same id "c"'):
        run.add(["a third", "a fourth"], ids=["c", "c"])
    assert len(run) == 2  # a refused batch adds nothing
    strict = neardup.Dedup(errors="raise")
    with pytest.raises(neardup.NoTokens, match="^row 1: no tokens"):
        strict.add(["some words here", ""])
    assert len(strict) == 0
    with pytest.raises(KeyError, match=r"batch 1 has no column 'text' \(its columns: \['body'\]\): set text_field="):
        run.add_batches([{"text": ["x y z"]}, {"body": ["x y z"]}])
    assert len(run) == 3  # the batches before the refused one stay added
    with pytest.raises(TypeError, match="these are records, not batches"):
        run.add_batches([{"text": "one record"}])
    with pytest.raises(TypeError, match="batch 0 is a str, not a batch of columns"):
        run.add_batches(["not a batch"])
    table = pa.table({"text": ["x"]})
    for call in (neardup.dedup, neardup.sketches):
        with pytest.raises(TypeError, match=r"not a RecordBatchReader: pass its batches' columns one at a time"):
            call(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()))
    with pytest.raises(ValueError, match="k is a Hamming distance for SimHash"):
        neardup.Dedup("minhash", k=3)
    assert repr(run) == "neardup.Dedup(scheme='minhash-oph-v1(k=128,seed=0,f=w5)', documents=3)"


def test_an_index_stores_batches_as_it_stores_a_column(records, tmp_path):
    pa = pytest.importorskip("pyarrow")
    _, recs = records
    texts = [r["text"] for r in recs[:600]]
    texts[450] = ""  # cannot be sketched: the third batch's row 50
    ids = [r["id"] for r in recs[:600]]
    whole = neardup.Index(None, "minhash", threshold=0.7)
    with pytest.warns(RuntimeWarning, match="^1 document could not be sketched"):
        assert whole.add_many(ids, texts, errors="skip") == 599
    table = pa.table({"id": ids, "text": texts})
    seen = []
    batched = neardup.Index(str(tmp_path / "idx"), "minhash", threshold=0.7)
    with pytest.warns(RuntimeWarning, match=r"^1 document could not be sketched \(not stored\); the first, row 450"):
        stored = batched.add_batches(
            pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=200)),
            errors="skip",
            progress=lambda rows, total: seen.append((rows, total)),
        )
    assert stored == 599 and seen == [(200, None), (400, None), (600, None)]
    assert batched.entries().equals(whole.entries())
    # errors="raise" stops at the batch with the document, having stored the batches before it.
    strict = neardup.Index(None, "minhash", threshold=0.7)
    with pytest.raises(neardup.NoTokens, match="^row 450: no tokens"):
        strict.add_batches([table.slice(0, 200), table.slice(200, 200), table.slice(400)])
    assert len(strict) == 400
    with pytest.raises(KeyError, match="batch 0 has no column 'url'"):
        strict.add_batches(table, id_field="url")
    with pytest.raises(KeyError, match="batch 0 has no column 'id'"):  # an index needs ids
        strict.add_batches(table.select(["text"]))


def test_dedup_fed_a_streamed_hugging_face_dataset():
    datasets = pytest.importorskip("datasets")
    texts = [f"record {i % 40} of a corpus streamed in batches, words {i % 40} {i % 40}" for i in range(200)]
    ids = [f"r{i:03d}" for i in range(200)]
    streamed = datasets.Dataset.from_dict({"id": ids, "text": texts}).to_iterable_dataset(num_shards=3)
    run = neardup.Dedup("minhash")
    run.add_batches(streamed.iter(batch_size=64), id_field="id")
    expected = neardup.dedup(texts, ids=ids, scheme="minhash")
    assert run.clusters().equals(expected) and expected.column("duplicate_of").null_count == 40
    # The dataset itself is read in batches of its records; its records as they iterate are refused, saying
    # how to get batches.
    run = neardup.Dedup("minhash")
    run.add_batches(streamed, id_field="id")
    assert run.clusters().equals(expected)
    with pytest.raises(TypeError, match=r"\.iter\(batch_size="):
        neardup.Dedup().add_batches(iter(streamed))


def test_dedup_does_not_depend_on_input_order_or_chunks(records):
    pa = pytest.importorskip("pyarrow")
    _, recs = records
    texts = [r["text"] for r in recs]
    ids = [r["id"] for r in recs]
    forward = neardup.dedup(texts, ids=ids).sort_by("id").to_pylist()
    backward = neardup.dedup(texts[::-1], ids=ids[::-1]).sort_by("id").to_pylist()
    assert forward == backward
    # Chunks are read where they are, each at its own offset, texts and ids cut in different places.
    n = len(texts)
    text_cuts, id_cuts = [0, 1, 7, n // 2, n], [0, n // 3, n - 1, n]
    padded = pa.array(["before"] + texts[7 : n // 2] + ["after"]).slice(1, n // 2 - 7)
    tail = pa.array(texts[n // 2 :], pa.large_string()).cast(pa.string())
    chunked = pa.chunked_array([texts[0:1], texts[1:7], padded, tail])
    assert [len(c) for c in chunked.chunks] == [b - a for a, b in zip(text_cuts, text_cuts[1:])]
    chunked_ids = pa.chunked_array([ids[a:b] for a, b in zip(id_cuts, id_cuts[1:])])
    assert neardup.dedup(chunked, ids=chunked_ids).sort_by("id").to_pylist() == forward


def test_dedup_accepts_arrow_numpy_and_pandas():
    pa = pytest.importorskip("pyarrow")
    texts = ["the cat sat on the mat today", "the cat sat on the mat today", "a different sentence here"]
    expected = neardup.dedup(texts).to_pylist()
    assert neardup.dedup(np.array(texts)).to_pylist() == expected
    assert neardup.dedup(pa.chunked_array([texts[:1], texts[1:]])).to_pylist() == expected
    assert neardup.dedup(pa.array(texts, pa.large_string())).to_pylist() == expected
    pd = pytest.importorskip("pandas")
    assert neardup.dedup(pd.Series(texts)).to_pylist() == expected
    assert expected[0]["duplicate_of"] == "0" or expected[1]["duplicate_of"] == "0"
    # Iterators and generators are read into lists (they failed as "not null"); a set has no row order.
    ids = ["a", "b", "c"]
    assert neardup.dedup(t for t in texts).to_pylist() == expected
    assert neardup.dedup(iter(texts), ids=iter(ids)).to_pylist() == neardup.dedup(texts, ids=ids).to_pylist()
    assert np.array_equal(neardup.sketches(t for t in texts), neardup.sketches(texts))
    index = neardup.Index(None)
    assert index.add_many((i for i in ids), (t for t in texts)) == 3
    assert index.query_many(iter(texts[2:])).num_rows == 1
    with pytest.raises(TypeError, match="not a set"):
        neardup.dedup(set(texts))
    # A table where a column belongs is refused, naming its columns (a DataFrame failed with "KeyError: 0").
    frame = pd.DataFrame({"id": ids, "text": texts})
    for table in (frame, pa.Table.from_pandas(frame)):
        with pytest.raises(TypeError, match=r"not a (DataFrame|Table) of columns \['id', 'text'\].*data\['text'\]"):
            neardup.dedup(table)
    for wrong, message in (({"a": texts[0]}, "not a dict"), (None, "not NoneType"), (5, "not int")):
        with pytest.raises(TypeError, match=message):
            neardup.sketches(wrong)
    with pytest.raises(TypeError, match="not a DataFrame"):
        neardup.dedup(texts, ids=frame)


def test_dedup_decodes_dictionaries_and_reads_polars():
    pa = pytest.importorskip("pyarrow")
    texts = ["the cat sat on the mat today", "the cat sat on the mat today", "a different sentence here"]
    expected = neardup.dedup(texts).to_pylist()
    # Categoricals and Parquet's dictionary-encoded columns arrive as dictionary arrays: decoded, not refused.
    assert neardup.dedup(pa.array(texts).dictionary_encode()).to_pylist() == expected
    assert neardup.dedup(pa.chunked_array([pa.array(texts).dictionary_encode()])).to_pylist() == expected
    pd = pytest.importorskip("pandas")
    assert neardup.dedup(pd.Series(texts, dtype="category")).to_pylist() == expected
    assert np.array_equal(neardup.sketches(pd.Series(texts, dtype="category")), neardup.sketches(texts))
    with pytest.raises(TypeError, match="documents must be strings or bytes, not int64"):
        neardup.dedup(pa.array([1, 2, 3]))
    pl = pytest.importorskip("polars")
    assert neardup.dedup(pl.Series("text", texts)).to_pylist() == expected
    assert neardup.dedup(pl.Series("text", texts, dtype=pl.Categorical)).to_pylist() == expected


def test_hugging_face_dataset_columns_are_read_through_arrow(monkeypatch):
    pytest.importorskip("pyarrow")
    datasets = pytest.importorskip("datasets")
    texts = ["the cat sat on the mat today", "a different sentence here", "the cat sat on the mat today",
             "the cat sat on the mat, today", "yet another line of words"]
    ds = datasets.Dataset.from_dict({"id": [10, 11, 12, 13, 14], "text": texts})
    if not isinstance(ds["text"], datasets.arrow_dataset.Column):
        pytest.skip("this datasets gives lists for columns")  # before datasets 4
    expected = neardup.dedup(texts, ids=[str(i) for i in range(10, 15)]).to_pylist()
    shuffled = ds.shuffle(seed=3).select(range(4))  # an indices mapping over the same Arrow table
    rows = shuffled.to_dict()
    expected_shuffled = neardup.dedup(rows["text"], ids=rows["id"]).to_pylist()
    nested = datasets.Dataset.from_dict({"meta": [{"url": f"u{i}", "body": t} for i, t in enumerate(texts)]})
    picked = nested.select([4, 2, 0])
    body, urls = picked["meta"]["body"], picked["meta"]["url"]
    gaps = datasets.Dataset.from_dict({"meta": [{"url": "a", "body": texts[0]}, {"url": None, "body": texts[1]}]})
    gap_bodies, gap_urls = gaps["meta"]["body"], gaps["meta"]["url"]
    # Read from Arrow, never row by row (iterating builds a dict per row, 57 times as slow on 200,000 texts).
    column = datasets.arrow_dataset.Column

    def refuse(*_):
        raise AssertionError("read row by row")

    monkeypatch.setattr(column, "__iter__", refuse)
    monkeypatch.setattr(column, "__getitem__", refuse)
    assert neardup.dedup(ds["text"], ids=ds["id"]).to_pylist() == expected
    assert neardup.dedup(shuffled["text"], ids=shuffled["id"]).to_pylist() == expected_shuffled
    assert np.array_equal(neardup.sketches(ds["text"], "minhash"), neardup.sketches(texts, "minhash"))
    with pytest.raises(TypeError, match=r"not a Dataset of columns \['id', 'text'\]"):
        neardup.dedup(ds)
    # A field of a struct column (ids kept in metadata), in the dataset's order; a missing one is named.
    assert neardup.dedup(body, ids=urls).to_pylist() == neardup.dedup(
        [texts[4], texts[2], texts[0]], ids=["u4", "u2", "u0"]).to_pylist()
    with pytest.raises(ValueError, match="row 1"):
        neardup.dedup(gap_bodies, ids=gap_urls)
    monkeypatch.undo()
    # A transform decides what the rows are: they are read as it gives them.
    shouting = ds.with_transform(lambda batch: {"text": [t.upper() for t in batch["text"]]}, columns=["text"])
    assert neardup.dedup(shouting["text"]).to_pylist() == neardup.dedup([t.upper() for t in texts]).to_pylist()


def test_integer_ids_are_their_decimal_text_as_in_the_cli(tmp_path):
    pa = pytest.importorskip("pyarrow")
    # Chosen so that the text order ("12" < "7") and the number order pick different representatives.
    texts = ["the quick brown fox jumps over the lazy dog", "the quick brown fox jumps over the lazy dog",
             "something else entirely, written in other words"]
    ids = [7, 12, 3]
    path = tmp_path / "numbered.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts)))
    table_path = tmp_path / "table.jsonl"
    run_cli("dedup", "--table", str(table_path), str(path))
    theirs = sorted((json.loads(line) for line in table_path.read_text().splitlines()), key=lambda r: r["id"])
    fields = ("id", "cluster", "representative", "duplicate_of")
    for given in (ids, np.array(ids, dtype=np.uint32), pa.array(ids).dictionary_encode()):
        table = neardup.dedup(texts, ids=given)
        ours = sorted((r for r in table.to_pylist() if r["cluster"] is not None), key=lambda r: r["id"])
        assert [{f: r[f] for f in fields} for r in ours] == [{f: r[f] for f in fields} for r in theirs]
    assert theirs[0]["representative"] == "12"
    pd = pytest.importorskip("pandas")
    assert neardup.dedup(texts, ids=pd.Series(ids)).equals(neardup.dedup(texts, ids=[str(i) for i in ids]))
    with pytest.raises(TypeError, match="row 0: ids must be strings, bytes or integers, not float"):
        neardup.dedup(texts, ids=[1.5, 2.5, 3.5])
    with pytest.raises(TypeError, match="ids must be strings, bytes or integers, not double"):
        neardup.dedup(texts, ids=np.array([1.5, 2.5, 3.5]))


def test_small_batches_and_long_documents_give_each_row_its_own_sketch(records):
    pa = pytest.importorskip("pyarrow")
    _, recs = records
    texts = [r["text"] for r in recs]
    # A small list is sketched on the calling thread (no helper thread, no pool); long documents (here
    # over 64 KiB each, fewer rows than a task of short ones) are shared among the threads a row at a time.
    long_documents = ["\n".join(texts[i:i + 100]) for i in range(0, 1000, 100)]
    assert min(map(len, long_documents)) > 64 << 10
    for batch in (texts[:1], texts[:5], long_documents, long_documents[:1] + texts[:200]):
        expected = np.stack([neardup.sketch(t, "minhash").values for t in batch])
        for column in (batch, pa.array(batch)):
            calls = []
            values = neardup.sketches(column, "minhash", progress=lambda *a: calls.append(a))
            assert np.array_equal(values, expected)
            assert calls == [(0, len(batch)), (len(batch), len(batch))]
    for column in ([], pa.array([], pa.string())):
        calls = []
        assert neardup.sketches(column, progress=lambda *a: calls.append(a)).shape[0] == 0
        assert calls == [(0, 0)]


def test_a_list_that_changes_size_during_a_call_is_an_error_not_a_crash():
    # `progress` runs on the calling thread while the list waits to be copied, as another thread could: its
    # first call comes before the first row is read.
    for change in (lambda texts: texts.append("one more document"), lambda texts: texts.pop()):
        for call in (neardup.sketches, neardup.dedup):
            texts = [f"document number {i} says {i % 97} things about {i % 13} topics" for i in range(10_000)]

            def progress(done, total, texts=texts, change=change):
                if done == 0:
                    change(texts)

            with pytest.raises(RuntimeError, match="list of documents changed size while it was read"):
                call(texts, progress=progress)


def test_progress_counts_documents_and_its_exception_stops_the_run():
    pa = pytest.importorskip("pyarrow")
    # Over 16,384 rows: an Arrow column reports between stretches; a list between its pieces (4,096 rows).
    texts = [f"document number {i} says {i % 97} things about {i % 13} topics" for i in range(40_000)]
    for column in (texts, pa.array(texts)):
        calls = []
        expected = neardup.sketches(column, errors="zero")
        assert np.array_equal(neardup.sketches(column, errors="zero", progress=lambda *a: calls.append(a)),
                              expected)
        n = len(texts)
        assert calls[0] == (0, n) and calls[-1] == (n, n) and len(calls) >= 4, calls
        assert all(a[0] < b[0] for a, b in zip(calls, calls[1:])) and {t for _, t in calls} == {n}

        class Stop(Exception):
            pass

        def stop(done, total):
            raise Stop(done)

        with pytest.raises(Stop):
            neardup.dedup(column, progress=stop)
        index = neardup.Index(None)
        with pytest.raises(Stop):
            index.add_many(range(n), column, progress=stop)
        assert len(index) == 0
        seen = []
        assert index.add_many(range(n), column, progress=lambda d, t: seen.append(d)) == n and seen[-1] == n
        seen.clear()
        index.query_many(column[:10] if isinstance(column, list) else column.slice(0, 10),
                         progress=lambda d, t: seen.append(d))
        assert seen == [0, 10]


def test_progress_true_shows_a_bar_with_tqdm_or_a_line_without(records, monkeypatch, capsys):
    """progress=True: tqdm's bar where tqdm is installed, else a line on standard error rewritten in place and
    ended when the call ends (however it ends); anything but a bool, None or a callable is refused."""
    path, recs = records
    texts = [r["text"] for r in recs[:3000]]
    n = len(texts)
    pytest.importorskip("tqdm")  # Hugging Face datasets, in the test requirements, brings it
    expected = neardup.sketches(texts, errors="zero")
    assert np.array_equal(neardup.sketches(texts, errors="zero", progress=True), expected)
    shown = capsys.readouterr().err
    assert "sketching: 100%" in shown and " documents/s" in shown, shown
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # as if tqdm were not installed
    assert neardup.dedup(texts, progress=True).equals(neardup.dedup(texts))
    assert capsys.readouterr().err.endswith(f"\rdedup: {n:,} of {n:,} documents\n")
    neardup.dedup_files(path, progress=True)
    size = path.stat().st_size / 2**20
    assert capsys.readouterr().err.endswith(f"dedup_files: {size:,.1f} of {size:,.1f} MiB\n")
    run = neardup.Dedup("minhash")
    run.add_batches([{"text": texts[:1000]}, {"text": texts[1000:]}], progress=True)
    assert capsys.readouterr().err.endswith(f"Dedup.add_batches: {n:,} documents\n")
    with pytest.raises(neardup.Error):
        neardup.sketches(texts + [""], progress=True)
    assert capsys.readouterr().err.endswith("\n")  # the line is ended by the error too
    with pytest.raises(TypeError, match="progress must be True .* not int"):
        neardup.sketches(texts, progress=1)


def test_a_column_of_long_documents_reports_progress_within_its_first_16384_rows():
    pa = pytest.importorskip("pyarrow")
    # 40 documents of 2 MB: fewer rows than a stretch, but 80 MB of text, so the column is worked on in
    # stretches of 64 MiB at most, with progress (and a look at Ctrl-C) between them.
    words = "lorem ipsum dolor sit amet consectetur adipiscing elit "
    column = pa.array([words * (2_000_000 // len(words)) + f"document {i}" for i in range(40)])
    calls = []
    values = neardup.sketches(column, progress=lambda *a: calls.append(a))
    assert calls[0] == (0, 40) and calls[-1] == (40, 40) and any(0 < done < 40 for done, _ in calls), calls
    halves = [neardup.sketches(column.slice(0, 20)), neardup.sketches(column.slice(20))]
    assert np.array_equal(values, np.concatenate(halves))


def test_lists_read_natively_equal_arrow_columns(records):
    pa = pytest.importorskip("pyarrow")
    _, recs = records
    texts = [r["text"] for r in recs[:300]]
    # A list is copied natively, an Arrow column read in place: both must give the same rows.
    assert np.array_equal(neardup.sketches(texts, "minhash", errors="keep"),
                          neardup.sketches(pa.array(texts), "minhash", errors="keep"))
    assert np.array_equal(neardup.sketches(tuple(texts), errors="keep"),
                          neardup.sketches(pa.array(texts), errors="keep"))
    mixed = ["the cat sat on the mat today", None, "the cat sat on the mat today".encode(), "é ü ß 文字"]
    with pytest.warns(RuntimeWarning, match="^1 document could not be sketched; the first, row 1: null value"):
        values = neardup.sketches(mixed, errors="zero")
    assert values[0] == values[2] and values[1] == 0 and values[3] != 0
    with pytest.raises(TypeError, match="row 1: documents must be str or bytes, not int"):
        neardup.sketches(["a b c", 7])
    with pytest.raises(neardup.Error, match="row 0: not valid text: a lone surrogate"):
        neardup.sketches(["\ud800 lone surrogate"])
    # Arrow text that is not UTF-8 (buffers put together by hand: pyarrow checks only what it encodes).
    data = b"valid words here" + b"\xff\xfe broken"
    offsets = np.array([0, 16, len(data)], dtype=np.int64)
    broken = pa.Array.from_buffers(pa.large_string(), 2, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])
    for scheme in ("simhash", "minhash"):
        with pytest.raises(neardup.Error, match="^row 1: not UTF-8: invalid utf-8 sequence"):
            neardup.sketches(broken, scheme)
        with pytest.warns(RuntimeWarning, match="row 1: not UTF-8"):
            written = neardup.sketches(broken, scheme, errors="zero")
        assert written[0].any() and not written[1].any()
        assert np.array_equal(written[0], neardup.sketches(["valid words here"], scheme)[0])
    # One document where a column belongs is refused, not read as a column of its characters.
    for one in ("the cat sat on the mat", b"the cat sat on the mat"):
        with pytest.raises(TypeError, match="expected a column .* for one document, use neardup.sketch"):
            neardup.sketches(one)
        with pytest.raises(TypeError, match="expected a column"):
            neardup.dedup(["a b c"], ids=one)
    # An unknown errors= is refused before any work, not only when a row fails.
    with pytest.raises(ValueError, match="errors must be one of 'raise', 'zero', 'keep', not 'skip'"):
        neardup.sketches(["a b c"], errors="skip")
    with pytest.raises(ValueError, match="errors must be 'keep' or 'raise', not 'zero'"):
        neardup.dedup(["a b c"], errors="zero")


def test_strs_of_every_kind_read_as_their_utf8():
    """A list's `str` values are read from their own characters (1, 2 or 4 bytes each) where CPython's string
    layout is the one the module knows, not through Python's encoder: every kind must give its exact UTF-8."""
    pa = pytest.importorskip("pyarrow")
    from neardup import _native

    if (3, 9) <= sys.version_info[:2] <= (3, 15) and sys.maxsize > 2**32 and sys.byteorder == "little" \
            and not hasattr(sys, "getobjects"):
        assert _native.str_reader_enabled(), "the string layout check failed on a known CPython"
    rng = random.Random(7)
    alphabets = {
        "ascii": "abcdefghijklmnopqrstuvwxyz     \t\n.,0123456789\x00",
        "latin-1": "abcdefghij     éèàüößçñ ÿ\xa0\x80",
        "2 bytes": "abcdef   éü – “ ” ℵ Ελληνικά кириллица 文字かな 한글 \u0800\uffff\ue000",
        "4 bytes": "abc   é – 文 🙂 𝔸 \U0010ffff \U00010000",
    }
    ids, texts = [], []
    for i in range(400):
        alphabet = list(alphabets.values())[i % 4]
        length = rng.choice([0, 1, 7, 8, 9, 63, 64, 65, 300, 5000])
        text = "".join(rng.choice(alphabet) for _ in range(length))
        ids.append(f"{i}:{text}")
        texts.append(text)

    class Str(str):
        pass

    ids += [Str("a subclass – café"), "é", "", "\x00"]
    texts += [Str("a subclass – café words"), "é", "", "\x00"]
    # Ids come back as they were read: exactly their UTF-8.
    table = neardup.dedup(["the same words in every row"] * len(ids), ids=ids)
    assert table.column("id").to_pylist() == [str(i) for i in ids]
    # Documents sketch as the same text in an Arrow column (pyarrow encodes it with Python).
    for scheme in ("simhash", "minhash"):
        with pytest.warns(RuntimeWarning, match="no tokens"):  # the empty rows
            assert np.array_equal(neardup.sketches(texts, scheme, errors="keep"),
                                  neardup.sketches(pa.array(texts), scheme, errors="keep"))
    # Surrogates are refused in every kind of string, two in a row too (which UTF-16 would read as one).
    for bad in ("\ud83d\ude00 two surrogates", "é \udfff", "🙂 and \ud800"):
        with pytest.raises(neardup.Error, match="^row 0: not valid text: a lone surrogate"):
            neardup.sketches([bad])
        with pytest.raises(ValueError, match="row 1: not valid Unicode text"):
            neardup.dedup(["a b c", "a b c"], ids=["a", bad])


def test_long_lists_are_copied_in_pieces_with_rows_numbered_in_the_whole_list(records):
    pa = pytest.importorskip("pyarrow")
    _, recs = records
    # Over 4,096 rows and over 2 MiB: a list is copied and sketched several pieces at a time.
    texts = [r["text"] for r in recs] * (9000 // len(recs) + 1)
    texts = texts[:9000]
    texts[5000] = None
    texts[7000] = texts[7001].encode()
    assert sum(len(t) for t in texts if t) > 2 << 20
    with pytest.warns(RuntimeWarning, match="row 5000: null value"):
        values = neardup.sketches(texts, "minhash", errors="zero")
    assert values.flags.writeable and values.shape == (9000, 128)
    assert not values[5000].any() and np.array_equal(values[7000], values[7001])
    column = pa.array([t.decode() if isinstance(t, bytes) else t for t in texts])
    with pytest.warns(RuntimeWarning):
        assert np.array_equal(values, neardup.sketches(column, "minhash", errors="zero"))
    texts[8500] = 3.5
    with pytest.raises(TypeError, match="row 8500: documents must be str or bytes, not float"):
        neardup.sketches(texts, "minhash", errors="zero")
    texts[8500] = "\ud800"
    with pytest.raises(neardup.Error, match="^row 5000: null value .and 1 more"):
        neardup.sketches(texts, "minhash")
    texts[5000] = texts[5001]
    with pytest.raises(neardup.Error, match=r"^row 8500: not valid text: a lone surrogate \(U\+D800\) at byte 0$"):
        neardup.sketches(texts, "minhash")


def test_the_pieces_of_a_list_give_their_results_in_row_order(records):
    pa = pytest.importorskip("pyarrow")
    _, recs = records
    # Sketches, failures, clusters and stored entries come back in row order across a list's pieces, even
    # where pieces worked on side by side would finish out of order: here the first piece is one document
    # of over 2 MiB (one thread's work), and the pieces after it are thousands of short ones each.
    long_document = " ".join(r["text"] for r in recs)
    while len(long_document) < 2 << 20:
        long_document += " " + long_document
    texts = [long_document] + [r["text"] for r in recs] * 6 + [r["text"][::-1] for r in recs] * 2
    texts[3000], texts[9000] = None, ""
    column = pa.array(texts)
    for scheme in ("simhash", "minhash"):
        with pytest.raises(neardup.Error, match=r"^row 3000: null value .and 1 more"):
            neardup.sketches(texts, scheme)
        with pytest.warns(RuntimeWarning, match="^2 documents could not be sketched; the first, row 3000"):
            values = neardup.sketches(texts, scheme, errors="zero")
        with pytest.warns(RuntimeWarning):
            assert np.array_equal(values, neardup.sketches(column, scheme, errors="zero"))
        with pytest.warns(RuntimeWarning, match="the first, row 3000"):
            table = neardup.dedup(texts, scheme=scheme)
        with pytest.warns(RuntimeWarning):
            assert table.equals(neardup.dedup(column, scheme=scheme))
        assert table["cluster"].null_count < len(texts) // 2  # the repeated records are clustered
        # Each id stored with its own document's sketch (the entries are sorted by id).
        from_list, from_arrow = neardup.Index(None, scheme=scheme), neardup.Index(None, scheme=scheme)
        with pytest.warns(RuntimeWarning, match="^2 documents could not be sketched"):
            assert from_list.add_many(range(len(texts)), texts, errors="skip") == len(texts) - 2
        with pytest.warns(RuntimeWarning):
            from_arrow.add_many(range(len(texts)), column, errors="skip")
        assert from_list.entries().equals(from_arrow.entries())


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_progress_callback_may_itself_sketch_a_long_list(threads):
    # The callback runs on the copying thread, between pieces: the pool's threads must not be left waiting
    # for that copy, or the callback's own work never gets a thread (a hang with one thread).
    script = """
import neardup, numpy as np
texts = [f"document number {i} says {i % 97} things about {i % 13} topics" for i in range(60_000)]
inner = []
def progress(done, total):
    if 0 < done < total and not inner:
        inner.append(neardup.sketches(texts, scheme="minhash", progress=lambda d, t: None))
outer = neardup.sketches(texts, scheme="minhash", progress=progress)
assert inner and np.array_equal(inner[0], outer)
"""
    env = {**os.environ, "RAYON_NUM_THREADS": threads}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_dedup_refuses_duplicate_ids_and_keeps_empty_documents():
    pa = pytest.importorskip("pyarrow")
    with pytest.raises(ValueError, match='rows 0 and 2 have the same id "x": ids must be unique'):
        neardup.dedup(["a b c d", "e f g h", "i j"], ids=pa.chunked_array([["x", "y"], ["x"]]))
    with pytest.raises(ValueError, match="row 1: the id is null"):
        neardup.dedup(["a b c d", "e f g h"], ids=["x", None])
    with pytest.raises(ValueError, match="1 ids for 2 documents"):
        neardup.dedup(["a b c d", "e f g h"], ids=["x"])
    with pytest.warns(RuntimeWarning, match="row 1"):
        table = neardup.dedup(["some words here", "", "some words here"])
    assert table.column("cluster").to_pylist()[1] is None
    with pytest.raises(neardup.Error, match="row 1"):
        neardup.dedup(["some words here", "", "x y z"], errors="raise")


def test_rows_that_cannot_be_sketched_keep_their_place_in_every_way_of_deduplicating(tmp_path):
    """Rows without words at the start, in runs, alone and at the end: each keeps its id and stays alone,
    and every other row's place in its cluster is the one it has without them, whether the column is
    deduplicated whole, fed to a Dedup in uneven pieces, or read from a file."""
    rnd = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    texts = []
    for base in range(40):
        original = [rnd.choice(words) for _ in range(30)]
        for copy in range(3):
            edited = list(original)
            edited[copy] = f"copy{copy}"
            texts.append(" ".join(edited))
    rnd.shuffle(texts)
    empty = {0, 1, 2, 17, 40, 41, 77, len(texts) + 3, len(texts) + 4}
    column, ids = [], []
    good = iter(texts)
    for row in range(len(texts) + len(empty)):
        column.append(("", " \n ")[row % 2] if row in empty else next(good))
        ids.append(f"id-{row * 7919 % 1000:03d}-{row}")
    alone = [i for row, i in enumerate(ids) if row not in empty]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, column)))
    for scheme, args in (("simhash-doc-v1", {"k": 6}), ("minhash", {"threshold": 0.7})):
        expected = neardup.dedup([t for row, t in enumerate(column) if row not in empty], alone, scheme, **args)
        assert expected.column("cluster").null_count < len(alone) - 40, "the planted copies cluster"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            whole = neardup.dedup(column, ids, scheme, **args)
            run = neardup.Dedup(scheme, **args)
            for start, end in ((0, 1), (1, 5), (5, 41), (41, 100), (100, len(column))):
                run.add(column[start:end], ids[start:end])
            fed = run.clusters()
            pairs = run.pairs().to_pylist()
            files = neardup.dedup_files(path, scheme, **args)
        for table in (whole, fed, files):
            assert table.column("id").to_pylist() == ids
            rows = table.to_pylist()
            assert all(rows[r]["cluster"] is None and rows[r]["duplicate_of"] is None for r in empty)
            assert table.take([r for r in range(len(rows)) if r not in empty]).equals(expected)
        assert pairs and all(p["a"] in alone and p["b"] in alone for p in pairs)


def test_threads_give_the_same_sketches_as_one(records):
    _, recs = records
    texts = [r["text"] for r in recs]
    expected = neardup.sketches(texts, "minhash", errors="keep")
    results = [None] * 4

    def work(i):
        results[i] = neardup.sketches(texts, "minhash", errors="keep")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert np.array_equal(r, expected)


def test_threads_sharing_a_dedup_take_turns(records):
    """Batches added to one neardup.Dedup from several threads at once are all added (a thread's call used to
    fail with "Already borrowed" while another's held the run), and give the clusters of one thread's adds."""
    _, recs = records
    texts, ids = [r["text"] for r in recs], [r["id"] for r in recs]
    run = neardup.Dedup("minhash")
    errors = []

    def work(lo):
        try:
            run.add(texts[lo : lo + 300], ids=ids[lo : lo + 300])
            assert len(run) >= 300 and run.clusters().num_rows >= 300
        except Exception as e:  # pragma: no cover - the failure this test is for
            errors.append(e)

    threads = [threading.Thread(target=work, args=(lo,)) for lo in range(0, len(texts), 300)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(run) == len(texts)
    expected = neardup.dedup(texts, ids=ids, scheme="minhash")
    assert run.clusters().sort_by("id").equals(expected.sort_by("id"))


def _child_processes() -> int:
    """How many processes this one started that are still running (read from /proc; zombies left out)."""
    count = 0
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            state, parent = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError, ValueError):
            continue  # ended while read
        count += int(parent) == os.getpid() and state != "Z"
    return count


def _batch_work(args):
    """Every kind of parallel work, for test_forked_children_run_batch_work (module level: Pool pickles it)."""
    texts, path = args
    from neardup.datasketch import MinHash, MinHashLSH

    # A PDF on this thread, first: the thread keeps the worker process that read it, which a forked child
    # inherits the pipes of but must not use (its siblings would too): the child starts its own.
    paper = PAPER.read_bytes()
    pdfs = [str(neardup.fingerprint(paper)), _child_processes() >= 1] + neardup.sketches([paper] * 4).tolist()
    sigs = neardup.sketches(texts, "minhash", errors="zero")
    table = neardup.dedup(texts, scheme="simhash", errors="keep")
    with neardup.Index(path, "simhash", k=3) as index:
        index.add_many([str(i) for i in range(len(texts))], texts, errors="skip")
        index.merge()
        found = index.query_many(texts[:50])
    lsh = MinHashLSH(threshold=0.5, num_perm=64)
    for i, text in enumerate(texts[:300]):
        m = MinHash(num_perm=64)
        m.update_batch([w.encode() for w in text.split()[:200]])
        lsh.insert(str(i), m)
    return sigs.tobytes(), pdfs, table.to_pylist(), found.to_pylist(), sorted(len(lsh.query(m)) for _ in range(1))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork(2) here")
def test_forked_children_run_batch_work(records, tmp_path):
    """Rayon's threads do not survive fork(2): a child forked after the parent's batch work (multiprocessing,
    datasets.map(num_proc=...)) waited forever on its first batch call. Now it runs in a pool of its own."""
    import multiprocessing
    import warnings

    texts = [r["text"] for r in records[1][:1500]]
    expected = _batch_work((texts, str(tmp_path / "parent")))
    with warnings.catch_warnings():
        # Python 3.12 warns about forking a process that has threads (rayon's); forking is what is tested.
        warnings.simplefilter("ignore", DeprecationWarning)
        with multiprocessing.get_context("fork").Pool(2) as pool:
            jobs = [(texts, str(tmp_path / f"child{i}")) for i in range(2)]
            results = pool.map_async(_batch_work, jobs).get(timeout=300)
    assert results == [expected, expected]


def _use_an_inherited_index(text):
    """For test_a_forked_child_reads_but_does_not_write_an_inherited_index_on_disk."""
    index = _INHERITED
    found = index.query(text)
    try:
        index.add("from-child", text)
        refused = ""
    except neardup.IndexError as e:
        refused = str(e)
    try:
        index.add_many(["from-child"], [text])
        refused_many = ""
    except neardup.IndexError as e:
        refused_many = str(e)
    if refused_many != refused:
        refused = f"add: {refused}; add_many: {refused_many}"
    try:
        neardup.Index(index.location)
        second_writer = ""
    except neardup.IndexError as e:
        second_writer = str(e)
    with neardup.Index(index.location, read_only=True) as reader:
        read = reader.query(text)
    index.close()  # the parent's files stay as they are
    return found, refused, second_writer, read


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork(2) here")
def test_a_forked_child_reads_but_does_not_write_an_inherited_index_on_disk(records, tmp_path):
    """Parent and child appending to one index's files through one handle would damage them: the child's
    writes are refused, with what to do instead; its reads and its own read-only handle work."""
    import multiprocessing

    global _INHERITED
    texts = [r["text"] for r in records[1][:300]]
    index = _INHERITED = neardup.Index(str(tmp_path / "idx"), "simhash", k=3)
    index.add_many([f"d{i}" for i in range(len(texts))], texts)
    expected = index.query(texts[7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with multiprocessing.get_context("fork").Pool(1) as pool:
            found, refused, second_writer, read = pool.apply_async(_use_an_inherited_index, (texts[7],)).get(60)
    assert found == expected and read == expected
    assert "forked" in refused and "read_only=True" in refused
    assert "already open for writing" in second_writer
    # The parent goes on writing; its files are whole.
    index.add("after", texts[7])
    index.close()
    with neardup.Index(str(tmp_path / "idx")) as again:
        assert len(again) == len(texts) + 1 and "from-child" not in again
        again.verify()


def test_a_lone_surrogate_is_a_document_that_cannot_be_sketched():
    """A str with a lone surrogate (UTF-8 cannot encode it) fails as its row, under `errors=`, as other
    documents that cannot be sketched do (it stopped the whole call, even with errors="keep")."""
    ok = "release notes: fixed a crash when opening empty files in the editor"
    bad = "hello world \ud800 and more words after it"
    with pytest.raises(neardup.Error, match=r"^row 1: not valid text: a lone surrogate \(U\+D800\) at byte 12$"):
        neardup.sketches([ok, bad])
    with pytest.warns(RuntimeWarning, match="row 1: not valid text: a lone surrogate"):
        table = neardup.dedup([ok, bad, ok])
    assert table.to_pylist()[1]["cluster"] is None and table.to_pylist()[2]["duplicate_of"] == "0"
    with pytest.warns(RuntimeWarning, match="not stored"):
        assert neardup.Index(None).add_many(["a", "b"], [ok, bad], errors="skip") == 1
    # An id cannot be stored without its text: refused, naming the row.
    with pytest.raises(ValueError, match="row 1: not valid Unicode text"):
        neardup.dedup([ok, ok], ids=["a", "b\udc80"])


def test_errors_are_one_hierarchy_and_star_imports_keep_pythons_own():
    for kind in (
        neardup.SchemeMismatch,
        neardup.MediaError,
        neardup.NoTokens,
        neardup.ParseError,
        neardup.UnsupportedError,
        neardup.IndexError,
    ):
        assert issubclass(kind, neardup.Error) and issubclass(kind, Exception)
    assert neardup.IndexError is not IndexError
    names: dict = {}
    exec("from neardup import *", names)
    assert "Error" in names and "Index" in names and "IndexError" not in names


def test_fingerprints_compare_and_refuse_other_schemes():
    a = neardup.fingerprint(b"<p>Fixed a crash when opening empty files.</p>")
    b = neardup.fingerprint(b"Fixed a crash when opening empty files.", media="text")
    assert a == b and a.distance(b) == 0
    # bytes are detected (HTML above); a str is text as it is, unless media names another medium.
    markup = "<p>Fixed a crash when opening empty files.</p>"
    assert neardup.fingerprint(markup, media="html") == a
    assert neardup.fingerprint(markup) == neardup.fingerprint(markup.encode(), media="text") != a
    assert neardup.sketches([markup])[0] == neardup.fingerprint(markup).value
    assert neardup.Fingerprint.parse(str(a)) == a
    assert neardup.compare(a, str(b)) == {"similarity": 1.0, "distance": 0, "verdict": "close"}
    sig = neardup.sketch("Fixed a crash when opening empty files.", "minhash")
    with pytest.raises(neardup.SchemeMismatch):
        a.similarity(sig)
    with pytest.raises(neardup.ParseError):
        neardup.Sketch.parse("nonsense")
    with pytest.raises(neardup.ParseError):
        neardup.sketch("text", "no-such-scheme")
    with pytest.raises(neardup.NoTokens):
        neardup.fingerprint("  ... ")
    with pytest.raises(neardup.UnsupportedError):
        neardup.fingerprint("some text", "minhash")
    import pickle

    assert pickle.loads(pickle.dumps(a)) == a
    assert {s["name"] for s in neardup.schemes()} >= {"simhash-doc-v1", "minhash-datasketch-affine32"}
    # As strings, a column of any scheme (bottom-k samples, which vary in length, included).
    texts = ["Fixed a crash when opening empty files.", "Fixed a crash when opening empty files!"]
    for scheme in ("simhash-doc-v1", "minhash", "bottomk-v1"):
        strings = neardup.sketches(texts, scheme, strings=True)
        assert strings.to_pylist() == [str(neardup.sketch(t, scheme)) for t in texts]
        assert neardup.Sketch.parse(strings[0].as_py()) == neardup.sketch(texts[1], scheme)
    with pytest.warns(RuntimeWarning, match="^1 document could not be sketched; the first, row 1: no tokens"):
        assert neardup.sketches([texts[0], " ... "], strings=True, errors="zero").null_count == 1


def test_index_in_memory_and_shared_with_the_cli(tmp_path):
    index = neardup.Index(None, "simhash", k=3)
    index.add("a", "the quick brown fox jumps over the lazy dog")
    index.add("b", "a completely different document about databases")
    assert len(index) == 2 and "a" in index
    assert [m[0] for m in index.query("the quick brown fox jumps over the lazy dog")] == ["a"]
    # A Sketch in the document's place is stored and queried as the sketch it is, never as text.
    copied = index.get("a")
    assert index.add("c", copied) == copied and index.get("c") == copied
    assert [m[0] for m in index.query(copied)] == ["a", "c"]
    assert index.query(copied) == index.query(sketch=str(copied))
    with pytest.raises(ValueError, match="not both"):
        index.query(copied, sketch=copied)
    with pytest.raises(neardup.SchemeMismatch):
        index.add("d", neardup.sketch("the quick brown fox jumps over the lazy dog", "minhash"))
    assert index.remove("c")
    assert index.remove("a") and not index.remove("a")
    with pytest.raises(neardup.UnsupportedError):
        index.query("text", threshold=0.5)
    # Pickling (an Index passed to a spawn or forkserver worker) is refused, saying what to do instead.
    import pickle

    with pytest.raises(TypeError, match=r"cannot be pickled: an index in memory .* entries\(\)"):
        pickle.dumps(index)

    # An index made by the CLI opens in Python, and what Python adds the CLI finds.
    path = tmp_path / "idx"
    doc = tmp_path / "doc.txt"
    doc.write_text("release notes: fixed a crash when opening empty files in the editor")
    run_cli("index", "create", str(path), "--scheme", "simhash", "-k", "3")
    run_cli("index", "add", str(path), str(doc))
    shared = neardup.Index(str(path))
    assert len(shared) == 1
    with pytest.raises(TypeError, match=r"open it again in the other process, neardup.Index\(.*read_only=True"):
        pickle.dumps(shared)
    found = shared.query(doc.read_bytes())
    assert found and found[0][1] == 0
    shared.add("from-python", "release notes: fixed a crash when opening empty files in the editor")
    del shared
    out = run_cli("index", "query", str(path), str(doc))
    assert "from-python" in out
    with pytest.raises(neardup.SchemeMismatch):
        neardup.Index(str(path), "minhash")


def test_an_index_closes_its_files_and_reports_stats_as_the_cli(records, tmp_path):
    import json

    texts = [r["text"] for r in records[1][:200]]
    path = tmp_path / "idx"
    with neardup.Index(str(path), "simhash", k=3) as index:
        assert index.add_many([f"d{i}" for i in range(len(texts))], texts) == len(texts)
        # One writer at a time, in this process too, until the first handle is closed.
        with pytest.raises(neardup.IndexError, match="already open for writing"):
            neardup.Index(str(path))
    assert index.closed and "closed" in repr(index)
    for call in (
        lambda: len(index),
        lambda: "d0" in index,
        lambda: index.query(texts[0]),
        lambda: index.add("x", texts[0]),
        lambda: index.add_many(["x"], [texts[0]]),
        lambda: index.query_many([texts[0]]),
        lambda: index.stats(),
    ):
        with pytest.raises(neardup.IndexError, match="is closed"):
            call()
    index.close()  # again: nothing to do
    assert index.scheme == "simhash-doc-v1" and index.location == str(path)

    # The files are free: the CLI writes to them, and a new handle sees its entry.
    doc = tmp_path / "doc.txt"
    doc.write_text(texts[0])
    run_cli("index", "add", str(path), str(doc))
    index = neardup.Index(str(path))
    assert len(index) == len(texts) + 1 and index.query(texts[0])[0][1] == 0
    index.merge()
    index.verify()
    stats = index.stats()
    index.close()
    cli_stats = json.loads(run_cli("index", "stats", "--json", str(path)))
    for key in ("entries", "scheme", "kind", "k", "threshold", "design", "tables", "store", "file_bytes", "log_bytes"):
        assert stats[key] == cli_stats[key], key
    assert stats["store"] == "segments" and stats["file_bytes"] > 0 and stats["memory_id_bytes"] >= 0

    # verify() names a damaged segment.
    segment = max((f for f in path.iterdir() if f.is_file()), key=lambda f: f.stat().st_size)
    damaged = bytearray(segment.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    segment.write_bytes(bytes(damaged))
    with neardup.Index(str(path), read_only=True) as reader, pytest.raises(neardup.IndexError, match=segment.name):
        reader.verify()

    memory = neardup.Index(None, "minhash-oph-v1", threshold=0.7)
    assert memory.stats()["store"] == "memory" and memory.stats()["threshold"] == 0.7
    memory.verify()
    with pytest.raises(neardup.IndexError, match="no segments"):
        memory.merge()


@pytest.mark.parametrize("scheme", ["simhash-doc-v1", "minhash-oph-v1"])
def test_entries_are_the_clis_export_and_add_back(records, tmp_path, scheme):
    pytest.importorskip("pyarrow")
    recs = records[1][:400]
    path = str(tmp_path / "idx")
    with neardup.Index(path, scheme) as index:
        # Added in reverse order of ids; listed sorted by id.
        index.add_many([r["id"] for r in reversed(recs)], [r["text"] for r in reversed(recs)], errors="skip")
        index.remove(recs[5]["id"])
        table = index.entries()
        assert table.column_names == ["id", "sketch"] and table.num_rows == len(index)
        ids, sketches = table["id"].to_pylist(), table["sketch"].to_pylist()
        assert ids == sorted(ids) and recs[5]["id"] not in ids
        assert all(index.get(i) == neardup.Sketch(s) for i, s in zip(ids, sketches))
    exported = run_cli("index", "export", path)
    assert exported == "".join(f"{i}\t{s}\n" for i, s in zip(ids, sketches))
    copy = neardup.Index(None, scheme)
    copy.add_sketches(list(zip(ids, sketches)))
    assert copy.entries().equals(table)


@pytest.mark.parametrize("scheme", ["simhash-doc-v1", "minhash-oph-v1"])
def test_index_columns_equal_one_document_at_a_time(records, tmp_path, scheme):
    pa = pytest.importorskip("pyarrow")
    _, recs = records
    # Real text, and two documents without words among it (they cannot be sketched).
    texts = [r["text"] for r in recs[:300]] + ["", "  ...  "] + [r["text"] for r in recs[300:600]]
    ids = [r["id"] for r in recs[:300]] + ["empty", "dots"] + [r["id"] for r in recs[300:600]]
    one = neardup.Index(None, scheme)
    for i, t in zip(ids, texts):
        try:
            one.add(i, t)
        except neardup.Error:
            pass
    assert len(one) == len(texts) - 2
    index_path = tmp_path / "idx"
    many = neardup.Index(str(index_path), scheme)
    with pytest.warns(RuntimeWarning, match=r"2 documents could not be sketched \(not stored\)"):
        assert many.add_many(ids, pa.array(texts), errors="skip") == len(one)
    assert all((i in many) == (i in one) and many.get(i) == one.get(i) for i in ids)
    with pytest.warns(RuntimeWarning, match=r"2 documents could not be sketched \(no matches\)"):
        table = many.query_many(texts, errors="skip")
    assert table.column_names == ["row", "id", "score"]
    found = {}
    for row in table.to_pylist():
        found.setdefault(row["row"], []).append((row["id"], row["score"]))
    expected = {}
    for r, t in enumerate(texts):
        try:
            matches = one.query(t)
        except neardup.Error:
            continue
        if matches:
            expected[r] = matches
    assert found == expected and len(found) == len(texts) - 2
    # Several threads asking at once get the same answers.
    answers = [None] * 4

    def work(i):
        answers[i] = many.query_many(texts, errors="skip")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert all(a.equals(table) for a in answers)
    # Durable: the files reopen with every entry, and the CLI answers from them.
    del many
    reopened = neardup.Index(str(index_path))
    assert len(reopened) == len(one)
    first = next(r for r in range(len(texts)) if texts[r].strip() and ids[r] in one)
    doc = tmp_path / "doc.txt"
    doc.write_text(texts[first])
    assert ids[first] in run_cli("index", "query", "--media", "text", str(index_path), str(doc))


def test_index_columns_refuse_bad_input_before_storing_anything():
    index = neardup.Index(None, "simhash")
    texts = ["the quick brown fox jumps over the lazy dog", "   ", "another document with some words in it"]
    with pytest.raises(neardup.Error, match=r"row 1: no tokens.*"):
        index.add_many(["a", "b", "c"], texts)
    assert len(index) == 0
    with pytest.raises(ValueError, match="errors must be 'raise' or 'skip', not 'keep'"):
        index.add_many(["a"], texts[:1], errors="keep")
    with pytest.raises(ValueError, match="2 ids for 3 documents"):
        index.add_many(["a", "b"], texts)
    with pytest.raises(ValueError, match="row 1: the id is null"):
        index.add_many(["a", None, "c"], texts, errors="skip")
    with pytest.raises(ValueError, match="row 0: the id is not UTF-8: invalid utf-8 sequence"):
        index.add_many([b"\xff"], texts[:1])
    with pytest.raises(neardup.Error, match="row 1: no tokens"):
        index.query_many(texts)
    with pytest.raises(neardup.UnsupportedError):
        index.query_many(texts[:1], threshold=0.5)
    # Integer ids are their decimal text; a later row replaces an earlier one with the same id.
    assert index.add_many([7, 7], [texts[0], texts[2]]) == 2
    assert len(index) == 1 and index.get("7") == neardup.fingerprint(texts[2])
    assert index.query_many([texts[0], texts[2]]).to_pylist() == [{"row": 1, "id": "7", "score": 0.0}]


def test_a_read_only_index_follows_a_cli_writer(tmp_path):
    import subprocess

    path = tmp_path / "idx"
    run_cli("index", "create", str(path))
    fp = neardup.fingerprint("release notes: fixed a crash when opening empty files in the editor")
    writer = subprocess.Popen(
        [cli(), "index", "add-fingerprints", "--ack", "--batch", "1", str(path), "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        writer.stdin.write(f"first\t{fp}\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "ok 1"
        # The writer holds the index: a second writer is refused, a reader opens beside it.
        with pytest.raises(neardup.IndexError, match="already open for writing"):
            neardup.Index(str(path))
        reader = neardup.Index(str(path), read_only=True)
        assert len(reader) == 1 and reader.query(sketch=fp)[0][0] == "first"
        writer.stdin.write(f"second\t{fp}\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "ok 2"
        assert reader.refresh() and len(reader) == 2
        assert [m[0] for m in reader.query(sketch=fp)] == ["first", "second"]
        with pytest.raises(neardup.IndexError, match="reader"):
            reader.add("third", sketch=fp)
    finally:
        writer.stdin.close()
        assert writer.wait(timeout=60) == 0
    with pytest.raises(FileNotFoundError, match="no index at .*none"):
        neardup.Index(str(tmp_path / "none"), read_only=True)
    with pytest.raises(ValueError, match="read_only=True opens an existing index: give the path or URL of one"):
        neardup.Index(None, read_only=True)


@pytest.fixture
def redis_port(tmp_path):
    """A real redis-server on a free loopback port, killed after the test."""
    import socket

    if shutil.which("redis-server") is None:
        if os.environ.get("NEARDUP_REQUIRE_REDIS"):
            pytest.fail("redis-server is not installed, and NEARDUP_REQUIRE_REDIS is set")
        pytest.skip("redis-server is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )
    try:
        yield port
    finally:
        server.kill()
        server.wait(timeout=30)


def _create_in_redis(url: str, **settings) -> neardup.Index:
    """Creates an index in Redis, waiting for the server to accept connections (10 s at most)."""
    for _ in range(200):
        try:
            return neardup.Index(url, "simhash-doc-v1", **settings)
        except neardup.IndexError:
            time.sleep(0.05)
    return neardup.Index(url, "simhash-doc-v1", **settings)


def test_an_index_in_redis_is_shared(redis_port):
    """Two handles and the CLI on one index in a real Redis: each sees what the others wrote, at once."""
    url = f"redis://127.0.0.1:{redis_port}/py-shared"
    writer = _create_in_redis(url, expected=1000)
    other = neardup.Index(url)
    reader = neardup.Index(url, read_only=True)
    text = "release notes: fixed a crash when opening empty files in the editor"
    writer.add("first", text)
    assert [m[0] for m in other.query(text + "!")] == ["first"]
    other.add("second", text + ".")
    assert len(writer) == 2 and len(reader) == 2
    assert [m[0] for m in reader.query(text)] == ["first", "second"]
    with pytest.raises(neardup.IndexError, match="reader"):
        reader.add("third", text)
    with pytest.raises(neardup.IndexError, match="reader"):
        reader.add_many(["third"], [text])
    # A column at a time over the shared store: stored for every handle, answered as one at a time.
    others = [f"{text} (copy {i})" for i in range(50)] + ["a different note about the printing dialog"]
    assert other.add_many([f"copy-{i}" for i in range(len(others))], others) == len(others)
    assert len(writer) == 2 + len(others)
    table = reader.query_many([text] + others)
    found = {}
    for row in table.to_pylist():
        found.setdefault(row["row"], []).append((row["id"], row["score"]))
    assert found == {r: reader.query(t) for r, t in enumerate([text] + others) if reader.query(t)}
    stats = json.loads(run_cli("index", "stats", url, "--json"))
    assert stats["entries"] == 2 + len(others) and stats["store"] == "redis"


_REDIS_TEXTS = [f"release notes {i}: fixed a crash when opening empty files in editor {i * 7919}" for i in range(200)]


_INHERITED = None


def _query_and_add_in_redis(worker):
    """For test_forked_children_dial_redis_anew: queries and adds through the handle the parent opened."""
    index = _INHERITED
    found = 0
    for step in range(200):
        i = (step * 13 + worker) % len(_REDIS_TEXTS)
        found += any(m[0] == f"p{i}" for m in index.query(_REDIS_TEXTS[i]))
        index.add(f"w{worker}-{step}", _REDIS_TEXTS[i])
    return found


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork(2) here")
def test_forked_children_dial_redis_anew(redis_port):
    """A handle on an index in Redis, opened before a fork and used by the parent and its children at once:
    each process dials its own connections (sharing the parent's sockets, each read the others' replies:
    "Parse error ... Expected crlf newline")."""
    import multiprocessing

    global _INHERITED
    index = _INHERITED = _create_in_redis(f"redis://127.0.0.1:{redis_port}/forked", expected=1000)
    index.add_many([f"p{i}" for i in range(len(_REDIS_TEXTS))], _REDIS_TEXTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with multiprocessing.get_context("fork").Pool(3) as pool:
            children = pool.map_async(_query_and_add_in_redis, range(3))
            parent = _query_and_add_in_redis(9)
            assert children.get(timeout=120) == [200, 200, 200]
    assert parent == 200 and len(index) == len(_REDIS_TEXTS) + 4 * 200


def test_arguments_that_do_not_fit_the_scheme_are_refused_as_in_the_cli():
    base = " ".join(f"w{i}" for i in range(300))
    variant = base.replace("w10 ", "x10 ").replace("w200 ", "x200 ")
    # Within k bits, but the exact check at 0.99 keeps them apart (`--verify exact --threshold 0.99`).
    assert neardup.dedup([base, variant])["cluster"].to_pylist() == [1, 1]
    assert neardup.dedup([base, variant], verify="exact", threshold=0.99)["cluster"].to_pylist() == [None, None]
    assert neardup.dedup([base, variant], verify="exact", threshold=0.9)["cluster"].to_pylist() == [1, 1]
    cosine = neardup.dedup([base, variant], verify="exact", measure="cosine", threshold=0.99)
    assert cosine["cluster"].to_pylist() == [1, 1]  # the same words, two of them changed
    with pytest.raises(ValueError, match="k is a Hamming distance for SimHash"):
        neardup.dedup([base, variant], scheme="minhash", k=3)
    with pytest.raises(ValueError, match="measure and verify_ngram choose how SimHash pairs are checked"):
        neardup.dedup([base, variant], scheme="minhash", measure="cosine")
    for refused in ({"threshold": 0.9}, {"threshold": 0.9, "verify": "none"}, {"verify_ngram": 2}):
        with pytest.raises(ValueError, match='appl(y|ies) to simhash-doc-v1 only with verify="exact"'):
            neardup.dedup([base, variant], **refused)
    with pytest.raises(ValueError, match='verify="estimate" applies to MinHash schemes'):
        neardup.dedup([base, variant], verify="estimate")
    with pytest.raises(neardup.UnsupportedError, match="a threshold is for MinHash indexes"):
        neardup.Index(None, "simhash", threshold=0.5)
    with pytest.raises(neardup.UnsupportedError, match="k is a Hamming distance"):
        neardup.Index(None, "minhash", k=3)
    index = neardup.Index(None, "minhash", threshold=0.9)
    index.add("base", base)
    with pytest.raises(neardup.UnsupportedError, match="below the index's threshold = 0.9"):
        index.query(variant, threshold=0.2)
    assert [id for id, _ in index.query(variant, threshold=0)] == ["base"]  # every LSH candidate


def test_an_index_opens_where_users_point_it(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with neardup.Index(empty, "simhash", k=4) as index:  # an empty directory: made there, as the CLI does
        index.add(7, "one two three four five")
        assert 7 in index and "7" in index and index.get(np.int64(7)) is not None
        assert index.remove(np.int32(7)) and len(index) == 0
        with pytest.raises(TypeError, match="an id must be a string, UTF-8 bytes or an integer, not float"):
            index.add(1.5, "text")
        # Bytes ids are their text, as in add_many and dedup.
        index.add(b"page", "six seven eight nine ten")
        assert "page" in index and b"page" in index and index.remove(b"page")
        with pytest.raises(ValueError, match="an id given as bytes must be UTF-8"):
            index.add(b"\xff", "text")
    with pytest.raises(ValueError, match="made with k = 4, which it keeps"):
        neardup.Index(empty, k=5)
    assert neardup.Index(empty, k=4).stats()["k"] == 4
    some_file = tmp_path / "notes.txt"
    some_file.write_text("not an index")
    with pytest.raises(NotADirectoryError, match="notes.txt: a file, not an index"):
        neardup.Index(some_file, "simhash")
    with neardup.Index(tmp_path / "lsh", "minhash", threshold=0.7):
        pass
    with pytest.raises(ValueError, match="made with threshold = 0.7, which it keeps"):
        neardup.Index(tmp_path / "lsh", threshold=0.9)


def test_sketches_come_back_from_any_iterable_of_pairs_and_strings_as_read_from_files():
    source = neardup.Index(None, "simhash")
    source.add_many(["a", "b"], ["the first document here", "and the second one there"])
    entries = source.entries()
    copy = neardup.Index(None, "simhash")
    assert copy.add_sketches(zip(entries["id"].to_pylist(), entries["sketch"].to_pylist())) == 2
    assert copy.entries().equals(entries)
    with pytest.raises(TypeError, match=r"entry 0: expected an \(id, sketch\) pair"):
        copy.add_sketches([("a",)])
    line = entries["sketch"][0].as_py()
    assert neardup.Sketch.parse(f" {line}\n") == neardup.Sketch.parse(line)
    with pytest.raises(neardup.MediaError, match='media="text"'):
        neardup.fingerprint(bytes(range(256)) * 4)
    assert neardup.dedup(["x y z", "u v w"], ids=list(np.arange(2)))["id"].to_pylist() == ["0", "1"]


def test_columns_of_missing_values_and_of_python_objects_are_read_row_by_row():
    pd = pytest.importorskip("pandas")
    texts = ["the cat sat on the mat today", "the cat sat on the mat today!", "something else entirely"]
    with pytest.warns(RuntimeWarning, match="2 documents could not be sketched; the first, row 0: null value"):
        assert neardup.dedup(pd.Series([None, None]))["cluster"].to_pylist() == [None, None]
    assert neardup.dedup(pd.Series([], dtype=object)).num_rows == 0
    with pytest.warns(RuntimeWarning, match="row 3: null value"):
        table = neardup.dedup(pd.Series(texts + [None, float("nan")]))
    assert table["cluster"].to_pylist() == [1, 1, None, None, None]
    # A NumPy array of objects is judged row by row, as a list is.
    with pytest.raises(TypeError, match="row 3: documents must be str or bytes, not int"):
        neardup.dedup(np.array(texts + [3], dtype=object))
    objects = np.array(texts + [None], dtype=object)
    with pytest.warns(RuntimeWarning, match="row 3: null value"):
        from_objects = neardup.sketches(objects, errors="zero")
    with pytest.warns(RuntimeWarning, match="row 3: null value"):
        assert np.array_equal(from_objects, neardup.sketches(texts + [None], errors="zero"))
    with pytest.raises(ValueError, match='rows 0 and 1 have the same id "1"'):
        neardup.dedup(texts, ids=np.array(["1", 1, "2"], dtype=object))
    with pytest.raises(TypeError, match=r"of one dimension, not an array of shape \(1, 3\)"):
        neardup.dedup(np.array([texts]))


def test_a_misspelt_id_field_is_named(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": f"document {i} about things"}) + "\n" for i in range(3)))
    with pytest.warns(RuntimeWarning, match="no record has an id in the field 'uid'.*check id_field"):
        table = neardup.dedup_files(path, id_field="uid")
    assert table["id"].to_pylist() == [f"{path}:{n}" for n in (1, 2, 3)]
    # A NUL in the name (a C string cannot hold it) is shown escaped; it was a panic.
    with pytest.warns(RuntimeWarning, match=r"the field 'u\\0id'"):
        neardup.dedup_files(path, id_field="u\0id")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert neardup.dedup_files(path)["id"].to_pylist() == ["d0", "d1", "d2"]


def test_a_misspelt_id_column_in_parquet_is_named_and_the_rows_deduplicated(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    same = "the same words in the same order make the same document every time"
    other = "a different text about rivers, mountains and the weather in spring"
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": ["r0", None, "r2"], "text": [same, same, other]}), path)
    # A null id is known by its place, as a JSON object without one is; the row is still a document.
    table = neardup.dedup_files(path)
    assert table["id"].to_pylist() == ["r0", f"{path}:1", "r2"]
    assert table["cluster"].to_pylist()[:2] == [1, 1]
    # A column that is not there: every row known by its place, deduplicated, and a warning.
    with pytest.warns(RuntimeWarning, match="no record has an id in the field 'uid'.*check id_field"):
        table = neardup.dedup_files(path, id_field="uid", output=tmp_path / "kept.parquet")
    assert table["id"].to_pylist() == [f"{path}:{row}" for row in range(3)]
    assert table["duplicate_of"].to_pylist() == [None, f"{path}:0", None]
    assert pq.read_table(tmp_path / "kept.parquet")["text"].to_pylist() == [same, other]


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_a_misspelt_text_field_is_an_error_and_nothing_is_written(tmp_path, suffix):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / f"a.{suffix}"
    rows = [{"id": f"d{i}", "text": f"document {i} about things"} for i in range(3)]
    if suffix == "jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    out = tmp_path / f"out.{suffix}"
    with pytest.raises(ValueError, match="not one of the 3 records is a document with text in the field 'body'; "
                       "check text_field \\(the first: .*a\\." + suffix):
        neardup.dedup_files(path, text_field="body", output=out)
    assert not out.exists()
    # With some documents among the bad records, the run goes on as before.
    if suffix == "jsonl":
        with path.open("a") as f:
            f.write(json.dumps({"id": "d3", "body": "a text in the other field"}) + "\n")
        with pytest.warns(RuntimeWarning, match="3 records or files could not be used"):
            assert neardup.dedup_files(path, text_field="body").num_rows == 1


def test_files_of_documents_given_to_dedup_files_are_told_what_to_do(tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<html><body>\n<p>the quick brown fox</p>\n</body></html>\n")
    with pytest.raises(
        ValueError,
        match=r"not one of the 3 lines read is a JSON object: the input is not JSON Lines; dedup_files reads "
        r"datasets .* pass their contents to neardup.dedup, with their paths as ids \(the first: .*page.html:1: ",
    ):
        neardup.dedup_files(page)


def test_a_distance_is_an_integer_and_a_similarity_a_float():
    simhash, minhash = neardup.Index(None), neardup.Index(None, "minhash")
    for index in (simhash, minhash):
        index.add("a", "one two three four five six seven")
    [(_, distance)] = simhash.query("one two three four five six seven")
    [(_, similarity)] = minhash.query("one two three four five six seven")
    assert type(distance) is int and distance == 0
    assert type(similarity) is float and similarity == 1.0


def test_a_negative_or_huge_setting_is_named():
    with pytest.raises(ValueError, match="k must be a whole number, 0 or more, not -1$"):
        neardup.dedup(["a b c"], k=-1)
    with pytest.raises(ValueError, match="k must be a whole number from 0 to 4294967295, not 4294967296$"):
        neardup.dedup(["a b c"], k=2**32)
    for num_perm in (-1, 0, 8193):
        with pytest.raises(ValueError, match=f"num_perm must be a whole number from 1 to 8192, not {num_perm}$"):
            neardup.sketches(["a b c"], "minhash", num_perm=num_perm)
    with pytest.raises(ValueError, match="shingle must be a whole number from 1 to 1024, not 0$"):
        neardup.sketch("a b c", "minhash", shingle=0)
    with pytest.raises(ValueError, match="char_shingle must be a whole number from 1 to 1024, not 2000$"):
        neardup.sketch("a b c", "minhash", char_shingle=2000)
    with pytest.raises(ValueError, match="k must be a whole number"):
        neardup.Index(None, k=-1)
    for expected in (-1, 0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="expected must be a count of at least 1"):
            neardup.Index(None, expected=expected)
    with pytest.raises(ValueError, match="seed must be a whole number, 0 or more, not -1$"):
        neardup.sketch("a b c", "minhash", seed=-1)
    assert len(neardup.sketch("a b c", "minhash", num_perm=np.int64(64)).values) == 64


def test_a_row_that_fails_raises_its_kind_of_error():
    with pytest.raises(neardup.NoTokens, match="row 1: no tokens"):
        neardup.sketches(["some words here", ""])
    with pytest.raises(neardup.MediaError, match=r'row 0: binary content: .*media="text"'):
        neardup.sketches([bytes(range(256)) * 4])
    with pytest.raises(neardup.NoTokens, match="row 0: no tokens"):
        neardup.Index(None).add_many(["a"], ["..."])
    with pytest.raises(neardup.NoTokens):
        neardup.dedup(["", "x y"], errors="raise")
    with pytest.raises(neardup.Error, match="row 0: null value") as raised:
        neardup.sketches([None])
    assert type(raised.value) is neardup.Error


def test_without_pyarrow_what_returns_arrow_refuses_before_any_work(tmp_path):
    # pyarrow is optional (the datasketch drop-in and NumPy output do without it); a function that returns
    # Arrow says so at once, not after the run, and writes nothing.
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": f"document {i} about things"}) + "\n" for i in range(3)))
    script = f"""
import sys
sys.modules["pyarrow"] = None  # import pyarrow now raises ImportError
import neardup
texts = ["one two three four five", "six seven eight nine ten"]
print(neardup.sketches(texts).shape)
import collections
assert (neardup.sketches(collections.deque(texts)) == neardup.sketches(texts)).all()
for call in (
    lambda: neardup.dedup(texts),
    lambda: neardup.sketches(texts, strings=True),
    lambda: neardup.dedup_files({str(path)!r}, output={str(tmp_path / "out.jsonl")!r}),
):
    try:
        call()
    except ImportError as e:
        print(e)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "(2,)"
    assert lines[1].startswith("neardup.dedup needs pyarrow (it returns a pyarrow.Table): pip install pyarrow")
    assert lines[2].startswith("sketches(strings=True) needs pyarrow")
    assert lines[3].startswith("neardup.dedup_files needs pyarrow")
    assert len(lines) == 4
    assert not (tmp_path / "out.jsonl").exists()


def test_an_index_path_that_is_a_mistake_is_refused_and_nothing_is_made(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(neardup.IndexError, match="its directory .*no/such does not exist"):
        neardup.Index(tmp_path / "no" / "such" / "x.idx")
    with pytest.raises(neardup.IndexError, match="an index is a directory or a Redis URL .*not a http URL"):
        neardup.Index("http://example.org/x")
    with pytest.raises(ValueError, match=r"'minhash' is a scheme's name.*Index\(None, 'minhash'\)"):
        neardup.Index("minhash")
    with pytest.raises(FileNotFoundError, match="no index at .*nothere"):
        neardup.Index(tmp_path / "nothere", read_only=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # A new directory in one that exists is where a new index goes; a scheme named beside it is a choice.
    with neardup.Index("minhash", "minhash") as index:
        assert index.scheme.startswith("minhash-oph-v1")
    assert (tmp_path / "minhash").is_dir()


def test_column_errors_name_the_row(tmp_path):
    pd = pytest.importorskip("pandas")
    texts = ["one two three four five six", "one two three four five six", "other words here"]
    # A pandas Series of objects that Arrow cannot convert is read row by row, as a list is.
    with pytest.raises(TypeError, match="row 1: documents must be str or bytes, not int"):
        neardup.sketches(pd.Series(["a b", 5, "c d"], dtype=object))
    with pytest.raises(TypeError, match="row 2: ids must be strings, bytes or integers, not float"):
        neardup.dedup(texts, ids=pd.Series(["a", "b", 2.5], dtype=object))
    # Ids are text: bytes that are not UTF-8 are refused, naming the row (they made an invalid Arrow column).
    with pytest.raises(ValueError, match="row 0: the id is not UTF-8"):
        neardup.dedup(texts, ids=[b"\xff", b"b", b"c"])
    assert neardup.dedup(texts, ids=[b"a", b"b", "c"])["id"].to_pylist() == ["a", "b", "c"]
    # An integer column with a missing value is float in pandas: the row and the way out are named.
    with pytest.raises(TypeError, match=r"not double: row 1 is missing \(NaN\).*'Int64' dtype"):
        neardup.dedup(pd.Series(texts), ids=pd.Series([7, None, 9]))
    with pytest.raises(TypeError, match="column of ids .* not the scheme's name 'minhash'.*write scheme='minhash'"):
        neardup.dedup(texts, "minhash")


def test_a_sketch_or_index_scheme_is_taken_back_as_a_scheme():
    text = "the scheme a sketch reports names its parameters, and makes the same sketch again"
    for scheme, params in [("simhash", {}), ("minhash", {"num_perm": 64, "shingle": 3}), ("datasketch", {})]:
        sketch = neardup.sketch(text, scheme, **params)
        assert neardup.sketch(text, sketch.scheme) == sketch
        index = neardup.Index(None, sketch.scheme)
        assert index.scheme == sketch.scheme
        index.add("a", text)
        assert [id for id, _ in index.query(text)] == ["a"]
    with pytest.raises(neardup.UnsupportedError, match="num_perm with minhash-oph-v1.*which names its parameters"):
        neardup.sketch(text, "minhash-oph-v1(k=128,seed=0,f=w5)", num_perm=64)


@pytest.mark.parametrize("scheme", ["simhash", "minhash"])
def test_a_readers_entries_are_its_snapshot(tmp_path, scheme):
    pytest.importorskip("pyarrow")
    one, two = "one two three four five six seven", "eight nine ten eleven twelve thirteen fourteen"
    writer = neardup.Index(tmp_path / "d", scheme)
    writer.add("a", one)
    writer.merge()  # "a" in a segment, the rest in the log: the snapshot has both kinds of entry
    writer.add("c", two)
    reader = neardup.Index(tmp_path / "d", read_only=True)
    writer.add("b", two)
    writer.remove("a")
    # The reader sees what it saw at opening, in every call, until refresh().
    assert len(reader) == 2 and "a" in reader and "b" not in reader
    assert reader.entries()["id"].to_pylist() == ["a", "c"]
    assert [id for id, _ in reader.query(one)] == ["a"]
    reader.refresh()
    assert reader.entries()["id"].to_pylist() == ["b", "c"] == sorted(writer.entries()["id"].to_pylist())
    assert len(reader) == 2 and "a" not in reader
    writer.close()
    reader.close()


def test_an_id_tsv_cannot_carry_stops_the_cli_export_before_any_line(tmp_path):
    with neardup.Index(tmp_path / "idx") as index:
        index.add("a", "one two three four five")
        index.add("x\ty", "six seven eight nine ten")
    tsv = subprocess.run([cli(), "index", "export", str(tmp_path / "idx")], capture_output=True, text=True)
    assert tsv.returncode == 2
    assert tsv.stdout == ""
    assert 'the id "x\\ty" holds a tab or a line break, which TSV cannot carry: export with --json' in tsv.stderr
    lines = subprocess.run(
        [cli(), "index", "export", "--json", str(tmp_path / "idx")], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["a", "x\ty"]


@pytest.mark.parametrize("scheme", ["simhash", "minhash"])
def test_query_many_keeps_each_querys_closest_matches_up_to_a_limit(scheme):
    pytest.importorskip("pyarrow")
    base = "the quick brown fox jumps over the lazy dog near the river bank today"
    copies = [base] + [base + f" and more words {i}" for i in range(5)]
    index = neardup.Index(None, scheme, **({"threshold": 0.3} if scheme == "minhash" else {"k": 7}))
    index.add_many([f"c{i}" for i in range(len(copies))], copies)
    queries = [base, "nothing like the others at all in any way", base]
    whole = index.query_many(queries)
    cut = index.query_many(queries, limit=2)
    assert whole.num_rows > 4
    assert cut["row"].to_pylist() == [0, 0, 2, 2]
    for row in (0, 2):
        first_two = [(r["id"], r["score"]) for r in whole.to_pylist() if r["row"] == row][:2]
        assert [(r["id"], r["score"]) for r in cut.to_pylist() if r["row"] == row] == first_two
    with pytest.raises(ValueError, match="limit must be a whole number from 1 to 4294967295, not 0"):
        index.query_many(queries, limit=0)
