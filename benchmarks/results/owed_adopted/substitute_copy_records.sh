#!/usr/bin/env bash
# The stored records of runs m5-m9 (measured before the in-step copy probe existed) with run m10's
# in-step copy record of the same cell (same model, same network, same VM) appended to each cell's
# calibration records: a sensitivity replay, not a measurement of those runs' copy rate.
#
#   benchmarks/results/owed_adopted/substitute_copy_records.sh OUT_DIR
#   then per run: benchmarks/replay_matrix.sh OUT_DIR/rec_<run> OUT_DIR/<variant>_<run>
set -euo pipefail
R=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?output folder}
for run in m5 m6 m7 m8link m8loop m9link m9loop; do
  for cell in "$R/accuracy_matrix_$run"/*/; do
    name=$(basename "$cell")
    m10="$R/accuracy_matrix_m10link/$name"; [ -d "$m10" ] || m10="$R/accuracy_matrix_m10loop/$name"
    [ -d "$m10" ] || { echo "no m10 cell for $name" >&2; continue; }
    mkdir -p "$OUT/rec_$run/$name"
    cal=$(ls "$cell"/validation.calibration*.jsonl* | head -1); meas=$(ls "$cell"/validation.jsonl* | head -1)
    { zcat -f "$cal"; zcat -f "$m10"/validation.calibration*.jsonl* | grep '"kind":"copy_in_step"'; } > "$OUT/rec_$run/$name/validation.calibration.jsonl"
    cp "$meas" "$OUT/rec_$run/$name/"
  done
done
