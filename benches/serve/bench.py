#!/usr/bin/env python3
"""Load benchmark of `neardup serve`, with wrk as the load generator, client and server on one machine.

    python3 benches/serve/bench.py [--n 10000000] [--soak 600] [--duration 30] [--out results.json]

Needs: a release binary (cargo build --release -p neardup-cli), wrk (Debian package `wrk`), and, for the peer,
datasketch (pip install datasketch==2.0.0 in any Python 3). Everything runs on 127.0.0.1 and stops by itself.

What it measures, each with wrk (2 threads, 64 connections) for --duration seconds, medians of --runs runs:
  1. load: N fingerprints in NDJSON batches of 100,000 (durable inserts/s, batched);
  2. fingerprint queries against the N stored (POST /query?fingerprint=; throughput, p50, p99), first as
     the load left the index (a few segments), then after POST /merge wrote them into one;
  3. document queries (a 10 KB HTML page, POST /query with the page), beside `neardup bench --media html`
     on the same page (extraction and sketching on one thread, no HTTP);
  4. single durable inserts (one NDJSON line a request);
  5. a 90/10 mix of fingerprint queries and single inserts;
  6. a soak: the mix for --soak seconds, the server's RSS sampled every 10 s, errors counted;
  7. the peer: datasketch 2.0 MinHashLSH behind Python's ThreadingHTTPServer, 100,000 stored signatures,
     queried by signature, beside neardup's MinHash LSH index with the same 100,000, queried the same way.
"""

import argparse
import base64
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TOKEN = "bench-token"


def b32(raw):
    return base64.b32encode(raw).decode().lower().rstrip("=")


def fingerprint(bits):
    """simhash-doc-v1's text form: RFC 4648 base32 of 8 octets, lowercase, no padding (random bits here)."""
    return "simhash-doc-v1:" + b32(bits.to_bytes(8, "little"))


