"""Hovers of ONNX and PyTorch layers show the same facts as TFLite hovers: kernel size,
strides, padding, dilation, groups, units and the input -> output types, read from the model
document (real server, real bundles compiled from an .onnx and a .pt2)."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
import pytest_lsp
from lsprotocol import types
from onnx import TensorProto, helper, numpy_helper
from pytest_lsp import LanguageClient

from tvm_explorer.bundle.reader import Bundle

from .conftest import SERVER, compile_bundle, start_session, uri
from .real import pos

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

from frontends import torch_nets  # noqa: E402


def grouped_net(path) -> None:
    """Conv (3x3, stride 2, pads 1, group 2, dilation 1) -> Flatten -> Gemm (transB=1, 5 units)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "conv.weight")
    fc = numpy_helper.from_array(rng.standard_normal((5, 64)).astype(np.float32), "fc.weight")
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "conv.weight"],
            ["c"],
            "/net/conv/Conv",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            group=2,
        ),
        helper.make_node("Flatten", ["c"], ["f"], "/net/flatten/Flatten"),
        helper.make_node("Gemm", ["f", "fc.weight"], ["y"], "/net/fc/Gemm", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "grouped",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [w, fc],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests")
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("graph-facts-ws")
    (folder / "bundles").mkdir()
    grouped_net(folder / "grouped.onnx")
    ep, _ = torch_nets.resnet_program()
    torch.export.save(ep, folder / "resnet.pt2")
    return {
        "folder": folder,
        "onnx": Bundle(compile_bundle(folder / "grouped.onnx", folder / "bundles" / "grouped")),
        "torch": Bundle(compile_bundle(folder / "resnet.pt2", folder / "bundles" / "resnet")),
    }


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, workspace):
    await start_session(lsp_client, workspace["folder"], expect=2)
    yield
    await lsp_client.shutdown_session()


async def hover_on(client, bundle: Bundle, document: str, entry: str) -> str:
    text = bundle.text(document)
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri(bundle.root / document)), pos(text, text.index(entry) + 2))
    )
    return hover.contents.value.replace("\\", "")  # Markdown escapes aside


async def test_onnx_conv_and_gemm_hovers_show_their_attributes_and_types(client, workspace):
    bundle = workspace["onnx"]
    conv = await hover_on(client, bundle, "model.onnxgraph", "node 0 Conv")
    assert "3×3 kernel · stride 2 · padding 1 · groups 2" in conv, conv
    assert "`float32[1,4,8,8]`" in conv and "→ `float32[1,4,4,4]`" in conv, conv
    gemm = await hover_on(client, bundle, "model.onnxgraph", "node 2 Gemm")
    assert "5 units" in gemm and "→ `float32[1,5]`" in gemm, gemm


async def test_pytorch_conv_and_linear_hovers_show_their_attributes_and_types(client, workspace):
    bundle = workspace["torch"]
    stem = await hover_on(client, bundle, "model.fxgraph", "node 0 aten.convolution.default")
    assert "3×3 kernel · stride 1 · padding 1" in stem, stem
    assert "`float32[1,3,8,8]` → `float32[1,8,8,8]`" in stem, stem
    assert "groups" not in stem and "dilation" not in stem  # 1: nothing to say
    head = re.search(r"node \d+ aten\.addmm\.default", bundle.text("model.fxgraph")).group(0)
    linear = await hover_on(client, bundle, "model.fxgraph", head)
    assert "10 units" in linear, linear
