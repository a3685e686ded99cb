#!/usr/bin/env bash
# One stored accuracy-matrix cell predicted three ways from its own records (nothing measured): as this
# version's refit decides (base), and with the channel count forced to one serial channel (ch1) or to
# gloo's two threads as two channels (ch2), the whole refit (in-step probe included) under that count.
#
#   benchmarks/results/channels_bracket/replay_channels.sh CELL_DIR OUT_DIR
set -uo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
. "$HERE/records.sh"
CELL=${1:?cell folder}
OUT=${2:?output folder}
DDPSIM=${DDPSIM:-ddpsim}
mkdir -p "$OUT"
cal=$(cell_calibration "$CELL")
meas=$(cell_measured "$CELL")
case "$cal" in *.gz) unpack_records "$cal" "$OUT/calibration.jsonl"; cal="$OUT/calibration.jsonl" ;; esac
case "$meas" in *.gz) unpack_records "$meas" "$OUT/measured.jsonl"; meas="$OUT/measured.jsonl" ;; esac
$DDPSIM calibrate --refit "$cal" --out "$OUT/base.params.json" --quiet > "$OUT/refit.log" 2>&1 || { echo "refit failed: $OUT/refit.log" >&2; exit 1; }
for ch in 1 2; do
  python "$(dirname "$0")/refit_channels.py" "$cal" $ch "$OUT/ch$ch.params.json" >> "$OUT/refit.log" 2>&1 ||
    { echo "refit with $ch channel(s) failed: $OUT/refit.log" >&2; exit 1; }
done
for v in base ch1 ch2; do
  $DDPSIM validate --replay "$meas" --params "$OUT/$v.params.json" --out "$OUT/$v.validation.json" > "$OUT/$v.validate.log" 2>&1 ||
    echo "   $v failed: see $OUT/$v.validate.log" >&2
done
