"""The built-in workloads' modules: a toy MLP, a CIFAR-sized CNN, a micro-DLRM and a small GPT.

Plain ``nn.Module`` classes; ``realrun.workloads`` gives them configurations,
seeds, example batches and losses. None has buffers or batch-statistics
layers, so DDP on shards of a batch equals training on the whole batch.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, d_in: int, width: int, depth: int, d_out: int):
        super().__init__()
        dims = [d_in] + [width] * depth
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Linear(width, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = F.relu(layer(x))
        return self.head(x)


class ToyCNN(nn.Module):
    """CIFAR-sized: 3x32x32 in, four 3x3 convolutions, three 2x2 pools, two linear layers."""

    def __init__(self, width: int, n_classes: int):
        super().__init__()
        w = width
        self.conv1 = nn.Conv2d(3, w, 3, padding=1)
        self.conv2 = nn.Conv2d(w, 2 * w, 3, padding=1)
        self.conv3 = nn.Conv2d(2 * w, 4 * w, 3, padding=1)
        self.conv4 = nn.Conv2d(4 * w, 4 * w, 3, padding=1)
        self.fc1 = nn.Linear(4 * w * 4 * 4, 256)
        self.fc2 = nn.Linear(256, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)
        x = F.max_pool2d(F.relu(self.conv4(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


class MicroDLRM(nn.Module):
    """Embedding-bag tables plus bottom and top MLPs with pairwise dot interactions.

    Inputs: dense features ``(B, n_dense)``, sparse indices ``(B, n_tables,
    bag)`` and click labels ``(B,)``; returns the binary cross-entropy loss.
    """

    def __init__(self, n_dense: int, n_tables: int, rows: int, dim: int, hidden: int):
        super().__init__()
        self.bottom1 = nn.Linear(n_dense, hidden)
        self.bottom2 = nn.Linear(hidden, dim)
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(n_tables))
        n_vec = n_tables + 1
        n_pairs = n_vec * (n_vec - 1) // 2
        self.top1 = nn.Linear(dim + n_pairs, hidden)
        self.top2 = nn.Linear(hidden, 1)
        iu = torch.triu_indices(n_vec, n_vec, offset=1)
        self._pair_i = iu[0].tolist()
        self._pair_j = iu[1].tolist()

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.bottom2(F.relu(self.bottom1(dense)))
        vecs = [x] + [t(sparse[:, k, :]) for k, t in enumerate(self.tables)]
        z = torch.stack(vecs, dim=1)  # (B, n_vec, dim)
        inter = torch.bmm(z, z.transpose(1, 2))[:, self._pair_i, self._pair_j]
        h = F.relu(self.top1(torch.cat([x, inter], dim=1)))
        logits = self.top2(h).squeeze(1)
        return F.binary_cross_entropy_with_logits(logits, labels)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        hs = c // self.n_head
        q = q.view(b, t, self.n_head, hs).transpose(1, 2)
        k = k.view(b, t, self.n_head, hs).transpose(1, 2)
        v = v.view(b, t, self.n_head, hs).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class GPTBlock(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    """Token + position embeddings, pre-LayerNorm blocks, output head tied to the token embedding.

    ``forward(idx, targets)`` returns the mean cross-entropy over all tokens.
    """

    def __init__(self, vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList(GPTBlock(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied: one parameter, two uses
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, mean=0.0, std=0.02)
            if name.endswith("c_proj.weight"):  # GPT-2's scaled init of residual projections
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        # positions made here, not a buffer: torch DDP would broadcast a buffer every forward
        x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))
