#!/bin/bash
P=/sys/module/haltpoll/parameters/guest_halt_poll_ns
trap 'echo 0 > $P' EXIT
i=0
for v in 0 200000 0 200000 0 200000; do
  i=$((i+1)); echo $v > $P
  /work/main/.venv/bin/python -m ddpsim bench-allreduce --sizes 4K,16K,64K --iters 300 --warmup 20 --out /tmp/hp/r$i-$v.jsonl --quiet > /tmp/hp/r$i-$v.txt 2>&1
  echo "run $i poll=$v rc=$?"
done
echo 0 > $P; cat $P
