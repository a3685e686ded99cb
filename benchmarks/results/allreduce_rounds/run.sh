#!/usr/bin/env bash
# Calibration's sweep in one pass (--rounds 1) against 4 rounds, alternating, REPS times each, on loopback:
# calibration's 11 sizes with broadcasts. Writes r<rounds>_<i>.jsonl, load.txt and err.txt into OUT_DIR
# (default: this folder's run/); analyze.py reads r*_*.jsonl(.gz) beside it.
#   benchmarks/results/allreduce_rounds/run.sh [OUT_DIR]
set -u
OUT=${1:-$(dirname "$0")/run}
mkdir -p "$OUT"
REPS=${REPS:-5}
SIZES=4K,16K,64K,256K,1M,2M,4M,8M,16M,32M,64M
for i in $(seq 1 "$REPS"); do
  for r in 1 4; do
    uptime >> "$OUT/load.txt"
    ddpsim bench-allreduce --sizes $SIZES --impl native,broadcast --rounds $r --out "$OUT/r${r}_$i.jsonl" --quiet \
      > /dev/null 2>> "$OUT/err.txt" || echo "run r$r $i failed" >&2
  done
done
