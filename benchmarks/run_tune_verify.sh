#!/usr/bin/env bash
# The tune quality bar of BENCHMARKS.md: for each workload, `ddpsim tune --verify`
# with a grid of real bucket sizes beside the recommended and the default
# setting (all interleaved step by step with a compute-only baseline), on
# loopback and over an emulated link (root needed; skipped otherwise).
#
#   benchmarks/run_tune_verify.sh [OUT_DIR] [LINK_MBIT]
set -euo pipefail
OUT=${1:-runs/tune}
LINK=${2:-1000}
GRID=${GRID:-0.25,1,4,16,64}
mkdir -p "$OUT"
# "lib" is torch's own nn.TransformerEncoder (benchmarks/models/torch_transformer.py, 13 MiB of gradients:
# the grid makes 4 settings of it); tests/data/tune_model.py:build (0.24 MiB, one bucket at every size)
# tests nothing here and is no longer in the default set.
MODELS=${MODELS:-"gpt cnn micro-dlrm lib"}
HERE=$(cd "$(dirname "$0")" && pwd)
for m in $MODELS; do
  tag=$(echo "$m" | tr '/:.' '___')
  spec=$m
  [ "$m" = lib ] && spec="$HERE/models/torch_transformer.py:build"
  ddpsim tune --model "$spec" --verify --verify-grid "$GRID" --steps 16 --out-dir "$OUT/$tag-loopback" --quiet > "$OUT/$tag-loopback.txt"
  if [ -n "$LINK" ]; then
    ddpsim tune --model "$spec" --verify --verify-grid "$GRID" --steps 16 --link-mbit "$LINK" --out-dir "$OUT/$tag-${LINK}mbit" --quiet \
      > "$OUT/$tag-${LINK}mbit.txt" || echo "skipped $m over $LINK Mbit/s" >&2
  fi
done
python3 - "$OUT" <<'PY'
import glob, json, sys
print("| run | recommended MiB | recommended vs best measured | measured gain vs default | predicted gain vs default | best measured setting |")
print("|---|---|---|---|---|---|")
for f in sorted(glob.glob(f"{sys.argv[1]}/*/tune.json")):
    d = json.load(open(f)); v = d["verify"]
    rec = "default" if d.get("keep_default") else f"{d['recommended_bucket_mb']:g}"
    print(f"| {f.split('/')[-2]} | {rec} | {v['recommended_vs_best_measured_pct']:+.2f}% | "
          f"{v['measured_gain_vs_default_pct']:+.2f}% | {d['gain_vs_default_pct']:+.2f}% | {v['best_measured_setting']} |")
PY
