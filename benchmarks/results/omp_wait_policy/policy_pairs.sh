#!/usr/bin/env bash
# OpenMP's wait policy at several p: for each p, calibrate and validate gpt on loopback with the policy
# unset, then again with OMP_WAIT_POLICY=PASSIVE, one after the other on the same machine.
#
#   OUT=DIR PS="4 8" ROUNDS=3 benchmarks/results/omp_wait_policy/policy_pairs.sh
set -uo pipefail
OUT=${OUT:?output folder}
PS=${PS:-"4 8"}
ROUNDS=${ROUNDS:-3}
MIN_SECONDS=${MIN_SECONDS:-0}  # 0: exactly --steps, as the recorded runs timed (they predate --min-seconds)
DDPSIM=${DDPSIM:-ddpsim}
for p in $PS; do
  for policy in unset PASSIVE; do
    d="$OUT/p${p}_$policy"
    mkdir -p "$d"
    env=()
    [ "$policy" = PASSIVE ] && env=(OMP_WAIT_POLICY=PASSIVE)
    echo "== $(date +%T) p = $p, OMP_WAIT_POLICY $policy (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    env "${env[@]}" $DDPSIM validate --model gpt --world-size "$p" --strategy torch-ddp,flat,individual \
      --bucket-mb 1,4,25 --steps 8 --min-seconds "$MIN_SECONDS" --rounds "$ROUNDS" --out "$d/validation.json" --records "$d/validation.jsonl" \
      > "$d/validate.log" 2>&1 || echo "   p = $p $policy failed: see $d/validate.log" >&2
  done
done
