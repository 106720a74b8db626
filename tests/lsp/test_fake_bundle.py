"""End-to-end tests against the hand-written bundle (every rule of docs/navigation.md with
exactly known answers)."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import SERVER, position_of, start_session, uri
from .fake_bundle import texts

TEXTS = texts()


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, fake_workspace):
    await start_session(lsp_client, fake_workspace)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def bundle(fake_workspace):
    return (fake_workspace / "bundles" / "tiny").resolve()


def doc(bundle, path):
    return types.TextDocumentIdentifier(uri(bundle / path))


def where(bundle, locations):
    """(path, text) of each location, for readable assertions."""
    out = []
    for loc in locations:
        if isinstance(loc, dict):
            loc = types.Location(
                loc["uri"],
                types.Range(types.Position(**loc["range"]["start"]), types.Position(**loc["range"]["end"])),
            )
        rel = loc.uri[len(uri(bundle)) + 1 :]
        lines = TEXTS[rel].split("\n")
        s, e = loc.range.start, loc.range.end
        if s.line == e.line:
            text = lines[s.line][s.character : e.character]
        else:
            text = lines[s.line][s.character :]
        out.append((rel, text.strip()))
    return out


async def definition(client, bundle, path, needle, occurrence=0, delta=0):
    pos = position_of(TEXTS[path], needle, occurrence, delta)
    return await client.text_document_definition_async(types.DefinitionParams(doc(bundle, path), pos))


async def declaration(client, bundle, path, needle, occurrence=0, delta=0):
    pos = position_of(TEXTS[path], needle, occurrence, delta)
    return await client.text_document_declaration_async(types.DeclarationParams(doc(bundle, path), pos))


async def test_progress_reported_while_loading(client: LanguageClient):
    reports = [v for values in client.progress_reports.values() for v in values]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


async def test_definition_from_c_goes_to_layer(client, bundle):
    found = await definition(client, bundle, "code/module.c", "y_1[i] = max")
    assert where(bundle, found) == [("model.tflgraph", "op 1  RELU  (conv1) -> relu1 [1,8,8,4] float32")]


async def test_definition_with_several_origins(client, bundle):
    found = await definition(client, bundle, "relax/007-FuseTIR.relax", "lv2 =")
    assert [w[1].split()[2] for w in where(bundle, found)] == ["CONV_2D", "RELU"]


async def test_definition_on_tensor_in_model_goes_to_producer(client, bundle):
    found = await definition(client, bundle, "model.tflgraph", "conv1", occurrence=1)
    assert where(bundle, found) == [("model.tflgraph", "op 0  CONV_2D  (input, w0) -> conv1 [1,8,8,4] float32")]


@pytest.mark.parametrize(
    "path, needle, expected",
    [
        ("code/module.c", "t[i] = (x_1", [("tir/012-s_tir.LowerOpaqueBlock.tir", "t[i] = x_1[i] * w[i]")]),
        ("tir/012-s_tir.LowerOpaqueBlock.tir", "t[i] = x_1", [("tir/000-input.tir", "t[i] = x[i] * w[i]")]),
        (
            "tir/000-input.tir",
            "t[i] = x",
            [("relax/007-FuseTIR.relax", "lv2 = R.call_tir(cls.fused_conv2d_relu, (x,))")],
        ),
        (
            "relax/007-FuseTIR.relax",
            "lv2 =",
            [
                ("relax/004-LegalizeOps.relax", "lv = R.call_tir(cls.conv2d, (x,))"),
                ("relax/004-LegalizeOps.relax", "lv1 = R.call_tir(cls.relu, (lv,))"),
            ],
        ),
        ("relax/004-LegalizeOps.relax", "y[i] = x[i] * w", [("relax/000-import.relax", "lv = R.nn.conv2d(x, w)")]),
        ("relax/004-LegalizeOps.relax", "lv1 = R.call_tir", [("relax/000-import.relax", "lv1 = R.nn.relu(lv)")]),
        (
            "relax/000-import.relax",
            "lv1 = R.nn",
            [("model.tflgraph", "op 1  RELU  (conv1) -> relu1 [1,8,8,4] float32")],
        ),
        ("model.tflgraph", "CONV_2D", []),
    ],
)
async def test_previous_pass_chain(client, bundle, path, needle, expected):
    """Pass by pass (every step here changes the text, so none is skipped)."""
    pos = position_of(TEXTS[path], needle)
    custom = await client.protocol.send_request_async(
        "tvmExplorer/previousPass",
        types.TextDocumentPositionParams(doc(bundle, path), pos),
    )
    assert where(bundle, custom) == (expected if expected and expected[0][0] != "model.tflgraph" else [])


@pytest.mark.parametrize(
    "path, needle, expected",
    [
        ("code/module.c", "t[i] = (x_1", [("tir/012-s_tir.LowerOpaqueBlock.tir", "t[i] = x_1[i] * w[i]")]),
        (
            "tir/012-s_tir.LowerOpaqueBlock.tir",
            "t[i] = x_1",
            [("relax/007-FuseTIR.relax", "lv2 = R.call_tir(cls.fused_conv2d_relu, (x,))")],
        ),
        (
            "tir/000-input.tir",
            "t[i] = x",
            [("relax/007-FuseTIR.relax", "lv2 = R.call_tir(cls.fused_conv2d_relu, (x,))")],
        ),
        (
            "relax/007-FuseTIR.relax",
            "lv2 =",
            [
                ("model.tflgraph", "op 0  CONV_2D  (input, w0) -> conv1 [1,8,8,4] float32"),
                ("model.tflgraph", "op 1  RELU  (conv1) -> relu1 [1,8,8,4] float32"),
            ],
        ),
        (
            "relax/000-import.relax",
            "lv1 = R.nn",
            [("model.tflgraph", "op 1  RELU  (conv1) -> relu1 [1,8,8,4] float32")],
        ),
        ("model.tflgraph", "CONV_2D", []),
    ],
)
async def test_previous_stage_jumps_ir_levels(client, bundle, path, needle, expected):
    found = await declaration(client, bundle, path, needle)
    assert where(bundle, found) == expected
    pos = position_of(TEXTS[path], needle)
    custom = await client.protocol.send_request_async(
        "tvmExplorer/previousStage",
        types.TextDocumentPositionParams(doc(bundle, path), pos),
    )
    assert where(bundle, custom) == expected


async def test_hover_in_scheduled_tir(client, bundle):
    path = "tir/012-s_tir.LowerOpaqueBlock.tir"
    hover = await client.text_document_hover_async(
        types.HoverParams(doc(bundle, path), position_of(TEXTS[path], "y_1[i] = T.max"))
    )
    text = hover.contents.value
    assert text.startswith("**RELU** `relu1` — op 1, layer output  \n→ `float32[1,8,8,4]`")
    assert "In PrimFunc `fused_conv2d_relu`, shared with op 0 CONV\\_2D" in text
    assert "TIR after pass 32 `s_tir.LowerOpaqueBlock`" in text
    assert "schedule step 2" in text and "traces/fused_conv2d_relu.py" in text


async def test_references_of_a_layer(client, bundle):
    path = "model.tflgraph"
    found = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc(bundle, path),
            position=position_of(TEXTS[path], "RELU"),
            context=types.ReferenceContext(include_declaration=False),
        )
    )
    # A map: the last Relax and TIR documents and the code (every pass is
    # tvmExplorer/layerPlaces); the model entry is the declaration, not asked for here.
    assert [w[0] for w in where(bundle, found)] == [
        "relax/007-FuseTIR.relax",
        "tir/012-s_tir.LowerOpaqueBlock.tir",
        "code/module.c",
    ]


async def test_blank_and_outside_positions_answer_empty(client, bundle):
    path = "relax/000-import.relax"
    blank = TEXTS[path].split("\n").index("")
    for pos in [types.Position(blank, 0), types.Position(0, 500), types.Position(10_000, 0), types.Position(4, 0)]:
        params = types.DefinitionParams(doc(bundle, path), pos)
        assert await client.text_document_definition_async(params) == []
        assert await client.text_document_hover_async(types.HoverParams(doc(bundle, path), pos)) is None
    other = types.TextDocumentIdentifier("file:///nonexistent/x.relax")
    assert await client.text_document_definition_async(types.DefinitionParams(other, types.Position(0, 0))) == []


async def test_list_bundles_and_passes(client, bundle):
    result = await client.protocol.send_request_async("tvmExplorer/listBundles", {})
    (info,) = result.bundles
    assert (info.root, info.model, info.target, info.passes, info.documents) == (str(bundle), "tiny.tflite", "c", 6, 7)
    passes = await client.protocol.send_request_async("tvmExplorer/listPasses", {"bundle": uri(bundle)})
    names = [(p.index, p.stage, p.name, p.changed) for p in passes.passes]
    assert names[:2] == [(0, "relax", "import", True), (1, "relax", "DispatchSampling", False)]
    assert passes.passes[0].before is None
    assert passes.passes[2].after == uri(bundle / "relax/004-LegalizeOps.relax")
    # Any document of the bundle names it too; an unknown bundle has no passes.
    same = await client.protocol.send_request_async("tvmExplorer/listPasses", {"bundle": uri(bundle / "code/module.c")})
    assert len(same.passes) == 6
    none = await client.protocol.send_request_async("tvmExplorer/listPasses", {"bundle": "file:///x"})
    assert list(none.passes) == []


async def test_origins_request_uses_documented_field_names(client, bundle):
    path = "relax/007-FuseTIR.relax"
    result = await client.protocol.send_request_async(
        "tvmExplorer/origins",
        {
            "textDocument": {"uri": uri(bundle / path)},
            "position": {"line": position_of(TEXTS[path], "lv2 =").line, "character": 12},
        },
    )
    origins = result.origins
    assert [(o.subgraph, o.op_index, o.opcode, list(o.outputs), o.is_output) for o in origins] == [
        (0, 0, "CONV_2D", ["conv1"], True),
        (0, 1, "RELU", ["relu1"], True),
    ]
    assert origins[0].location.uri == uri(bundle / "model.tflgraph")


async def test_document_symbols_nest(client, bundle):
    path = "relax/004-LegalizeOps.relax"
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc(bundle, path)))
    assert [s.name for s in symbols] == ["conv2d", "relu", "add", "main"]
    main = symbols[-1]
    assert [(c.name, c.detail) for c in main.children] == [("lv", "conv2d"), ("lv1", "relu"), ("gv", "add")]
    model = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc(bundle, "model.tflgraph")))
    assert [(s.name, s.detail) for s in model] == [
        ("0: CONV_2D conv1", "conv1"),
        ("1: RELU relu1", "relu1"),
        ("2: ADD out", "out"),
    ]


async def test_code_lens_counts_places_per_layer(client, bundle):
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(doc(bundle, "model.tflgraph")))
    # per layer: its places, then its history through the passes (at the same position)
    assert [lens.command.title for lens in lenses] == ["1 function in generated code · 2 in IR", "Pass history"] * 3
    assert lenses[0].command.command == "tvmExplorer.showReferences"
    assert lenses[1].command.command == "tvmExplorer.showLayerHistory"
    assert lenses[1].command.arguments == lenses[0].command.arguments
    assert not await client.text_document_code_lens_async(types.CodeLensParams(doc(bundle, "code/module.c")))


async def test_document_links_to_primfunc_and_trace(client, bundle):
    links = await client.text_document_document_link_async(
        types.DocumentLinkParams(doc(bundle, "relax/007-FuseTIR.relax"))
    )
    assert [link.target.split("/tiny/")[1] for link in links] == [
        "tir/000-input.tir#L4,5",
        "tir/000-input.tir#L10,5",
    ]  # the def lines
    traced = await client.text_document_document_link_async(
        types.DocumentLinkParams(doc(bundle, "tir/012-s_tir.LowerOpaqueBlock.tir"))
    )
    assert [link.target.split("/tiny/")[1] for link in traced] == ["traces/fused_conv2d_relu.py"]


async def test_references_from_ir_include_declaration(client, bundle):
    path = "code/module.c"
    found = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=doc(bundle, path),
            position=position_of(TEXTS[path], "y_1[i] = (x_1"),
            context=types.ReferenceContext(include_declaration=True),
        )
    )
    places = where(bundle, found)
    assert places[0] == ("model.tflgraph", "op 2  ADD  (relu1, c) -> out [1,8,8,4] float32")
    assert places[1:] == [
        ("relax/007-FuseTIR.relax", "gv = R.call_tir(cls.add, (lv2,))"),
        ("tir/012-s_tir.LowerOpaqueBlock.tir", "y_1[i] = x_1[i] + c[i]"),
        ("code/module.c", "y_1[i] = (x_1[i] + c[i]);"),
    ]


async def test_hover_on_model_layer_and_fused_binding(client, bundle):
    hover = await client.text_document_hover_async(
        types.HoverParams(doc(bundle, "model.tflgraph"), position_of(TEXTS["model.tflgraph"], "ADD"))
    )
    assert hover.contents.value.startswith("**ADD** `out` — op 2  \n")
    assert "Ended up in 1 function in generated code · 2 in IR." in hover.contents.value
    assert "Model document of `tiny.tflite`" in hover.contents.value
    path = "relax/007-FuseTIR.relax"
    hover = await client.text_document_hover_async(
        types.HoverParams(doc(bundle, path), position_of(TEXTS[path], "lv2 ="))
    )
    assert hover.contents.value.count("layer output") == 2
    assert "Relax after pass 7 `FuseTIR`" in hover.contents.value
