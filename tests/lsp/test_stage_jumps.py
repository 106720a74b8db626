"""Stage jumps, pass steps and the layer map on real bundles (c and cuda): declaration goes one
IR level back (code -> final TIR -> the Relax binding calling the PrimFunc -> the model),
previousPass/nextPass skip passes that left the text unchanged, references read like a map and
layerPlaces lists every pass. Every check reads the text at the landing."""

from __future__ import annotations

import re

import pytest
from lsprotocol import types

from tvm_explorer.bundle.reader import Bundle

from .conftest import uri
from .real import landing, pos, real_bundle, real_client, td

client = real_client()
cnn = real_bundle("small_cnn_fp32")
int8 = real_bundle("small_cnn_int8")
cuda = real_bundle("small_cnn_fp32_cuda")


def last(bundle: Bundle, stage: str) -> str:
    return [d.path for d in bundle.documents if d.stage == stage][-1]


C_ACCUMULATE = r"\n\s+((\w+)\[[^\n]*\] = \(?\2\[[^\n]*\*)"  # acc[i] = (acc[i] + a * b)
CUDA_ACCUMULATE = r"\n\s+((conv2d\w*_local_ptr)\[\d+\] = __\d+;)"  # vectorized: acc[0] = __1;


def conv_update(text: str, func: str, header: str, pattern: str = C_ACCUMULATE) -> int:
    """Offset of the conv accumulation store in ``func``'s body."""
    body = text.rindex(header.format(func=func))  # the definition, after any prototype
    m = re.compile(pattern).search(text, body)
    return m.start(1)


async def step(client, method, bundle, path, position):
    """A custom request; a Location[] answer comes back as Locations (the client does not
    know the custom result types and hands over plain JSON)."""
    got = await client.protocol.send_request_async(method, types.TextDocumentPositionParams(td(bundle, path), position))
    if isinstance(got, list):
        return [location(plain(d)) for d in got]
    return plain(got)


