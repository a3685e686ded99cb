#!/usr/bin/env bash
# per-bucket timeline decompositions of the worst rows of the m4 matrix, from each cell's own calibration
set -u
M=/work/runs/m4; T=/work/runs/tl
run() { # cell model link strategies buckets
  local cell=$1 model=$2 link=$3 strat=$4 buckets=$5
  local params=$(ls $M/$cell/validation.params*.json | head -1)
  local spec=$model; [ "$model" = lib ] && spec=/work/main/benchmarks/models/torch_transformer.py:build
  local l=(); [ "$link" != loopback ] && l=(--link-mbit $link)
  echo "== $(date +%T) $cell $strat $buckets (load $(cut -d' ' -f1-3 /proc/loadavg))"
  ddpsim validate --model $spec "${l[@]}" --params $params --strategy $strat --bucket-mb $buckets --steps 8 \
    --out $T/$cell/validation.json --records $T/$cell/validation.jsonl --timeline $T/$cell/timeline > $T/$cell.log 2>&1 || echo "   failed: $T/$cell.log"
}
mkdir -p $T
run gpt-loopback gpt loopback individual,torch-ddp 4
run gpt-1000 gpt 1000 individual,torch-ddp 0.25
run micro-dlrm-1000 micro-dlrm 1000 sharded,torch-ddp 0.25
run micro-dlrm-loopback micro-dlrm loopback individual,bucketed 0.25
run lib-loopback lib loopback torch-ddp,flat 64
run cnn-1000 cnn 1000 individual,torch-ddp 0.25
echo "== $(date +%T) done"
