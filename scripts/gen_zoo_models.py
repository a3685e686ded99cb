"""Write the built-in large models' parameter lists and FLOPs as zoo data files (pure Python, no torch).

    python scripts/gen_zoo_models.py [--out-dir simulator/data/models] [--check]

Writes ``gpt2-small``, ``gpt2-medium``, ``gpt2-large``, ``gpt2-xl``,
``bert-base``, ``resnet50``, ``llama3-70b`` and ``qwen3-moe-235b-a22b`` (the last
two with their decoder layers and experts as ``repeat`` blocks) as ``<name>.json`` in the zoo format (schema
``ddpsim.model/1``, read by ``simulator.zoo``). ``--check`` writes nothing and
exits 1 if a committed file differs from what the formulas give.

Parameters are listed in registration order (``named_parameters()``) with the
names and shapes of the reference implementation:

* GPT-2: HF ``transformers`` ``GPT2Model`` (``Conv1D`` weights are
  ``[in, out]``); the LM head is tied to ``wte`` and so is no parameter of its own.
* BERT: HF ``BertModel`` (``nn.Linear`` weights ``[out, in]``), pooler included,
  no pre-training heads.
* ResNet-50: ``torchvision.models.resnet50`` (v1.5: stride on the 3x3 conv).

FLOPs (``fwd_flops_per_sample``), the convention of the whole zoo (it matches
``realrun.flops``, which counts with ``torch.utils.flop_counter``):

* Only matrix products and convolutions are counted, 2 FLOPs per
  multiply-add, as torch's ``FlopCounterMode`` and the usual model-FLOPs
  utilisation (MFU) definition do. Element-wise work (norms, activations,
  softmax, bias and residual adds, pooling, the loss) and embedding lookups
  count 0: their time is what a device's assumed MFU absorbs.
* Attention scores and the weighted sum of values count the full
  ``T x T`` matrix (``4 * T^2 * d_model`` per sequence and layer), as an eager
  or SDPA-math implementation computes it; causal kernels that skip the masked
  half would do about half of that.
* A parameter-holding op's FLOPs go to its **weight**; its bias (and a
  LayerNorm/BatchNorm bias) carries 0. ``simulator.zoo`` adds up the tensors of
  one module and gives the time to the one whose gradient is ready first.
* Work outside parameter-holding ops is given to the parameter op that ran
  *just before it in forward*: its backward runs just *after* that work's
  backward, so that work delays exactly that op's gradient. Hence attention's
  matmuls go to ``c_attn`` (GPT-2) or ``value`` (BERT, the last of q/k/v).
* GPT-2's tied LM head (``2 * d_model * vocab`` per token) runs after ``ln_f``
  in forward, so its backward runs first of all and delays ``ln_f``'s
  gradient: it is counted on ``ln_f.weight``. (``wte``'s gradient is complete
  only after the embedding's backward, at the very end.)

Per-rank default batch sizes are assumptions for a typical data-parallel run,
stated in each file's ``source``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODEL_SCHEMA = "ddpsim.model/1"


class _ParamList:
    """Collects parameters in registration order; extra FLOPs go to the last op's weight."""

    def __init__(self) -> None:
        self.params: list[dict[str, Any]] = []
        self._anchor: int | None = None  # index of the weight of the op that ran last in forward

    def op(self, module: str, shapes: dict[str, list[int]], flops: int) -> None:
        """One parameter-holding op: ``flops`` on its first tensor (the weight), 0 on the others."""
        first = len(self.params)
        for i, (leaf, shape) in enumerate(shapes.items()):
            self.params.append(
                {
                    "name": f"{module}.{leaf}",
                    "shape": list(shape),
                    "dtype": "float32",
                    "fwd_flops_per_sample": flops if i == 0 else 0,
                }
            )
        self._anchor = first

    def after(self, flops: int) -> None:
        """FLOPs of parameter-less work that runs after the last op in forward (see module docstring)."""
        if self._anchor is None:
            raise ValueError("parameter-less work before the first parameter op")
        self.params[self._anchor]["fwd_flops_per_sample"] += flops


