#!/usr/bin/env bash
# On a lent 16-core machine (run from the repository root, $OUT set, simpy wheel in .whl/): gpt on loopback at
# p = 4 and 8, validate with 24 steps a configuration, twice per p (the second with the first's calibration),
# to see how far two runs of one setting agree with the compute-only baseline in copies.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
R=$OUT/r; mkdir -p $R
nproc > $R/nproc.txt; python3 -c "import torch; print(torch.__version__)" >> $R/nproc.txt
for p in 4 8; do
  for run in 1 2; do
    d=$R/p${p}_run$run; mkdir -p $d
    prm=(); [ $run = 2 ] && prm=(--params $R/p${p}_run1/validation.params.json)
    echo "== $(date +%T) p=$p run $run" | tee -a $R/times.txt
    timeout $([ $run = 1 ] && echo 240 || echo 120) python3 -m ddpsim validate --model gpt --world-size $p --strategy torch-ddp,flat,individual \
      --bucket-mb 1,4,25 --steps 24 --rounds 2 "${prm[@]}" --out $d/validation.json --records $d/validation.jsonl > $d/validate.log 2>&1 || echo "   failed rc $?" | tee -a $R/times.txt
    tail -12 $d/validate.log
  done
done
echo "== $(date +%T) end" >> $R/times.txt
cd $OUT && tar czf r.tgz r && rm -rf r
