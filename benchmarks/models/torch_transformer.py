"""A model made of a library's code, for the accuracy matrix: torch's own ``nn.TransformerEncoder``
(torch.nn.modules.transformer), unchanged, between an embedding and a linear head (both torch's).
Nothing in it was written for ddpsim: the project contributes only this wiring and the batch.

    ddpsim validate --model benchmarks/models/torch_transformer.py:build
"""

import torch
from torch import nn

VOCAB, WIDTH, HEADS, LAYERS, SEQ = 2048, 256, 4, 3, 32


def build() -> nn.Module:
    layer = nn.TransformerEncoderLayer(WIDTH, HEADS, dim_feedforward=4 * WIDTH, dropout=0.0, batch_first=True)
    return nn.Sequential(nn.Embedding(VOCAB, WIDTH), nn.TransformerEncoder(layer, LAYERS), nn.Linear(WIDTH, VOCAB))


def example_batch(batch_size: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch_size, SEQ))


def loss_fn(output: torch.Tensor) -> torch.Tensor:
    return output.float().pow(2).mean()
