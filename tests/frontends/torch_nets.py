"""PyTorch modules whose source lines the tests know (ground truth for source lines).

Do not move lines here without updating ``LINES``: the tests check that generated code leads
back to exactly these lines of ``forward()``.
"""

import torch
from torch import nn


class Block(nn.Module):
    """A residual block: conv → relu → conv, plus the skip connection."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.act = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        y = self.conv1(x)  # line 21
        y = self.act(y)  # line 22
        y = self.conv2(y)  # line 23
        return x + y  # line 24


class ResNet(nn.Module):
    """stem conv → two residual blocks → global average pool → linear head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.block1 = Block(8)
        self.block2 = Block(8)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        x = self.stem(x)  # line 38
        x = self.block1(x)  # line 39
        x = self.block2(x)  # line 40
        x = x.mean(dim=(2, 3))  # line 41
        return torch.sigmoid(self.head(x))  # line 42


LINES = {"block.conv1": 21, "block.relu": 22, "block.conv2": 23, "block.add": 24,
         "stem": 38, "mean": 41, "head": 42}


def resnet_program():
    """The exported ResNet (seeded weights) and its example input."""
    torch.manual_seed(0)
    model = ResNet().eval()
    args = (torch.randn(1, 3, 8, 8),)
    return torch.export.export(model, args), args
