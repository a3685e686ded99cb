#!/usr/bin/env bash
# run.sh again for micro-DLRM and cnn on the version with the per-byte cold-call term (calibrating anew).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD OMP_WAIT_POLICY=PASSIVE
R=$OUT/c; mkdir -p $R
for cell in micro-dlrm:100 cnn:100; do
  m=${cell%%:*}; limit=${cell##*:}
  d=$R/$m-loopback; mkdir -p $d
  echo "== $(date +%T) $m (load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a $R/times.txt
  timeout $limit python3 -m ddpsim validate --model "$m" --world-size 2 --strategy torch-ddp,flat,individual,bucketed,sharded \
    --bucket-mb 0.25,1,4,16,64 --steps 8 --min-seconds 1 --rounds 2 --out $d/validation.json --records $d/validation.jsonl \
    > $d/validate.log 2>&1 || echo "   $m failed or timed out: rc $?" | tee -a $R/times.txt
  grep -i "cold calls" $d/validate.log | cut -c1-400
  tail -3 $d/validate.log
done
python3 benchmarks/accuracy_table.py $R > $R/matrix.md 2>&1; head -8 $R/matrix.md
cd $OUT && tar czf c.tgz c && rm -rf c
