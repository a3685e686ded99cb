#!/usr/bin/env bash
# Judge J1 of rules.txt (nothing measured): each m70loop loopback cell's calibration (in-step probe at >= 4 s a cap)
# refitted whole (full) and as its >= 1 s windows (windows.py); each params replays the cell's own validation rows.
#   PYTHON=python DDPSIM="python -m ddpsim" benchmarks/results/probe_length_judge_2026-12-08/j1.sh OUT [RUN_DIR]
set -u
OUT=${1:?output folder}
RUN=${2:-benchmarks/results/accuracy_matrix_m70loop}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../records.sh"
for cell in "$RUN"/*-loopback; do
  c=$(basename "$cell")
  mkdir -p "$OUT/$c"
  unpack_records "$(cell_calibration "$cell")" "$OUT/$c/calibration.jsonl" cut
  unpack_records "$(cell_measured "$cell")" "$OUT/$c/measured.jsonl" cut
  $PYTHON "$HERE/windows.py" "$OUT/$c/calibration.jsonl" "$OUT/$c/refits" > "$OUT/$c/windows.log" 2>&1 || { echo "$c windows failed" >&2; continue; }
  for p in "$OUT/$c"/refits/*.params.json; do
    n=$(basename "$p" .params.json)
    $DDPSIM validate --replay "$OUT/$c/measured.jsonl" --params "$p" --out "$OUT/$c/replay_$n.json" > "$OUT/$c/replay_$n.log" 2>&1 ||
      echo "$c $n replay failed" >&2
  done
  rm -f "$OUT/$c/calibration.jsonl" "$OUT/$c/measured.jsonl"
done