def _entry(name: str, source: str, batch_size: int, tokens_per_sample: int, pl: _ParamList) -> dict[str, Any]:
    return {
        "schema": MODEL_SCHEMA,
        "name": name,
        "source": source,
        "defaults": {"batch_size": batch_size},
        "tokens_per_sample": tokens_per_sample,
        "params": pl.params,
    }


# ---- GPT-2 -------------------------------------------------------------------


@dataclass(frozen=True)
class GPT2Config:
    n_layer: int
    n_embd: int
    n_head: int
    vocab_size: int = 50257
    n_ctx: int = 1024


GPT2 = {
    # HF hub openai-community/gpt2{,-medium,-large,-xl} config.json; Radford et al. 2019, Table 2.
    "gpt2-small": (GPT2Config(n_layer=12, n_embd=768, n_head=12), 12),
    "gpt2-medium": (GPT2Config(n_layer=24, n_embd=1024, n_head=16), 8),
    "gpt2-large": (GPT2Config(n_layer=36, n_embd=1280, n_head=20), 4),
    "gpt2-xl": (GPT2Config(n_layer=48, n_embd=1600, n_head=25), 2),
}


def gpt2_params(cfg: GPT2Config) -> _ParamList:
    d, T, V = cfg.n_embd, cfg.n_ctx, cfg.vocab_size
    pl = _ParamList()
    pl.op("wte", {"weight": [V, d]}, 0)  # lookup: 0 FLOPs
    pl.op("wpe", {"weight": [T, d]}, 0)
    for i in range(cfg.n_layer):
        h = f"h.{i}"
        pl.op(f"{h}.ln_1", {"weight": [d], "bias": [d]}, 0)
        pl.op(f"{h}.attn.c_attn", {"weight": [d, 3 * d], "bias": [3 * d]}, 2 * T * d * 3 * d)
        pl.after(2 * T * T * d)  # q @ k^T over all heads
        pl.after(2 * T * T * d)  # softmax(.) @ v
        pl.op(f"{h}.attn.c_proj", {"weight": [d, d], "bias": [d]}, 2 * T * d * d)
        pl.op(f"{h}.ln_2", {"weight": [d], "bias": [d]}, 0)
        pl.op(f"{h}.mlp.c_fc", {"weight": [d, 4 * d], "bias": [4 * d]}, 2 * T * d * 4 * d)
        pl.op(f"{h}.mlp.c_proj", {"weight": [4 * d, d], "bias": [d]}, 2 * T * 4 * d * d)
    pl.op("ln_f", {"weight": [d], "bias": [d]}, 0)
    pl.after(2 * T * d * V)  # LM head tied to wte: logits = ln_f(x) @ wte^T
    return pl


def gpt2_entry(name: str) -> dict[str, Any]:
    cfg, batch = GPT2[name]
    source = (
        f"HF transformers GPT2Model, openai-community/{name.replace('-small', '')} config.json "
        f"(n_layer {cfg.n_layer}, n_embd {cfg.n_embd}, n_head {cfg.n_head}, vocab {cfg.vocab_size}, "
        f"n_ctx {cfg.n_ctx}); Radford et al. 2019 Table 2; LM head tied to wte; "
        f"default per-rank batch {batch} x {cfg.n_ctx} tokens assumed"
    )
    return _entry(name, source, batch, cfg.n_ctx, gpt2_params(cfg))


# ---- BERT --------------------------------------------------------------------


@dataclass(frozen=True)
class BertConfig:
    n_layer: int = 12
    hidden: int = 768
    n_head: int = 12
    intermediate: int = 3072
    vocab_size: int = 30522
    max_position: int = 512
    type_vocab: int = 2
    seq_len: int = 512


