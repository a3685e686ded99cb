"""Small models that trip up hand-written DDP: tied, frozen and unused parameters.

Used as user modules (``tests/data/tricky_models.py:build_tied``) by the DDP tests.
"""

import torch
from torch import nn

BATCH_SIZE = 4
D = 6


class Tied(nn.Module):
    """Input and output layers share one weight: one parameter, two uses, one summed gradient."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(D, D)
        self.mid = nn.Linear(D, D)
        self.out = nn.Linear(D, D, bias=False)
        self.out.weight = self.inp.weight

    def forward(self, x):
        return self.out(torch.tanh(self.mid(torch.tanh(self.inp(x)))))


class Frozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(D, 7)
        self.b = nn.Linear(7, 7)
        self.c = nn.Linear(7, 3)
        self.b.requires_grad_(False)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


class Unused(nn.Module):
    """``spare`` is never used; ``rare`` only on samples whose first feature exceeds 1,
    so in some steps one rank uses it and the other does not (computed per sample, so
    sharding does not change the function)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(D, 7)
        self.spare = nn.Linear(7, 7)
        self.rare = nn.Linear(7, 7)
        self.c = nn.Linear(7, 3)

    def forward(self, x):
        h = torch.relu(self.a(x))
        sel = x[:, 0] > 1.0
        if bool(sel.any()):
            h = h.clone()
            h[sel] = h[sel] + self.rare(h[sel])
        return self.c(h)


def build_tied():
    return Tied()


def build_frozen():
    return Frozen()


def build_unused():
    return Unused()


def example_batch(batch_size):
    return torch.randn(batch_size, D)
