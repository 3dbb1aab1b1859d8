"""datasketch's MinHashLSH over Redis (storage_config={"type": "redis"}), on the same signatures as
crates/neardup-store-redis/examples/redis_bench.rs makes: inserts/s (in an insertion session, datasketch's
bulk path), queries/s with p50/p99, Redis memory per entry. Prints one JSON line per measure.

    python benches/redis/datasketch_redis.py --port 6379 --n 100000 [--queries 2000]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import redis
from datasketch import MinHash, MinHashLSH

MASK = (1 << 64) - 1


def splitmix(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def signature(i: int) -> list[int]:
    """The generator of redis_bench.rs: groups of 4 entries share a base; a value is the base's with
    probability 7/8."""
    base = (((i // 4) * 0x9E3779B9) & MASK) ^ 0xBA5E
    s = i ^ 0x5EED
    out = []
    for _ in range(128):
        base, v = splitmix(base)
        s, r = splitmix(s)
        out.append((r >> 32) if r % 8 == 0 else (v >> 32))
    return out


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--n", type=float, default=1e5)
    ap.add_argument("--queries", type=int, default=2000)
    args = ap.parse_args()
    n = int(args.n)
    client = redis.Redis(host=args.host, port=args.port)
    client.flushall()
    sigs = [MinHash(num_perm=128, hashvalues=np.array(signature(i), dtype=np.uint64), scheme="legacy") for i in range(n)]
    before = used_memory(client)
    lsh = MinHashLSH(
        threshold=0.8,
        num_perm=128,
        params=(16, 8),
        storage_config={"type": "redis", "basename": b"bench", "redis": {"host": args.host, "port": args.port}},
    )
    started = time.perf_counter()
    with lsh.insertion_session(buffer_size=10_000) as session:
        for i, m in enumerate(sigs):
            session.insert(f"doc-{i:09}", m)
    load = time.perf_counter() - started
    memory = used_memory(client) - before
    print(json.dumps({"measure": "load", "peer": "datasketch", "n": n, "inserts_per_s": round(n / load),
                      "redis_bytes_per_entry": round(memory / n, 1)}))
    rng = np.random.default_rng(7)
    latencies = []
    found = 0
    started = time.perf_counter()
    for i in rng.integers(0, n, args.queries):
        t = time.perf_counter()
        found += len(lsh.query(sigs[int(i)]))
        latencies.append((time.perf_counter() - t) * 1e6)
    secs = time.perf_counter() - started
    assert found > 0
    latencies.sort()
    print(json.dumps({"measure": "queries", "peer": "datasketch", "clients": 1,
                      "per_s": round(args.queries / secs),
                      "p50_us": round(latencies[len(latencies) // 2]),
                      "p99_us": round(latencies[int(len(latencies) * 0.99)])}))
    client.flushall()


if __name__ == "__main__":
    main()
