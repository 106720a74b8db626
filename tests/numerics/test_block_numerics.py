"""``tvm-explorer numerics`` per repeated block (decoder layers): a stack of four identical
residual blocks (``layers.{0..3}``) compiled and run for real, against a reference whose block
2 has a changed weight — the report says the error starts growing at ``layers.2`` (issue 32)."""

from __future__ import annotations

import json

import pytest
from tests.conftest import run_cli

from numerics.runs import compile_llvm
from tvm_explorer.numerics.blocks import block_errors, growing_from

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 16)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(8, 16)
        self.layers = torch.nn.ModuleList(Block() for _ in range(4))

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return x


def test_the_error_starts_growing_at_the_changed_block(tmp_path):
    torch.manual_seed(0)
    model = Stack().eval()
    args = (torch.randn(2, 8),)
    torch.export.save(torch.export.export(model, args), tmp_path / "stack.pt2")
    with torch.no_grad():
        model.layers[2].fc1.weight.mul_(1.01)
    torch.export.save(torch.export.export(model, args), tmp_path / "stack_changed.pt2")
    out = tmp_path / "stack.bundle"
    compile_llvm(tmp_path / "stack.pt2", out, "--numerics", "--reference", tmp_path / "stack_changed.pt2", check=True)
    data = json.loads((out / "numerics.json").read_text())
    stem, blocks = block_errors(data)
    assert stem == "layers" and [b["block"] for b in blocks] == ["layers.0", "layers.1", "layers.2", "layers.3"]
    assert all(b["max_abs"] is not None and b["max_abs"] < 1e-5 for b in blocks[:2]), blocks
    assert growing_from(blocks)["block"] == "layers.2"
    text = run_cli("numerics", out, check=True).stdout
    assert "Per repeated block (layers.{0..3}): max abs error at each block's output" in text
    assert "The error starts growing at layers.2: its output error (" in text
