#!/usr/bin/env bash
# rules.txt's runs: micro-dlrm tune --verify on loopback from one fixed params, alternating --min-seconds 1 and 4.
#   DDPSIM="python -m ddpsim" benchmarks/results/verify_seconds_2026-12-08/run.sh OUT
set -u
OUT=${1:?output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
P="$HERE/../probe_length_judge_2026-12-08/round2/micro-dlrm/cal_d/params.json"
mkdir -p "$OUT"
i=0
for s in 1 4 1 4 1 4; do
  i=$((i + 1))
  echo "$(date +%T) run$i min-seconds $s $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
  $DDPSIM tune --model micro-dlrm --params "$P" --verify --verify-grid 0.25,1,4,16,64 --steps 48 --min-seconds "$s" \
    --out-dir "$OUT/run${i}_s$s" --quiet > "$OUT/run${i}_s$s.txt" 2>&1 || echo "run$i failed" >&2
done
echo "$(date +%T) done" >> "$OUT/load.txt"
