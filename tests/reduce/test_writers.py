"""The sub-model writers alone (no TVM): a cut of a real quantized TFLite model keeps every
kept tensor's type, shape and quantization parameters and runs in LiteRT; an ONNX cut keeps its
opset, initializers and Constant nodes and passes the checker and onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from tvm_explorer.frontends import frontend_for

MODELS = Path(__file__).parent.parent / "models"


def _details(interp) -> dict:
    return {d["name"]: d for d in interp.get_tensor_details()}


def test_a_cut_of_a_quantized_tflite_keeps_its_quantization_and_runs_in_litert(tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    model = MODELS / "mobilenet_v3_small_int8.tflite"
    writer = frontend_for(model).subgraph_writer
    ops = writer.ops(model)
    kept = [op.index for op in ops[5:12]]
    writer.write(model, kept, tmp_path / "cut.tflite")
    small = Interpreter(model_path=str(tmp_path / "cut.tflite"))
    small.allocate_tensors()
    big = Interpreter(model_path=str(model))
    original = _details(big)
    compared = 0
    for name, d in _details(small).items():
        o = original[name]
        assert d["dtype"] == o["dtype"] and list(d["shape"]) == list(o["shape"]), name
        q, oq = d["quantization_parameters"], o["quantization_parameters"]
        assert np.array_equal(q["scales"], oq["scales"]) and np.array_equal(q["zero_points"], oq["zero_points"]), name
        compared += bool(len(q["scales"]))
    assert compared > 10  # quantized activations and weights
    assert len(writer.ops(tmp_path / "cut.tflite")) == len(kept)
    for inp in small.get_input_details():
        small.set_tensor(inp["index"], np.zeros(inp["shape"], inp["dtype"]))
    small.invoke()


def test_an_onnx_cut_keeps_constant_nodes_and_opset(tmp_path):
    n = helper.make_node
    nodes = [
        n("Relu", ["x"], ["r"], "relu"),
        n("Constant", [], ["shape"], "const", value=helper.make_tensor("v", TensorProto.INT64, [2], [1, 12])),
        n("Reshape", ["r", "shape"], ["f"], "flatten"),
        n("Sigmoid", ["f"], ["y"], "gate"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, tmp_path / "m.onnx")
    writer = frontend_for(tmp_path / "m.onnx").subgraph_writer
    assert [op.opcode for op in writer.ops(tmp_path / "m.onnx")] == ["Relu", "Reshape", "Sigmoid"]
    writer.write(tmp_path / "m.onnx", [2], tmp_path / "cut.onnx")  # the Reshape alone
    cut = onnx.load(tmp_path / "cut.onnx")
    onnx.checker.check_model(cut, full_check=True)
    assert [node.op_type for node in cut.graph.node] == ["Constant", "Reshape"]
    assert [i.name for i in cut.graph.input] == ["r"] and cut.opset_import[0].version == 18
    (out,) = ort.InferenceSession(str(tmp_path / "cut.onnx")).run(None, {"r": np.ones((1, 3, 4), np.float32)})
    assert out.shape == (1, 12)