def plain(x):
    """Plain JSON of an answer the client turned into named tuples (which rename a field
    called ``pass``, a Python keyword, to ``_1``: its position in a place)."""
    if hasattr(x, "_asdict"):
        return {("pass" if k == "_1" else k): plain(v) for k, v in x._asdict().items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def _position(d) -> types.Position:
    return types.Position(d["line"], d["character"])


def location(d) -> types.Location:
    return types.Location(d["uri"], types.Range(_position(d["range"]["start"]), _position(d["range"]["end"])))


@pytest.mark.parametrize(
    "name, code, header, pattern",
    [
        ("small_cnn_fp32", "code/module.c", "int32_t __tvm_ffi_{func}(", C_ACCUMULATE),
        ("small_cnn_int8", "code/module.c", "int32_t __tvm_ffi_{func}(", C_ACCUMULATE),
        ("small_cnn_fp32_cuda", "code/device.cu", " {func}_kernel(", CUDA_ACCUMULATE),
    ],
)
async def test_declaration_from_a_c_conv_line_reaches_conv_2d_in_three_steps(
    client, real_workspace, name, code, header, pattern
):
    bundle = Bundle(real_workspace["bundles"][name])
    text = bundle.text(code)
    func = re.search(r"\b(fused_conv2d1_\w+?)(?:_kernel)?\(", text).group(1)
    offset = conv_update(text, func, header, pattern)
    store = text[offset : text.index("\n", offset)].split("[")[0]
    found = await client.text_document_declaration_async(types.DeclarationParams(td(bundle, code), pos(text, offset)))
    rel, got, _ = landing(bundle, found[0])
    assert rel == last(bundle, "tir") and len(found) == 1
    assert got.startswith(store.replace("_ptr", "") + "[") or got.startswith(store + "["), got
    # Final TIR -> the binding calling the PrimFunc in the last Relax document.
    found = await client.text_document_declaration_async(types.DeclarationParams(td(bundle, rel), found[0].range.start))
    rel, got, _ = landing(bundle, found[0])
    assert rel == last(bundle, "relax") and len(found) == 1
    assert re.match(rf"(\w+(: [^\n]*?)? = )?{func}\(", got), got
    # Relax -> the model's CONV_2D entry (op 2), first.
    found = await client.text_document_declaration_async(types.DeclarationParams(td(bundle, rel), found[0].range.start))
    rel, got, _ = landing(bundle, found[0])
    assert rel == "model.tflgraph" and got.startswith("op 2 CONV_2D")
    custom = await step(client, "tvmExplorer/previousStage", bundle, code, pos(text, offset))
    assert [landing(bundle, c)[0] for c in custom] == [last(bundle, "tir")]


async def test_previous_pass_goes_from_a_fused_call_to_all_its_bindings_conv_first(client, cnn):
    fuse = next(d.path for d in cnn.documents if d.path.endswith("-FuseOps.relax"))
    text = cnn.text(fuse)
    call = re.compile(r"\n\s+(\w+)(: [^\n]*?)? = fused_conv2d1_add1_relu1\(").search(text, text.index("def main("))
    found = await step(client, "tvmExplorer/previousPass", cnn, fuse, pos(text, call.start(1)))
    got = [landing(cnn, f) for f in found]
    order = {d.path: d.order for d in cnn.documents}
    assert all(rel == got[0][0] and order[rel] < order[fuse] for rel, _, _ in got)
    callees = [re.search(r"R\.call_tir\((\w+),", t).group(1) for _, t, _ in got]
    assert callees == ["conv2d1", "add1", "relu1"], got


async def test_previous_pass_skips_passes_that_left_the_text_unchanged(client, cnn):
    text = cnn.text("code/module.c")
    offset = conv_update(text, "fused_conv2d1_add1_relu1", "int32_t __tvm_ffi_{func}(")
    path, position = "code/module.c", pos(text, offset)
    seen = []
    while True:
        found = await step(client, "tvmExplorer/previousPass", cnn, path, position)
        if not found:
            break
        rel, got, _ = landing(cnn, found[0])
        seen.append(rel)
        # The text there differs from the text here (whitespace aside).
        here_text = " ".join(_range_text(cnn, path, position).split())
        assert " ".join(got.split()) != here_text or len(found) > 1, (path, rel)
        path, position = rel, found[0].range.start
        assert len(seen) < len(cnn.documents)
    tir_docs = [d.path for d in cnn.documents if d.stage == "tir"]
    assert seen[0] == tir_docs[-1]
    assert len([s for s in seen if s.startswith("tir/")]) < len(tir_docs)  # some were skipped
    assert seen[-1] == "relax/000-import.relax"
    next_found = await step(client, "tvmExplorer/nextPass", cnn, "relax/000-import.relax", position)
    assert next_found and landing(cnn, next_found[0])[0] != "relax/000-import.relax"


def _range_text(bundle: Bundle, path: str, position: types.Position) -> str:
    """Text of the innermost indexed range at a position."""
    text = bundle.text(path)
    lines = text.split("\n")
    offset = sum(len(x) + 1 for x in lines[: position.line]) + position.character
    rng = bundle.index(path).at(offset)
    return text[rng.start : rng.end]


async def test_references_on_a_layer_read_like_a_map(client, cnn):
    model = cnn.text("model.tflgraph")
    entry = model.index("op 2 CONV_2D")
    refs = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=td(cnn, "model.tflgraph"),
            position=pos(model, entry),
            context=types.ReferenceContext(include_declaration=True),
        )
    )
    got = [landing(cnn, r) for r in refs]
    docs = [rel for rel, _, _ in got]
    stages = ["model.tflgraph", last(cnn, "relax"), last(cnn, "tir"), "code/module.c"]
    assert sorted(set(docs), key=stages.index) == stages
    assert docs == sorted(docs, key=stages.index)  # pipeline order
    assert len(got) == len(set((r.uri, r.range.start.line, r.range.start.character) for r in refs))
    assert got[0][1].startswith("op 2 CONV_2D")
    relax = [t for rel, t, _ in got if rel == last(cnn, "relax")]
    assert len(relax) == 1 and relax[0].startswith("fused_conv2d1_add1_relu1(")
    c_text = cnn.text("code/module.c")
    body = c_text.index("int32_t __tvm_ffi_fused_conv2d1_add1_relu1(")
    stores = re.findall(r"\n\s+(\w+\[[^\n]*\] = [^\n]*;)", c_text[body : c_text.index("\n}\n", body)])
    assert [t for rel, t, _ in got if rel == "code/module.c"] == stores
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(td(cnn, "model.tflgraph")))
    lens = next(l for l in lenses if l.range.start.line == pos(model, entry).line)
    # One function in the code (its five stores), the Relax binding and the TIR PrimFunc.
    assert lens.command.title == "1 function in generated code · 2 in IR"


