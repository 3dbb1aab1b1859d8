"""The Python examples of README.md and docs/ run as they are written.

Each ```python block is executed in a scratch directory that holds the files it names (`paper.pdf`,
directories of JSON Lines shards, `corpus.parquet`), with the names it leaves to the reader (`texts`, `ids`,
`page`, `reader`, ...) bound to real values, so an example that has drifted from the API fails here. The
Spark examples run in test_spark.py, on its session.
"""

from __future__ import annotations

import json
import pathlib
import random
import re
import shutil
import textwrap

import pytest

import neardup

ROOT = pathlib.Path(__file__).resolve().parents[3]
PAPER = ROOT / "testdata" / "vectors" / "simhash-doc-v1" / "inputs" / "paper.pdf"


def python_blocks(document: str) -> list[str]:
    """The ```python blocks of a Markdown file of this repository, dedented (some sit in list items)."""
    text = (ROOT / document).read_text(encoding="utf-8")
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", text, flags=re.S | re.M)
    assert blocks, f"{document} has no python example"
    return [textwrap.dedent("\n".join(line[len(indent):] for line in body.splitlines())) for indent, body in blocks]


def corpus(seed: int = 3) -> tuple[list[str], list[str]]:
    """300 documents of 60 words: 100 originals, each with a copy and a copy with two words changed."""
    rnd = random.Random(seed)
    words = [f"word{i}" for i in range(2000)]
    ids, texts = [], []
    for doc in range(100):
        base = [rnd.choice(words) for _ in range(60)]
        edited = list(base)
        for _ in range(2):
            edited[rnd.randrange(len(edited))] = rnd.choice(words)
        for copy, words_of in enumerate((base, base, edited)):
            ids.append(f"doc-{doc:03d}-{copy}")
            texts.append(" ".join(words_of))
    return ids, texts


def scratch_with_inputs(path: pathlib.Path, ids: list[str], texts: list[str]) -> None:
    """The files the examples read: a PDF, the corpus as two JSON Lines shards under `crawl/` and
    `shards/` and as `corpus.parquet` (row groups of 64, so that its batches are many), and its known
    pairs as `pairs.tsv`."""
    shutil.copy(PAPER, path / "paper.pdf")
    # Known pairs, for calibrate's truth: each original and its exact copy.
    pairs = "".join(f"{i}\t{i[:-1]}1\t1\n" for i in ids if i.endswith("-0"))
    (path / "pairs.tsv").write_text(pairs, encoding="utf-8")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"id": ids, "text": texts}), path / "corpus.parquet", row_group_size=64)
    for directory in ("crawl", "shards"):
        (path / directory).mkdir()
        for shard in range(2):
            rows = [{"id": i, "text": t} for i, t in zip(ids[shard::2], texts[shard::2])]
            lines = "".join(json.dumps(r) + "\n" for r in rows)
            (path / directory / f"part-{shard}.jsonl").write_text(lines, encoding="utf-8")


def names_for_the_examples(ids: list[str], texts: list[str]) -> dict:
    page = f"<html><head><title>t</title></head><body><nav>menu</nav><p>{texts[0]}</p></body></html>"
    return {
        "texts": texts,
        "ids": ids,
        "text": texts[0],
        "page": page,
        "html": page,
        "page_bytes": page.encode(),
        "other_page_bytes": f"<html><body><p>{texts[1]}</p></body></html>".encode(),
        "urls": [f"https://example.org/{i}" for i in ids[:30]],
        "pages": [t.encode() for t in texts[:30]],
        "new_pages": [t.encode() for t in texts[30:60]],
    }


@pytest.mark.parametrize("document", ["README.md", "docs/python.md"])
def test_the_documented_python_examples_run(document, tmp_path, monkeypatch):
    """A document's examples run in order, in one namespace, as a reader would paste them."""
    blocks = [b for b in python_blocks(document) if "neardup.spark" not in b]
    code = "\n".join(blocks)
    ids, texts = corpus()
    scratch_with_inputs(tmp_path, ids, texts)
    monkeypatch.chdir(tmp_path)
    names = names_for_the_examples(ids, texts)
    if re.search(r"\breader\b", code):
        names["reader"] = pytest.importorskip("pyarrow.parquet").ParquetFile(tmp_path / "corpus.parquet").iter_batches()
    if re.search(r"\bds\b", code):
        datasets = pytest.importorskip("datasets")
        names["ds"] = datasets.Dataset.from_dict({"text": texts, "id": ids})
    if "tqdm" in code:
        pytest.importorskip("tqdm")
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{document} (python example {number})", "exec"), names)

    # What the examples say they make, made.
    if "kept" in names:
        assert names["kept"].num_rows < len(texts), "the planted copies were not removed"
    if "ds" in names:
        assert 100 <= len(names["ds"]) < len(texts)
    for written in ("kept.jsonl.zst", "removed.jsonl.zst"):
        if written in code:
            assert (tmp_path / written).stat().st_size > 0, written
    if "report" in names:
        assert names["report"]["positives"] == 100, "calibrate did not read the planted pairs"
    if "table" in names:
        assert set(names["table"].column_names) >= {"id", "cluster", "representative", "duplicate_of", "score"}
