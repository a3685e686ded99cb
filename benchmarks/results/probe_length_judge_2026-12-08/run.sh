#!/usr/bin/env bash
# For each workload on loopback (p = 2, this VM): two calibrations with the in-step probe at >= 4 s a cap; each cut
# into its >= 1 s probes and refitted (windows.py: full = the 4 s version, w<i> = the 1 s version); then one
# `tune --verify` measuring, interleaved in one run, the grid 0.25,1,4,16,64 and every cap any of those params
# recommends, so each params' recommendation is judged against the same measured steps.
#   DDPSIM="python -m ddpsim" PYTHON=python benchmarks/results/probe_length_judge_2026-12-08/run.sh OUT
set -u
OUT=${1:?output folder}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=${MODELS:-"cnn micro-dlrm gpt"}  # CALS="a b c d": calibrations a workload; STEPS: verify steps a setting (48)
GRID=0.25,1,4,16,64
for m in $MODELS; do
  for c in ${CALS:-a b}; do
    d="$OUT/$m/cal_$c"
    mkdir -p "$d"
    echo "$(date +%T) $m cal_$c $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
    $DDPSIM calibrate --model "$m" --step-probe-seconds 4 --out "$d/params.json" --records "$d/calibration.jsonl" \
      > "$d/calibrate.log" 2>&1 || { echo "$d failed" >&2; continue; }
    echo "$(date +%T) $m cal_$c windows" >> "$OUT/load.txt"
    $PYTHON "$HERE/windows.py" "$d/calibration.jsonl" "$d/refits" "$GRID" > "$d/windows.log" 2>&1 || echo "$d windows failed" >&2
    gzip -f "$d/calibration.jsonl"
  done
  caps=$($PYTHON - "$OUT/$m" "$GRID" <<'PY'
import json, sys, pathlib
caps = {float(x) for x in sys.argv[2].split(",")}
for f in pathlib.Path(sys.argv[1]).glob("cal_*/refits/recs.json"):
    for r in json.loads(f.read_text()).values():
        if r["bucket_cap_mb"] is not None:
            caps.add(float(r["bucket_cap_mb"]))
print(",".join(f"{c:g}" for c in sorted(caps)))
PY
)
  echo "$(date +%T) $m verify grid $caps $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
  $DDPSIM tune --model "$m" --params "$OUT/$m/cal_a/params.json" --verify --verify-grid "$caps" --steps "${STEPS:-48}" \
    --out-dir "$OUT/$m/verify" --quiet > "$OUT/$m/verify.txt" 2>&1 || echo "$m verify failed" >&2
  gzip -f "$OUT/$m/verify/verify.jsonl"
  echo "$(date +%T) $m done $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
done
