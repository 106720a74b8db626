"""The loader rejects, before TVM sees them, models whose fields would make TVM fail obscurely,
divide by zero or allocate gigabytes; each message names the file and the tensor or operator."""

from __future__ import annotations

import numpy as np
import pytest
from tests import tflite_builder as B

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.tflite.loader import load_model


def _graph() -> B.GraphBuilder:
    g = B.GraphBuilder(seed=0)
    x = g.input("input", [1, 8, 8, 3])
    y = g.conv2d(x, filters=4, kernel=3, name="conv")
    y = g.max_pool(y, 2, name="pool")
    y = g.relu(y, name="relu")
    y = g.reshape(y, [1, 3 * 3 * 4], name="flatten")
    y = g.fully_connected(y, units=5, name="dense")
    g.output(y)
    return g


def _tensor(g, name):
    return next(t for t in g.tensors if t.name == name)


def _op(g, opcode):
    return next(op for op in g.ops if op.opcode == opcode)


def _set_option(g, opcode, key, value):
    op = _op(g, opcode)
    name, values = op.options
    op.options = (name, {**values, key: value})


def _shape(name, shape):
    return lambda g: setattr(_tensor(g, name), "shape", shape)


CASES = {
    "conv stride 0": (lambda g: _set_option(g, "CONV_2D", "StrideW", 0), ["op 0 CONV_2D", "StrideW is 0"]),
    "conv dilation 0": (lambda g: _set_option(g, "CONV_2D", "DilationHFactor", 0), ["op 0 CONV_2D", "DilationHFactor"]),
    "pool filter 0": (
        lambda g: _set_option(g, "MAX_POOL_2D", "FilterWidth", 0),
        ["op 1 MAX_POOL_2D", "FilterWidth is 0"],
    ),
    "pool stride negative": (
        lambda g: _set_option(g, "MAX_POOL_2D", "StrideH", -2),
        ["op 1 MAX_POOL_2D", "StrideH is -2"],
    ),
    "negative dimension": (_shape("input", [1, -5, 8, 3]), ["tensor 0 'input'", "negative"]),
    "absurd size": (_shape("relu/output", [1, 65536, 65536, 4]), ["'relu/output'", "64.0 GiB", "more than the 2 GiB"]),
    "constant too short": (
        lambda g: setattr(_tensor(g, "conv/weights"), "data", _tensor(g, "conv/weights").data[:100]),
        ["'conv/weights'", "100 bytes", "needs 432"],
    ),
    "input never computed": (
        lambda g: setattr(_op(g, "RELU"), "inputs", [len(g.tensors) - 1]),
        ["op 2 RELU", "produced by no earlier operator"],
    ),
    "output never computed": (
        lambda g: setattr(_op(g, "FULLY_CONNECTED"), "outputs", [0]),
        ["output tensor", "'dense/output'", "produced by no operator"],
    ),
    "tensor index out of range": (
        lambda g: setattr(_op(g, "RELU"), "inputs", [999]),
        ["tensor 999, which does not exist"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_structurally_bad_models_are_rejected_with_the_place(tmp_path, case):
    mutate, needles = CASES[case]
    g = _graph()
    mutate(g)
    path = tmp_path / "m.tflite"
    path.write_bytes(g.build())
    with pytest.raises(ModelError) as err:
        load_model(path)
    message = str(err.value)
    assert message.startswith(f"{path}: "), message
    for needle in needles:
        assert needle in message, message


def test_the_unmutated_graph_and_every_shipped_model_still_load(tmp_path, models_dir):
    path = tmp_path / "m.tflite"
    path.write_bytes(_graph().build())
    assert len(load_model(path).layers) == 5
    for model in sorted(models_dir.glob("*.tflite")):
        assert load_model(model).layers, model


def test_bad_utf8_name_and_buffer_index(tmp_path, models_dir):
    data = bytearray((models_dir / "sine_float.tflite").read_bytes())
    model = load_model(models_dir / "sine_float.tflite")
    name = model.layers[0].outputs[0].name.encode()
    at = bytes(data).index(name)
    data[at + 1] = 0xFF
    path = tmp_path / "utf8.tflite"
    path.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="name is not valid UTF-8"):
        load_model(path)


def test_truncation_at_every_offset_of_a_small_model_is_a_model_error(tmp_path, models_dir):
    data = (models_dir / "sine_float.tflite").read_bytes()
    path = tmp_path / "cut.tflite"
    for cut in range(0, len(data), max(1, len(data) // 400)):
        path.write_bytes(data[:cut])
        with pytest.raises(ModelError) as err:
            load_model(path)
        assert str(err.value).startswith(f"{path}: ")


def test_constant_of_int32_shape_checks_element_size(tmp_path):
    g = B.GraphBuilder()
    x = g.input("input", [1, 4])
    y = g.reshape(x, [4], name="r")
    g.output(y)
    t = _tensor(g, "r/shape")
    t.data = np.array([4], dtype=np.int16).tobytes()
    path = tmp_path / "m.tflite"
    path.write_bytes(g.build())
    with pytest.raises(ModelError, match="'r/shape': constant data has 2 bytes"):
        load_model(path)
