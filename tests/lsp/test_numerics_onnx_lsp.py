"""Numerics in the language server for an ONNX bundle (onnxruntime as reference): the model
document is ``model.onnxgraph``; hover on node 2 (the Add whose constant the reference
changed) shows its error and the first divergence, node 0 matches, and the divergent nodes
carry warnings."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from pytest_lsp import LanguageClient
from tests.conftest import run_cli

from frontends.onnx_graphs import conv_block
from tvm_explorer.bundle.reader import Bundle

from .conftest import planted_hovers, position_of, uri, workspace_client


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("numerics-onnx-ws")
    model = conv_block(root / "block.onnx")
    bias = next(t for t in model.graph.initializer if t.name == "head.bias")
    bias.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(bias) + np.float32(0.5), "head.bias"))
    onnx.save(model, str(root / "block_planted.onnx"))
    (root / "ws").mkdir()
    run_cli(
        "compile",
        root / "block.onnx",
        "-o",
        root / "ws" / "block",
        "--target",
        "llvm",
        "--numerics-unfused",
        "--reference",
        root / "block_planted.onnx",
        check=True,
    )
    return root / "ws"


client = workspace_client()


@pytest.fixture(scope="module")
def bundle(workspace):
    return Bundle(workspace / "block")


async def test_hover_on_an_onnx_node_shows_its_error(client: LanguageClient, bundle):
    value = await planted_hovers(client, bundle, "model.onnxgraph", "node 2 Add", "node 0 Conv")
    assert "DIVERGES" in value and "Numerics of node 2 vs onnxruntime" in value


async def test_divergent_onnx_nodes_are_warned_about(client: LanguageClient, bundle):
    doc_uri = uri(bundle.root / "model.onnxgraph")
    deadline = time.monotonic() + 30
    while doc_uri not in client.diagnostics:
        assert time.monotonic() < deadline, f"no diagnostics for {doc_uri}: {client.diagnostics}"
        await asyncio.sleep(0.1)
    text = bundle.text("model.onnxgraph")
    lines = {d.range.start.line: d for d in client.diagnostics[doc_uri]}
    node2 = position_of(text, "node 2 Add").line
    assert position_of(text, "node 0 Conv").line not in lines
    assert min(lines) == node2 and "(first divergence)" in lines[node2].message
    assert lines[node2].message.startswith("node 2 Add /head/bias/Add differs from the onnxruntime")


async def test_numerics_view_rows_lead_to_the_onnx_nodes(client: LanguageClient, bundle):
    result = await client.protocol.send_request_async("tvmExplorer/numerics", {"bundle": uri(bundle.root)})
    assert result.reference.startswith("onnxruntime 1.31.1 on block_planted.onnx")
    assert [layer.first for layer in result.layers] == [False, False, True, False, False]
    add = result.layers[2]
    text = bundle.text("model.onnxgraph")
    assert add.location.uri == uri(bundle.root / "model.onnxgraph")
    assert add.location.range.start.line == position_of(text, "node 2 Add").line
