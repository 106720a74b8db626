"""Ground truth by construction: a model and a reference copy with one constant changed."""

from __future__ import annotations

import numpy as np


def planted_reference(tmp_path, tensor_name: str, delta: float = 0.5):
    """The ground-truth model and a copy whose constant ``tensor_name`` is changed."""
    from tvm_explorer.model.builder import conv_add_relu_dense_graph

    original = tmp_path / "gt.tflite"
    original.write_bytes(conv_add_relu_dense_graph().build())
    g = conv_add_relu_dense_graph()
    t = next(t for t in g.tensors if t.name == tensor_name)
    values = np.frombuffer(t.data, dtype=np.float32) + np.float32(delta)
    t.data = values.astype(np.float32).tobytes()
    reference = tmp_path / "gt_planted.tflite"
    reference.write_bytes(g.build())
    return original, reference
