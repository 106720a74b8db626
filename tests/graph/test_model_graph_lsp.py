"""``tvmExplorer/modelGraph`` through the real language server on a real bundle: every layer a
node with its places (whose paths, lines and excerpts are the bundle's own), the tensors as
edges, and one clear error for a file no loaded bundle holds."""

from __future__ import annotations

import shutil

import pytest
from pygls.exceptions import JsonRpcException
from tests.lsp.conftest import uri, workspace_client

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.lsp.protocol import RequestFailed


@pytest.fixture(scope="module")
def workspace(bundles, models_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("graph-ws")
    shutil.copytree(bundles.get(models_dir / "small_cnn_fp32.tflite", "c"), folder / "small.bundle")
    return folder


client = workspace_client()


async def test_the_graph_of_a_bundle(client, workspace):
    bundle = Bundle(workspace / "small.bundle")
    result = await client.protocol.send_request_async(
        "tvmExplorer/modelGraph", {"bundle": uri(bundle.root / "code" / "module.c")}
    )
    assert result.root == uri(bundle.root)
    doc = result.document
    assert [n.id for n in doc.nodes] == [str(lay.id) for lay in bundle.layers]
    # small_cnn is a chain: input → op 0 → … → op 7 → output.
    pairs = {(e.source, e.target) for e in doc.edges}
    assert {(str(i), str(i + 1)) for i in range(7)} <= pairs and len(doc.edges) == 9
    assert doc.groups[0].label == "small_cnn_1" and doc.groups[0].size == 7
    for node in doc.nodes:
        stages = [p.stage for p in node.places]
        assert stages[0] == "model" and "code" in stages, stages
        for place in node.places:
            lines = bundle.text(place.path).split("\n")
            assert place.excerpt and all(lines[n].startswith(text) for n, text in place.excerpt)
        entry = node.places[0]
        assert bundle.text(entry.path).split("\n")[entry.line].startswith(f"op {node.op_index} {node.opcode}")
        assert node.metrics.code > 0 and node.metrics.coverage == "to code"
    unmeasured = next(o for o in doc.overlays if o.id == "time")
    assert not unmeasured.available and "--profile" in unmeasured.note
    # The memory peak is the first convolution (its 26×26×16 float32 output, held while its
    # kernel's scratch is allocated): only that layer has bytes live there.
    memory = next(o for o in doc.overlays if o.id == "memory")
    assert memory.available and memory.unit == "bytes"
    live = {n.id: n.metrics.memory for n in doc.nodes}
    assert live["0"] == 26 * 26 * 16 * 4 and all(v is None for k, v in live.items() if k != "0"), live


async def test_a_file_of_no_bundle(client, workspace):
    (workspace / "notes.txt").write_text("x")
    with pytest.raises(JsonRpcException) as failed:  # an LSP error, its message shown by the editor
        await client.protocol.send_request_async("tvmExplorer/modelGraph", {"bundle": uri(workspace / "notes.txt")})
    assert failed.value.code == RequestFailed.CODE and "no loaded bundle holds" in failed.value.message
