"""Write the built-in toy workloads' parameter lists as data for the simulator's zoo.

    python scripts/gen_toy_models.py [--out-dir simulator/data/models]

For each of ``mlp``, ``cnn``, ``micro-dlrm`` and ``gpt`` (default options) it
writes ``<name>.json`` in the zoo format (schema ``ddpsim.model/1``): the
parameters in registration order with shape, dtype and the forward FLOPs per
sample attributed to the op that produces each gradient
(``realrun.flops.param_forward_flops``, counted at the workload's default batch
size and divided by it). ``simulator.zoo`` reads these files without torch;
``tests/test_workloads.py`` checks they match ``named_parameters()``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODEL_SCHEMA = "ddpsim.model/1"
TOY_MODELS = ("mlp", "cnn", "micro-dlrm", "gpt")
SOURCE = "generated from realrun.workloads by scripts/gen_toy_models.py"


def model_entry(name: str) -> dict:
    import torch

    from realrun.flops import param_forward_flops
    from realrun.workloads import load_workload

    w = load_workload(name)
    module = w.build()
    bs = w.default_batch_size
    flops = param_forward_flops(module, w.make_batch(bs, w.seed), w.loss_fn)
    params = []
    for pname, p in module.named_parameters():
        total = flops[pname]
        if total % bs:
            raise ValueError(f"{name}: FLOPs of {pname} ({total}) are not a multiple of the batch size {bs}")
        params.append(
            {
                "name": pname,
                "shape": list(p.shape),
                "dtype": str(p.dtype).removeprefix("torch."),
                "fwd_flops_per_sample": total // bs,
            }
        )
    del torch
    return {
        "schema": MODEL_SCHEMA,
        "name": name,
        "source": SOURCE,
        "defaults": {"batch_size": bs, "device": "cpu-core"},  # the toys are trained on this CPU
        "tokens_per_sample": w.tokens_per_sample,
        "params": params,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=str(ROOT / "simulator" / "data" / "models"))
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in TOY_MODELS:
        entry = model_entry(name)
        path = out / f"{name}.json"
        path.write_text(json.dumps(entry, indent=1) + "\n")
        n = sum(1 for _ in entry["params"])
        gflop = sum(p["fwd_flops_per_sample"] for p in entry["params"]) / 1e9
        print(f"{path}: {n} parameter tensors, {gflop:.4f} GFLOP forward per sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
