#!/usr/bin/env bash
# micro-DLRM calibrations on loopback, the in-step probe at exactly 10 steps (old) and at >= 1 s a cap (new),
# alternating; each written as a calibration-only cell (OUT_DIR/cal_<mode><i>/micro-dlrm-loopback/) for
# benchmarks/cross_replay.sh.
#   benchmarks/results/cross_replay_2026-11-26/probe_seconds/run.sh OUT_DIR
set -u
OUT=${1:?output folder}
for i in 1 2 3; do
  for mode in old new; do
    secs=$([ $mode = old ] && echo 0 || echo 1)
    d="$OUT/cal_${mode}$i/micro-dlrm-loopback"
    mkdir -p "$d"
    uptime >> "$OUT/load.txt"
    ddpsim calibrate --model micro-dlrm --step-probe-seconds $secs --out "$d/validation.params.json" \
      --records "$d/validation.calibration.jsonl" > "$d/calibrate.log" 2>&1 || echo "$d failed" >&2
  done
done
