#!/usr/bin/env bash
# On a lent 16-core machine (run from the repository root, $OUT set, simpy wheel in .whl/): the loopback row
# of the accuracy matrix at p = 2 for gpt, cnn, lib and micro-DLRM (as device_matrix_2026-11-26/run.sh did on an
# older model: same options, 8 threads a rank under OMP_WAIT_POLICY=PASSIVE), then gpt at p = 4 (4 threads a
# rank; torch-ddp 1/4/25 MiB, flat, individual, as omp_wait_policy/ did). Each cell calibrates first and runs
# under its own time limit so that one slow cell does not take the others' time.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD OMP_WAIT_POLICY=PASSIVE PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
{ nproc; python3 -c "import torch; print(torch.__version__)"; lscpu | grep -i "model name"; git log -1 --format=%h 2>/dev/null; } > $R/machine.txt 2>&1
cell() {  # name limit_s p validate-args...
  local name=$1 limit=$2 p=$3; shift 3
  local d=$R/$name; mkdir -p $d
  echo "== $(date +%T) $name (load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a $R/times.txt
  timeout $limit python3 -m ddpsim validate --world-size $p "$@" --steps 8 --min-seconds 1 --rounds 2 \
    --out $d/validation.json --records $d/validation.jsonl > $d/validate.log 2>&1 \
    || echo "   $name failed or timed out: rc $?" | tee -a $R/times.txt
  tail -3 $d/validate.log
}
ALL=(--strategy torch-ddp,flat,individual,bucketed,sharded --bucket-mb 0.25,1,4,16,64)
# CELLS: which cells, each name:time-limit-in-s (run2.sh: cnn and lib again with longer limits)
for c in ${CELLS:-gpt-loopback:115 cnn-loopback:95 lib-loopback:115 micro-dlrm-loopback:95 gpt-loopback-p4:100}; do
  case ${c%%:*} in
    gpt-loopback) cell gpt-loopback ${c##*:} 2 --model gpt "${ALL[@]}" ;;
    cnn-loopback) cell cnn-loopback ${c##*:} 2 --model cnn "${ALL[@]}" ;;
    lib-loopback) cell lib-loopback ${c##*:} 2 --model benchmarks/models/torch_transformer.py:build "${ALL[@]}" ;;
    micro-dlrm-loopback) cell micro-dlrm-loopback ${c##*:} 2 --model micro-dlrm "${ALL[@]}" ;;
    gpt-loopback-p4) cell gpt-loopback-p4 ${c##*:} 4 --model gpt --strategy torch-ddp,flat,individual --bucket-mb 1,4,25 ;;
    *) echo "unknown cell ${c%%:*} (CELLS holds name:limit_s entries)" >&2; exit 2 ;;
  esac
done
echo "== $(date +%T) end" >> $R/times.txt
python3 benchmarks/accuracy_table.py $R > $R/matrix.md 2>&1; cat $R/matrix.md
cd $OUT && tar czf r.tgz r && rm -rf r
