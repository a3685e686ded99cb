#!/usr/bin/env bash
# individual beside torch DDP at a 1 KiB cap (a call per gradient, no recording) and at 4 MiB, stepped in turn
# beside a compute-only baseline, predicted from the calibrations kept here (PARAMS_DIR/<model>/params.json).
#
#   PATH=.venv/bin:$PATH benchmarks/results/individual_vs_ddp_per_gradient/run.sh OUT_DIR   (about 9 minutes)
set -uo pipefail
OUT=$(mkdir -p "${1:?output folder}" && cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
for m in ${MODELS:-lib gpt}; do
  spec=$m; [ "$m" = lib ] && spec=benchmarks/models/torch_transformer.py:build
  mkdir -p "$OUT/$m"
  echo "== $(date +%T) $m" >&2
  ddpsim validate --model "$spec" --params "${PARAMS_DIR:-$HERE}/$m/params.json" --strategy torch-ddp,individual \
    --bucket-mb 0.0009765625,4 --steps 40 --rounds 2 --out "$OUT/$m/validation.json" --records "$OUT/$m/validation.jsonl" \
    > "$OUT/$m/validate.log" 2>&1 || echo "   $m failed: see $OUT/$m/validate.log" >&2
  gzip -9f "$OUT/$m/validation.jsonl"
done
python "$HERE/paired.py" "$OUT"