async def test_layer_places_lists_every_pass_in_pipeline_order(client, cnn):
    model = cnn.text("model.tflgraph")
    entry = model.index("op 2 CONV_2D")
    result = await step(client, "tvmExplorer/layerPlaces", cnn, "model.tflgraph", pos(model, entry))
    assert [(l["opcode"], l["op_index"], l["name"]) for l in result["layers"]] == [
        ("CONV_2D", 2, "small_cnn_1/conv2d_1_2")
    ]
    order = {d.path: d.order for d in cnn.documents}
    places = result["places"]
    rels = [p["uri"][len(uri(cnn.root)) + 1 :] for p in places]
    assert rels[0] == "model.tflgraph" and places[0]["stage"] == "model" and places[0]["pass"] is None
    assert landing(cnn, location(places[0]))[1].startswith("op 2 CONV_2D")
    assert [order[r] for r in rels] == sorted(order[r] for r in rels)
    assert {p["stage"] for p in places} == {"model", "relax", "tir", "code"}
    assert len(set(rels)) > 10  # every pass document, not only the last of each stage
    lasts = {r for r, p in zip(rels, places) if p["last_of_stage"]}
    assert lasts == {"model.tflgraph", last(cnn, "relax"), last(cnn, "tir"), "code/module.c"}
    passes = {p["after"]: p for p in cnn.manifest["passes"] if p["changed"]}
    for r, p in zip(rels[1:], places[1:]):
        if p["stage"] != "code":
            assert p["pass"]["name"] == passes[r]["name"] and p["pass"]["index"] == passes[r]["index"]
    # ``changed``: false exactly where the stage's previous document has the same text there.
    unchanged = [(r, p) for r, p in zip(rels, places) if not p["changed"] and p["stage"] == "tir"]
    changed = [(r, p) for r, p in zip(rels, places) if p["changed"] and p["stage"] == "tir"]
    assert unchanged and changed
    tir_docs = [d.path for d in cnn.documents if d.stage == "tir"]
    for r, p in unchanged[:5] + changed[:5]:
        text = landing(cnn, location(p))[1]
        prev = tir_docs[tir_docs.index(r) - 1] if tir_docs.index(r) else None
        same = prev is not None and " ".join(text.split()) in " ".join(cnn.text(prev).split())
        assert same == (not p["changed"]), (r, text)


def test_layer_place_is_sent_with_a_field_named_pass():
    from tvm_explorer.lsp.protocol import LayerPlaceInfo, LayerPlacesResult, PassRef, converter_factory

    rng = types.Range(types.Position(1, 2), types.Position(1, 5))
    place = LayerPlaceInfo("tir", PassRef(3, "FuseOps"), "file:///x", rng, True, False)
    sent = converter_factory().unstructure(LayerPlacesResult([], [place]))["places"][0]
    assert sent == {
        "stage": "tir",
        "pass": {"index": 3, "name": "FuseOps"},
        "uri": "file:///x",
        "range": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 5}},
        "last_of_stage": True,
        "changed": False,
        "role": "compute",
        "function": "",
        "note": "",
    }
