"""Bad input, as a new user types it: one line on stderr naming the problem, exit 2, no traceback,
and no rank started (every row fails before a spawn).

Each row runs in-process through ``ddpsim.cli.main(argv)``; ``{tmp}`` is a folder of fixtures (a file
that is not a folder, malformed JSON of several kinds, a user module that calls ``sys.exit()``).
A few rows at the end run the real entry point in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ddpsim.cli import main

ROOT = Path(__file__).resolve().parents[1]

# (argv, words the one stderr line must contain)
ROWS: list[tuple[str, str]] = [
    # ---- predict
    ("predict --o-us inf", "finite"),
    ("predict --o-us nan", "finite"),
    ("predict --o-us -1", "must be >= 0"),
    ("predict --bucket-mb inf", "bucket"),
    ("predict --model", "expected one argument"),
    ("sweep --grid 1:10", "--grid must be LO:HI:N in MiB (e.g. 0.1:1000:64): got '1:10'"),
    ("sweep --grid 1:10:4 --bucket-mb 3", "--bucket-mb and --grid each choose the sizes swept"),
    ("sweep --grid 1:10:4 --points 5", "--grid and --points each choose the sizes swept"),
    ("predict --bucket-cap-mb-list 1,4 --bucket-mb 5", "--bucket-mb and --bucket-cap-mb-list both set the caps"),
    ("predict --o-us 1e12", "must be <="),
    ("predict --w 0", "must be > 0"),
    ("predict --w 1e-300", "must be >= 1e-06 GB/s"),
    ("predict --w 10bit/s", "must be >= 1e-06 GB/s"),
    ("predict --w inf", "finite"),
    ("predict --w 5XB/s", "unknown rate unit"),
    ("predict --w fast", "not a rate"),
    ("predict --w-gbps nan", "finite"),
    ("predict --bucket-mb inf", "finite"),
    ("predict --bucket-mb nan", "finite"),
    ("predict --bucket-mb 0", "must be > 0"),
    ("predict --bucket-mb 1e9", "must be <="),
    ("predict --bucket-mb x", "not a number"),
    ("predict --contention inf", "finite"),
    ("predict --contention -1", "must be >= 0"),
    ("predict --contention 1e6", "must be <="),
    ("predict --jitter 1000", "must be <="),
    ("predict --jitter nan", "finite"),
    ("predict --world-size 0", "must be >= 1"),
    ("predict --world-size 2.5", "not an integer"),
    ("predict --world-size 1e30", "not an integer"),
    ("predict --world-size 99999999999", "must be <="),
    ("predict --ranks 0", "must be >= 1"),
    ("predict --ranks 100000", "must be <="),
    ("predict --repeats 0", "must be >= 1"),
    ("predict --seed -1", "must be >= 0"),
    ("predict --channels 0", "must be >= 1"),
    ("predict --channels inf", "not an integer"),
    ("predict --compute-scale 0", "must be > 0"),
    ("predict --compute-scale inf", "finite"),
    ("predict --batch-size 0", "must be >= 1"),
    ("predict --accum-steps 0", "must be >= 1"),
    ("predict --bucket-cap-mb-list 1,,4", "comma list"),
    ("predict --bucket-cap-mb-list 1,inf", "finite"),
    ("predict --bucket-mb-list 1,-4", "must be > 0"),
    ("predict --trace /proc/t.json", "cannot write /proc/t.json"),
    ("predict --trace {tmp}/afile/x.json", "not a folder"),
    ("predict --trace /dev/full", "not a regular file"),
    ("predict --trace {tmp}", "is a folder"),
    ("predict --model no-such-model", "unknown model"),
    ("predict --network no-such-net", "unknown network"),
    ("predict --network {tmp}/net_intra5.json", "'intra'"),
    ("predict --network {tmp}/net_algs_empty.json", "algorithms"),
    ("predict --network {tmp}/net_os_abc.json", "o_s"),
    ("predict --network {tmp}/net_neg_overhead.json", "call_overhead_s"),
    ("predict --network {tmp}/net_inf_bw.json", "bw_bytes_per_s"),
    ("predict --network {tmp}/missing.json", "missing.json"),
    ("predict --params {tmp}/params_o_abc.json", "params_o_abc.json"),
    ("predict --params {tmp}/params_neg_o.json", "o_s"),
    ("predict --params {tmp}/notjson.json", "not valid JSON"),
    ("predict --params {tmp}/list.json", "JSON object"),
    ("predict --params {tmp}/missing.json", "cannot read"),
    ("predict --model {tmp}/notjson.json", "not valid JSON"),
    ("predict --model {tmp}/prof_numel.json", "prof_numel.json"),
    ("predict --model {tmp}/prof_params5.json", "prof_params5.json"),
    # the audit of 2026-11-29: each once a traceback, a hang or an "inf ms" with exit 0
    ("predict --model {tmp}/prof_huge_numel.json --world-size 2", "numel must be an integer from 0 to"),
    ("predict --model {tmp}/prof_inf_forward.json --world-size 2", "forward_s must be a number of seconds"),
    ("predict --model {tmp}/prof_huge_forward.json --world-size 2", "forward_s must be a number of seconds"),
    ("predict --model {tmp}/prof_inf_bwd.json --world-size 2", "bwd_s must be a number of seconds"),
    ("predict --model {tmp}/prof_param_int.json --world-size 2", "a parameter entry must be an object, got 5"),
    ("predict --model {tmp}/prof_dup_names.json --world-size 2", "parameter names must differ"),
    ("predict --model {tmp}/prof_grad_no.json --world-size 2", "requires_grad must be true or false"),
    ("predict --model {tmp}/prof_samples_frac.json --world-size 2", "samples_per_step must be a whole number"),
    ("predict --model {tmp}/mlp_profile.json --device h100-sxm", "--device applies to a model"),
    ("tune --out-dir {tmp}/o --profile {tmp}/prof_inf_forward.json --network nccl-h100-ib", "forward_s"),
    ("predict --network {tmp}/net_intra5.json", "net_intra5.json"),
    ("predict --strategy bucketed", "needs a bucket size"),
    ("predict --strategy nope", "invalid choice"),
    ("predict --no-such-flag", "unrecognized arguments"),
    # ---- sweep
    ("sweep --bucket-mb 1,-4", "must be > 0"),
    ("sweep --bucket-mb inf", "finite"),
    ("sweep --bucket-mb 1,nan,4", "finite"),
    ("sweep --grid 1:0.1:8", "LO"),
    ("sweep --grid a:b:c", "--grid"),
    ("sweep --grid 0.1:100:1", "--grid"),
    ("sweep --grid 0.1:inf:8", "finite"),
    ("sweep --points 1", "must be >= 2"),
    ("sweep --points inf", "not an integer"),
    ("sweep --plot /proc/x.png", "cannot write"),
    ("sweep --plot {tmp}/afile/x.png", "not a folder"),
    ("sweep --strategy naive", "no bucket size to sweep"),
    ("sweep --jitter inf", "finite"),
    ("sweep --w nan", "finite"),
    ("sweep --o-us inf", "finite"),
    ("sweep --csv --json", "give --csv a file"),
    ("sweep --csv /proc/s.csv", "--csv: cannot write /proc/s.csv"),
    ("sweep --csv {tmp}", "is a folder"),
    ("predict --csv {tmp}/afile/x.csv", "not a folder"),
    # ---- models
    ("models --bogus", "unrecognized arguments"),
    ("models extra", "unrecognized arguments"),
    # ---- bench-allreduce
    ("bench-allreduce --world-size 1", "must be >= 2"),
    ("bench-allreduce --world-size 1000", "more than this machine can run"),
    ("bench-allreduce --world-size 2,x", "not an integer"),
    ("bench-allreduce --sizes 12QB", "bad message size"),
    ("bench-allreduce --sizes 6", "multiple of float32"),
    ("bench-allreduce --sizes 1K:512", "bad size range"),
    ("bench-allreduce --sizes 1K,,4K", "empty item"),
    ("bench-allreduce --impl tree", "unknown implementation"),
    ("bench-allreduce --iters 0", "must be >= 1"),
    ("bench-allreduce --iters inf", "not an integer"),
    ("bench-allreduce --warmup -1", "must be >= 0"),
    ("bench-allreduce --timeout-s nan", "finite"),
    ("bench-allreduce --timeout-s inf", "finite"),
    ("bench-allreduce --timeout-s 0", "must be > 0"),
    ("bench-allreduce --link-mbit inf", "finite"),
    ("bench-allreduce --link-mbit 0", "must be > 0"),
    ("bench-allreduce --out {tmp}/notrecords.txt", "does not hold ddpsim records"),
    ("bench-allreduce --out /dev/full", "not a regular file"),
    ("bench-allreduce --plot /proc/p.png", "cannot write"),
    ("bench-allreduce --from x.jsonl", "--from only plots"),
    ("bench-allreduce --from {tmp}/missing.jsonl --plot {tmp}/p.png", "missing.jsonl"),
    ("bench-allreduce --from {tmp}/params_ok.json --plot {tmp}/p.png", "params_ok.json"),
    ("bench-allreduce --dtype int8", "invalid choice"),
    ("bench-allreduce --csv --json", "give --csv a file"),
    ("bench-allreduce --csv /proc/ar.csv", "cannot write /proc/ar.csv"),
    # ---- check
    ("check --model mlp --bucket-mb -1", "must be > 0"),
    ("check --model mlp --bucket-mb inf", "finite"),
    ("check --model mlp --world-size 1", "must be >= 2"),
    ("check --model mlp --world-size 1000", "more than this machine can run"),
    ("check --model mlp --timeout-s nan", "finite"),
    ("check --model mlp --lr inf", "finite"),
    ("check --model mlp --steps 0", "must be >= 1"),
    ("check --model mlp --batch-size 0", "must be >= 1"),
    ("check --model mlp --strategy ring", "unknown strategy"),
    ("check --model resnet", "unknown workload"),
    ("check --model {tmp}/exits.py:build", "sys.exit"),
    ("check --model {tmp}/raises.py:build", "does not import"),
    ("check", "required"),
    # ---- profile
    ("profile --model mlp", "say where the profile goes"),
    ("profile --model mlp --out /proc/p.json", "cannot write"),
    ("profile --model mlp --out {tmp}/afile/p.json", "not a folder"),
    ("profile --model mlp --records {tmp}/notrecords.txt", "does not hold ddpsim records"),
    ("profile --model mlp --world-size 0 --json", "must be >= 1"),
    ("profile --model mlp --steps inf --json", "not an integer"),
    ("profile --model mlp --warmup -1 --json", "must be >= 0"),
    ("profile --model mlp --timeout-s nan --json", "finite"),
    ("profile --model {tmp}/exits.py:build --json", "sys.exit"),
    ("profile --model {tmp}/exits_in_build.py:build --json", "called sys.exit(3) while building the model"),
    # ---- bench-ddp
    ("bench-ddp --model mlp --world-size 1000", "more than this machine can run"),
    ("bench-ddp --model mlp --world-size 0", "must be >= 1"),
    ("bench-ddp --model mlp --world-size 2,1000", "more than this machine can run"),
    ("bench-ddp --model mlp --bucket-mb inf", "bad bucket size"),
    ("bench-ddp --model mlp --bucket-mb -1", "bad bucket size"),
    ("bench-ddp --model mlp --bucket-cap-mb-list 1,nan", "finite"),
    ("bench-ddp --model mlp --strategy bucketed", "needs bucket sizes"),
    ("bench-ddp --model mlp --steps 0", "must be >= 1"),
    ("bench-ddp --model mlp --rounds 0", "must be >= 1"),
    ("bench-allreduce --rounds 0", "must be >= 1"),
    ("bench-allreduce --rounds inf", "not an integer"),
    ("bench-ddp --model mlp --timeout-s nan", "finite"),
    ("bench-ddp --model mlp --link-mbit inf", "finite"),
    ("bench-ddp --model mlp --out /dev/full", "not a regular file"),
    ("bench-ddp --model mlp --out {tmp}/notrecords.txt", "does not hold ddpsim records"),
    ("bench-ddp --model mlp --trace-dir {tmp}/afile", "not a folder"),
    ("bench-ddp --model {tmp}/exits.py:build", "sys.exit"),
    ("bench-ddp --model mlp --csv - --json", "give --csv a file"),
    ("bench-ddp --model mlp --csv {tmp}/afile/x.csv", "not a folder"),
    # ---- calibrate
    ("calibrate --link-mbit inf", "finite"),
    ("calibrate --link-mbit 100,nan", "finite"),
    ("calibrate --world-size 0", "must be >= 1"),
    ("calibrate --world-size 1000", "more than this machine can run"),
    ("calibrate --world-size 2,1", "at least 2 ranks"),
    ("calibrate --world-size 2,x", "not an integer"),
    ("calibrate --world-size 2,1000", "more than this machine can run"),
    ("calibrate --world-size 2,,4", "comma list"),
    ("calibrate --sizes 4K", "at least two message sizes"),
    ("calibrate --refit {tmp}/missing.jsonl --out {tmp}/p.json", "missing.jsonl"),
    ("validate --replay {tmp}/missing.jsonl --out {tmp}/v.json", "give --params"),
    ("calibrate --refit {tmp}/notrecords.txt --out {tmp}/p.json", "not a JSON record"),
    ("calibrate --profile-steps 0", "must be >= 1"),
    ("calibrate --step-probe-seconds nan", "finite"),
    ("calibrate --step-probe-seconds -1", "must be >= 0"),
    ("calibrate --batch-size inf", "not an integer"),
    ("calibrate --out /proc/p.json", "cannot write"),
    ("calibrate --out-dir /proc/x", "--out-dir: cannot write /proc/x/params.json: no file can be made in /proc"),
    ("calibrate --out {tmp}/p.json --records {tmp}/notrecords.txt", "does not hold ddpsim records"),
    ("calibrate --out {tmp}/p.json --records {tmp}/r.jsonl --model {tmp}/exits.py:build", "sys.exit"),
    # ---- validate
    ("validate --link-mbit inf", "finite"),
    ("validate --bucket-mb 1,inf", "finite"),
    ("validate --params {tmp}/notjson.json --out {tmp}/v.json --records {tmp}/v.jsonl", "not valid JSON"),
    ("validate --params {tmp}/missing.json --out {tmp}/v.json --records {tmp}/v.jsonl", "cannot read"),
    ("validate --strategy bogus", "unknown strategy"),
    ("validate --world-size 1000", "more than this machine can run"),
    ("validate --out /proc/v.json", "cannot write"),
    ("validate --out {tmp}/v.json --records {tmp}/v.jsonl --plot-dir {tmp}/afile", "not a folder"),
    ("validate --out {tmp}/v.json --records {tmp}/notrecords.txt", "does not hold ddpsim records"),
    ("validate --out {tmp}/v.json --records {tmp}/v.jsonl --csv /proc/v.csv", "cannot write /proc/v.csv"),
    ("validate --out {tmp}/v.json --records {tmp}/v.jsonl --csv - --json", "give --csv a file"),
    ("validate --warmup -1", "must be >= 0"),
    ("validate --rounds 0", "must be >= 1"),
    ("validate --out {tmp}/v.json --records {tmp}/v.jsonl --model {tmp}/exits.py:build", "sys.exit"),
    # ---- plot
    ("plot --plot-dir {tmp}/plots", "nothing to plot"),
    ("plot --validation {tmp}/missing.json --plot-dir {tmp}/plots", "missing.json"),
    ("plot --validation {tmp}/notrecords.txt --plot-dir {tmp}/plots", "notrecords.txt"),
    ("plot --validation {tmp}/params_ok.json --plot-dir {tmp}/plots", "params_ok.json"),
    ("plot --validation {tmp}/rows_other.json --plot-dir {tmp}/plots", "rows_other.json"),
    ("plot --scaling {tmp}/notjson.json --plot-dir {tmp}/plots", "notjson.json"),
    ("plot --allreduce {tmp}/notrecords.txt --plot-dir {tmp}/plots", "notrecords.txt"),
    ("plot --allreduce {tmp}/params_ok.json --plot-dir {tmp}/plots", "params_ok.json"),
    ("plot --validation {tmp}/rows_other.json --plot-dir {tmp}/afile", "not a folder"),
    ("plot --validation {tmp}/rows_other.json --out-dir /proc/x", "cannot write"),
    # ---- tune
    ("tune --link-mbit inf", "finite"),
    ("tune --o-us inf", "finite"),
    ("tune --w 0", "must be > 0"),
    ("tune --w 100Gbit", "unknown rate unit"),
    ("tune --world-size 0", "must be >= 1"),
    ("tune --run-world-size 1000", "more than this machine can run"),
    ("tune --verify-grid 1,inf", "finite"),
    ("tune --steps 0", "must be >= 1"),
    ("tune --out-dir {tmp}/afile/x", "not a folder"),
    ("tune --out-dir {tmp}/o --profile {tmp}/missing.json", "missing.json"),
    ("tune --out-dir {tmp}/o --profile {tmp}/mlp_profile.json --verify --model gpt", "measured for model 'mlp'"),
    ("tune --out-dir {tmp}/o --params {tmp}/notjson.json", "not valid JSON"),
    ("tune --out-dir {tmp}/o --params {tmp}/params_neg_o.json", "o_s"),
    ("tune --out-dir {tmp}/o --model {tmp}/exits.py:build", "sys.exit"),
    # ---- --backend nccl with fewer CUDA devices than ranks (the fixture makes this machine have none)
    ("bench-allreduce --backend nccl", "needs one CUDA device per rank: 2 ranks, 0 CUDA devices"),
    ("bench-allreduce --backend nccl --world-size 2,4", "4 ranks, 0 CUDA devices"),
    ("profile --model mlp --json --backend nccl", "needs one CUDA device per rank"),
    ("profile --model mlp --json --backend nccl --world-size 1", "1 rank, 0 CUDA devices"),
    ("bench-ddp --model mlp --backend nccl", "needs one CUDA device per rank"),
    ("bench-ddp --model mlp --backend nccl --link-mbit 100", "does not apply to --backend nccl"),
    ("check --model mlp --backend nccl", "needs one CUDA device per rank"),
    ("calibrate --out {tmp}/p.json --records {tmp}/r.jsonl --backend nccl", "needs one CUDA device per rank"),
    ("validate --out {tmp}/v.json --records {tmp}/v.jsonl --backend nccl", "needs one CUDA device per rank"),
    ("tune --out-dir {tmp}/o --backend nccl", "needs one CUDA device per rank"),
    ("tune --out-dir {tmp}/o --backend mpi", "invalid choice"),
    # ---- roofline and device models
    ("roofline --device tpu-v9", "unknown device"),
    ("roofline --model mlp --device cpu-core --dtype bf16", "no bfloat16 peak"),
    ("roofline --model resnet", "unknown workload"),
    ("roofline --model mlp --calibrate-device-from {tmp}/missing.json", "missing.json"),
    ("roofline --model mlp --calibrate-device-from {tmp}/mlp_profile.json", "not a measured profile"),
    ("roofline --model mlp --out /proc/r.json", "cannot write"),
    ("tune --out-dir {tmp}/o --calibrate-device-from {tmp}/mlp_profile.json", "give --target-device too"),
    (  # once refused only after calibrating (the audit of 2026-11-29)
        "tune --out-dir {tmp}/o --calibrate-device-from {tmp}/mlp_profile.json --target-device h100-sxm",
        "not a measured profile",
    ),
    ("tune --out-dir {tmp}/o --target-device v100-sxm --dtype bf16", "no bfloat16 peak"),
    ("tune --out-dir {tmp}/o --target-device nope", "unknown device"),
    ("tune --out-dir {tmp}/o --target-device h100-sxm --calibrate-device-from {tmp}/notjson.json", "not valid JSON"),
    # ---- --dtype
    ("profile --model mlp --json --dtype tf32", "needs --backend nccl"),
    ("profile --model mlp --json --dtype fp16", "invalid choice"),
    ("bench-ddp --model mlp --dtype tf32", "needs --backend nccl"),
    ("tune --out-dir {tmp}/o --network BADNAME", "unknown network 'BADNAME'"),
    ("tune --out-dir {tmp}/o --network {tmp}/net_intra5.json", "'intra'"),
    ("tune --out-dir {tmp}/o --network {tmp}/missing.json", "missing.json"),
    ("tune --out-dir {tmp}/o --network nccl-h100-ib --params {tmp}/params_ok.json", "not both"),
    ("tune --out-dir {tmp}/o --target-device nope", "unknown device 'nope'"),
    ("tune --out-dir {tmp}/o --network nccl-h100-ib --world-size 8 --verify", "--verify runs on this machine"),
    ("tune --out-dir {tmp}/o --network nccl-h100-ib --verify-grid 1,4", "--verify-grid needs --verify"),
    ("tune --out-dir {tmp}/o --model resnet", "unknown workload"),
    ("tune --out-dir {tmp}/o --profile {tmp}/notjson.json", "not valid JSON"),
    ("tune --out-dir {tmp}/o --profile {tmp}/mlp_profile.json --network nccl-h100-ib --batch-size 8", "--batch-size"),
    ("validate --out {tmp}/v.json --records {tmp}/v.jsonl --model mlp --world-size 1", "at least 2 ranks"),
    ("calibrate --out {tmp}/p.json --records {tmp}/r.jsonl --model resnet", "unknown workload"),
    ("calibrate --out {tmp}/p.json --records {tmp}/r.jsonl --backend nccl --world-size 8", "CUDA device per rank"),
    ("validate --out {tmp}/v.json --records {tmp}/v.jsonl --model resnet", "unknown workload"),
    ("validate --out {tmp}/v.json --records {tmp}/v.jsonl --backend nccl --world-size 8", "CUDA device per rank"),
    ("roofline --model gpt:n_layer=100000", "must be <= 256"),
    ("check --model mlp:width=99999999999", "must be <= 10000000"),
    ("bench-ddp --model mlp --bucket-mb 1,,2", "empty item in the comma list"),
    ("bench-ddp --model mlp --world-size 2,", "expected a comma list"),
    ("bench-ddp --model mlp --strategy naive --bucket-cap-mb-list 1,2", "applies to torch-ddp"),
    ("tune --out-dir {tmp}/o --profile {tmp}/mlp_profile.json --network nccl-h100-ib --model nosuch", "ignored"),
    ("predict --params {tmp}/bin.json", "params {tmp}/bin.json is not a JSON text file"),
    ("predict --model {tmp}/bin.json", "is not a JSON text file"),
    # ---- two outputs into one file; --params read before anything is measured
    ("predict --trace {tmp}/same.json --csv {tmp}/same.json", "--trace and --csv both name"),
    ("profile --model mlp --out {tmp}/same.json --records {tmp}/same.json", "--out and --records both name"),
    ("bench-ddp --model mlp --params {tmp}/params_ok.json", "give --timeline DIR too"),
    ("bench-ddp --model mlp --timeline {tmp}/tl --params {tmp}/notjson.json", "not valid JSON"),
    ("bench-ddp --model mlp --timeline {tmp}/tl --params {tmp}/missing.json", "missing.json"),
]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("fuzz")
    (d / "afile").write_text("a file, not a folder\n")
    (d / "notrecords.txt").write_text("some notes of the user\nnot JSON at all\n")
    (d / "notjson.json").write_text('{"schema": ')
    (d / "list.json").write_text("[1, 2, 3]\n")
    (d / "bin.json").write_bytes(b"\xff\xfe\x00binary")
    (d / "rows_other.json").write_text(json.dumps({"rows": [{"name": "x", "value": 3}]}))
    (d / "prof_numel.json").write_text(
        json.dumps({"schema": "ddpsim.profile/1", "model": "x", "params": [{"name": "w", "numel": "abc"}]})
    )
    (d / "prof_params5.json").write_text(json.dumps({"schema": "ddpsim.profile/1", "model": "x", "params": 5}))
    w = {"name": "w", "numel": 1024, "bwd_s": 1e-4}
    for name, patch in {
        "prof_huge_numel": {"params": [{**w, "numel": 10**20}]},
        "prof_inf_forward": {"params": [w], "forward_s": float("inf")},
        "prof_huge_forward": {"params": [w], "forward_s": 1e308},
        "prof_inf_bwd": {"params": [{**w, "bwd_s": float("inf")}]},
        "prof_param_int": {"params": [w, 5]},
        "prof_dup_names": {"params": [w, w]},
        "prof_grad_no": {"params": [{**w, "requires_grad": "no"}]},
        "prof_samples_frac": {"params": [w], "samples_per_step": 2.5},
    }.items():  # json.dumps writes inf as Infinity, which Python's JSON reader takes
        (d / f"{name}.json").write_text(json.dumps({"schema": "ddpsim.profile/1", "model": "x", **patch}))
    (d / "exits.py").write_text("import sys\nsys.exit(0)\n")
    (d / "exits_in_build.py").write_text(
        "import sys\n\ndef build():\n    sys.exit(3)\n\ndef example_batch(n):\n    return None\n"
    )
    (d / "raises.py").write_text("raise RuntimeError('broken user module')\n")
    net = {
        "schema": "ddpsim.network/1",
        "name": "n",
        "backend": "nccl",
        "gpus_per_node": 8,
        "intra": {"alpha_s": 1e-6, "bw_bytes_per_s": 1e11},
        "inter": {"alpha_s": 5e-6, "bw_bytes_per_s": 2.5e10},
    }
    for name, patch in {
        "net_intra5": {"intra": 5},
        "net_algs_empty": {"intra": {"alpha_s": 1e-6, "bw_bytes_per_s": 1e11, "algorithms": []}},
        "net_os_abc": {"linear": {"o_s": "abc", "w_bytes_per_s": 1e9, "world_size": 8}},
        "net_neg_overhead": {"call_overhead_s": -1e-3},
        "net_inf_bw": {"intra": {"alpha_s": 1e-6, "bw_bytes_per_s": 1e400}},
    }.items():
        (d / f"{name}.json").write_text(json.dumps({**net, **patch}))
    from calibration.fit import LinearFit
    from calibration.params import Params

    good = Params(backend="gloo", world_size=2, linear=LinearFit(o_s=4e-4, w_bytes_per_s=1.4e9)).to_dict()
    (d / "params_ok.json").write_text(json.dumps(good))
    (d / "params_o_abc.json").write_text(json.dumps({**good, "linear": {**good["linear"], "o_s": "abc"}}))
    (d / "params_neg_o.json").write_text(json.dumps({**good, "linear": {**good["linear"], "o_s": -1e-3}}))
    from simulator import zoo

    spec = zoo.load_model_spec("gpt2-small")
    prof = zoo.profile_from_flops(spec, zoo.load_device(zoo.DEFAULT_DEVICE))
    replace(prof, model="mlp").save(d / "mlp_profile.json")
    return d


@pytest.fixture(autouse=True)
def no_ranks(monkeypatch):
    """Every bad input must fail before a rank starts: starting one fails the test."""
    import calibration.calibrate as calibrate_mod
    import realrun.launch as launch

    def refuse(*a, **k):
        raise AssertionError("a rank was started")

    monkeypatch.setattr(launch, "RankPool", refuse)
    monkeypatch.setattr(calibrate_mod, "open_pool", refuse)
    monkeypatch.setattr(launch, "cuda_device_count", lambda: 0)  # the nccl rows hold on a GPU machine too


@pytest.mark.parametrize("argv, words", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input_one_line_exit_2_before_any_rank(argv, words, tmp, capsys, monkeypatch):
    monkeypatch.chdir(tmp)  # defaults such as params.json land in the fixture folder, never in the checkout
    args = [a.replace("{tmp}", str(tmp)) for a in argv.split()]
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ddpsim") and "Traceback" not in err
    assert words.replace("{tmp}", str(tmp)) in lines[0], lines[0]


def test_the_table_is_large():
    assert len(ROWS) >= 100


# ---- the real entry point --------------------------------------------------------------------
def _run(args, extra_env=None, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(extra_env or {}))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, **kw)


def test_user_module_that_calls_sys_exit(tmp_path):
    mod = tmp_path / "exits.py"
    mod.write_text("import sys\nsys.exit(0)\n")
    r = _run(["-m", "ddpsim", "check", "--model", f"{mod}:build"])
    assert r.returncode == 2 and "sys.exit(0)" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "code, where",
    [
        ("import time\ntime.sleep(600)\n", "importing"),  # hangs at import
        ("import time, torch\ndef build():\n    time.sleep(600)\n", "building the model"),  # hangs in build()
    ],
)
def test_user_module_that_hangs_is_one_line_after_the_limit(tmp_path, code, where):
    mod = tmp_path / "hangs.py"
    mod.write_text(code + "def example_batch(n):\n    import torch\n    return torch.zeros(n, 4)\n")
    r = _run(["-m", "ddpsim", "check", "--model", f"{mod}:build"], extra_env={"DDPSIM_USER_CODE_TIMEOUT_S": "2"})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert where in line and "did not finish in 2 s" in line and "DDPSIM_USER_CODE_TIMEOUT_S" in line


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_bad_user_code_time_limit_is_one_line(tmp_path, value):
    mod = tmp_path / "ok.py"
    mod.write_text(
        "import torch\ndef build():\n    return torch.nn.Linear(4, 1)\ndef example_batch(n):\n    return torch.zeros(n, 4)\n"
    )
    r = _run(
        ["-m", "ddpsim", "check", "--model", f"{mod}:build"],
        extra_env={"DDPSIM_USER_CODE_TIMEOUT_S": value},
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "DDPSIM_USER_CODE_TIMEOUT_S must be a number of seconds > 0" in line


def test_missing_torch_says_how_to_install():
    code = "import sys; sys.modules['torch'] = None; from ddpsim.cli import main; sys.exit(main(['check', '--model', 'mlp']))"
    r = _run(["-c", code])
    assert r.returncode == 2 and 'pip install "ddpsim[torch]"' in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_broken_pipe_is_silent():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [sys.executable, "-m", "ddpsim", "sweep", "--model", "gpt2-small"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.close()  # the reader leaves at once, like `| head -0`
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_version():
    r = _run(["-m", "ddpsim", "--version"])
    assert r.returncode == 0 and r.stdout.startswith("ddpsim ")


def test_every_flag_help_has_its_default(capsys):
    for cmd in (
        "predict",
        "sweep",
        "bench-allreduce",
        "check",
        "profile",
        "bench-ddp",
        "calibrate",
        "validate",
        "plot",
        "tune",
    ):
        assert main([cmd, "--help"]) == 0
        out = capsys.readouterr().out
        assert "--json" in out and "--quiet" in out, cmd
    assert main(["predict", "--help"]) == 0
    assert "were measured at, else 8)" in " ".join(capsys.readouterr().out.split())  # --world-size


def test_a_run_failure_is_one_line_naming_the_file_with_the_rest(tmp_path, capsys, monkeypatch):
    """A rank's traceback or a hung rank's stacks do not reach the terminal: the failure's first line does, with
    the file that holds the whole message."""
    from realrun.errors import RunFailure, failure_line, run_handler

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    text = "ranks 0, 1 did not answer within 8 s during task; killed\n  rank 0 stderr:\n    Thread 0x7f (most recent call first):"

    def fails(_args):
        raise RunFailure(text, rank=0)

    assert run_handler("ddpsim", fails, None) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ddpsim: run failed: ranks 0, 1 did not answer within 8 s")
    path = err[0].rsplit(": ", 1)[1].rstrip(")")
    assert Path(path).parent == tmp_path and Path(path).read_text() == text + "\n"
    assert failure_line("rank 1 died (exited with code 9)") == "rank 1 died (exited with code 9)"  # one line stays


def test_a_warning_is_one_line(tmp_path):
    """A records file whose last line a writer left unfinished: the warning and the error, one line each, no
    source line of the warning's origin."""
    torn = tmp_path / "torn.jsonl"
    torn.write_text('{"schema": "ddpsim.record/1", "kind": "allre')
    r = subprocess.run(
        [sys.executable, "-m", "ddpsim", "calibrate", "--refit", str(torn), "--out", str(tmp_path / "p.json")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and all(line.startswith("ddpsim: ") for line in lines), r.stderr
    assert any(line.startswith("ddpsim: warning: ") and "incomplete" in line for line in lines)
    assert "return list(" not in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("flag", ["--model", "--network", "--device"])
def test_an_empty_name_is_refused_not_taken_for_the_default(flag, capsys):
    assert main(["predict", flag, ""]) == 2
    err = capsys.readouterr().err
    assert err == f"ddpsim: error: {flag} is empty: give a name or a path, or leave the flag out for the default\n"
