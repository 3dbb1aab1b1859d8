#!/usr/bin/env bash
# Scores `neardup dedup --pairs` on ../shared/eval/versions/docs against the exact word-3-shingle Jaccard
# ground truth, for each detector configuration given as one argument (the dedup flags), at each threshold.
#
#   tools/eval/score_versions.sh "--scheme minhash --shingle 3" "--scheme minhash --verify estimate"
#
# A configuration may contain THRESHOLD, replaced by each threshold in turn (default thresholds 0.5 0.8 0.9;
# set THRESHOLDS to change them). Prints one TSV row per configuration and threshold: precision, recall and
# F1 against the full-page (jaccard3) and main-content (jaccard3_main) columns, and the wall time.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
eval_dir="$here/../shared/eval"
truth="$eval_dir/versions/groundtruth/allpairs_j3_ge_0.2.tsv"
[ -f "$truth" ] || { echo "no ground truth at $truth (see ../shared/eval/README.md)" >&2; exit 1; }
[ -d "$eval_dir/versions/docs" ] || bash "$eval_dir/unpack.sh"
bin="${NEARDUP:-$here/target/release/neardup}"
[ -x "$bin" ] || cargo build --release -p neardup-cli --manifest-path "$here/Cargo.toml"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
score() { # column threshold -> "P R F1"
  python3 "$eval_dir/tools/score_pairs.py" --column "$1" --threshold "$2" "$truth" "$tmp/pairs.tsv" |
    tail -1 | sed -E 's/.*precision=([0-9.]+) recall=([0-9.]+) f1=([0-9.]+).*/\1\t\2\t\3/'
}
printf 'config\tthreshold\tdetected\tP\tR\tF1\tP_main\tR_main\tF1_main\tseconds\n'
for config in "$@"; do
  for t in ${THRESHOLDS:-0.5 0.8 0.9}; do
    flags=${config//THRESHOLD/$t}
    case "$flags" in *minhash*|*datasketch*) flags="$flags --threshold $t" ;; esac
    start=$(date +%s.%N)
    # shellcheck disable=SC2086 # the flags are meant to split
    (cd "$eval_dir/versions/docs" && "$bin" dedup --pairs $flags django-docs linux-doc) > "$tmp/pairs.tsv" 2>/dev/null
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    printf '%s\t%s\t%s\t%s\t%s\t%.1f\n' "$config" "$t" "$(wc -l < "$tmp/pairs.tsv")" \
      "$(score jaccard3 "$t")" "$(score jaccard3_main "$t")" "$secs"
  done
done
