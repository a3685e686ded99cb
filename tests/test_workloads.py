"""Workloads (built-in and user modules), FLOP attribution, and the zoo data generated from them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from realrun.flops import param_forward_flops  # noqa: E402
from realrun.workloads import BUILTIN_NAMES, load_workload, select  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT / "simulator" / "data" / "models"


# ---- built-ins -------------------------------------------------------------------


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_builtin_is_deterministic_and_trains(name):
    w = load_workload(name)
    a, b = w.build(), w.build()
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert na == nb and torch.equal(pa, pb), f"{name}: {na} differs between two builds"
    x1, x2, y = w.make_batch(4, 7), w.make_batch(4, 7), w.make_batch(4, 8)
    t1, t2, t3 = (v if isinstance(v, tuple) else (v,) for v in (x1, x2, y))
    assert all(torch.equal(p, q) for p, q in zip(t1, t2))
    assert not all(torch.equal(p, q) for p, q in zip(t1, t3)), "different seeds gave the same batch"
    loss = w.loss(a, x1)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for p in a.parameters()), f"{name}: a parameter got no gradient"


def test_builtin_sizes_match_their_descriptions():
    n = {k: sum(p.numel() for p in load_workload(k).build().parameters()) for k in BUILTIN_NAMES}
    # micro-dlrm: 8 tables x 3900 x 32 = 998,400 plus the MLPs -> "about 1M"
    assert 0.9e6 < n["micro-dlrm"] < 1.1e6, n
    # gpt: 4096*256 (tied) + 64*256 + 4 blocks * (12*256^2 + 13*256) + 2*256
    assert n["gpt"] == 4096 * 256 + 64 * 256 + 4 * (12 * 256 * 256 + 13 * 256) + 2 * 256
    assert n["mlp"] == 256 * 1024 + 1024 + 3 * (1024 * 1024 + 1024) + 1024 * 10 + 10


def test_gpt_options_and_tied_head():
    w = load_workload("gpt:n_layer=2,n_embd=64,n_head=2,block_size=16,vocab_size=100")
    m = w.build()
    assert w.tokens_per_sample == 16 and len(m.h) == 2
    assert m.lm_head.weight is m.wte.weight
    names = [n for n, _ in m.named_parameters()]
    assert "lm_head.weight" not in names  # deduplicated: one parameter
    idx, tgt = w.make_batch(3, 0)
    assert idx.shape == (3, 16) and torch.equal(idx[:, 1:], tgt[:, :-1])


def test_select_slices_every_tensor():
    w = load_workload("micro-dlrm")
    b = w.make_batch(6, 0)
    s = select(b, torch.arange(1, 6, 2))
    assert [t.shape[0] for t in s] == [3, 3, 3]
    assert torch.equal(s[0], b[0][[1, 3, 5]])


@pytest.mark.parametrize(
    "spec, words",
    [
        ("resnet9000", ["unknown workload", "mlp", "cnn", "micro-dlrm", "gpt"]),
        ("gpt:n_layers=4", ["bad option", "n_layer"]),
        ("gpt:n_layer=x", ["integer"]),
        ("gpt:n_embd=100,n_head=3", ["divisible"]),
        ("", ["must name a workload"]),
    ],
)
def test_bad_builtin_specs(spec, words):
    with pytest.raises(ValueError) as e:
        load_workload(spec)
    for word in words:
        assert word in str(e.value), str(e.value)


# ---- user modules ----------------------------------------------------------------

GOOD = """
import torch
from torch import nn
BATCH_SIZE = 5
def build():
    return nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
def example_batch(batch_size):
    return torch.randn(batch_size, 4)
def loss_fn(out):
    return out.sum()
