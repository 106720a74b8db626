"""Span-filling import: stock IR plus a TFLite operator on every binding."""

import pytest
import tvm_ffi
from tvm import relax
from tvm.relax.frontend.tflite import from_tflite

from tvm_explorer.frontends.tflite.importer import import_tflite
from tvm_explorer.frontends.tflite.loader import load_model
from tvm_explorer.provenance import OriginTable
from tvm_explorer.provenance.spans import read_span

MODELS = [
    "small_cnn_fp32",
    "small_cnn_int8",
    "mobilenet_v1_fp32",
    "mobilenet_v3_small_int8",
    "text_lstm_fp32",
    "tiny_transformer_fp32",
    "sine_float",
    "logmelcalc",
    "hand_recrop",
]


def _bindings(mod):
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            for block in func.body.blocks:
                for b in block.bindings:
                    yield gv.name_hint, b


@pytest.mark.parametrize("name", MODELS)
def test_import_is_stock_ir_with_every_binding_attributed(models_dir, name):
    model = load_model(models_dir / f"{name}.tflite")
    origins = OriginTable()
    mod = import_tflite(model, origins)
    stock = from_tflite(model.model)
    assert tvm_ffi.structural_equal(mod, stock), tvm_ffi.get_first_structural_mismatch(mod, stock)
    bindings = list(_bindings(mod))
    assert bindings
    missing = [f"{fn}:{b.var.name}" for fn, b in bindings if not (read_span(b) or (0,))[0]]
    assert missing == []


def test_ground_truth_layers(gt_model):
    model = load_model(gt_model)
    origins = OriginTable()
    mod = import_tflite(model, origins)
    found = {}
    for _fn, b in _bindings(mod):
        sid, _unit = read_span(b)
        for layer, is_output in origins.get(sid):
            found.setdefault(model.layers[layer].opcode, []).append(
                (
                    type(b.value.op).__name__ if hasattr(b.value, "op") else "",
                    str(b.value.op) if hasattr(b.value, "op") else "",
                    is_output,
                )
            )
    assert set(found) == {"CONV_2D", "ADD", "RELU", "RESHAPE", "FULLY_CONNECTED"}
    assert any("conv2d" in op for _, op, _ in found["CONV_2D"])
    assert any("relu" in op and out for _, op, out in found["RELU"])
    assert any("matmul" in op and not out for _, op, out in found["FULLY_CONNECTED"])
    # Exactly one binding per layer is marked as producing the layer's output tensor.
    for opcode, entries in found.items():
        assert sum(1 for *_x, out in entries if out) == 1, opcode


def test_fully_connected_with_bias_is_one_layer_of_several_bindings(gt_model):
    model = load_model(gt_model)
    origins = OriginTable()
    mod = import_tflite(model, origins)
    dense = [
        b
        for _fn, b in _bindings(mod)
        if any(model.layers[l].opcode == "FULLY_CONNECTED" for l, _ in origins.get(read_span(b)[0]))
    ]
    assert len(dense) >= 2  # permute_dims/matmul/add: all belong to the layer
    assert not any("_PART_" in b.var.name for b in dense)
