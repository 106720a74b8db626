"""ONNX graphs built with ``onnx.helper``: the ground truth of the ONNX tests.

``conv_block`` is Conv → Relu → Add(bias) → Sigmoid → Mul, each node with a hierarchical
name (``/backbone/conv/Conv``) and a distinct op type, so every origin can be checked by name.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NODES = {  # node name -> op type, in graph order
    "/backbone/conv/Conv": "Conv",
    "/backbone/act/Relu": "Relu",
    "/head/bias/Add": "Add",
    "/head/gate/Sigmoid": "Sigmoid",
    "/head/scale/Mul": "Mul",
}


def conv_block(path, op_for_gate: str = "Sigmoid") -> onnx.ModelProto:
    """Write the constructed model to ``path`` (``op_for_gate`` replaces the Sigmoid: an op
    TVM cannot import makes the unsupported-op test)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "conv.weight")
    b = numpy_helper.from_array(rng.standard_normal((1, 4, 1, 1)).astype(np.float32), "head.bias")
    s = numpy_helper.from_array(np.full((1, 4, 1, 1), 0.5, np.float32), "head.scale")
    nodes = [
        helper.make_node("Conv", ["x", "conv.weight"], ["conv_out"], "/backbone/conv/Conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv_out"], ["relu_out"], "/backbone/act/Relu"),
        helper.make_node("Add", ["relu_out", "head.bias"], ["add_out"], "/head/bias/Add"),
        helper.make_node(op_for_gate, ["add_out"], ["gate_out"], f"/head/gate/{op_for_gate}"),
        helper.make_node("Mul", ["gate_out", "head.scale"], ["y"], "/head/scale/Mul"),
    ]
    graph = helper.make_graph(
        nodes, "conv_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w, b, s])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    model.ir_version = 8
    onnx.save(model, str(path))
    return model
