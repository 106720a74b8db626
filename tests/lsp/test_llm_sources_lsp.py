"""A tiny Llama (Hugging Face, random weights) in the real server: the hover of a C line of
the q_proj kernel names the repeated layers once and the call chain to the model's line; go to
definition offers that line first, then the model document, then the frames that called it;
``tvmExplorer/costs`` grouped by module (issue 32)."""

from __future__ import annotations

import re

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient
from tests import llm_models

from tvm_explorer.bundle.reader import Bundle

from .conftest import SERVER, start_session, uri

pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")


@pytest.fixture(scope="module")
def llama(llm_bundles) -> Bundle:
    return Bundle(llm_bundles.get("llama"))


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, llama):
    await start_session(lsp_client, llama.root.parent, expect=1)
    yield
    await lsp_client.shutdown_session()


def _q_proj_store(bundle: Bundle) -> types.Position:
    lines = bundle.text("code/module.c").split("\n")
    n = next(i for i, line in enumerate(lines) if re.search(r"^\s+matmul\[", line))
    return types.Position(n, len(lines[n]) - len(lines[n].lstrip()))


def _text(loc: types.Location) -> str:
    path = loc.uri.removeprefix("file://")
    line = open(path).read().split("\n")[loc.range.start.line]
    return line[loc.range.start.character : loc.range.end.character]


async def test_hover_names_repeated_layers_once_with_the_chain(client, llama):
    doc = types.TextDocumentIdentifier(uri(llama.root / "code" / "module.c"))
    hover = await client.text_document_hover_async(types.HoverParams(doc, _q_proj_store(llama)))
    text = hover.contents.value.replace("\\", "")  # escaped Markdown
    assert "m.model.layers.{0..1}.self_attn.q_proj (Linear) — modeling_llama.py:" in text, text
    assert "×2 (ops " in text and "layers.0.self_attn" not in text
    chain = re.search(r"called from `(llm_models\.py:\d+ → modeling_llama\.py:\d+( → :\d+)+)`", text)
    assert chain and chain.group(1).startswith(f"llm_models.py:{llm_models.WRAPPER_LINE} → "), text


async def test_definition_offers_the_model_line_first_then_the_stack(client, llama):
    doc = types.TextDocumentIdentifier(uri(llama.root / "code" / "module.c"))
    found = await client.text_document_definition_async(types.DefinitionParams(doc, _q_proj_store(llama)))
    kinds = ["model" if loc.uri.endswith("/model.fxgraph") else "py" for loc in found]
    first_model = kinds.index("model")
    assert first_model > 0 and "py" in kinds[first_model:], kinds
    assert found[0].uri.endswith("/modeling_llama.py") and _text(found[0]).startswith("query_states = self.q_proj(")
    callers = [loc for loc in found[first_model:] if not loc.uri.endswith("/model.fxgraph")]
    assert callers[-1].uri == uri(llm_models.__file__)
    assert callers[-1].range.start.line + 1 == llm_models.WRAPPER_LINE
    assert any("self.self_attn(" in _text(loc) for loc in callers)


async def test_costs_grouped_by_module(client, llama):
    got = await client.protocol.send_request_async("tvmExplorer/costs", {"bundle": uri(llama.root), "group": "module"})
    rows = {row.name: row for row in got.layers}
    q = rows["m.model.layers.{0..1}.self_attn.q_proj"]
    assert q.members == ["m.model.layers.0.self_attn.q_proj", "m.model.layers.1.self_attn.q_proj"]
    assert q.location is not None and q.location.uri.endswith("/model.fxgraph")
    assert sum(row.code_lines for row in got.layers) == sum(lay["code_lines"] for lay in llama.costs()["layers"])
    assert sorted(i for row in got.layers for i in row.layer_ids) == [lay.id for lay in llama.layers]
    plain = await client.protocol.send_request_async("tvmExplorer/costs", {"bundle": uri(llama.root)})
    assert len(plain.layers) == len(llama.layers) and not plain.layers[0].members
    # One row per layer: named by its module path (the scope most share left out, said in the
    # note), its FX node after the figures; short enough for the side bar.
    by_name = {row.name: row for row in plain.layers}
    down = by_name["m.model.layers.0.mlp.down_proj/mm_6"]
    assert (down.label, down.node) == ("layers.0.mlp.down_proj", "mm_6")
    assert by_name["m.lm_head/mm_14"].label == "m.lm_head"
    assert all(row.label and len(row.label) <= 28 for row in plain.layers)
    assert plain.scope == "m.model."


async def test_lenses_and_layer_places_name_repeated_layers_once(client, llama):
    model = types.TextDocumentIdentifier(uri(llama.root / "model.fxgraph"))
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(model))
    lines = llama.text("model.fxgraph").split("\n")
    heading = {
        lines[lens.range.start.line]: lens.command.title
        for lens in lenses
        if lines[lens.range.start.line].startswith("module ")
    }
    title = heading["module m.model.layers.0.self_attn.q_proj (Linear)"]
    # the session's Llama is profiled: time and share first, then code, workspace and layers
    assert re.fullmatch(
        r"module: [\d.]+ ms · \d+ % · \d+ C lines · .* · 4 layers · all 2 repeats "
        r"\(m\.model\.layers\.\{0\.\.1\}\.self_attn\.q_proj\): [\d.]+ ms · \d+ % · \d+ C lines · .* · 8 layers",
        title,
    ), title
    assert "module m.model.layers.1.self_attn.q_proj (Linear)" in heading  # its first heading too
    doc = types.TextDocumentIdentifier(uri(llama.root / "code" / "module.c"))
    got = await client.protocol.send_request_async(
        "tvmExplorer/layerPlaces", {"textDocument": {"uri": doc.uri}, "position": _q_proj_store(llama)}
    )
    assert len(got.layers) == 8 and len(got.labels) == 4
    assert re.fullmatch(
        r"aten\.mm\.default ops \d+, \d+ m\.model\.layers\.\{0\.\.1\}\.self_attn\.q_proj", got.labels[0]
    )


async def test_every_graph_node_click_finds_its_layer(client, llama):
    """The graph's node click asks for Layer Places at the node's model-document place: a
    PyTorch model document indents its node entries, and the place starts at the line's
    start (its indentation), where no layer was found (the editor said "no layer is known at
    this position" on every node)."""
    got = await client.protocol.send_request_async("tvmExplorer/modelGraph", {"bundle": uri(llama.root)})
    nodes = got.document["nodes"] if isinstance(got.document, dict) else got.document.nodes
    asked = 0
    for node in nodes[:: max(1, len(nodes) // 40)]:  # a spread of the model's nodes
        node = node if isinstance(node, dict) else node._asdict()
        places = [p if isinstance(p, dict) else p._asdict() for p in node["places"]]
        model = next(p for p in places if p["stage"] == "model")
        assert llama.text(model["path"]).split("\n")[model["line"]][: model["character"] + 1].isspace()
        found = await client.protocol.send_request_async(
            "tvmExplorer/layerPlaces",
            {
                "textDocument": {"uri": f"{got.root}/{model['path']}"},
                "position": {"line": model["line"], "character": model["character"]},
            },
        )
        assert [(lay.op_index, lay.opcode) for lay in found.layers] == [(node["op_index"], node["opcode"])], node["id"]
        assert found.places, node["id"]
        asked += 1
    assert asked >= 20
