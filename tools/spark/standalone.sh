#!/usr/bin/env bash
# A standalone Spark cluster on loopback (one master, two workers of one core each), the neardup.spark job
# submitted to it with spark-submit, its cluster table compared with `neardup dedup --table` on the same
# records, and everything stopped (also on failure or Ctrl-C).
#
#   tools/spark/standalone.sh [SCHEME] [RECORDS]       # defaults: minhash 3000
#
# Needs Java 17, a Python with the neardup wheel and pyspark 4 ($PYTHON, default target/ci-venv/bin/python),
# and the neardup binary ($NEARDUP_BIN, default target/debug/neardup). Records come from ../shared/eval when it
# is there, else planted near-duplicates are generated. Exits 0 when the tables are equal.
set -euo pipefail
cd "$(dirname "$0")/../.."
scheme=${1:-minhash}
records=${2:-3000}
PYTHON=${PYTHON:-target/ci-venv/bin/python}
NEARDUP_BIN=${NEARDUP_BIN:-target/debug/neardup}
export SPARK_HOME
SPARK_HOME=$("$PYTHON" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
export SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON
# Absolute, but not resolved: a venv's python is a symlink to the system one, which has no neardup.
PYSPARK_PYTHON="$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")"

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

free_port() { "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits up to 90 s for a line in a log.
wait_for() {
  local log=$1 pattern=$2
  for _ in $(seq 180); do
    grep -q "$pattern" "$log" 2>/dev/null && return 0
    sleep 0.5
  done
  echo "error: timed out waiting for '$pattern' in $log:" >&2
  tail -20 "$log" >&2
  exit 1
}

port=$(free_port)
"$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
  --host 127.0.0.1 --port "$port" --webui-port "$(free_port)" >"$work/master.log" 2>&1 &
pids+=($!)
wait_for "$work/master.log" "I have been elected leader"
for w in 1 2; do
  mkdir -p "$work/worker$w"
  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
    --host 127.0.0.1 --cores 1 --memory 1g --webui-port "$(free_port)" --work-dir "$work/worker$w" \
    "spark://127.0.0.1:$port" >"$work/worker$w.log" 2>&1 &
  pids+=($!)
done
wait_for "$work/worker1.log" "Successfully registered with master"
wait_for "$work/worker2.log" "Successfully registered with master"
echo "cluster up: spark://127.0.0.1:$port, 2 workers of 1 core"

# The records: the evaluation corpus, or planted near-duplicates.
"$PYTHON" - "$work/input.parquet" "$records" <<'EOF'
import json, pathlib, random, shutil, subprocess, sys
import pyarrow as pa, pyarrow.parquet as pq
out, n = sys.argv[1], int(sys.argv[2])
corpus = pathlib.Path("../shared/eval/corpus/corpus-00.jsonl.zst")
if corpus.is_file() and shutil.which("zstd"):
    lines = subprocess.run(["zstd", "-dc", str(corpus)], check=True, capture_output=True).stdout.splitlines()[:n]
    rows = [json.loads(line) for line in lines]
    ids, texts = [str(r["id"]) for r in rows], [r["text"] for r in rows]
    print(f"{len(ids)} records of {corpus}")
else:
    rnd, words = random.Random(1), [f"w{i}" for i in range(2000)]
    ids, texts = [], []
    while len(ids) < n:
        base = [rnd.choice(words) for _ in range(80)]
        for e in range(rnd.randint(1, 5)):
            ids.append(f"d{len(ids)}"); texts.append(" ".join(base))
            base[rnd.randrange(80)] = rnd.choice(words)
    print(f"{len(ids)} planted records")
pq.write_table(pa.table({"id": ids, "text": texts}), out)
EOF

"$NEARDUP_BIN" dedup "$work/input.parquet" --scheme "$scheme" --table "$work/cli.parquet" 2>"$work/cli.log" || {
  cat "$work/cli.log" >&2
  exit 1
}
entry=$("$PYTHON" -c 'import neardup.spark.__main__ as m; print(m.__file__)')
started=$(date +%s)
"$SPARK_HOME/bin/spark-submit" --master "spark://127.0.0.1:$port" --total-executor-cores 2 --executor-cores 1 \
  --conf spark.pyspark.python="$PYSPARK_PYTHON" --conf spark.ui.enabled=false \
  "$entry" dedup --input "$work/input.parquet" --scheme "$scheme" --table "$work/spark-table" 2>"$work/submit.log" || {
  tail -40 "$work/submit.log" >&2
  exit 1
}
grep -E "documents, .* clusters" "$work/submit.log" || true
echo "spark-submit took $(($(date +%s) - started)) s"

"$PYTHON" - "$work/cli.parquet" "$work/spark-table" <<'EOF'
import sys
import pyarrow.parquet as pq
def rows(path):
    t = pq.read_table(path).to_pylist()
    return sorted((r["id"], r["cluster"], r["representative"], r["duplicate_of"],
                   None if r["score"] is None else round(r["score"], 12)) for r in t)
cli, spark = rows(sys.argv[1]), rows(sys.argv[2])
clusters = len({r[1] for r in cli})
if cli != spark:
    print(f"DIFFERENT: the CLI has {len(cli)} clustered rows, the cluster {len(spark)}; first differences:",
          sorted(set(cli) ^ set(spark))[:5], file=sys.stderr)
    sys.exit(1)
print(f"same clusters: {len(cli)} clustered documents in {clusters} clusters, on the cluster and on one machine")
EOF
