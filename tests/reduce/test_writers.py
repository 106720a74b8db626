"""The sub-model writers alone: a cut of a real quantized TFLite model keeps every kept
tensor's type, shape and quantization parameters and runs in LiteRT; a cut keeps the subgraphs
its operators run (renumbered) and drops the others; an ONNX cut keeps its opset, initializers
and Constant nodes and passes the checker and onnxruntime."""

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
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
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


def _with_a_dead_subgraph(path) -> None:
    """text_lstm with a subgraph nothing runs inserted at index 1 (the WHILE's cond and body
    move to 2 and 3): a cut must drop it and renumber the WHILE's indices."""
    import copy

    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromPackedBuf((MODELS / "text_lstm_fp32.tflite").read_bytes(), 0)
    model.subgraphs.insert(1, copy.deepcopy(model.subgraphs[1]))
    model.subgraphs[1].name = "dead"
    (loop,) = [op for op in model.subgraphs[0].operators if op.builtinOptionsType == schema.BuiltinOptions.WhileOptions]
    loop.builtinOptions.condSubgraphIndex += 1
    loop.builtinOptions.bodySubgraphIndex += 1
    model.signatureDefs = None
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))


def _run_litert(path) -> list:
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(path))
    interp.allocate_tensors()
    for inp in interp.get_input_details():
        interp.set_tensor(inp["index"], np.ones(inp["shape"], inp["dtype"]))
    interp.invoke()
    return [interp.get_tensor(out["index"]) for out in interp.get_output_details()]


def test_a_tflite_cut_keeps_the_subgraphs_its_ops_run_and_drops_the_rest(tmp_path):
    import tflite
    from ai_edge_litert import schema_py_generated as schema
    from tvm.relax.frontend.tflite import from_tflite

    model = tmp_path / "lstm.tflite"
    _with_a_dead_subgraph(model)
    writer = frontend_for(model).subgraph_writer
    assert writer.count_ops(model) == 9 + 3 + 3 + 19
    ops = writer.ops(model)
    assert [op.opcode for op in ops[4:7]] == ["RESHAPE", "WHILE", "STRIDED_SLICE"]
    writer.write(model, [4, 5, 6], tmp_path / "loop.tflite")  # the WHILE and its neighbours
    cut = schema.ModelT.InitFromPackedBuf((tmp_path / "loop.tflite").read_bytes(), 0)
    assert [len(sg.operators) for sg in cut.subgraphs] == [3, 3, 19]
    loop = cut.subgraphs[0].operators[1].builtinOptions
    assert (loop.condSubgraphIndex, loop.bodySubgraphIndex) == (1, 2)
    # it computes what the same cut of the model without the dead subgraph computes
    writer.write(MODELS / "text_lstm_fp32.tflite", [4, 5, 6], tmp_path / "plain.tflite")
    got, want = _run_litert(tmp_path / "loop.tflite"), _run_litert(tmp_path / "plain.tflite")
    assert len(got) == len(want) > 1 and all(np.array_equal(a, b) for a, b in zip(got, want))
    mod = from_tflite(tflite.Model.GetRootAsModel((tmp_path / "loop.tflite").read_bytes(), 0))
    assert "main" in [gv.name_hint for gv in mod.functions]  # TVM imports the loop it keeps
    writer.write(model, [7], tmp_path / "head.tflite")  # after the WHILE: no subgraph is run
    head = schema.ModelT.InitFromPackedBuf((tmp_path / "head.tflite").read_bytes(), 0)
    assert [len(sg.operators) for sg in head.subgraphs] == [1] and writer.count_ops(tmp_path / "head.tflite") == 1
    _run_litert(tmp_path / "head.tflite")


def test_tflite_ops_without_an_output_tensor_are_named():
    """okay_nabu's CALL_ONCE and ASSIGN_VARIABLEs write no tensor: a report row names what
    they run or read, never a blank."""
    model = MODELS / "okay_nabu.tflite"
    ops = frontend_for(model).subgraph_writer.ops(model)
    assert all(op.name for op in ops)
    named = {op.index: op.name for op in ops if op.opcode in ("CALL_ONCE", "ASSIGN_VARIABLE")}
    assert named[0] == "runs subgraph 1 'NoOp'"
    assert named[13] == "(no output tensor; first input stream_6/states)"
