#!/usr/bin/env bash
# $1: tree (PYTHONPATH), $2: tag
tree=$1; tag=$2
cd /tmp
for r in m45 m46loop m47loop m48loop m49link m50loop m51link m52loop m53link1000 m54link200 m55loop m56loop m57link1000 m58link200 m59 m60 m61loop m62loop m63links m64loop m65bind m66loop m68loop; do
  echo "$(date -u +%H:%M:%S) $r" >> /tmp/rr/$tag.progress
  PYTHONPATH=$tree DDPSIM="/work/main/.venv/bin/python -m ddpsim" PATH=/work/main/.venv/bin:$PATH \
    bash /work/main/benchmarks/replay_matrix.sh /work/main/benchmarks/results/accuracy_matrix_$r /tmp/rr/$tag/$r > /tmp/rr/$tag.$r.log 2>&1
done
echo "$(date -u +%H:%M:%S) done" >> /tmp/rr/$tag.progress
