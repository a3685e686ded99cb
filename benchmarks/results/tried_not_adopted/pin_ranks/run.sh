#!/bin/bash
# alternate unpinned / pinned micro-dlrm loopback cells
cd /work/wtP
export PATH=/work/main/.venv/bin:$PATH PYTHONPATH=/work/wtP
for i in 1 2; do
  for mode in free pin; do
    if [ $mode = pin ]; then export DDPSIM_PIN_RANKS=1; else unset DDPSIM_PIN_RANKS; fi
    NETWORKS=loopback MODELS="${MODELS:-micro-dlrm}" benchmarks/accuracy_matrix.sh /work/runs/pin/$mode$i > /work/runs/pin/$mode$i.out 2>&1
  done
done
