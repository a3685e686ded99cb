#!/usr/bin/env bash
# The channel bracket over every stored micro-DLRM loopback cell from run m15 on, and three cells of other
# workloads (m15): replay_channels.sh per cell into OUT, then bracket.py over them. Nothing is measured;
# about 10 minutes on this 2-core VM.
#
#   PATH=.venv/bin:$PATH benchmarks/results/channels_bracket/run.sh OUT_DIR      (from the repository root)
set -uo pipefail
OUT=${1:?output folder}
command -v ddpsim > /dev/null || { echo "run.sh: ddpsim is not on PATH (PATH=.venv/bin:\$PATH, or activate the venv)" >&2; exit 2; }
R=benchmarks/results
H=$(dirname "$0")
args=()
add() { "$H/replay_channels.sh" "$1" "$OUT/$2" && args+=("$OUT/$2=$1"); }
for i in 1 2 3 4; do add $R/tried_not_adopted/recording_cost_loopback/rec$i/micro-dlrm-loopback rec$i; done
for r in m15 m16 m17 m18 m19 m20 m22 m23 m24 m25 m26; do add $R/accuracy_matrix_${r}loop/micro-dlrm-loopback $r-micro-dlrm; done
for w in gpt cnn lib; do add $R/accuracy_matrix_m15loop/$w-loopback m15-$w; done
python "$H/bracket.py" "${args[@]}"
