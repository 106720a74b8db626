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
        helper.make_node(
            "Conv", ["x", "conv.weight"], ["conv_out"], "/backbone/conv/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]
        ),
        helper.make_node("Relu", ["conv_out"], ["relu_out"], "/backbone/act/Relu"),
        helper.make_node("Add", ["relu_out", "head.bias"], ["add_out"], "/head/bias/Add"),
        helper.make_node(op_for_gate, ["add_out"], ["gate_out"], f"/head/gate/{op_for_gate}"),
        helper.make_node("Mul", ["gate_out", "head.scale"], ["y"], "/head/scale/Mul"),
    ]
    return save_graph(
        path,
        nodes,
        "conv_block",
        {"x": [1, 3, 8, 8]},
        {"y": [1, 4, 8, 8]},
        [w, b, s],
        producer_name="tests",
        ir_version=8,
    )


def save_graph(path, nodes, name: str, inputs: dict, outputs: dict, inits=(), **model_fields) -> onnx.ModelProto:
    """``nodes`` as an opset-17 model, written to ``path``: ``inputs`` and ``outputs`` are float32
    tensors (name -> shape, None: undeclared), ``model_fields`` set on the model
    (``producer_name``, ``ir_version``)."""
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in outputs.items()],
        list(inits),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], **model_fields)
    onnx.save(model, str(path))
    return model


def _save(path, nodes, inputs: dict, inits=()) -> onnx.ModelProto:
    return save_graph(path, nodes, "open_dims", inputs, {"y": None}, inits, producer_name="tests", ir_version=8)


def maxpool_open_hw(path) -> onnx.ModelProto:
    """Conv → Relu → MaxPool(auto_pad SAME_UPPER) on an input [1,3,H,W]: TVM's MaxPool computes
    SAME padding with ``int()`` of each spatial size, which fails on a symbolic H (as a
    published text detector with dynamic H×W does), and builds once H and W are pinned."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], "/conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("Relu", ["c"], ["r"], "/relu"),
        n("MaxPool", ["r"], ["y"], "/pool", kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
    ]
    return _save(path, nodes, {"x": [1, 3, "H", "W"]}, [w])


def resize_of_unshaped_input(path) -> onnx.ModelProto:
    """A Resize (scales ×2) of an input that declares no shape: TVM's Resize asks ``len()`` of
    its input's unknown shape."""
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], "/up", mode="nearest")]
    return _save(path, nodes, {"x": None}, [scales])


def resize_without_scales_or_sizes(path) -> onnx.ModelProto:
    """Relu → a Resize given neither scales nor sizes, on an input [1,3,H,W]."""
    n = helper.make_node
    nodes = [n("Relu", ["x"], ["r"], "/relu"), n("Resize", ["r", "", ""], ["y"], "/up", mode="nearest")]
    return _save(path, nodes, {"x": [1, 3, "H", "W"]})
