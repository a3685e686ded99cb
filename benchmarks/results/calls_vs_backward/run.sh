#!/usr/bin/env bash
# Does the backward slow with the number of calls? gpt, torch-ddp at three caps and individual, 40 steps
# each with per-bucket timelines, predicted from m4's calibrations of the same cells (kept in the repo).
#   benchmarks/results/calls_vs_backward/run.sh OUT_DIR; then python table.py OUT_DIR/gpt-1000/timeline ...
set -u
HERE=$(cd "$(dirname "$0")" && pwd); M=$HERE/../accuracy_matrix_m4; T=${1:?OUT_DIR}
for cell in gpt-1000 gpt-loopback; do
  link=${cell#gpt-}; l=(); [ "$link" != loopback ] && l=(--link-mbit $link)
  params=$(ls $M/$cell/validation.params*.json | head -1)
  echo "== $(date +%T) $cell (load $(cut -d' ' -f1-3 /proc/loadavg))"
  ddpsim validate --model gpt "${l[@]}" --params $params --strategy torch-ddp,individual --bucket-mb 0.5,2,16 --steps 40 \
    --out $T/$cell/validation.json --records $T/$cell/validation.jsonl --timeline $T/$cell/timeline > $T/$cell.log 2>&1 || echo "   failed: $T/$cell.log"
done
echo "== $(date +%T) done"
