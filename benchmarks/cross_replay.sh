#!/usr/bin/env bash
# Which varies more from run to run, the calibration or the measured steps? Every calibration of a
# workload's cell in several stored accuracy-matrix runs predicts every run's measured steps of that
# cell (this version's fits, nothing measured): a runs x runs table of errors per workload.
#
#   benchmarks/cross_replay.sh OUT_DIR NETWORK RUN_DIR...
#   WORKLOADS="gpt micro-dlrm" JOBS=2 benchmarks/cross_replay.sh /tmp/xr loopback \
#       benchmarks/results/accuracy_matrix_m{17,18,19,20,22,23}loop
#
# A run folder whose cell has calibration records but no measured steps (`ddpsim calibrate --records
# DIR/<workload>-<network>/validation.calibration.jsonl`) gives a calibration only: a row, not a column.
# A user module's path (lib: benchmarks/models/torch_transformer.py:build) is cut to its part from
# benchmarks/ on, so runs made from different worktrees name the same model.
# OUT_DIR/<workload>/cal-<run>/params.json is the refit of run's calibration records,
# OUT_DIR/<workload>/cal-<a>_meas-<b>.json the replay of run b's steps from a's params;
# OUT_DIR/table.md (benchmarks/cross_replay_table.py) the tables.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/records.sh"
OUT=${1:?output folder}
NET=${2:?network, as in the cell folders: loopback, 1000, 200}
shift 2
[ $# -ge 2 ] || { echo "cross_replay.sh: give at least two run folders" >&2; exit 2; }
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
  echo "cross_replay.sh: $OUT is not empty; give a new folder (earlier outputs would join the tables)" >&2
  exit 2
fi
export DDPSIM=${DDPSIM:-ddpsim}
JOBS=${JOBS:-2}
PYTHON=${PYTHON:-python}
WORKLOADS=${WORKLOADS:-gpt cnn lib micro-dlrm}
mkdir -p "$OUT"
# one replay: run b's measured steps predicted from run a's params, into NAME.json and NAME.log
replay_one() {
  "$DDPSIM" validate --replay "$2/measured.jsonl" --params "$1/params.json" --out "$3.json" > "$3.log" 2>&1 ||
    echo "   failed: $3.log" >&2
}
export -f replay_one
jobs_file="$OUT/jobs.bin"
: > "$jobs_file"
for w in $WORKLOADS; do
  for run in "$@"; do
    r=$(basename "$run")
    cell="$run/$w-$NET"
    cal=$(cell_calibration "$cell")
    meas=$(cell_measured "$cell")
    [ -n "$cal" ] || { echo "   $w $r: no calibration records, skipped" >&2; continue; }
    [ -e "$OUT/$w/cal-$r" ] && { echo "cross_replay.sh: two run folders named $r" >&2; exit 2; }
    mkdir -p "$OUT/$w/cal-$r"
    unpack_records "$cal" "$OUT/$w/cal-$r/calibration.jsonl" cut || { echo "   $w $r: cannot read $cal" >&2; continue; }
    if [ -n "$meas" ] && ! unpack_records "$meas" "$OUT/$w/cal-$r/measured.jsonl" cut; then
      echo "   $w $r: cannot read $meas" >&2
      rm -f "$OUT/$w/cal-$r/measured.jsonl"
    fi
    "$DDPSIM" calibrate --refit "$OUT/$w/cal-$r/calibration.jsonl" --out "$OUT/$w/cal-$r/params.json" --quiet \
      > "$OUT/$w/cal-$r/refit.log" 2>&1 || echo "   $w $r: refit failed, see $OUT/$w/cal-$r/refit.log" >&2
  done
  for a in "$OUT/$w"/cal-*/; do
    for b in "$OUT/$w"/cal-*/; do
      [ -f "$a/params.json" ] && [ -f "$b/measured.jsonl" ] || continue
      name="$OUT/$w/$(basename "$a")_meas-$(basename "$b" | sed 's/^cal-//')"
      printf '%s\0%s\0%s\0' "${a%/}" "${b%/}" "$name" >> "$jobs_file"
    done
  done
done
echo "   $(tr -cd '\0' < "$jobs_file" | wc -c | awk '{print $1 / 3}') replays, $JOBS at a time" >&2
xargs -0 -n 3 -P "$JOBS" bash -c 'replay_one "$@"' _ < "$jobs_file"
"$PYTHON" "$HERE/cross_replay_table.py" "$OUT" > "$OUT/table.md"
cat "$OUT/table.md"
