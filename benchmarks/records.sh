# Sourced by replay_matrix.sh and cross_replay.sh: where an accuracy-matrix cell keeps its records, and
# how they are read back (the repository keeps them gzipped: benchmarks/results/accuracy_matrix_m*).

# cell_calibration CELL / cell_measured CELL: the cell's calibration / measured-step records, empty if none
cell_calibration() { ls "$1"/validation.calibration*.jsonl "$1"/validation.calibration*.jsonl.gz 2>/dev/null | head -1; }
cell_measured() { ls "$1"/validation.jsonl "$1"/validation.jsonl.gz 2>/dev/null | head -1; }

# unpack_records SRC DST [cut]: SRC (gzipped or not) as plain JSONL into DST; with "cut", a user module's
# path (a worktree's .../benchmarks/models/x.py:build) is cut to its part from benchmarks/ on, so runs made
# from different worktrees name the same model
unpack_records() {
  if [ "${3:-}" = cut ]; then
    { case "$1" in *.gz) gunzip -c "$1" ;; *) cat "$1" ;; esac } | sed -E 's#"[^"]*/(benchmarks/models/)#"\1#g' > "$2"
  else
    case "$1" in *.gz) gunzip -c "$1" > "$2" ;; *) cat "$1" > "$2" ;; esac
  fi
}
