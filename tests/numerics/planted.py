"""Ground truth by construction: a model and a reference copy with one constant changed."""

from __future__ import annotations

import numpy as np


def planted_reference(tmp_path, tensor_name: str, delta: float = 0.5):
    """The ground-truth model and a copy whose constant ``tensor_name`` is changed."""
    from tests.tflite_builder import conv_add_relu_dense_graph

    original = tmp_path / "gt.tflite"
    original.write_bytes(conv_add_relu_dense_graph().build())
    g = conv_add_relu_dense_graph()
    t = next(t for t in g.tensors if t.name == tensor_name)
    values = np.frombuffer(t.data, dtype=np.float32) + np.float32(delta)
    t.data = values.astype(np.float32).tobytes()
    reference = tmp_path / "gt_planted.tflite"
    reference.write_bytes(g.build())
    return original, reference


def planted_int8_bias(source, dest, op_index: int, steps: float = 30.0):
    """A copy of the int8 TFLite model ``source`` whose CONV_2D ``op_index`` has its int32 bias
    raised by ``steps`` of the layer's output quantization (every channel): the reference of
    a compile whose op ``op_index`` diverges, and nothing before it."""
    import tflite

    data = bytearray(open(source, "rb").read())
    model = tflite.Model.GetRootAsModel(bytes(data), 0)
    sg = model.Subgraphs(0)
    op = sg.Operators(op_index)
    x, w, b = (sg.Tensors(int(i)) for i in op.InputsAsNumpy()[:3])
    out = sg.Tensors(int(op.OutputsAsNumpy()[0]))
    raw = model.Buffers(b.Buffer()).DataAsNumpy().tobytes()
    assert data.count(raw) == 1, "bias bytes not unique in the file"
    bias = np.frombuffer(raw, dtype=np.int32).astype(np.int64)
    s_in = float(x.Quantization().ScaleAsNumpy()[0])
    s_out = float(out.Quantization().ScaleAsNumpy()[0])
    s_w = w.Quantization().ScaleAsNumpy().astype(np.float64)
    s_w = np.broadcast_to(s_w, bias.shape)
    changed = bias + np.round(steps * s_out / (s_in * s_w)).astype(np.int64)
    at = bytes(data).find(raw)
    data[at : at + len(raw)] = changed.astype(np.int32).tobytes()
    with open(dest, "wb") as fh:
        fh.write(bytes(data))
    return dest
