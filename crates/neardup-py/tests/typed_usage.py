"""A user's typed code: `test_typing.py` runs it and checks it with `mypy --strict` against the installed
package, so what the annotations and stubs promise is what the functions do."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

import neardup
from neardup.datasketch import LeanMinHash, MinHash, MinHashLSH


def fingerprints(texts: list[str]) -> list[str]:
    out = []
    for text in texts:
        fingerprint = neardup.fingerprint(text)
        assert fingerprint.distance(neardup.Sketch.parse(str(fingerprint))) == 0
        value: int | None = fingerprint.value
        assert value is not None
        out.append(str(fingerprint))
    return out


def signatures(texts: list[str]) -> npt.NDArray[np.uint32]:
    return neardup.sketches(texts, scheme="minhash-oph-v1")


def lsh_query(sets: dict[str, list[bytes]], query: list[bytes]) -> list[str]:
    index = MinHashLSH(threshold=0.5, num_perm=128)
    with index.insertion_session() as session:
        for key, shingles in sets.items():
            m = MinHash(num_perm=128)
            m.update_batch(shingles)
            session.insert(key, LeanMinHash(m))
    q = MinHash(num_perm=128)
    for shingle in query:
        q.update(shingle)
    found: list[str] = sorted(index.query(q))
    return found


def index_and_compare(texts: dict[str, str], query: str) -> list[tuple[str, int | float]]:
    with neardup.Index(None, scheme="simhash-doc-v1", k=3) as index:
        for id_, text in texts.items():
            index.add(id_, text)
        hits = index.query(query)
    first, second = (neardup.fingerprint(t) for t in list(texts.values())[:2])
    similarity: float = neardup.compare(first, str(second))["similarity"]
    assert 0.0 <= similarity <= 1.0
    assert "simhash-doc-v1" in [scheme["name"] for scheme in neardup.schemes()]
    return hits


def dedup_rows(texts: list[str]) -> int:
    table = neardup.dedup(texts, scheme="simhash-doc-v1")
    rows: int = table.num_rows
    run = neardup.Dedup("simhash-doc-v1", k=3)
    run.add(texts[: len(texts) // 2])
    added: int = run.add_batches([{"text": texts[len(texts) // 2 :]}])
    assert added == len(run) == rows and run.clusters().num_rows == rows
    return rows


def signature_round_trips(text: str) -> float:
    sketch = neardup.sketch(text, "minhash-oph-v1", num_perm=64)
    values: list[int] | None = sketch.values
    assert values is not None and len(values) == 64
    lean = LeanMinHash(MinHash(num_perm=64))
    buffer = bytearray(lean.bytesize())
    lean.serialize(buffer)
    assert LeanMinHash.deserialize(buffer) == lean
    return sketch.similarity(neardup.Sketch.parse(str(sketch)))


def index_columns(ids: list[str], texts: list[str]) -> int:
    index = neardup.Index(None, scheme="simhash-doc-v1", k=3)
    stored: int = index.add_many(ids, texts)
    matches = index.query_many(texts)
    assert matches.num_rows >= stored
    assert ids[0] in index and len(index) == stored
    return stored


def integer_ids_and_buffers(text: str) -> bool:
    index = neardup.Index(None)
    index.add(np.int64(3), memoryview(text.encode()))
    assert neardup.fingerprint(memoryview(text.encode())) == neardup.fingerprint(text)
    found: bool = np.int64(3) in index and index.get(3) is not None
    stored = index.get(3)
    if stored is not None:
        index.add("copy", stored)
        found = found and index.query(stored)[0][1] == 0
    return found
