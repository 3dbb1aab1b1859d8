#!/usr/bin/env bash
# The Redis store's benchmark, one command: a fresh redis-server on a loopback port (no persistence), then
# neardup's SimHash and MinHash indexes in it at N entries, then datasketch's MinHashLSH over the same Redis on
# the same signatures (at PEER_N entries: it is much slower). One JSON line per measure.
#
#   benches/redis/run.sh [N=1e6] [PEER_N=1e5]          (needs redis-server, and python with datasketch, redis)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-1e6}
peer_n=${2:-1e5}
port=${PORT:-6391}
python=${PYTHON:-python3}
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize no \
  > "$dir/redis.log" 2>&1 &
redis=$!
trap 'kill $redis 2>/dev/null; wait $redis 2>/dev/null; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
cargo build --release --quiet -p neardup-store-redis --example redis_bench
bench=target/release/examples/redis_bench
echo "# redis-server $(redis-server --version | grep -o 'v=[^ ]*'), N = $n, peer N = $peer_n"
$bench --url "redis://127.0.0.1:$port/bench-simhash" --n "$n" --kind simhash --queries 20000
$bench --url "redis://127.0.0.1:$port/bench-minhash" --n "$n" --kind minhash --queries 20000
$bench --url "redis://127.0.0.1:$port/bench-minhash-peer-n" --n "$peer_n" --kind minhash --queries 2000 --clients 1
"$python" benches/redis/datasketch_redis.py --port "$port" --n "$peer_n" --queries 2000
