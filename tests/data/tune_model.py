"""A model defined only here, for ``ddpsim tune --model tests/data/tune_model.py:build`` (issue 6).

Its gradients come in three sizes (a wide input layer, a square middle, a
narrow head), its loss is its own (``loss_fn``), and it is small enough that
a few real DDP steps take milliseconds on 2 CPU ranks.
"""

import torch
from torch import nn

BATCH_SIZE = 8
D_IN, WIDTH, D_OUT = 128, 192, 4


def build():
    return nn.Sequential(nn.Linear(D_IN, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, D_OUT))


def example_batch(batch_size):
    return torch.randn(batch_size, D_IN)


def loss_fn(output):
    # a made-up objective that is not the default mean square, so the file's own loss is what runs
    return (output - 1.0).abs().mean()