def bert_params(cfg: BertConfig) -> _ParamList:
    d, T, F = cfg.hidden, cfg.seq_len, cfg.intermediate
    pl = _ParamList()
    e = "embeddings"
    pl.op(f"{e}.word_embeddings", {"weight": [cfg.vocab_size, d]}, 0)
    pl.op(f"{e}.position_embeddings", {"weight": [cfg.max_position, d]}, 0)
    pl.op(f"{e}.token_type_embeddings", {"weight": [cfg.type_vocab, d]}, 0)
    pl.op(f"{e}.LayerNorm", {"weight": [d], "bias": [d]}, 0)
    for i in range(cfg.n_layer):
        L = f"encoder.layer.{i}"
        for qkv in ("query", "key", "value"):
            pl.op(f"{L}.attention.self.{qkv}", {"weight": [d, d], "bias": [d]}, 2 * T * d * d)
        pl.after(2 * T * T * d)  # q @ k^T
        pl.after(2 * T * T * d)  # probs @ v
        pl.op(f"{L}.attention.output.dense", {"weight": [d, d], "bias": [d]}, 2 * T * d * d)
        pl.op(f"{L}.attention.output.LayerNorm", {"weight": [d], "bias": [d]}, 0)
        pl.op(f"{L}.intermediate.dense", {"weight": [F, d], "bias": [F]}, 2 * T * d * F)
        pl.op(f"{L}.output.dense", {"weight": [d, F], "bias": [d]}, 2 * T * F * d)
        pl.op(f"{L}.output.LayerNorm", {"weight": [d], "bias": [d]}, 0)
    pl.op("pooler.dense", {"weight": [d, d], "bias": [d]}, 2 * d * d)  # first token only
    return pl


def bert_entry(name: str = "bert-base") -> dict[str, Any]:
    cfg, batch = BertConfig(), 32
    source = (
        "HF transformers BertModel (pooler included, no pre-training heads), google-bert/bert-base-uncased "
        f"config.json (hidden {cfg.hidden}, {cfg.n_layer} layers, {cfg.n_head} heads, intermediate "
        f"{cfg.intermediate}, vocab {cfg.vocab_size}, max_position {cfg.max_position}, type_vocab "
        f"{cfg.type_vocab}); Devlin et al. 2019; sequence {cfg.seq_len}; default per-rank batch {batch} assumed"
    )
    return _entry(name, source, batch, cfg.seq_len, bert_params(cfg))


# ---- ResNet-50 ---------------------------------------------------------------

RESNET50_LAYERS = (3, 4, 6, 3)  # He et al. 2016, Table 1


def _conv_flops(c_in: int, c_out: int, k: int, out_hw: int) -> int:
    return 2 * c_in * k * k * c_out * out_hw * out_hw


def resnet50_params(image_hw: int = 224, num_classes: int = 1000) -> _ParamList:
    pl = _ParamList()
    hw = image_hw // 2  # conv1: 7x7 stride 2, padding 3
    pl.op("conv1", {"weight": [64, 3, 7, 7]}, _conv_flops(3, 64, 7, hw))
    pl.op("bn1", {"weight": [64], "bias": [64]}, 0)
    hw //= 2  # maxpool 3x3 stride 2, padding 1
    inplanes = 64
    for li, (blocks, planes) in enumerate(zip(RESNET50_LAYERS, (64, 128, 256, 512)), start=1):
        for b in range(blocks):
            stride = 2 if (b == 0 and li > 1) else 1
            out_hw = hw // stride
            width, out = planes, planes * 4
            p = f"layer{li}.{b}"
            pl.op(f"{p}.conv1", {"weight": [width, inplanes, 1, 1]}, _conv_flops(inplanes, width, 1, hw))
            pl.op(f"{p}.bn1", {"weight": [width], "bias": [width]}, 0)
            pl.op(f"{p}.conv2", {"weight": [width, width, 3, 3]}, _conv_flops(width, width, 3, out_hw))
            pl.op(f"{p}.bn2", {"weight": [width], "bias": [width]}, 0)
            pl.op(f"{p}.conv3", {"weight": [out, width, 1, 1]}, _conv_flops(width, out, 1, out_hw))
            pl.op(f"{p}.bn3", {"weight": [out], "bias": [out]}, 0)
            if b == 0:  # stride or channel change: 1x1 projection shortcut
                pl.op(f"{p}.downsample.0", {"weight": [out, inplanes, 1, 1]}, _conv_flops(inplanes, out, 1, out_hw))
                pl.op(f"{p}.downsample.1", {"weight": [out], "bias": [out]}, 0)
            inplanes, hw = out, out_hw
    pl.op("fc", {"weight": [num_classes, inplanes], "bias": [num_classes]}, 2 * inplanes * num_classes)
    return pl