"""


def _write(tmp_path: Path, text: str, name: str = "user_model.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_user_module_loads_and_is_seeded(tmp_path):
    p = _write(tmp_path, GOOD)
    w = load_workload(f"{p}:build")
    assert w.default_batch_size == 5 and w.name == "build"
    m = w.build()
    assert torch.equal(w.make_batch(3, 1), w.make_batch(3, 1))
    assert torch.allclose(w.loss(m, w.make_batch(3, 1)), m(w.make_batch(3, 1)).sum())


@pytest.mark.parametrize(
    "text, suffix, words",
    [
        ("import no_such_module_xyz\n", "build", ["does not import", "no_such_module_xyz"]),
        (GOOD.replace("def example_batch", "def other_batch"), "build", ["lacks example_batch"]),
        (GOOD, "make_model", ["no function 'make_model'"]),
        (
            GOOD.replace("return nn.Sequential", "raise RuntimeError('boom')\n    return nn.Sequential"),
            "build",
            ["build() raised RuntimeError: boom"],
        ),
        (
            GOOD.replace(
                "return nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))",
                "m = nn.Linear(4, 2)\n    m.requires_grad_(False)\n    return m",
            ),
            "build",
            ["no trainable parameters"],
        ),
        (
            GOOD.replace("torch.randn(batch_size, 4)", "torch.randn(batch_size, 7)"),
            "build",
            ["does not fit the model", "(2, 7)"],
        ),
        (GOOD.replace("return out.sum()", "return out"), "build", ["scalar"]),
    ],
)
def test_user_module_errors_name_the_problem(tmp_path, text, suffix, words):
    p = _write(tmp_path, text)
    with pytest.raises(ValueError) as e:
        load_workload(f"{p}:{suffix}")
    for word in words:
        assert word in str(e.value), str(e.value)


def test_user_module_missing_file(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        load_workload(f"{tmp_path}/nope.py:build")


# ---- FLOP attribution -------------------------------------------------------------


def test_flops_linear_weight_gets_the_matmul_bias_nothing():
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4, bias=False))
    f = param_forward_flops(m, torch.randn(5, 8))
    assert f == {"0.weight": 2 * 5 * 8 * 16, "0.bias": 0, "2.weight": 2 * 5 * 16 * 4}


class _Gap(torch.nn.Module):
    """a @ (x W1^T) done outside any parameter-holding module: goes to l1, which ran just before."""

    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(6, 6, bias=False)
        self.l2 = torch.nn.Linear(6, 2, bias=False)
        self.l2.weight = torch.nn.Parameter(torch.randn(2, 6))

    def forward(self, x):
        h = self.l1(x)
        h = h @ torch.ones(6, 6)  # parameter-less matmul: 2*4*6*6
        return self.l2(h)


def test_flops_of_parameterless_ops_go_to_the_previous_holder():
    f = param_forward_flops(_Gap(), torch.randn(4, 6))
    assert f["l1.weight"] == 2 * 4 * 6 * 6 + 2 * 4 * 6 * 6
    assert f["l2.weight"] == 2 * 4 * 6 * 2


def test_flops_gpt_attention_goes_to_c_attn():
    w = load_workload("gpt:n_layer=1,n_embd=32,n_head=2,block_size=8,vocab_size=50")
    f = param_forward_flops(w.build(), w.make_batch(3, 0), w.loss_fn)
    tokens = 3 * 8
    qk_and_av = 2 * (2 * 3 * 2 * 8 * 8 * 16)  # two batched matmuls: B*heads*T*T*head_size
    assert f["h.0.attn.c_attn.weight"] == 2 * tokens * 32 * 96 + qk_and_av
    # the tied head is a later use of wte.weight: its matmul goes to ln_f, which ran just before it
    assert f["ln_f.weight"] == 2 * tokens * 32 * 50
    assert f["wte.weight"] == 0 and f["wpe.weight"] == 0


# ---- zoo data ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ("mlp", "cnn", "micro-dlrm", "gpt"))
def test_zoo_json_matches_named_parameters(name):
    path = MODELS_DIR / f"{name}.json"
    d = json.loads(path.read_text())
    w = load_workload(name)
    m = w.build()
    expected = [(n, list(p.shape), "float32") for n, p in m.named_parameters()]
    got = [(p["name"], p["shape"], p["dtype"]) for p in d["params"]]
    assert got == expected, f"{path} is stale: run scripts/gen_toy_models.py"
    assert d["schema"] == "ddpsim.model/1" and d["name"] == name
    assert d["defaults"]["batch_size"] == w.default_batch_size
    assert d["tokens_per_sample"] == w.tokens_per_sample
    assert all(isinstance(p["fwd_flops_per_sample"], int) and p["fwd_flops_per_sample"] >= 0 for p in d["params"])


def test_zoo_gpt_flops_add_up():
    d = json.loads((MODELS_DIR / "gpt.json").read_text())
    t, c, L, V = 64, 256, 4, 4096
    per_block = 2 * t * (c * 3 * c + c * c + 2 * c * 4 * c) + 2 * (2 * 4 * t * t * (c // 4))
    expected = L * per_block + 2 * t * c * V
    assert sum(p["fwd_flops_per_sample"] for p in d["params"]) == expected
