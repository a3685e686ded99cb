#!/usr/bin/env bash
# After run.sh, on the same kind of machine: micro-DLRM and cnn again with run.sh's calibrations (r/, extracted
# into this folder), fewer configurations, 16 steps each and per-bucket timelines (validate --timeline).
set -u
H=benchmarks/results/device_matrix_2026-11-26
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD OMP_WAIT_POLICY=PASSIVE
T=$OUT/t; mkdir -p $T
for cell in "micro-dlrm:torch-ddp,flat:0.25,4" "cnn:torch-ddp,sharded:1,4"; do
  IFS=: read -r m strat buckets <<< "$cell"
  d=$T/$m; mkdir -p $d
  echo "== $(date +%T) $m (load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a $T/times.txt
  timeout 150 python3 -m ddpsim validate --model $m --params $H/r/$m-loopback/validation.params.json --world-size 2 \
    --strategy $strat --bucket-mb $buckets --steps 16 --min-seconds 1 --rounds 2 --timeline $d/timeline \
    --out $d/validation.json --records $d/validation.jsonl > $d/validate.log 2>&1 || echo "   $m rc $?" | tee -a $T/times.txt
  tail -30 $d/validate.log
done
echo "== $(date +%T) end" >> $T/times.txt
cd $OUT && tar czf t.tgz t && rm -rf t
