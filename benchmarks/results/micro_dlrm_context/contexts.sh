#!/usr/bin/env bash
# micro-DLRM's one-bucket rows measured in different company (README.md here): the whole matrix cell, the seven
# one-bucket configurations alone together, one configuration alone, each with --block 1 and --block 10; all
# predicted from run m33's loopback calibration, so only the measuring context differs.
#   benchmarks/results/micro_dlrm_context/contexts.sh OUT
set -u
OUT=${1:?usage: contexts.sh OUT}
P=benchmarks/results/accuracy_matrix_m33loop/micro-dlrm-loopback/validation.params.json
ALL="--strategy torch-ddp,flat,individual,bucketed,sharded --bucket-mb 0.25,1,4,16,64"
V() {
  name=$1; shift; mkdir -p "$OUT/$name"
  echo "== $(date +%T) $name $*"
  ddpsim validate --model micro-dlrm --world-size 2 --params $P --steps 8 --min-seconds 6 --rounds 2 \
    --out "$OUT/$name/validation.json" --records "$OUT/$name/validation.jsonl" "$@" > "$OUT/$name/validate.log" 2>&1
}
V full1 $ALL
V onebucket1 --strategy torch-ddp,flat,bucketed --bucket-mb 4,16,64
V alone_ddp64_1 --strategy torch-ddp --bucket-mb 64
V alone_flat_1 --strategy flat
V alone_b64_1 --strategy bucketed --bucket-mb 64
V fullb10_1 --block 10 $ALL
V full_2 $ALL
V fullb10_2 --block 10 $ALL
V alone_ddp64_2 --strategy torch-ddp --bucket-mb 64
V alone_ddp64_b10 --block 10 --strategy torch-ddp --bucket-mb 64
V alone_flat_2 --strategy flat
