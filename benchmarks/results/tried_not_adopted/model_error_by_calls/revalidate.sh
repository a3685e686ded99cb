#!/usr/bin/env bash
# Predict a stored matrix run's measured steps again from params a replay already fitted (only `validate
# --replay`, no refit): how a change that touches only the prediction (here the intervals) compares on the
# same fits and the same measurements.
#
#   revalidate.sh MATRIX_DIR BASE_REPLAY_DIR OUT_DIR      (BASE_REPLAY_DIR: benchmarks/replay_matrix.sh's output)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../../records.sh"
IN=${1:?matrix run}; BASE=${2:?replay with params}; OUT=${3:?output folder}
DDPSIM=${DDPSIM:-ddpsim}
for cell in "$IN"/*/; do
  n=$(basename "$cell"); [ -f "$BASE/$n/params.json" ] || continue
  meas=$(cell_measured "$cell"); mkdir -p "$OUT/$n"
  case "$meas" in *.gz) unpack_records "$meas" "$OUT/$n/measured.jsonl"; meas="$OUT/$n/measured.jsonl" ;; esac
  $DDPSIM validate --replay "$meas" --params "$BASE/$n/params.json" --out "$OUT/$n/validation.json" > "$OUT/$n/validate.log" 2>&1 ||
    echo "   $n failed: see $OUT/$n/validate.log" >&2
done
