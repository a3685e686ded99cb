#!/usr/bin/env bash
# cnn calibrations on loopback, the in-step probe at >= 1 s a cap (old, the default) and >= 4 s (new), alternating;
# each a calibration-only cell OUT/cal_<mode><i>/cnn-loopback/ for benchmarks/cross_replay.sh.
#   benchmarks/results/probe_seconds_cnn_2026-12-07/run.sh OUT
set -u
OUT=${1:?output folder}
for i in 1 2 3; do
  for mode in old new; do
    secs=$([ $mode = old ] && echo 1 || echo 4)
    d="$OUT/cal_${mode}$i/cnn-loopback"
    mkdir -p "$d"
    echo "$(date +%T) cal_${mode}$i $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
    $DDPSIM calibrate --model cnn --step-probe-seconds $secs --out "$d/validation.params.json" \
      --records "$d/validation.calibration.jsonl" > "$d/calibrate.log" 2>&1 || echo "$d failed" >&2
    gzip -f "$d/validation.calibration.jsonl"
  done
done
