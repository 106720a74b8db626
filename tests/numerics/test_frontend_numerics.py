"""compile --numerics on ONNX (onnxruntime as reference) and PyTorch .pt2 (eager PyTorch)
models: ground truth by construction.

ONNX: ``conv_block`` (0 Conv, 1 Relu, 2 Add, 3 Sigmoid, 4 Mul) against a copy whose Add
constant ``head.bias`` is changed by 0.5: the first divergence must be node 2, nodes 0 and 1
must match. TVM fuses the whole block into one kernel, so only the unfused variant sees node 2.

PyTorch: the residual net of ``frontends/torch_nets.py`` against a copy exported with
``block1.conv2.bias`` changed by 0.5: the first divergence must be node 3 (that convolution).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import MODELS, run_cli
from frontends.onnx_graphs import conv_block
from numerics.runs import (
    compile_llvm,
    compile_unfused,
    fails,
    layer_entry,
    numerics_json,
    planted_divergence,
    unfused_bundle,
)


@pytest.fixture(scope="module")
def onnx_planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx-planted")
    model = conv_block(root / "block.onnx")
    ref = onnx.ModelProto()
    ref.CopyFrom(model)
    bias = next(t for t in ref.graph.initializer if t.name == "head.bias")
    bias.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(bias) + np.float32(0.5), "head.bias"))
    onnx.save(ref, str(root / "block_planted.onnx"))
    return root / "block.onnx", root / "block_planted.onnx"


@pytest.fixture(scope="module")
def onnx_unfused(onnx_planted, tmp_path_factory):
    return unfused_bundle(onnx_planted, tmp_path_factory.mktemp("onnx-nb"))


def test_onnx_planted_constant_is_the_first_divergence_unfused(onnx_unfused):
    # The normal build fuses the block into one kernel: the Add is hidden there.
    data = planted_divergence(onnx_unfused, 2, "Add", "/head/bias/Add")
    assert data["reference"].startswith("onnxruntime 1.31.1 on block_planted.onnx")
    for op in (0, 1):
        e = layer_entry(data, op)
        assert e["observed"] and not e["diverges"] and e["max_abs"] < 1e-5 and e["cosine"] > 0.99999
    assert "first divergence: node 2 Add /head/bias/Add" in onnx_unfused[1]


def test_onnx_text_report(onnx_unfused):
    out = run_cli("numerics", onnx_unfused[0], check=True).stdout
    marked = [line for line in out.splitlines() if line.startswith("=>")]
    assert len(marked) == 1 and " Add " in marked[0] and "DIVERGES" in marked[0]
    assert "against the onnxruntime 1.31.1 on block_planted.onnx" in out


def test_onnx_model_against_itself_shows_no_divergence(onnx_planted, tmp_path):
    out = tmp_path / "same.bundle"
    run_cli("compile", onnx_planted[0], "-o", out, "--target", "c", "--numerics-unfused", check=True)
    data = numerics_json(out)
    assert data["first_divergence"] is None and data["fused_first_divergence"] is None
    assert all(e["observed"] and e["cosine"] > 0.99999 for e in data["layers"])


def test_onnx_given_inputs_by_graph_input_name(onnx_planted, tmp_path):
    npz = tmp_path / "x.npz"
    np.savez(npz, x=np.full((1, 3, 8, 8), 0.25, np.float32))
    out = tmp_path / "given.bundle"
    compile_llvm(onnx_planted[0], out, "--numerics", "--inputs", npz, check=True)
    data = numerics_json(out)
    assert data["inputs"] == str(npz) and data["first_divergence"] is None
    assert layer_entry(data, 4)["observed"]  # the block's result leaves the fused kernel


def test_onnx_corpus_float_model_shows_no_divergence(tmp_path):
    out = tmp_path / "squeezenet.bundle"
    compile_llvm(MODELS / "light_squeezenet.onnx", out, "--numerics", check=True, timeout=600)
    data = numerics_json(out)
    assert data["first_divergence"] is None
    observed = [e for e in data["layers"] if e["observed"]]
    assert len(observed) >= 25 and all(e["cosine"] > 0.9999 for e in observed)


def test_onnx_reference_of_another_graph(onnx_planted, tmp_path):
    model, _ = onnx_planted
    conv_block(tmp_path / "other.onnx", op_for_gate="Tanh")
    out = tmp_path / "b"
    fails(
        compile_llvm(model, out, "--numerics", "--reference", tmp_path / "other.onnx"),
        "other.onnx: tensor 'gate_out' (output of node 3 Sigmoid '/head/gate/Sigmoid'",
        "is made by node 3 Tanh",
        "same graph",
    )
    renamed = onnx.load(str(model))
    renamed.graph.node[1].output[0] = "act"
    renamed.graph.node[2].input[0] = "act"
    onnx.save(renamed, str(tmp_path / "renamed.onnx"))
    fails(
        run_cli(
            "compile", model, "-o", out, "--target", "llvm", "--numerics", "--reference", tmp_path / "renamed.onnx"
        ),
        "renamed.onnx: no tensor named 'relu_out' (output of node 1 Relu",
        "same graph",
    )
    assert not out.exists()
    fails(
        run_cli("compile", model, "-o", out, "--numerics", "--reference", MODELS / "small_cnn_fp32.tflite"),
        "small_cnn_fp32.tflite: the reference must be a .onnx model",
    )


def test_onnx_reference_with_a_different_shape(onnx_planted, tmp_path):
    model, _ = onnx_planted
    ref = onnx.load(str(model))
    for vi in (ref.graph.input[0], ref.graph.output[0]):
        vi.type.tensor_type.shape.dim[2].dim_value = 10
        vi.type.tensor_type.shape.dim[3].dim_value = 10
    onnx.save(ref, str(tmp_path / "larger.onnx"))
    fails(
        compile_llvm(model, tmp_path / "b", "--numerics", "--reference", tmp_path / "larger.onnx"),
        "larger.onnx: tensor 'x' (input) has shape [1, 3, 10, 10], [1, 3, 8, 8] in",
    )


# -- PyTorch ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pt2_planted(tmp_path_factory):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")
    from frontends import torch_nets

    root = tmp_path_factory.mktemp("pt2-planted")
    ep, args = torch_nets.resnet_program()
    torch.export.save(ep, root / "resnet.pt2")
    torch.manual_seed(0)
    changed = torch_nets.ResNet().eval()
    with torch.no_grad():
        changed.block1.conv2.bias += 0.5
    torch.export.save(torch.export.export(changed, args), root / "resnet_planted.pt2")
    return root / "resnet.pt2", root / "resnet_planted.pt2"


def test_pt2_planted_weight_is_the_first_divergence(pt2_planted, tmp_path):
    model, reference = pt2_planted
    out = tmp_path / "planted.bundle"
    proc = compile_unfused(model, out, reference)
    data = numerics_json(out)
    assert data["reference"].startswith("eager PyTorch 2.13.0") and "resnet_planted.pt2" in data["reference"]
    assert data["first_divergence"] == {"subgraph": 0, "op_index": 3}
    for op in (0, 1, 2):
        e = layer_entry(data, op)
        assert e["observed"] and not e["diverges"] and e["max_abs"] < 1e-5
    conv = layer_entry(data, 3)
    assert conv["opcode"] == "aten.convolution.default" and conv["name"] == "block1.conv2/convolution_2"
    assert conv["diverges"] and conv["max_abs"] == pytest.approx(0.5, rel=1e-3)
    assert "first divergence: node 3 aten.convolution.default" in proc.stdout


def test_pt2_against_eager_itself_shows_no_divergence(pt2_planted, tmp_path):
    out = tmp_path / "same.bundle"
    compile_llvm(pt2_planted[0], out, "--numerics", check=True)
    data = numerics_json(out)
    assert data["first_divergence"] is None and data["mode"] == "fused"
    observed = [e for e in data["layers"] if e["observed"]]
    assert len(observed) >= 5 and all(e["cosine"] > 0.99999 for e in observed)
    assert layer_entry(data, 12)["observed"]  # the model's result (sigmoid)


def test_pt2_reference_of_another_program(pt2_planted, tmp_path):
    import torch

    from third_party import mtcnn_nets

    torch.manual_seed(0)
    ep = torch.export.export(mtcnn_nets.PNet().eval(), (torch.randn(1, 3, 12, 12),))
    torch.export.save(ep, tmp_path / "pnet.pt2")
    fails(
        compile_llvm(pt2_planted[0], tmp_path / "b", "--numerics", "--reference", tmp_path / "pnet.pt2"),
        "pnet.pt2: ",
        "same graph",
    )


def test_onnx_input_of_open_size_needs_given_inputs(tmp_path):
    model = conv_block(tmp_path / "dyn.onnx")
    for vi in (model.graph.input[0], model.graph.output[0]):
        dim = vi.type.tensor_type.shape.dim[0]
        dim.ClearField("dim_value")
        dim.dim_param = "batch"
    onnx.save(model, str(tmp_path / "dyn.onnx"))
    fails(
        compile_llvm(tmp_path / "dyn.onnx", tmp_path / "b", "--numerics"),
        "dyn.onnx: input 'x' has a dimension of open size ('batch')",
        "--inputs X.npz",
    )
    assert not (tmp_path / "b").exists()
    npz = tmp_path / "x.npz"
    np.savez(npz, x=np.random.default_rng(1).uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32))
    out = tmp_path / "dyn.bundle"
    compile_llvm(tmp_path / "dyn.onnx", out, "--numerics-unfused", "--inputs", npz, check=True)
    data = numerics_json(out)
    assert data["first_divergence"] is None and all(e["observed"] for e in data["layers"])
    np.savez(npz, x=np.zeros((2, 3, 9, 8), np.float32))
    fails(
        run_cli(
            "compile", tmp_path / "dyn.onnx", "-o", tmp_path / "b", "--target", "llvm", "--numerics", "--inputs", npz
        ),
        "input 'x' has shape [2, 3, 9, 8], expected float32 ['batch', 3, 8, 8]",
    )


def _qdq(path, bias: float):
    """x + bias → QuantizeLinear (scale 0.01, zero point 3, int8) → DequantizeLinear → Relu."""
    from onnx import TensorProto, helper

    inits = [
        numpy_helper.from_array(np.array(0.01, np.float32), "s"),
        numpy_helper.from_array(np.array(3, np.int8), "zp"),
        numpy_helper.from_array(np.full((1, 4, 1, 1), bias, np.float32), "b"),
    ]
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], "add"),
        helper.make_node("QuantizeLinear", ["a", "s", "zp"], ["q"], "quant"),
        helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["dq"], "dequant"),
        helper.make_node("Relu", ["dq"], ["y"], "relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_onnx_quantize_linear_output_is_measured_in_steps(tmp_path):
    model = _qdq(tmp_path / "qdq.onnx", 0.3)
    out = tmp_path / "same.bundle"
    compile_llvm(model, out, "--numerics-unfused", check=True)
    data = numerics_json(out)
    quant = layer_entry(data, 1)
    assert quant["opcode"] == "QuantizeLinear" and quant["observed"]
    assert quant["steps"] is not None and quant["steps"] <= 1 and not quant["diverges"]
    assert all(layer_entry(data, op)["steps"] is None for op in (0, 2, 3))  # float tensors
    # A reference whose bias is two quantization steps (2 × 0.01) higher.
    reference = _qdq(tmp_path / "qdq_ref.onnx", 0.32)
    out = tmp_path / "shifted.bundle"
    compile_unfused(model, out, reference)
    data = numerics_json(out)
    assert data["first_divergence"] == {"subgraph": 0, "op_index": 0}
    quant = layer_entry(data, 1)
    assert quant["diverges"] and 1 < quant["steps"] <= 3