def resnet50_entry(name: str = "resnet50") -> dict[str, Any]:
    batch = 32
    source = (
        "torchvision.models.resnet50 (Bottleneck v1.5, stride on the 3x3 conv; layers 3-4-6-3, He et al. 2016 "
        f"Table 1); 224x224 input, 1000 classes; default per-rank batch {batch} (Goyal et al. 2017: 32 images per GPU)"
    )
    return _entry(name, source, batch, 1, resnet50_params())


# ---- Llama-3-70B and Qwen3-235B-A22B: today's scale, stored as repeat blocks ----------
# One decoder layer (and, for the MoE, one expert) is written once with ``{i}`` / ``{e}`` in
# its names; ``simulator.zoo.expand_params`` writes the blocks out at load. FLOPs follow the
# zoo convention above; per-layer parameter-less work (attention's two T x T products) goes
# to ``v_proj``, the last projection before it in forward.


def _param(name: str, shape: list[int], flops: int) -> dict[str, Any]:
    return {"name": name, "shape": shape, "dtype": "float32", "fwd_flops_per_sample": flops}


def _repeat(var: str, count: int, params: list[dict[str, Any]]) -> dict[str, Any]:
    return {"repeat": {"var": var, "count": count}, "params": params}


@dataclass(frozen=True)
class LlamaConfig:
    n_layer: int
    hidden: int
    n_head: int
    n_kv_head: int
    intermediate: int
    vocab_size: int
    seq_len: int


LLAMA3_70B = LlamaConfig(
    n_layer=80, hidden=8192, n_head=64, n_kv_head=8, intermediate=28672, vocab_size=128256, seq_len=8192
)


def _attention(L: str, d: int, q: int, kv: int, T: int) -> list[dict[str, Any]]:
    """q/k/v/o projections of one grouped-query attention layer (``q`` = heads x head_dim, ``kv`` the same
    for the key/value heads), with the FLOPs of T tokens; q @ k^T and probs @ v are counted on v_proj."""
    return [
        _param(f"{L}.self_attn.q_proj.weight", [q, d], 2 * T * d * q),
        _param(f"{L}.self_attn.k_proj.weight", [kv, d], 2 * T * d * kv),
        # v_proj, then q @ k^T and probs @ v over all heads (full T x T, as the zoo counts)
        _param(f"{L}.self_attn.v_proj.weight", [kv, d], 2 * T * d * kv + 2 * (2 * T * T * q)),
        _param(f"{L}.self_attn.o_proj.weight", [d, q], 2 * T * q * d),
    ]


