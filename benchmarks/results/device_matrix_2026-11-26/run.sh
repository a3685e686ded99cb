#!/usr/bin/env bash
# On a lent 16-core machine (run from the repository root, $OUT set, simpy wheel in .whl/): the loopback row
# of the accuracy matrix (benchmarks/accuracy_matrix.sh's validate, without plots) for gpt, cnn, lib and
# micro-DLRM at p = 2, 8 threads a rank under OMP_WAIT_POLICY=PASSIVE (what `ddpsim` advises there), each
# cell under its own time limit so that one slow cell does not take the others' time.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD OMP_WAIT_POLICY=PASSIVE
R=$OUT/r; mkdir -p $R
{ nproc; python3 -c "import torch; print(torch.__version__)"; lscpu | grep -i "model name"; } > $R/machine.txt 2>&1
for cell in gpt:170 cnn:110 lib:150 micro-dlrm:110; do
  m=${cell%%:*}; limit=${cell##*:}
  spec=$m; [ "$m" = lib ] && spec=benchmarks/models/torch_transformer.py:build
  d=$R/$m-loopback; mkdir -p $d
  echo "== $(date +%T) $m (load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a $R/times.txt
  timeout $limit python3 -m ddpsim validate --model "$spec" --world-size 2 --strategy torch-ddp,flat,individual,bucketed,sharded \
    --bucket-mb 0.25,1,4,16,64 --steps 8 --min-seconds 1 --rounds 2 --out $d/validation.json --records $d/validation.jsonl \
    > $d/validate.log 2>&1 || echo "   $m failed or timed out: rc $?" | tee -a $R/times.txt
  tail -4 $d/validate.log
done
echo "== $(date +%T) end" >> $R/times.txt
python3 benchmarks/accuracy_table.py $R > $R/matrix.md 2>&1; cat $R/matrix.md
cd $OUT && tar czf r.tgz r && rm -rf r
