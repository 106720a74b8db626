"""Numerics in the language server, against a bundle compiled with ``--numerics-unfused``
from the ground-truth model and a reference whose ADD (op 1) bias was changed: hover shows a
layer's error, warnings sit on the divergent layers of the model document (op 1 first, none
on op 0), and ``tvmExplorer/numerics`` lists the layers in graph order."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient
from tests.conftest import run_cli

from numerics.planted import planted_reference
from tvm_explorer.bundle.reader import Bundle

from .conftest import planted_hovers, position_of, uri, workspace_client


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("numerics-ws")
    model, reference = planted_reference(root, "add/bias")
    (root / "ws").mkdir()
    out = root / "ws" / "planted"
    run_cli("compile", model, "-o", out, "--target", "llvm", "--numerics-unfused", "--reference", reference, check=True)
    return root / "ws"


client = workspace_client()


@pytest.fixture(scope="module")
def bundle(workspace):
    return Bundle(workspace / "planted")


async def _diagnostics(client: LanguageClient, doc_uri: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while doc_uri not in client.diagnostics:
        if time.monotonic() > deadline:
            raise AssertionError(f"no diagnostics published for {doc_uri}: {client.diagnostics}")
        await asyncio.sleep(0.1)
    return client.diagnostics[doc_uri]


async def test_divergent_layers_are_warned_about_in_the_model_document(client: LanguageClient, bundle):
    text = bundle.text("model.tflgraph")
    found = await _diagnostics(client, uri(bundle.root / "model.tflgraph"))
    assert found and all(d.severity == types.DiagnosticSeverity.Warning for d in found)
    lines = {d.range.start.line: d for d in found}
    op1 = position_of(text, "op 1 ADD").line
    op0 = position_of(text, "op 0 CONV_2D").line
    assert op0 not in lines
    first = min(lines)
    assert first == op1 and "(first divergence)" in lines[op1].message
    assert "op 1 ADD add/output" in lines[op1].message and "DIVERGES" in lines[op1].message
    assert lines[op1].range.end.line == op1  # one line, not the whole entry
    assert all(d.source == "tvm-explorer numerics" for d in found)


async def test_hover_on_a_layer_shows_its_error(client: LanguageClient, bundle):
    value = await planted_hovers(client, bundle, "model.tflgraph", "op 1 ADD", "op 0 CONV_2D")
    assert "unfused build" in value and "DIVERGES" in value


async def test_hover_in_the_ir_shows_the_error_of_the_layer_output_there(client: LanguageClient, bundle):
    relax = [d.path for d in bundle.documents if d.stage == "relax"][0]
    text = bundle.text(relax)
    doc = types.TextDocumentIdentifier(uri(bundle.root / relax))
    needle = next(line for line in text.split("\n") if "R.nn.relu" in line).strip()
    hover = await client.text_document_hover_async(types.HoverParams(doc, position_of(text, needle, delta=2)))
    assert "Numerics of op 2" in hover.contents.value


async def test_numerics_request_lists_layers_in_graph_order(client: LanguageClient, bundle):
    result = await client.protocol.send_request_async("tvmExplorer/numerics", {"bundle": uri(bundle.root)})
    assert result.reference.startswith("LiteRT interpreter on gt_planted.tflite")
    assert result.mode == "unfused"
    assert [layer.op_index for layer in result.layers] == [0, 1, 2, 3, 4]
    assert [layer.first for layer in result.layers] == [False, True, False, False, False]
    add = result.layers[1]
    assert add.location.uri == uri(bundle.root / "model.tflgraph")
    assert add.location.range.start.line == position_of(bundle.text("model.tflgraph"), "op 1 ADD").line
    assert add.observed_by == "unfused" and "DIVERGES" in add.summary
    empty = await client.protocol.send_request_async("tvmExplorer/numerics", {"bundle": "file:///nowhere"})
    assert empty.layers == [] and empty.reference == ""
