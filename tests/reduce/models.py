"""Models that break stock TVM 0.27, each failing operator inside a larger healthy graph."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tests.tflite_builder import GraphBuilder, _Op, _save


def tflite_tensor_reshape(path) -> bytes:
    """12 operators; operator 6 is a RESHAPE whose new shape is computed (SHAPE of a tensor),
    not a constant: TVM's importer cannot import it."""
    g = GraphBuilder(seed=1)
    x = g.input("input", [1, 8, 8, 4])
    y = g.conv2d(x, filters=4, kernel=3, name="conv0", padding="SAME")  # 0
    y = g.add(y, g.weights("add0/bias", [4]), name="add0")  # 1
    y = g.relu(y, name="relu0")  # 2
    y = g.conv2d(y, filters=4, kernel=3, name="conv1", padding="SAME")  # 3
    y = g.mul(y, g.weights("mul0/scale", [4]), name="mul0")  # 4
    shape = g._tensor("shape_of/output", [4], "int32")
    g.ops.append(_shape_op(y, shape))  # 5: SHAPE
    out = g._tensor("dyn_reshape/output", [1, 8, 8, 4])
    g.ops.append(_reshape_op(y, shape, out))  # 6: RESHAPE with a tensor shape
    y = g.relu(out, name="relu1")  # 7
    y = g.add(y, g.weights("add1/bias", [4]), name="add1")  # 8
    y = g.reshape(y, [1, 8 * 8 * 4], name="flatten")  # 9
    y = g.fully_connected(y, units=10, name="head")  # 10
    y = g.softmax(y, name="probs")  # 11
    g.output(y)
    return _save(g.build(), path)


def _shape_op(x, out):
    return _Op("SHAPE", [x], [out], ("ShapeOptions", {"OutType": 2}))


def _reshape_op(x, shape, out):
    return _Op("RESHAPE", [x, shape], [out], ("ReshapeOptions", {}))


def onnx_unsupported(path, op: str = "LpNormalization") -> onnx.ModelProto:
    """10 nodes; node 5 is ``op`` (by default one TVM's ONNX importer does not support)."""
    rng = np.random.default_rng(0)
    w0 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w0")
    w1 = numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w1")
    b = numpy_helper.from_array(rng.standard_normal((1, 4, 1, 1)).astype(np.float32), "b")
    s = numpy_helper.from_array(np.full((1, 4, 1, 1), 0.5, np.float32), "s")
    shape = numpy_helper.from_array(np.array([1, 256], np.int64), "flat_shape")
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w0"], ["c0"], "/conv0", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),  # 0
        n("Relu", ["c0"], ["r0"], "/relu0"),  # 1
        n("Add", ["r0", "b"], ["a0"], "/add0"),  # 2
        n("Conv", ["a0", "w1"], ["c1"], "/conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),  # 3
        n("Sigmoid", ["c1"], ["g0"], "/gate"),  # 4
        n(op, ["g0"], ["h0"], "/odd", **({"axis": -1} if op == "LpNormalization" else {})),  # 5
        n("Mul", ["h0", "s"], ["m0"], "/scale"),  # 6
        n("Add", ["m0", "a0"], ["a1"], "/residual"),  # 7
        n("Reshape", ["a1", "flat_shape"], ["f0"], "/flatten"),  # 8
        n("Softmax", ["f0"], ["y"], "/probs", axis=-1),  # 9
    ]
    graph = helper.make_graph(
        nodes,
        "odd_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])],
        [w0, w1, b, s, shape],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    model.ir_version = 8
    onnx.save(model, str(path))
    return model


def tflite_while_with_custom_op(path, models_dir) -> None:
    """``text_lstm_fp32.tflite`` (9 main-graph ops, a WHILE whose cond and body subgraphs hold
    3 + 19 more) with its FULLY_CONNECTED (op 7, after the WHILE) turned into a custom op,
    which TVM's importer refuses."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromPackedBuf((models_dir / "text_lstm_fp32.tflite").read_bytes(), 0)
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    code.customCode, code.version = "PlantedOp", 1
    model.operatorCodes.append(code)
    op = model.subgraphs[0].operators[7]
    op.opcodeIndex, op.builtinOptionsType, op.builtinOptions = len(model.operatorCodes) - 1, 0, None
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(bytes(builder.Output()))