def start_server(binary, data, tokens):
    proc = subprocess.Popen(
        [binary, "serve", "--data", data, "--listen", "127.0.0.1:0", "--token-file", tokens],
        stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            return proc, m.group(1)
    raise SystemExit("the server did not start")


def request(method, url, body=b"", headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.status, r.read()


SERVER_PID = None


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(url, script, duration, env=None):
    cpu_before = cpu_seconds(SERVER_PID) if SERVER_PID else None
    out = subprocess.run(
        ["wrk", "-t2", "-c64", f"-d{duration}s", "--latency", "-s", str(HERE / script), url],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = {p: parse_ms(re.search(rf"\s{p}%\s+([\d.]+\w+)", out).group(1)) for p in ("50", "99")}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    result = {"rps": rps, "p50_ms": lat["50"], "p99_ms": lat["99"],
              "errors": (int(errors.group(1)) if errors else 0)
              + (sum(map(int, socket.groups())) if socket else 0)}
    if cpu_before is not None:
        # The server's own CPU: wrk shares the machine, so this says what one core of the server answers.
        total = int(re.search(r"(\d+) requests in", out).group(1))
        result["per_server_cpu_s"] = total / max(1e-9, cpu_seconds(SERVER_PID) - cpu_before)
    return result


def parse_ms(s):
    m = re.match(r"([\d.]+)(us|ms|s)", s)
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v


def median_of(runs, f):
    results = [f() for _ in range(runs)]
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def describe(base, auth):
    return json.loads(request("GET", f"{base}/v1/indexes/bench", b"", auth)[1])


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--soak", type=int, default=600)
    ap.add_argument("--binary", default=str(ROOT / "target/release/neardup"))
    ap.add_argument("--peer-python", default=sys.executable, help="a Python with datasketch")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="neardup-serve-bench-"))
    (work / "tokens").write_text(TOKEN + "\n")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    results = {"n": args.n, "duration_s": args.duration, "runs": args.runs, "cpus": os.cpu_count()}
    rng = random.Random(7)

    global SERVER_PID
    server, base = start_server(args.binary, str(work / "data"), str(work / "tokens"))
    SERVER_PID = server.pid
    try:
        request("PUT", f"{base}/v1/indexes/bench", json.dumps({"scheme": "simhash", "k": 3, "expected": args.n}).encode(), auth)
        # 1. Load N fingerprints in batches of 100,000.
        stored = []
        batch_s = []
        started = time.perf_counter()
        batch = 100_000
        for first in range(0, args.n, batch):
            lines = []
            for i in range(first, min(first + batch, args.n)):
                fp = fingerprint(rng.getrandbits(64))
                if i % max(1, args.n // 5000) == 0:
                    stored.append(fp)
                lines.append(f'{{"id":"doc-{i}","fingerprint":"{fp}"}}')
            t0 = time.perf_counter()
            request("POST", f"{base}/v1/indexes/bench/fingerprints", "\n".join(lines).encode(), auth)
            batch_s.append(time.perf_counter() - t0)
        results["load"] = {"seconds_total": time.perf_counter() - started,
                           "inserts_per_s_server": args.n / sum(batch_s),
                           "rss_mib_after": rss_kib(server.pid) / 1024}
        print("load", results["load"], flush=True)

        # Query fingerprints: half stored (each matches itself), half random.
        queries = stored[:2500] + [fingerprint(rng.getrandbits(64)) for _ in range(2500)]
        (work / "queries.txt").write_text("\n".join(queries) + "\n")
        env = {"NEARDUP_QUERIES": str(work / "queries.txt"), "NEARDUP_TOKEN": TOKEN}

        # 2. Fingerprint queries: the index as the load left it (a few segments from the tiered merges),
        # then after POST /merge has written them into one, as an operator does after a bulk load.
        query = lambda: wrk(f"{base}/v1/indexes/bench/query", "query.lua", args.duration, env)
        results["segments_after_load"] = describe(base, auth)["segments"]
        results["fingerprint_queries_as_loaded"] = median_of(args.runs, query)
        print("fingerprint queries,", results["segments_after_load"], "segments",
              results["fingerprint_queries_as_loaded"], flush=True)
        started = time.perf_counter()
        request("POST", f"{base}/v1/indexes/bench/merge", b"", auth)
        while describe(base, auth)["merging"]:
            time.sleep(0.2)
        results["merge_s"] = time.perf_counter() - started
        results["fingerprint_queries"] = median_of(args.runs, query)
        print(f"merged in {results['merge_s']:.1f} s; fingerprint queries, 1 segment",
              results["fingerprint_queries"], flush=True)

        # 3. Document queries: a 10 KB HTML page.
        words = (ROOT / "README.md").read_text().split()
        body = " ".join(words[:1500])
        page = f"<html><head><title>t</title></head><body><main><p>{body}</p></main></body></html>"
        page = page[:10_240]
        (work / "page.html").write_text(page)
        env_doc = {**env, "NEARDUP_BODY": str(work / "page.html")}
        results["document_queries"] = median_of(args.runs, lambda: wrk(f"{base}/v1/indexes/bench/query", "document.lua", args.duration, env_doc))
        # `neardup bench --media html`: the same page, extracted and sketched on one thread, no HTTP.
        (work / "page.jsonl").write_text((json.dumps({"text": page}) + "\n") * 2000)
        bench = json.loads(subprocess.run([args.binary, "bench", "--json", "--media", "html", str(work / "page.jsonl")],
                                          capture_output=True, text=True, check=True).stdout)
        bench["documents_per_s"] = bench["documents"] / bench["median_s"]
        results["neardup_bench_same_page"] = bench
        results["document_queries_vs_bench"] = results["document_queries"]["rps"] / bench["documents_per_s"]
        results["document_queries_per_server_cpu_vs_bench"] = (results["document_queries"]["per_server_cpu_s"]
                                                               / bench["documents_per_s"])
        print("document queries", results["document_queries"], "bench", bench, flush=True)

        # 4. Single durable inserts; 5. the 90/10 mix.
        results["single_inserts"] = median_of(args.runs, lambda: wrk(f"{base}/v1/indexes/bench/fingerprints", "insert.lua", args.duration, env))
        print("single inserts", results["single_inserts"], flush=True)
        results["mix_90_10"] = median_of(args.runs, lambda: wrk(f"{base}/v1/indexes/bench", "mix.lua", args.duration, env))
        print("mix", results["mix_90_10"], flush=True)

        # 6. Soak: the mix, memory sampled every 10 s.
        if args.soak > 0:
            soak = subprocess.Popen(
                ["wrk", "-t2", "-c64", f"-d{args.soak}s", "--latency", "-s", str(HERE / "mix.lua"), f"{base}/v1/indexes/bench"],
                stdout=subprocess.PIPE, text=True, env={**os.environ, **env})
            samples = []
            while soak.poll() is None:
                samples.append(rss_kib(server.pid) / 1024)
                time.sleep(10)
            out = soak.stdout.read()
            errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
            results["soak"] = {"seconds": args.soak, "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
                               "errors": int(errors.group(1)) if errors else 0,
                               "rss_mib_first": samples[0], "rss_mib_last": samples[-1], "rss_mib_max": max(samples),
                               "rss_samples_mib": [round(s) for s in samples]}
            print("soak", {k: v for k, v in results["soak"].items() if k != "rss_samples_mib"}, flush=True)

        # 7. neardup's MinHash LSH index with 100,000 signatures, queried by signature.
        request("PUT", f"{base}/v1/indexes/mh", json.dumps({"scheme": "datasketch", "threshold": 0.8}).encode(), auth)
        sigs = peer_signatures(args.peer_python, work)
        lines = [json.dumps({"id": f"s{i}", "fingerprint": s}) for i, s in enumerate(sigs["neardup"])]
        for first in range(0, len(lines), 5_000):
            request("POST", f"{base}/v1/indexes/mh/fingerprints", "\n".join(lines[first:first + 5_000]).encode(), auth)
        (work / "mh-queries.txt").write_text("\n".join(sigs["neardup"][:5000]) + "\n")
        # Each stored signature finds itself.
        _, found = request("POST", f"{base}/v1/indexes/mh/query?fingerprint=" + urllib.parse.quote(sigs["neardup"][0]))
        assert "s0" in [m["id"] for m in json.loads(found)["matches"]], found
        env_mh = {**env, "NEARDUP_QUERIES": str(work / "mh-queries.txt")}
        results["minhash_queries"] = median_of(args.runs, lambda: wrk(f"{base}/v1/indexes/mh/query", "query.lua", args.duration, env_mh))
        print("neardup minhash queries", results["minhash_queries"], flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)

    # The peer: datasketch MinHashLSH behind ThreadingHTTPServer, the same 100,000 signatures.
    peer = subprocess.Popen([args.peer_python, str(HERE / "peer_datasketch.py"), str(work / "peer-signatures.json")],
                            stdout=subprocess.PIPE, text=True)
    peer_url = peer.stdout.readline().strip()
    SERVER_PID = peer.pid
    if not peer_url:
        raise SystemExit("the datasketch peer did not start (is datasketch 2.0 installed in --peer-python?)")
    try:
        first = (work / "peer-queries.txt").read_text().splitlines()[0].encode()
        _, found = request("POST", peer_url, first, {"Content-Type": "application/json"})
        assert "s0" in [m["id"] for m in json.loads(found)["matches"]], found
        env_peer = {"NEARDUP_QUERIES": str(work / "peer-queries.txt")}
        results["peer_datasketch_queries"] = median_of(args.runs, lambda: wrk(peer_url, "peer.lua", args.duration, env_peer))
        print("datasketch queries", results["peer_datasketch_queries"], flush=True)
    finally:
        peer.terminate()
        peer.wait(timeout=60)
    results["ratio_minhash_queries_vs_datasketch"] = results["minhash_queries"]["rps"] / results["peer_datasketch_queries"]["rps"]
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


def peer_signatures(python, work):
    """100,000 datasketch MinHash signatures (num_perm 128, seed 1) of random word sets, written for the peer and
    encoded for neardup (the minhash-datasketch-affine32 scheme is bit-exact with datasketch.MinHash)."""
    code = r'''
import json, random, sys
from datasketch import MinHash
rng = random.Random(11)
vocab = [f"w{i}" for i in range(50000)]
sigs = []
for i in range(100000):
    m = MinHash(num_perm=128, seed=1)
    m.update_batch([w.encode() for w in rng.sample(vocab, 40)])
    sigs.append([int(v) for v in m.hashvalues])
json.dump(sigs, open(sys.argv[1], "w"))
'''
    subprocess.run([python, "-c", code, str(work / "peer-signatures.json")], check=True)
    sigs = json.load(open(work / "peer-signatures.json"))
    (work / "peer-queries.txt").write_text("\n".join(json.dumps(s) for s in sigs[:5000]) + "\n")
    return {"neardup": [encode_signature(s) for s in sigs]}


def encode_signature(values):
    """minhash-datasketch-affine32's text form (docs/spec/minhash-v1.md, "Text form"): the parameters, then
    base32 of the values as little-endian u32."""
    return "minhash-datasketch-affine32:k=128,seed=1,f=w5:" + b32(b"".join(v.to_bytes(4, "little") for v in values))


if __name__ == "__main__":
    main()
