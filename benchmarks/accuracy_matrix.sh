#!/usr/bin/env bash
# The accuracy matrix of issue 10: for every network x workload, calibrate (with the in-step
# probe) then validate torch-ddp, bucketed and sharded at 0.25-64 MiB, flat and individual,
# for real and in the simulator, on 2 local gloo ranks; then one table of every cell.
#
#   benchmarks/accuracy_matrix.sh [OUT_DIR]
#   NETWORKS="200 1000 loopback" MODELS="gpt cnn micro-dlrm lib" STEPS=8 benchmarks/accuracy_matrix.sh runs/matrix
#   RANKS=4 NETWORKS=loopback MODELS=gpt benchmarks/accuracy_matrix.sh runs/p4   (gloo ranks; default 2)
#
# NETWORKS: link rates in Mbit/s (emulated tbf links, root needed; skipped otherwise) or "loopback".
# MODELS: workloads; "lib" is torch's own nn.TransformerEncoder (benchmarks/models/torch_transformer.py).
# STEPS: timed steps per configuration (over ROUNDS rounds); MIN_SECONDS (default 6): more steps where the
# predicted step is short (validate --min-seconds; 0 gives exactly STEPS, as runs m1-m16 did; 1 as m17-m24 did).
# At 6 s gpt times 30 steps a configuration (8 gave its rows +-10-33 % noise) and micro-DLRM 500; loopback takes
# about 16 minutes (runs m25, m26).
# Per cell OUT/<model>-<network>/ holds validation.json (summary + rows), validation.params.json
# (the calibration), its records and plots; OUT/matrix.md is the table (benchmarks/accuracy_table.py).
# A failed cell is logged and the others still run; the table says which are missing.
# BLOCK (default auto, as validate's: 10 where the predicted step is under 50 ms, else 1): timed steps a configuration
# takes in a row after one untimed step, a training job's order (validate --block); 1: each timed step follows
# another configuration's, as runs m18-m33 were measured; 10 for every workload, as runs m34 and m35.
# BUCKETS (default 0.25,1,4,16,64, the 17 configurations of runs m4-m70): sizes for the bucketed strategies;
# "default" adds torch's own (bucket_cap_mb unset: 25 MiB, a 1 MiB first bucket) for torch-ddp and sharded, 19 a cell
# (run m71loop_default: BUCKETS=default,0.25,1,4,16,64).
# EXPLAIN (default 1): then each cell with a row missing 10 % is measured again as a whole (each miss in its company),
# and every such row run again alone (6 s beside a baseline, then with per-bucket timelines)
# (benchmarks/explain_misses.py; OUT/<cell>/explain/), and the table names its largest wrong term.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-runs/accuracy-matrix}
NETWORKS=${NETWORKS:-"200 1000 loopback"}
MODELS=${MODELS:-"gpt cnn micro-dlrm lib"}
STEPS=${STEPS:-8}
RANKS=${RANKS:-2}  # not WORLD_SIZE: torchrun and SLURM export that one
ROUNDS=${ROUNDS:-2}
MIN_SECONDS=${MIN_SECONDS:-6}
BLOCK=${BLOCK:-auto}
BUCKETS=${BUCKETS:-0.25,1,4,16,64}
STRATEGIES=${STRATEGIES:-torch-ddp,flat,individual,bucketed,sharded}
DDPSIM=${DDPSIM:-ddpsim}
if compgen -G "$OUT/*/validation.json" > /dev/null; then  # validate refuses to replace them (no --force here)
  echo "$OUT already holds a matrix's cells: give a new folder" >&2
  exit 2
fi
mkdir -p "$OUT"
for net in $NETWORKS; do
  for m in $MODELS; do
    spec=$m
    [ "$m" = lib ] && spec="$HERE/models/torch_transformer.py:build"
    cell="$OUT/$m-$net"
    mkdir -p "$cell"
    link=()
    [ "$net" != loopback ] && link=(--link-mbit "$net")
    echo "== $(date +%T) $m on $net, p = $RANKS (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    $DDPSIM validate --model "$spec" --world-size "$RANKS" "${link[@]}" --strategy "$STRATEGIES" --bucket-mb "$BUCKETS" \
      --steps "$STEPS" --min-seconds "$MIN_SECONDS" --rounds "$ROUNDS" --block "$BLOCK" --out "$cell/validation.json" --records "$cell/validation.jsonl" \
      --plot-dir "$cell/plots" > "$cell/validate.log" 2>&1 || echo "   cell $m $net failed: see $cell/validate.log" >&2
  done
done
# each row missing 10 % run again with per-bucket timelines: which term of the step is wrong (EXPLAIN=0: not)
if [ "${EXPLAIN:-1}" != 0 ]; then
  echo "== $(date +%T) timelines of the misses (benchmarks/explain_misses.py)" >&2
  python "$HERE/explain_misses.py" "$OUT" > "$OUT/explain.md" || echo "   some misses not explained: see $OUT/*/explain/*/validate.log" >&2
fi
python "$HERE/accuracy_table.py" "$OUT" > "$OUT/matrix.md"
cat "$OUT/matrix.md"
