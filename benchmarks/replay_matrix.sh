#!/usr/bin/env bash
# An accuracy matrix measured earlier (benchmarks/accuracy_matrix.sh), predicted again with this
# version's fits, measuring nothing: per cell, `ddpsim calibrate --refit` on the cell's calibration
# records, then `ddpsim validate --replay` of the cell's measured steps from those params.
#
#   benchmarks/replay_matrix.sh MEASURED_DIR OUT_DIR
#   DROP_KINDS="step_probe_fine" benchmarks/replay_matrix.sh MEASURED_DIR OUT_DIR
#
# DROP_KINDS: record kinds left out of the refit (space-separated), e.g. step_probe_fine to fit the
# in-step probe at its one cap, as before the per-call cost: the model without a term, on the same
# measurements as with it.
# Judged against the same measurements, two versions of the model compare without the machine's
# drift between two runs in between. OUT_DIR/<cell>/ holds params.json and validation.json;
# OUT_DIR/matrix.md is the table (benchmarks/accuracy_table.py).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/records.sh"
IN=${1:?measured matrix folder}
OUT=${2:?output folder}
DDPSIM=${DDPSIM:-ddpsim}
mkdir -p "$OUT"
for cell in "$IN"/*/; do
  name=$(basename "$cell")
  cal=$(cell_calibration "$cell")
  meas=$(cell_measured "$cell")
  [ -n "$cal" ] && [ -n "$meas" ] || { echo "   $name: no records, skipped" >&2; continue; }
  mkdir -p "$OUT/$name"
  echo "== $name" >&2
  # records kept in the repository are gzipped (benchmarks/results/accuracy_matrix_m5, _m6): unpacked here
  case "$cal" in *.gz) unpack_records "$cal" "$OUT/$name/calibration.jsonl"; cal="$OUT/$name/calibration.jsonl" ;; esac
  case "$meas" in *.gz) unpack_records "$meas" "$OUT/$name/measured.jsonl"; meas="$OUT/$name/measured.jsonl" ;; esac
  if [ -n "${DROP_KINDS:-}" ]; then
    kept="$OUT/$name/calibration.kept.jsonl"
    cp "$cal" "$kept"
    for k in $DROP_KINDS; do grep -v "\"kind\":\"$k\"" "$kept" > "$kept.tmp"; mv "$kept.tmp" "$kept"; done
    cal=$kept
  fi
  $DDPSIM calibrate --refit "$cal" --out "$OUT/$name/params.json" --quiet > "$OUT/$name/refit.log" 2>&1 &&
    $DDPSIM validate --replay "$meas" --params "$OUT/$name/params.json" \
      --out "$OUT/$name/validation.json" > "$OUT/$name/validate.log" 2>&1 ||
    echo "   $name failed: see $OUT/$name/*.log" >&2
done
python "$HERE/accuracy_table.py" "$OUT" > "$OUT/matrix.md"
cat "$OUT/matrix.md"
