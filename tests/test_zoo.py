"""The model and device zoo: data files, FLOP arithmetic, profiles from FLOPs, loading rules."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulator import zoo
from simulator.profile import GradProfile, ParamSpec

ROOT = Path(__file__).resolve().parent.parent


def _gen_module():
    spec = importlib.util.spec_from_file_location("gen_zoo_models", ROOT / "scripts" / "gen_zoo_models.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_zoo_models"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


# ---- parameter counts against the published totals ---------------------------


@pytest.mark.parametrize(
    "name, total",
    [
        ("gpt2-small", 124_439_808),  # HF GPT2Model num_parameters()
        ("gpt2-medium", 354_823_168),
        ("gpt2-large", 774_030_080),
        ("gpt2-xl", 1_557_611_200),
        ("bert-base", 109_482_240),  # HF BertModel, pooler included
        ("resnet50", 25_557_032),  # torchvision resnet50 docs: num_params
        ("llama3-70b", 70_553_706_496),  # Meta-Llama-3-70B: "70.6B" on its model card
        ("qwen3-moe-235b-a22b", 235_093_634_560),  # Qwen3-235B-A22B: "235B total" on its model card
    ],
)
def test_parameter_totals(name, total):
    spec = zoo.load_model_spec(name)
    assert spec.n_params == total
    assert spec.grad_bytes == 4 * total
    assert zoo.model_summary(name)["n_params"] == total


def test_gpt2_small_layout_by_hand():
    spec = zoo.load_model_spec("gpt2-small")
    names = [p.name for p in spec.params]
    # 2 embeddings + 12 blocks x 12 tensors + ln_f (2)
    assert len(names) == 2 + 12 * 12 + 2
    assert names[:8] == [
        "wte.weight",
        "wpe.weight",
        "h.0.ln_1.weight",
        "h.0.ln_1.bias",
        "h.0.attn.c_attn.weight",
        "h.0.attn.c_attn.bias",
        "h.0.attn.c_proj.weight",
        "h.0.attn.c_proj.bias",
    ]
    assert names[-2:] == ["ln_f.weight", "ln_f.bias"]
    shapes = {p.name: p.shape for p in spec.params}
    assert shapes["wte.weight"] == (50257, 768) and shapes["wpe.weight"] == (1024, 768)
    assert shapes["h.11.attn.c_attn.weight"] == (768, 2304)  # Conv1D: [in, out]
    assert shapes["h.11.mlp.c_proj.weight"] == (3072, 768)
    assert spec.tokens_per_sample == 1024
    assert "lm_head.weight" not in names  # tied to wte


def test_resnet50_layout_by_hand():
    names = [p.name for p in zoo.load_model_spec("resnet50").params]
    assert names[:3] == ["conv1.weight", "bn1.weight", "bn1.bias"]
    # first bottleneck: conv1 bn1 conv2 bn2 conv3 bn3 (10 tensors) then the projection shortcut
    assert names[3:16] == [
        "layer1.0.conv1.weight",
        "layer1.0.bn1.weight",
        "layer1.0.bn1.bias",
        "layer1.0.conv2.weight",
        "layer1.0.bn2.weight",
        "layer1.0.bn2.bias",
        "layer1.0.conv3.weight",
        "layer1.0.bn3.weight",
        "layer1.0.bn3.bias",
        "layer1.0.downsample.0.weight",
        "layer1.0.downsample.1.weight",
        "layer1.0.downsample.1.bias",
        "layer1.1.conv1.weight",
    ]
    assert names[-2:] == ["fc.weight", "fc.bias"]
    # 3+4+6+3 = 16 bottlenecks of 9 tensors, 4 shortcuts of 3, stem 3, fc 2
    assert len(names) == 16 * 9 + 4 * 3 + 3 + 2
    assert sum(".downsample.0." in n for n in names) == 4


def test_bert_base_layout_by_hand():
    names = [p.name for p in zoo.load_model_spec("bert-base").params]
    assert names[:5] == [
        "embeddings.word_embeddings.weight",
        "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight",
        "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias",
    ]
    layer0 = [n.removeprefix("encoder.layer.0.") for n in names if n.startswith("encoder.layer.0.")]
    assert layer0 == [
        "attention.self.query.weight",
        "attention.self.query.bias",
        "attention.self.key.weight",
        "attention.self.key.bias",
        "attention.self.value.weight",
        "attention.self.value.bias",
        "attention.output.dense.weight",
        "attention.output.dense.bias",
        "attention.output.LayerNorm.weight",
        "attention.output.LayerNorm.bias",
        "intermediate.dense.weight",
        "intermediate.dense.bias",
        "output.dense.weight",
        "output.dense.bias",
        "output.LayerNorm.weight",
        "output.LayerNorm.bias",
    ]
    assert names[-2:] == ["pooler.dense.weight", "pooler.dense.bias"]


# ---- every data file validates ----------------------------------------------


@pytest.mark.parametrize("name", zoo.list_models())
def test_model_file_validates_and_round_trips(name):
    path = zoo.MODELS_DIR / f"{name}.json"
    raw = json.loads(path.read_text())
    spec = zoo.load_model_spec(name)
    assert spec.name == name == path.stem
    assert set(raw) == {"schema", "name", "source", "defaults", "tokens_per_sample", "params"}
    assert spec.source, f"{name}: says nowhere where its numbers come from"
    assert zoo.ModelSpec.from_dict(spec.to_dict()) == spec

    def entries(ps):
        for p in ps:
            if "repeat" in p:
                assert set(p) == {"repeat", "params"} and set(p["repeat"]) == {"var", "count"}
                yield from entries(p["params"])
            else:
                yield p

    for p in entries(raw["params"]):
        assert set(p) == {"name", "shape", "dtype", "fwd_flops_per_sample"}
    assert spec.fwd_flops_per_sample > 0


@pytest.mark.parametrize("name", zoo.list_devices())
def test_device_file_validates_and_round_trips(name):
    dev = zoo.load_device(name)
    assert dev.name == name
    assert zoo.DeviceSpec.from_dict(dev.to_dict()) == dev
    assert "assum" in dev.source["mfu"], "the MFU is an assumption and must say so"


def test_required_devices_exist():
    assert {"h100-sxm", "a100-sxm-40gb", "v100-sxm", "cpu-core"} <= set(zoo.list_devices())
    assert zoo.DEFAULT_DEVICE in zoo.list_devices()


def test_committed_model_files_match_the_generator():
    gen = _gen_module()
    for name, entry in gen.all_entries().items():
        path = zoo.MODELS_DIR / f"{name}.json"
        assert path.read_text() == gen.render(entry), f"{path} is stale: run scripts/gen_zoo_models.py"


# ---- FLOPs, with the arithmetic shown ----------------------------------------


def test_gpt2_small_forward_flops_per_token():
    L, d, T, V = 12, 768, 1024, 50257
    spec = zoo.load_model_spec("gpt2-small")
    per_token = spec.fwd_flops_per_sample / T
    # matmul weights per layer: c_attn 3d^2 + c_proj d^2 + c_fc 4d^2 + mlp.c_proj 4d^2 = 12 d^2
    weight_term = 2 * L * 12 * d * d  # 169,869,312
    attention_term = 4 * L * T * d  # q@k^T and p@v over the full T x T matrix: 37,748,736
    lm_head_term = 2 * d * V  # tied head: 77,194,752
    assert weight_term == 169_869_312 and attention_term == 37_748_736 and lm_head_term == 77_194_752
    assert per_token == weight_term + attention_term + lm_head_term == 284_812_800
    # Kaplan et al.'s "2N": N = non-embedding parameters (biases and LayerNorms too)
    non_embedding = spec.n_params - 50257 * 768 - 1024 * 768
    assert non_embedding == 85_056_000
    assert abs(2 * non_embedding - weight_term) / weight_term < 0.002  # only biases/norms differ


def test_gpt2_flops_land_where_their_backward_delays_a_gradient():
    T, d, V = 1024, 768, 50257
    f = {p.name: p.fwd_flops_per_sample for p in zoo.load_model_spec("gpt2-small").params}
    # c_attn: its matmul plus attention's two T x T matmuls (their backward runs just before c_attn's)
    assert f["h.0.attn.c_attn.weight"] == T * 2 * d * 3 * d + 2 * (2 * T * T * d) == 6_845_104_128
    assert f["h.0.attn.c_proj.weight"] == 2 * T * d * d
    assert f["h.0.mlp.c_fc.weight"] == f["h.0.mlp.c_proj.weight"] == 2 * T * d * 4 * d
    # the tied LM head runs after ln_f in forward, so its backward delays ln_f's gradient
    assert f["ln_f.weight"] == 2 * T * d * V
    assert f["wte.weight"] == f["wpe.weight"] == 0  # lookups
    assert all(v == 0 for k, v in f.items() if k.endswith(".bias") or ".ln_" in k)


def test_bert_base_forward_flops():
    L, d, T, F = 12, 768, 512, 3072
    spec = zoo.load_model_spec("bert-base")
    per_layer = T * (2 * 4 * d * d + 2 * 2 * d * F) + 4 * T * T * d  # q,k,v,o + FFN + attention
    pooler = 2 * d * d  # first token only
    assert spec.fwd_flops_per_sample == L * per_layer + pooler == 96_637_943_808


def test_resnet50_forward_flops():
    spec = zoo.load_model_spec("resnet50")
    f = {p.name: p.fwd_flops_per_sample for p in spec.params}
    assert f["conv1.weight"] == 2 * (64 * 3 * 7 * 7) * 112 * 112  # 7x7/2 conv to 112x112
    assert f["layer2.0.conv2.weight"] == 2 * (128 * 128 * 3 * 3) * 28 * 28  # v1.5: stride on the 3x3
    assert f["layer4.2.conv3.weight"] == 2 * (512 * 2048) * 7 * 7
    assert f["fc.weight"] == 2 * 2048 * 1000
    # torchvision's model table: resnet50 "GFLOPS 4.09" (multiply-adds)
    assert spec.fwd_flops_per_sample / 2 == 4_089_184_256


# ---- profiles from FLOPs -----------------------------------------------------


def test_profile_from_flops_arithmetic():
    p = zoo.profile_from_flops("gpt2-small", "h100-sxm")
    rate = 989.5e12 * 0.4
    fwd_flops = 12 * 291_648_307_200  # default batch 12 x forward FLOPs per sample
    assert p.samples_per_step == 12 and p.tokens_per_sample == 1024
    assert math.isclose(p.forward_s, fwd_flops / rate, rel_tol=1e-12)  # about 8.8 ms
    assert math.isclose(p.backward_s, 2 * p.forward_s, rel_tol=1e-12)
    assert math.isclose(p.optimizer_s, 7 * 4 * 124_439_808 / 3.35e12, rel_tol=1e-12)
    assert p.source == "flops:h100-sxm" and p.env["device"] == "h100-sxm"
    assert p.ready_order == tuple(reversed(range(len(p.params))))
    assert p.total_grad_bytes == 4 * 124_439_808


def test_profile_puts_an_op_on_its_first_ready_tensor():
    p = zoo.profile_from_flops("gpt2-small", "h100-sxm", batch_size=1)
    by = {q.name: q.bwd_s for q in p.params}
    rate = 989.5e12 * 0.4
    # ln_f's op (the tied head): ln_f.bias is ready first, so it carries the time
    assert by["ln_f.weight"] == 0.0
    assert math.isclose(by["ln_f.bias"], 2 * (2 * 1024 * 768 * 50257) / rate, rel_tol=1e-12)
    assert by["h.3.mlp.c_fc.weight"] == 0.0 and by["h.3.mlp.c_fc.bias"] > 0
    # the first gradient ready is ln_f.bias, after the head's backward
    first = p.params[p.ready_order[0]]
    assert first.name == "ln_f.bias" and p.ready_times_s()[p.ready_order[0]] == first.bwd_s


@pytest.mark.parametrize("name", zoo.list_models())
@pytest.mark.parametrize("device", zoo.list_devices())
def test_every_profile_has_backward_twice_forward(name, device):
    p = zoo.profile_from_flops(name, device)
    assert math.isclose(p.backward_s, 2 * p.forward_s, rel_tol=1e-9)
    assert p.forward_s > 0 and p.optimizer_s > 0


def test_batch_size_scales_compute_linearly():
    a = zoo.profile_from_flops("resnet50", "a100-sxm-40gb", batch_size=1)
    b = zoo.profile_from_flops("resnet50", "a100-sxm-40gb", batch_size=64)
    assert math.isclose(b.forward_s, 64 * a.forward_s, rel_tol=1e-12)
    assert b.optimizer_s == a.optimizer_s  # the update does not depend on the batch


# ---- loading rules and bad input ---------------------------------------------


def test_unknown_model_and_device_list_the_names():
    with pytest.raises(ValueError, match=r"unknown model 'gpt5'.*gpt2-small.*resnet50"):
        zoo.load_model_spec("gpt5")
    with pytest.raises(ValueError, match=r"unknown device 'tpu-v9'.*cpu-core.*h100-sxm"):
        zoo.load_device("tpu-v9")
    with pytest.raises(ValueError, match="unknown model"):
        zoo.load_profile("gpt5")
    with pytest.raises(ValueError, match="unknown device"):
        zoo.load_profile("gpt2-small", device="tpu-v9")


@pytest.mark.parametrize("batch", [0, -1, 2.5, True])
def test_bad_batch_size(batch):
    with pytest.raises(ValueError, match="batch size"):
        zoo.profile_from_flops("mlp", "cpu-core", batch_size=batch)


def test_bad_device_values():
    d = zoo.load_device("h100-sxm").to_dict()
    for key, bad in [("mfu", 1.5), ("mfu", 0), ("peak_flops", -1.0), ("mem_bw_bytes_per_s", "fast")]:
        with pytest.raises(ValueError, match=key):
            zoo.DeviceSpec.from_dict({**d, key: bad})
    with pytest.raises(ValueError, match="no source given for mfu"):
        zoo.DeviceSpec.from_dict({**d, "source": {k: v for k, v in d["source"].items() if k != "mfu"}})


def test_bad_model_files(tmp_path):
    good = zoo.load_model_spec("mlp").to_dict()
    cases = {
        "schema": ({**good, "schema": "ddpsim.model/0"}, "schema"),
        "dup": ({**good, "params": good["params"] + good["params"][:1]}, "listed twice"),
        "flops": ({**good, "params": [{**good["params"][0], "fwd_flops_per_sample": -1}]}, "fwd_flops_per_sample"),
        "shape": ({**good, "params": [{**good["params"][0], "shape": [3, "x"]}]}, "shape"),
        "batch": ({**good, "defaults": {"batch_size": 0}}, "batch_size"),
        "noparams": ({**good, "params": []}, "no parameters"),
    }
    for key, (d, msg) in cases.items():
        path = tmp_path / f"{key}.json"
        path.write_text(json.dumps(d))
        with pytest.raises(ValueError, match=msg):
            zoo.load_model_spec(str(path))
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        zoo.load_profile(str(tmp_path / "broken.json"))
    with pytest.raises(ValueError, match="cannot read"):
        zoo.load_profile(str(tmp_path / "missing.json"))


def test_load_profile_from_paths(tmp_path):
    measured = GradProfile(
        model="hand",
        params=(ParamSpec("a.weight", 10, bwd_s=0.001), ParamSpec("b.weight", 20, bwd_s=0.002)),
        source="measured",
    )
    mpath = tmp_path / "measured.json"
    measured.save(mpath)
    assert zoo.load_profile(str(mpath)) == measured
    with pytest.raises(ValueError, match="with its own times"):
        zoo.load_profile(str(mpath), device="cpu-core")
    # a model file given by path gets FLOPs times, like a built-in name
    spec_path = tmp_path / "mymodel.json"
    spec_path.write_text(json.dumps(zoo.load_model_spec("resnet50").to_dict()))
    by_path = zoo.load_profile(spec_path, device="v100-sxm", batch_size=8)
    assert by_path == zoo.profile_from_flops("resnet50", "v100-sxm", batch_size=8)
    assert zoo.load_profile("resnet50").source == f"flops:{zoo.DEFAULT_DEVICE}"


def test_zoo_never_imports_torch():
    code = (
        "import sys; from simulator import zoo\n"
        "for m in zoo.list_models(): zoo.load_profile(m); zoo.model_summary(m)\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- torch's own FLOP counter as an oracle (tiny GPT-2 written like HF's) ------


def test_gpt2_formulas_match_torch_flop_counter():
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    gen = _gen_module()
    cfg = gen.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_ctx=32)

    class Conv1D(nn.Module):  # HF's Conv1D: weight [in, out], y = addmm(b, x, W)
        def __init__(self, n_in, n_out):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.02)
            self.bias = nn.Parameter(torch.zeros(n_out))

        def forward(self, x):
            return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(*x.shape[:-1], -1)

    class Block(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.ln_1 = nn.LayerNorm(d)
            self.attn = nn.Module()
            self.attn.c_attn, self.attn.c_proj = Conv1D(d, 3 * d), Conv1D(d, d)
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = nn.Module()
            self.mlp.c_fc, self.mlp.c_proj = Conv1D(d, 4 * d), Conv1D(4 * d, d)

        def forward(self, x):
            B, T, d = x.shape
            q, k, v = self.attn.c_attn(self.ln_1(x)).split(d, dim=-1)
            q, k, v = (t.view(B, T, self.h, d // self.h).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, d)
            x = x + self.attn.c_proj(y)
            return x + self.mlp.c_proj(nn.functional.gelu(self.mlp.c_fc(self.ln_2(x))))

    class GPT2(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(c.vocab_size, c.n_embd), nn.Embedding(c.n_ctx, c.n_embd)
            self.h = nn.ModuleList(Block(c.n_embd, c.n_head) for _ in range(c.n_layer))
            self.ln_f = nn.LayerNorm(c.n_embd)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for b in self.h:
                x = b(x)
            return self.ln_f(x) @ self.wte.weight.T  # tied head

    model = GPT2(cfg)
    expected = gen.gpt2_params(cfg).params
    assert [(n, list(p.shape)) for n, p in model.named_parameters()] == [(e["name"], e["shape"]) for e in expected]
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(torch.zeros(3, cfg.n_ctx, dtype=torch.long))
    assert counter.get_total_flops() == 3 * sum(e["fwd_flops_per_sample"] for e in expected)


# ---- today's scale: a 70B dense model and a mixture of experts ----------------------------


def test_qwen3_moe_layout_matches_a_published_exact_count():
    # The same generator on Qwen3-30B-A3B's config (48 layers, hidden 2048, 32 heads, 4 KV heads,
    # head_dim 128, moe_intermediate 768, 128 experts) gives its published exact total,
    # 30,532,122,624 parameters (KerasHub qwen3_moe_30b_a3b_en preset metadata).
    gen = _gen_module()
    cfg = gen.Qwen3MoeConfig(48, 2048, 32, 4, 128, 768, 128, 8, 151936, 4096)
    flat = gen.expanded(gen.qwen3_moe_params(cfg))
    assert sum(math.prod(p["shape"]) for p in flat) == 30_532_122_624


def test_large_models_tensor_counts_and_names():
    llama = zoo.load_model_spec("llama3-70b")
    assert len(llama.params) == 1 + 80 * 9 + 2 == 723
    moe = zoo.load_model_spec("qwen3-moe-235b-a22b")
    assert len(moe.params) == 1 + 94 * (6 + 1 + 128 * 3 + 2) + 2 == 36_945
    assert len(moe.params) >= 20_000
    names = [p.name for p in moe.params]
    assert names[1:4] == [
        "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.self_attn.v_proj.weight",
    ]
    assert "model.layers.93.mlp.experts.127.down_proj.weight" in names
    assert names[-1] == "lm_head.weight"
    # every expert matrix is its own op (module), so its own gradient-ready point
    assert len(moe.op_groups()) == len(moe.params)


def test_repeat_blocks_expand_in_order_and_bad_blocks_are_refused():
    entries = [
        {"name": "emb", "shape": [2]},
        {
            "repeat": {"var": "i", "count": 2},
            "params": [
                {"name": "l{i}.a", "shape": [1]},
                {"repeat": {"var": "e", "count": 2}, "params": [{"name": "l{i}.x{e}", "shape": [3]}]},
            ],
        },
    ]
    assert [p["name"] for p in zoo.expand_params(entries)] == [
        "emb",
        "l0.a",
        "l0.x0",
        "l0.x1",
        "l1.a",
        "l1.x0",
        "l1.x1",
    ]
    with pytest.raises(ValueError, match="repeat block"):
        zoo.expand_params([{"repeat": {"var": "i"}, "params": []}])
    with pytest.raises(ValueError, match="repeat block"):
        zoo.expand_params([{"repeat": {"var": "i", "count": 2}}])


# ---- device specs per dtype (ddpsim.device/2) --------------------------------


def test_device_peaks_per_dtype_from_the_datasheets():
    h = zoo.load_device("h100-sxm")
    assert h.peak_for("float32") == 6.7e13
    assert h.peak_for("float32", tf32=True) == 4.945e14  # 989 TFLOPS with sparsity, halved
    assert h.peak_for("bfloat16") == 9.895e14 == h.peak_flops  # the whole-model path's dtype
    assert (h.sm_count, h.launch_s) == (132, 1e-5)
    v = zoo.load_device("v100-sxm")
    assert v.peak_for("float32", tf32=True) == v.peak_for("float32") == 1.57e13  # Volta has no TF32 units
    with pytest.raises(ValueError, match="no bfloat16 peak"):
        v.peak_for("bfloat16")


@pytest.mark.parametrize("name", zoo.list_devices())
def test_every_device_is_v2_with_sources(name):
    dev = zoo.load_device(name)
    d = dev.to_dict()
    assert d["schema"] == "ddpsim.device/2" and "float32" in d["peak_flops"]
    for key in ("peak_flops", "mem_bw_bytes_per_s", "launch_s", "efficiency", "sm_count", "mfu"):
        assert d["source"][key], key
    with pytest.raises(ValueError, match="no source given for launch_s"):
        zoo.DeviceSpec.from_dict({**d, "source": {k: v for k, v in d["source"].items() if k != "launch_s"}})


def test_v1_device_files_still_load(tmp_path):
    v1 = {
        "schema": "ddpsim.device/1",
        "name": "old",
        "dtype": "bfloat16",
        "peak_flops": 1e14,
        "mem_bw_bytes_per_s": 1e12,
        "mfu": 0.5,
        "source": {"peak_flops": "a", "mem_bw_bytes_per_s": "b", "mfu": "c"},
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(v1))
    dev = zoo.load_device(str(path))
    assert (dev.peak_for("bfloat16"), dev.launch_s, dev.efficiency) == (1e14, 0.0, {"matmul": 1.0, "memory": 1.0})
    assert dev.to_dict() == {**v1, "description": ""}  # written back as read
    assert zoo.profile_from_flops("mlp", dev).forward_s > 0


@pytest.mark.parametrize(
    "key, bad, words",
    [
        ("peak_flops", {"bfloat16": 1e14, "int4": 1e15}, "unknown dtype 'int4'"),
        ("peak_flops", {"float32": 1e13}, "lacks its dtype"),
        ("launch_s", -1e-6, "launch_s"),
        ("efficiency", {"matmul": 1.5}, "efficiency[matmul]"),
        ("efficiency", {"compute": 0.5}, "unknown key 'compute'"),
        ("sm_count", 0, "sm_count"),
    ],
)
def test_bad_v2_device_values(key, bad, words):
    d = zoo.load_device("h100-sxm").to_dict()
    with pytest.raises(ValueError, match=re.escape(words)):
        zoo.DeviceSpec.from_dict({**d, key: bad})
