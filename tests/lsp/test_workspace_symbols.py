"""Layers by name: ``workspace/symbol`` (Ctrl+T) finds layers by TF layer name, opcode or op
number across the loaded bundles, and the model document's outline names each layer (real
server, real bundles)."""

from __future__ import annotations

from lsprotocol import types

from .conftest import uri
from .real import landing, real_bundle, real_client, td

client = real_client()
cnn = real_bundle("small_cnn_fp32")


async def test_workspace_symbol_finds_a_layer_by_its_tf_name(client, cnn):
    got = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="conv2d_1_2"))
    mine = [s for s in got if s.location.uri.startswith(uri(cnn.root) + "/")]
    # the layer named so first (looser matches, as the editor's fuzzy filter keeps, after),
    # named by the name typed (the whole TF name after it)
    assert mine[0].name == "conv2d_1_2 · op 2 CONV_2D", [s.name for s in got]
    assert mine[0].kind == types.SymbolKind.Operator and cnn.root.name in mine[0].container_name
    assert "small_cnn_1/conv2d_1_2" in mine[0].container_name
    rel, text, _ = landing(cnn, mine[0].location)
    assert rel == "model.tflgraph" and text.startswith("op 2 CONV_2D  small_cnn_1/conv2d_1_2")
    # Every bundle of the workspace answers (the int8 and CUDA builds of the same network too).
    assert len({s.location.uri.rsplit("/", 1)[0] for s in got}) >= 3
    by_opcode = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="dense_1_2"))
    assert any(s.name.startswith("dense_1_2 · op 6 FULLY_CONNECTED") for s in by_opcode)
    assert not await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="no_such_layer_zz"))


async def test_model_outline_names_each_layer(client, cnn):
    outline = await client.text_document_document_symbol_async(types.DocumentSymbolParams(td(cnn, "model.tflgraph")))
    layers = [s for s in outline if s.kind == types.SymbolKind.Operator]
    names = [s.name for s in layers]
    assert "2: CONV_2D small_cnn_1/conv2d_1_2" in names, names
    assert "5: FULLY_CONNECTED small_cnn_1/dense_1" in names, names