def _decoder_lm(V: int, d: int, T: int, n_layer: int, layer: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A decoder-only LM's ``named_parameters()``: embedding, ``n_layer`` repeats of ``layer``, final norm,
    untied LM head."""
    return [
        _param("model.embed_tokens.weight", [V, d], 0),
        _repeat("i", n_layer, layer),
        _param("model.norm.weight", [d], 0),
        _param("lm_head.weight", [V, d], 2 * T * d * V),
    ]


def llama_params(cfg: LlamaConfig) -> list[dict[str, Any]]:
    """HF ``LlamaForCausalLM`` ``named_parameters()``: no biases, RMSNorm weights, untied LM head."""
    d, T, F, V = cfg.hidden, cfg.seq_len, cfg.intermediate, cfg.vocab_size
    hd = d // cfg.n_head
    kv = cfg.n_kv_head * hd
    L = "model.layers.{i}"
    layer = [
        *_attention(L, d, d, kv, T),
        _param(f"{L}.mlp.gate_proj.weight", [F, d], 2 * T * d * F),
        _param(f"{L}.mlp.up_proj.weight", [F, d], 2 * T * d * F),
        _param(f"{L}.mlp.down_proj.weight", [d, F], 2 * T * F * d),
        _param(f"{L}.input_layernorm.weight", [d], 0),
        _param(f"{L}.post_attention_layernorm.weight", [d], 0),
    ]
    return _decoder_lm(V, d, T, cfg.n_layer, layer)


def llama3_70b_entry(name: str = "llama3-70b") -> dict[str, Any]:
    cfg, batch = LLAMA3_70B, 1
    source = (
        "HF transformers LlamaForCausalLM, meta-llama/Meta-Llama-3-70B config.json (hidden_size 8192, "
        "num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, intermediate_size 28672, "
        "vocab_size 128256, max_position_embeddings 8192, tie_word_embeddings false); Llama 3 paper "
        "(Grattafiori et al. 2024) Table 3; 70.55e9 parameters, 723 tensors; float32 gradients as in the rest "
        f"of the zoo; sequence {cfg.seq_len}; default per-rank batch {batch} assumed"
    )
    return {**_entry(name, source, batch, cfg.seq_len, _ParamList()), "params": llama_params(cfg)}


@dataclass(frozen=True)
class Qwen3MoeConfig:
    n_layer: int
    hidden: int
    n_head: int
    n_kv_head: int
    head_dim: int
    moe_intermediate: int
    n_experts: int
    experts_per_token: int
    vocab_size: int
    seq_len: int


QWEN3_235B = Qwen3MoeConfig(
    n_layer=94,
    hidden=4096,
    n_head=64,
    n_kv_head=4,
    head_dim=128,
    moe_intermediate=1536,
    n_experts=128,
    experts_per_token=8,
    vocab_size=151936,
    seq_len=4096,
)


def qwen3_moe_params(cfg: Qwen3MoeConfig) -> list[dict[str, Any]]:
    """HF ``Qwen3MoeForCausalLM`` ``named_parameters()`` with one module per expert
    (``mlp.experts.{e}.{gate,up,down}_proj``): every MoE layer (``decoder_sparse_step`` 1,
    no ``mlp_only_layers``), q/k RMSNorm per head, no biases, untied LM head.

    Expert FLOPs assume balanced routing: each expert sees ``T * top_k / n_experts`` tokens.
    """
    d, T, V, hd = cfg.hidden, cfg.seq_len, cfg.vocab_size, cfg.head_dim
    q, kv, F, E = cfg.n_head * hd, cfg.n_kv_head * hd, cfg.moe_intermediate, cfg.n_experts
    tok = T * cfg.experts_per_token // E  # tokens per expert per sample (balanced routing)
    L = "model.layers.{i}"
    expert = [
        _param(f"{L}.mlp.experts.{{e}}.gate_proj.weight", [F, d], 2 * tok * d * F),
        _param(f"{L}.mlp.experts.{{e}}.up_proj.weight", [F, d], 2 * tok * d * F),
        _param(f"{L}.mlp.experts.{{e}}.down_proj.weight", [d, F], 2 * tok * F * d),
    ]
    layer = [
        *_attention(L, d, q, kv, T),
        _param(f"{L}.self_attn.q_norm.weight", [hd], 0),
        _param(f"{L}.self_attn.k_norm.weight", [hd], 0),
        _param(f"{L}.mlp.gate.weight", [E, d], 2 * T * d * E),
        _repeat("e", E, expert),
        _param(f"{L}.input_layernorm.weight", [d], 0),
        _param(f"{L}.post_attention_layernorm.weight", [d], 0),
    ]
    return _decoder_lm(V, d, T, cfg.n_layer, layer)


def qwen3_moe_entry(name: str = "qwen3-moe-235b-a22b") -> dict[str, Any]:
    cfg, batch = QWEN3_235B, 1
    source = (
        "HF transformers Qwen3MoeForCausalLM, Qwen/Qwen3-235B-A22B config.json (hidden_size 4096, "
        "num_hidden_layers 94, num_attention_heads 64, num_key_value_heads 4, head_dim 128, "
        "moe_intermediate_size 1536, num_experts 128, num_experts_per_tok 8, decoder_sparse_step 1, "
        "mlp_only_layers [], vocab_size 151936, tie_word_embeddings false); Qwen3 Technical Report "
        "(Yang et al. 2025) Table 2; each expert's gate/up/down projection its own tensor (one nn.Linear per "
        "expert): 36,945 tensors, 235.09e9 parameters; expert FLOPs assume balanced routing; float32 "
        f"gradients as in the rest of the zoo; sequence {cfg.seq_len}; default per-rank batch {batch} assumed"
    )
    return {**_entry(name, source, batch, cfg.seq_len, _ParamList()), "params": qwen3_moe_params(cfg)}


def expanded(params: list[dict[str, Any]], subs: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Repeat blocks written out (as ``simulator.zoo.expand_params`` does at load), for the summary line."""
    out: list[dict[str, Any]] = []
    for p in params:
        if "repeat" in p:
            for k in range(p["repeat"]["count"]):
                out.extend(expanded(p["params"], {**(subs or {}), p["repeat"]["var"]: k}))
        else:
            name = p["name"]
            for var, k in (subs or {}).items():
                name = name.replace("{" + var + "}", str(k))
            out.append({**p, "name": name})
    return out


# ---- writing -----------------------------------------------------------------


def all_entries() -> dict[str, dict[str, Any]]:
    out = {name: gpt2_entry(name) for name in GPT2}
    out["bert-base"] = bert_entry()
    out["resnet50"] = resnet50_entry()
    out["llama3-70b"] = llama3_70b_entry()
    out["qwen3-moe-235b-a22b"] = qwen3_moe_entry()
    return out


def _render_param(p: dict[str, Any], indent: str) -> str:
    if "repeat" not in p:
        return f"{indent}{json.dumps(p)}"
    inner = ",\n".join(_render_param(q, indent + " ") for q in p["params"])
    return f'{indent}{{"repeat": {json.dumps(p["repeat"])}, "params": [\n{inner}\n{indent}]}}'


def render(entry: dict[str, Any]) -> str:
    """JSON text with one parameter per line (readable diffs)."""
    head = {k: v for k, v in entry.items() if k != "params"}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f" {json.dumps(k)}: {json.dumps(v)},")
    lines.append(' "params": [')
    rows = [_render_param(p, "  ") for p in entry["params"]]
    lines.append(",\n".join(rows))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=str(ROOT / "simulator" / "data" / "models"))
    ap.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    stale = []
    for name, entry in all_entries().items():
        path = out / f"{name}.json"
        text = render(entry)
        n_params = 0
        flat = expanded(entry["params"])
        for p in flat:
            numel = 1
            for s in p["shape"]:
                numel *= s
            n_params += numel
        gflop = sum(p["fwd_flops_per_sample"] for p in flat) / 1e9
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
            continue
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"{path}: {len(flat)} tensors, {n_params:,} parameters, {gflop:.2f} GFLOP forward per sample")
    if stale:
        print("out of date (run scripts/gen_zoo_models.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
