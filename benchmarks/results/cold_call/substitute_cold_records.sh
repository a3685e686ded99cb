#!/usr/bin/env bash
# The stored records of runs m11 (loopback) and m10 (links), measured before the cold-call probe
# existed, with a cold-call record measured afterwards on the same VM and network (probe_<net>.jsonl,
# 100 repetitions, 2026-11-25 17:4x) appended to each cell's calibration records: a sensitivity
# replay, not a measurement of those runs' cold calls. Then both versions of the model on them:
#
#   benchmarks/results/cold_call/substitute_cold_records.sh OUT_DIR
#   benchmarks/replay_matrix.sh OUT_DIR/rec_m11loop OUT_DIR/cold_m11loop
#   DROP_KINDS=cold_call benchmarks/replay_matrix.sh OUT_DIR/rec_m11loop OUT_DIR/base_m11loop
#   (the same for m10link)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
R=$(cd "$HERE/.." && pwd)
OUT=${1:?output folder}
for run in m11loop m10link; do
  for cell in "$R/accuracy_matrix_$run"/*/; do
    name=$(basename "$cell")
    case $name in *loopback) rec=$HERE/probe_loopback.jsonl ;; *-1000) rec=$HERE/probe_1000.jsonl ;; *-200) rec=$HERE/probe_200.jsonl ;; esac
    mkdir -p "$OUT/rec_$run/$name"
    { zcat -f "$cell"/validation.calibration*.jsonl*; cat "$rec"; } > "$OUT/rec_$run/$name/validation.calibration.jsonl"
    cp "$cell"/validation.jsonl* "$OUT/rec_$run/$name/"
  done
done
