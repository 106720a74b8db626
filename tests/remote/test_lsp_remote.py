"""Where a profile was measured, through the real language server: the hover of a layer and
``tvmExplorer/costs`` (the Hot Layers view) say "measured on <cpu> (key board-a), median of
2 devices"."""

from __future__ import annotations

import json

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient
from tests.lsp.conftest import SERVER, start_session, uri
from tests.remote.conftest import KEY


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tracker_bundle):
    await start_session(lsp_client, tracker_bundle[0].parent, expect=1)
    yield
    await lsp_client.shutdown_session()


def said(bundle) -> str:
    cpu = json.loads((bundle / "costs.json").read_text())["profile"]["remote"]["devices"][0]["cpu"]
    return f"measured on {cpu} (key {KEY}), median of 2 devices"


async def test_hover_and_hot_layers_say_where(client, tracker_bundle):
    bundle = tracker_bundle[0]
    model = (bundle / "model.tflgraph").read_text().split("\n")
    op0 = next(i for i, ln in enumerate(model) if ln.startswith("op 0 FULLY_CONNECTED"))
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri(bundle / "model.tflgraph")), types.Position(op0, 2))
    )
    value = hover.contents.value
    from tvm_explorer.inert import markdown as md

    assert "**Cost**" in value and md.text(said(bundle)) in value and "median of 3 runs" in value, value
    result = await client.protocol.send_request_async("tvmExplorer/costs", {"bundle": uri(bundle)})
    assert result.measured and result.layers[0].opcode == "FULLY_CONNECTED"
    assert result.note.startswith(said(bundle)), result.note
