"""The roofline device model (``simulator.roofline``, torch-free) and the op table it reads (``realrun.optable``)."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace

import pytest

from simulator import zoo
from simulator.roofline import (
    Efficiency,
    Op,
    OpTable,
    bound_report,
    calibrate,
    op_time_s,
    profile_from_optable,
    wave_efficiency,
)


def _dev(**kw):
    base = zoo.load_device("cpu-core")  # 159 GFLOP/s float32, 15 GB/s, 1.7 us per kernel, efficiency 1
    return replace(base, **kw) if kw else base


def test_one_kernel_is_the_larger_roof_plus_the_launch_floor():
    dev = _dev()
    big_mm = Op("aten.mm", "fwd", flops=1.59e9, bytes=1.5e6)  # 10 ms of FLOPs, 0.1 ms of bytes
    t, bound = op_time_s(big_mm, dev)
    assert bound == "compute" and math.isclose(t, 0.01 + 1.7e-6)
    copy = Op("aten.add", "fwd", flops=0, bytes=1.5e8)  # 10 ms of bytes
    t, bound = op_time_s(copy, dev)
    assert bound == "memory" and math.isclose(t, 0.01 + 1.7e-6)
    tiny = Op("aten.add", "fwd", flops=0, bytes=64)
    assert op_time_s(tiny, dev)[1] == "launch"
    half = Efficiency(matmul=0.5, memory=0.25, launch_s=0.0)
    assert math.isclose(op_time_s(big_mm, dev, eff=half)[0], 0.02)
    assert math.isclose(op_time_s(copy, dev, eff=half)[0], 0.04)


def test_dtype_and_tf32_pick_the_peak():
    h = zoo.load_device("h100-sxm")
    e = Efficiency(1.0, 1.0, 0.0)
    mm = Op("aten.mm", "fwd", flops=6.7e13, bytes=0)
    assert math.isclose(op_time_s(mm, h, eff=e)[0], 1.0)  # FP32 67 TFLOPS
    assert math.isclose(op_time_s(mm, h, tf32=True, eff=e)[0], 6.7e13 / 4.945e14)
    assert math.isclose(op_time_s(replace(mm, dtype="bfloat16"), h, eff=e)[0], 6.7e13 / 9.895e14)
    with pytest.raises(ValueError, match="no bfloat16 peak"):
        op_time_s(replace(mm, dtype="bfloat16"), zoo.load_device("v100-sxm"))


def test_wave_efficiency():
    assert wave_efficiency(None, 132) == 1.0
    assert wave_efficiency((4096, 4096, 4096, 1), 1) == 1.0  # one core
    # 2 x 2 tiles x 1 inner step = 4 units on 132 SMs: 4/132 busy
    assert math.isclose(wave_efficiency((256, 256, 64, 1), 132), 4 / 132)
    # 132 units exactly fill one round
    assert wave_efficiency((128 * 132, 128, 64, 1), 132) == 1.0
    # a long inner dimension spreads a few tiles over every SM (stream-K): near 1
    assert wave_efficiency((768, 2304, 8192, 1), 132) > 0.99


def _table(ops, n_params=3, ready=(2, 1, 0)):
    params = [{"name": f"p{i}", "shape": [10, 10]} for i in range(n_params)]
    return OpTable.from_dict(
        {
            "schema": "ddpsim.optable/1",
            "model": "toy",
            "batch_size": 4,
            "params": params,
            "ready_order": list(ready),
            "ops": ops,
        }
    )


def test_profile_times_each_gradient_by_the_kernels_before_it():
    dev = _dev(launch_s=0.0)
    ops = [
        {"op": "aten.mm", "phase": "fwd", "flops": 1.59e9, "bytes": 0},  # 10 ms
        {"op": "aten.mm", "phase": "bwd", "flops": 3.18e9, "bytes": 0, "grad": 2},  # 20 ms
        {"op": "aten.add", "phase": "bwd", "flops": 0, "bytes": 1.5e8, "grad": 1},  # 10 ms
        {"op": "aten.mm", "phase": "bwd", "flops": 1.59e8, "bytes": 0, "grad": 1},  # 1 ms
        {"op": "aten.sum", "phase": "bwd", "flops": 0, "bytes": 1.5e7},  # 1 ms, after the last gradient
    ]
    p = profile_from_optable(_table(ops), dev, eff=Efficiency(1, 1, 0))
    assert math.isclose(p.forward_s, 0.01)
    assert [round(x.bwd_s, 6) for x in p.params] == [0.0, 0.011, 0.02]
    assert p.ready_order == (2, 1, 0) and math.isclose(p.backward_tail_s, 0.001)
    assert math.isclose(p.optimizer_s, 3 * 3 * 400 / 1.5e10)  # SGD: 3 elements of 4 bytes per parameter element
    assert p.env["bound_kernels"] == {"compute": 3, "memory": 2}
    rows = bound_report(_table(ops), dev)
    assert rows[0]["op"] == "aten.mm" and rows[0]["phase"] == "bwd" and rows[0]["bound"] == "compute"


def test_bad_tables_are_refused():
    with pytest.raises(ValueError, match="schema"):
        OpTable.from_dict({"schema": "x"})
    with pytest.raises(ValueError, match="flops"):
        _table([{"op": "aten.mm", "phase": "fwd", "flops": -1, "bytes": 0}])
    with pytest.raises(ValueError, match="phase"):
        _table([{"op": "aten.mm", "phase": "sideways", "flops": 1, "bytes": 0}])
    with pytest.raises(ValueError, match="grad"):
        _table([{"op": "aten.mm", "phase": "bwd", "flops": 1, "bytes": 0, "grad": 7}])


def _mixed_table():
    ops = []
    for g in range(8):  # every gradient delayed by a different mix of compute, memory and launches
        ops.append({"op": "aten.mm", "phase": "fwd", "flops": 1e8 * (g + 1), "bytes": 1e5})
        ops.append({"op": "aten.gelu", "phase": "fwd", "flops": 0, "bytes": 3e6 * (8 - g)})
        ops.append({"op": "aten.mm", "phase": "bwd", "flops": 2e8 * (g + 1), "bytes": 1e5, "grad": 7 - g})
        ops.append({"op": "aten.gelu_backward", "phase": "bwd", "flops": 0, "bytes": 4e6 * (8 - g), "grad": 7 - g})
        for _ in range(g * 60):
            ops.append({"op": "aten.add", "phase": "bwd", "flops": 0, "bytes": 64, "grad": 7 - g})
    return _table(ops, n_params=8, ready=tuple(range(7, -1, -1)))


def test_calibrate_recovers_the_efficiencies_that_made_a_profile():
    dev = _dev()
    table = _mixed_table()
    truth = Efficiency(matmul=0.6, memory=0.45, launch_s=8e-6)
    measured = profile_from_optable(table, dev, eff=truth)
    eff, report = calibrate(table, measured, dev)
    assert math.isclose(eff.matmul, 0.6, rel_tol=0.03), eff
    assert math.isclose(eff.memory, 0.45, rel_tol=0.03), eff
    assert math.isclose(eff.launch_s, 8e-6, rel_tol=0.1), eff
    assert math.isclose(report["fitted_backward_s"], measured.backward_s, rel_tol=0.01)
    # and the spec's own values would have been far off: the fit moved them
    assert abs(Efficiency.of(dev).matmul - eff.matmul) > 0.3


def test_calibrate_refuses_another_model():
    dev = _dev()
    measured = profile_from_optable(_mixed_table(), dev)
    with pytest.raises(ValueError, match="not the same model"):
        calibrate(_table([{"op": "aten.mm", "phase": "fwd", "flops": 1, "bytes": 0}]), measured, dev)


def test_simulator_roofline_does_not_import_torch():
    code = "import sys, simulator.roofline; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- the op table, recorded with fake tensors ------------------------------------------------


def test_op_table_of_the_mlp():
    pytest.importorskip("torch")
    from realrun.optable import op_table
    from realrun.workloads import load_workload

    wl = load_workload("mlp")  # 256 -> 1024 x 4 -> 10, batch 64
    t = OpTable.from_dict(op_table(wl, 64))
    dims = [(256, 1024), (1024, 1024), (1024, 1024), (1024, 1024), (1024, 10)]
    fwd = sum(2 * 64 * a * b for a, b in dims)
    assert t.fwd_flops == fwd
    # backward: a weight gradient per layer, an input gradient for all but the first
    assert t.bwd_flops == 2 * fwd - 2 * 64 * 256 * 1024
    assert t.ready_order[:2] == (9, 8) and sorted(t.ready_order) == list(range(10))
    assert all(o.grad is not None for o in t.ops if o.phase == "bwd" and o.flops)
    mm = next(o for o in t.ops if o.op == "aten.addmm")
    assert mm.mnkb == (64, 1024, 256, 1) and mm.bytes == 4 * (1024 + 64 * 256 + 256 * 1024 + 64 * 1024)


def test_op_table_in_bf16_autocast():
    pytest.importorskip("torch")
    from realrun.optable import op_table
    from realrun.workloads import load_workload

    d = op_table(load_workload("gpt"), 2, "bfloat16")
    t = OpTable.from_dict(d)
    mms = [o for o in t.ops if o.flops > 0]
    assert mms and all(o.dtype == "bfloat16" for o in mms)
    assert any(o.op == "aten._to_copy" for o in t.ops)  # autocast's casts are kernels too
    f32 = OpTable.from_dict(op_table(load_workload("gpt"), 2))
    assert f32.fwd_flops == t.fwd_flops and len(t.ops) > len(f32.ops)
    with pytest.raises(ValueError, match="dtype"):
        op_table(load_workload("gpt"), 2, "int8")


# ---- the commands: ddpsim roofline, tune --target-device, efficiency carried over ---------------


def _cli_json(capsys, *argv):
    import json

    from ddpsim.cli import main

    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)["results"]


def test_roofline_command_and_efficiency_carried_over(tmp_path, capsys):
    pytest.importorskip("torch")
    from simulator.profile import GradProfile

    spec = _cli_json(
        capsys, "roofline", "--model", "mlp", "--device", "cpu-core", "--json", "--out", str(tmp_path / "m.json")
    )
    assert spec["fwd_flops_per_step"] == 2 * 64 * (256 * 1024 + 3 * 1024 * 1024 + 1024 * 10)
    assert spec["bound_kernels"]["compute"] >= 5 and spec["ops"][0]["op"] in ("aten.mm", "aten.addmm")
    # a "measured" mlp profile twice as slow as the spec says, kernel for kernel (efficiencies halved,
    # launch floor doubled): the fit finds that, and another model predicted with it is twice as slow too
    prof = GradProfile.load(tmp_path / "m.json").scaled(2.0)
    prof = replace(prof, source="measured:cpu", env={"precision": "fp32", "profile": {"optimizer": "sgd"}})
    prof.save(tmp_path / "measured.json")
    cal = _cli_json(
        capsys, "roofline", "--model", "cnn", "--device", "cpu-core", "--json",
        "--calibrate-device-from", str(tmp_path / "measured.json"),
    )  # fmt: skip
    assert math.isclose(cal["efficiency"]["matmul"], 0.5, rel_tol=0.02), cal["efficiency"]
    assert math.isclose(cal["efficiency"]["memory"], 0.5, rel_tol=0.02), cal["efficiency"]
    cnn = _cli_json(capsys, "roofline", "--model", "cnn", "--device", "cpu-core", "--json")
    assert math.isclose(cal["forward_s"], 2 * cnn["forward_s"], rel_tol=0.03)
    assert math.isclose(cal["backward_s"], 2 * cnn["backward_s"], rel_tol=0.03)
    assert cal["calibration"]["model"] == "mlp"


def test_tune_target_device_uses_the_roofline(tmp_path, capsys):
    pytest.importorskip("torch")
    gpt = "gpt:n_layer=2,n_embd=1024,n_head=8,block_size=512"  # matmul-bound on an H100 (fake tensors: cheap)
    _cli_json(capsys, "roofline", "--model", gpt, "--device", "cpu-core", "--json", "--out", str(tmp_path / "p.json"))
    common = ["tune", "--model", gpt, "--profile", str(tmp_path / "p.json"), "--network", "nccl-h100-ib"]
    res = {}
    for dt in ("fp32", "tf32", "bf16"):
        out = _cli_json(
            capsys, *common, "--target-device", "h100-sxm", "--dtype", dt, "--out-dir", str(tmp_path / dt), "--json"
        )
        note = next(n for n in out["notes"] if "roofline" in n)
        assert f"h100-sxm ({dt}" in note and "launch-bound" in note
        res[dt] = out["compute_s"]
    # fp32 is the slowest on an H100; TF32 and bf16 matmuls are several times faster
    assert res["fp32"] > 2 * res["tf32"] and res["fp32"] > 2 * res["bf16"], res
