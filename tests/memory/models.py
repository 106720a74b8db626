"""Small models whose memory is computed by hand in the tests (built here, never downloaded).

Tensors are float32 of ``ROWS`` rows: a [ROWS, 64] tensor is exactly 1 MiB, large enough that
malloc's own bytes are far below the tolerance a measured run is held to.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROWS = 4096
MiB = 2**20


def _weights(rng, rows: int, cols: int) -> np.ndarray:
    return (rng.standard_normal((rows, cols)) * 0.05).astype(np.float32)


def onnx_chain(path: Path) -> Path:
    """x[4096, 64] → MatMul → a → MatMul → b → MatMul → c → MatMul → y, every tensor 1 MiB.

    Four kernels, no epilogue (no scratch). ``a`` dies after the second MatMul, so the plan
    puts ``c`` in ``a``'s storage (reuse); ``y`` is the result (a storage of its own).
    Held per step: 1, 2, 2, 2 MiB; the peak is 2 MiB at step 1.
    """
    from onnx import helper, numpy_helper

    from frontends.onnx_graphs import save_graph

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(_weights(rng, 64, 64), f"w{i}") for i in range(4)]
    nodes = [
        helper.make_node("MatMul", ["x", "w0"], ["a"], name="mm_a"),
        helper.make_node("MatMul", ["a", "w1"], ["b"], name="mm_b"),
        helper.make_node("MatMul", ["b", "w2"], ["c"], name="mm_c"),
        helper.make_node("MatMul", ["c", "w3"], ["y"], name="mm_y"),
    ]
    save_graph(path, nodes, "chain", {"x": [ROWS, 64]}, {"y": [ROWS, 64]}, inits)
    return path


def onnx_dynamic(path: Path) -> Path:
    """x[N, 16] → MatMul → a → Relu → b → MatMul (+ a, a residual) → y: every tensor
    [N, 16] float32 (64·N bytes), N symbolic.

    Three kernels: ``a`` is held from step 0 to step 2, ``b`` from step 1 to step 2, ``y`` is
    the result; the last kernel keeps its product before the add as scratch (64·N bytes).
    """
    from onnx import helper, numpy_helper

    from frontends.onnx_graphs import save_graph

    rng = np.random.default_rng(1)
    w = [numpy_helper.from_array(_weights(rng, 16, 16), f"w{i}") for i in range(2)]
    nodes = [
        helper.make_node("MatMul", ["x", "w0"], ["a"], name="mm1"),
        helper.make_node("Relu", ["a"], ["b"], name="relu1"),
        helper.make_node("MatMul", ["b", "w1"], ["c"], name="mm2"),
        helper.make_node("Add", ["c", "a"], ["y"], name="add"),
    ]
    save_graph(path, nodes, "dyn", {"x": ["N", 16]}, {"y": ["N", 16]}, w)
    return path


def torch_residual(path: Path) -> Path:
    """A residual branch that keeps a tensor alive (PyTorch, exported with torch.export):

        a = x @ w0          [4096, 64]   1 MiB   step 0
        b = a @ w1          [4096, 256]  4 MiB   step 1
        c = b @ w2          [4096, 64]   1 MiB   step 2
        y = c @ w3 + a      [4096, 64]   1 MiB   step 3 (the add fuses into the matmul)

    ``a`` is read again only by the last step: it is held, idle, through the peak.
    Held in storages per step: a=1; a+b=5; a+b+c=6; a+c+y=3 MiB (plus the fused kernel's
    scratch: its 1 MiB product before the add). The peak is 6 MiB at step 2.
    """
    import torch

    class Residual(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(0)
            for i, (r, c) in enumerate([(64, 64), (64, 256), (256, 64), (64, 64)]):
                self.register_buffer(f"w{i}", torch.randn(r, c, generator=g) * 0.05)

        def forward(self, x):
            a = x @ self.w0
            b = a @ self.w1
            c = b @ self.w2
            return c @ self.w3 + a

    program = torch.export.export(Residual(), (torch.randn(ROWS, 64),))
    torch.export.save(program, str(path))
    return path
