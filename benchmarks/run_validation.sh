#!/usr/bin/env bash
# The accuracy matrix of BENCHMARKS.md: calibrate, then validate every strategy
# and bucket size for real and in the simulator, on loopback and over emulated
# links (root needed for --link-mbit; skipped otherwise).
#
#   benchmarks/run_validation.sh [OUT_DIR] [MODELS] [LINKS]
#   e.g. benchmarks/run_validation.sh runs/validation "gpt micro-dlrm" "100,400"
#
# Each validate writes OUT/<model>/validation[-<R>mbit].json (summary + rows),
# the raw step records (.jsonl) and PNGs; nothing measured is lost if a later
# step fails.
set -euo pipefail
OUT=${1:-runs/validation}
MODELS=${2:-"gpt micro-dlrm"}
LINKS=${3:-"100,400"}
STEPS=${STEPS:-20}
for m in $MODELS; do
  d="$OUT/$m"; mkdir -p "$d"
  echo "== $m: loopback" >&2
  ddpsim calibrate --model "$m" --out "$d/params.json" --records "$d/calibration.jsonl"
  ddpsim validate --params "$d/params.json" --model "$m" --steps "$STEPS" \
    --out "$d/validation.json" --records "$d/validation.jsonl" --plot-dir "$d/plots"
  if [ -n "$LINKS" ]; then
    echo "== $m: emulated links $LINKS Mbit/s" >&2
    (cd "$d" && ddpsim validate --model "$m" --link-mbit "$LINKS" --steps "$STEPS" \
      --out validation.json --records validation.jsonl --plot-dir plots)
  fi
done
