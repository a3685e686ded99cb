"""A model DDP cannot match single-process training on: BatchNorm's statistics depend on the shard."""

import torch
from torch import nn


def build():
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def example_batch(batch_size):
    return torch.randn(batch_size, 6) * torch.linspace(0.5, 3.0, 6)
