"""Stages side by side (issue 29): ``tvmExplorer/stageDocuments`` names the model document, the
last Relax, the final TIR and the generated code of a bundle; ``tvmExplorer/stageRanges`` gives,
for a position in any of them, the ranges of its layers in the others — through fusion (a line
of a fused kernel: all its layers) and one-to-many lowering (one layer: several kernels), tight
(statements, not functions) and in document order. Real int8 and CUDA bundles, real server."""

from __future__ import annotations

from lsprotocol import types

from .real import pos, real_bundle, real_client, td
from .test_stage_jumps import plain

client = real_client()
int8 = real_bundle("small_cnn_int8")
cuda = real_bundle("small_cnn_fp32_cuda")

C = "code/module.c"


async def stage_ranges(client, bundle, path, position):
    got = await client.protocol.send_request_async(
        "tvmExplorer/stageRanges", types.TextDocumentPositionParams(td(bundle, path), position)
    )
    return plain(got)


def texts(bundle, doc) -> list[str]:
    """The text of each range of one document of the answer."""
    path = doc["uri"].rsplit(str(bundle.root.name) + "/", 1)[1]
    lines = bundle.text(path).split("\n")
    out = []
    for r in doc["ranges"]:
        (l0, c0), (l1, c1) = (r["start"]["line"], r["start"]["character"]), (r["end"]["line"], r["end"]["character"])
        out.append(
            "\n".join([lines[l0][c0:]] + lines[l0 + 1 : l1]) + "\n" + lines[l1][:c1] if l1 > l0 else lines[l0][c0:c1]
        )
    return out


def function_at(lines: list[str], line: int) -> str:
    """The C function holding ``line``: the nearest definition above it."""
    return next(s for s in reversed(lines[: line + 1]) if s.startswith("TVM_DLL int32_t"))


def by_stage(result) -> dict[str, dict]:
    return {d["stage"]: d for d in result["documents"]}


def assert_ordered_and_disjoint(doc):
    spans = [
        ((r["start"]["line"], r["start"]["character"]), (r["end"]["line"], r["end"]["character"]))
        for r in doc["ranges"]
    ]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans


async def test_stage_documents_are_model_last_relax_final_tir_and_the_code(client, int8, cuda):
    for bundle, code in ((int8, ["code/module.c"]), (cuda, ["code/device.cu", "code/host.ll"])):
        got = plain(
            await client.protocol.send_request_async(
                "tvmExplorer/stageDocuments", {"bundle": td(bundle, "model.tflgraph").uri}
            )
        )
        docs = [(d["stage"], d["path"]) for d in got["documents"]]
        relax = [d.path for d in bundle.documents if d.stage == "relax"][-1]
        tir = [d.path for d in bundle.documents if d.stage == "tir"][-1]
        # the kernels before the host code that launches them (CUDA)
        assert docs == [("model", "model.tflgraph"), ("relax", relax), ("tir", tir)] + [("code", c) for c in code]


async def test_a_fused_c_kernel_line_highlights_all_its_layers_in_every_other_stage(client, int8):
    text = int8.text(C)
    # The kernel fusing MAX_POOL_2D (op 1) with the dequantize of CONV_2D (op 2)'s input.
    header = "TVM_DLL int32_t __tvm_ffi_fused_max_pool2d_dequantize3(void* self_handle, void* args, int32_t num_args, void* result) {"
    at = text.index(header) + len("TVM_DLL int32_t ")
    got = await stage_ranges(client, int8, C, pos(text, at))
    assert [(lay["op_index"], lay["opcode"]) for lay in got["layers"]] == [(1, "MAX_POOL_2D"), (2, "CONV_2D")]
    assert all(isinstance(lay["id"], int) for lay in got["layers"])
    stages = by_stage(got)
    assert list(stages) == ["model", "relax", "tir"]  # every stage but the queried one
    model = texts(int8, stages["model"])
    assert [m.split("  ")[0] for m in model] == ["op 1 MAX_POOL_2D", "op 2 CONV_2D"]
    relax = texts(int8, stages["relax"])
    assert [r.split("(")[0] for r in relax] == [
        "fused_max_pool2d_dequantize3",
        "fused_conv2d1_add1_quantize1_tir_clip1",
    ]
    tir = texts(int8, stages["tir"])
    # Tight: one statement each (stores), never a whole PrimFunc; both layers' statements.
    assert all("\n" not in t and " = " in t and "def " not in t for t in tir), tir
    assert any(t.startswith("pool_max_intermediate[") for t in tir)
    assert any(t.startswith("dequantized_intermediate_1[") for t in tir)
    assert any(t.startswith("conv2d_nhwc_intermediate[") for t in tir)
    for doc in stages.values():
        assert_ordered_and_disjoint(doc)


async def test_a_store_line_of_a_fused_kernel_highlights_its_own_layer_only(client, int8):
    text = int8.text(C)
    kernel = text.index(
        "int32_t __tvm_ffi_fused_max_pool2d_dequantize3(void* self_handle, void* args, int32_t num_args, void* result) {"
    )
    store = text.index("pool_max_intermediate[cse_v1] = ((v_)", kernel)
    line_start = text.rfind("\n", 0, store) + 1
    # On the line's indentation: the line's statement (a cursor anywhere on a line means it).
    got = await stage_ranges(client, int8, C, pos(text, line_start))
    assert [lay["opcode"] for lay in got["layers"]] == ["MAX_POOL_2D"]
    stages = by_stage(got)
    assert [t.split("  ")[0] for t in texts(int8, stages["model"])] == ["op 1 MAX_POOL_2D"]
    assert [t.split("(")[0] for t in texts(int8, stages["relax"])] == ["fused_max_pool2d_dequantize3"]
    assert [t.split("[")[0] for t in texts(int8, stages["tir"])] == ["pool_max_intermediate"] * 2


async def test_a_model_layer_lowered_to_several_kernels_has_a_range_in_each(client, int8):
    model = int8.text("model.tflgraph")
    # CONV_2D op 0: a dequantize kernel of its input, and the fused conv kernel.
    got = await stage_ranges(client, int8, "model.tflgraph", pos(model, model.index("op 0 CONV_2D") + 3))
    assert [(lay["op_index"], lay["opcode"]) for lay in got["layers"]] == [(0, "CONV_2D")]
    stages = by_stage(got)
    assert list(stages) == ["relax", "tir", "code"]
    relax = texts(int8, stages["relax"])
    assert [r.split("(")[0] for r in relax] == ["dequantize", "fused_conv2d_add_quantize_tir_clip"]
    code = texts(int8, stages["code"])
    assert any(c.startswith("dequantized[") for c in code)  # the dequantize kernel
    assert any(c.startswith("conv2d_nhwc_intermediate[") for c in code)  # the conv kernel
    assert all("\n" not in c for c in code)
    lines = int8.text(C).split("\n")
    functions = {function_at(lines, r["start"]["line"]) for r in stages["code"]["ranges"]}
    assert len(functions) == 2, functions
    for doc in stages.values():
        assert_ordered_and_disjoint(doc)


async def test_a_position_without_origin_answers_nothing(client, int8):
    text = int8.text(C)
    first_include = pos(text, text.index("#include"))
    assert await stage_ranges(client, int8, C, first_include) == {"layers": [], "documents": []}
    blank = text.index("\n\n") + 1
    assert await stage_ranges(client, int8, C, pos(text, blank)) == {"layers": [], "documents": []}
    # not a bundle: no stage documents, no ranges
    outside = (int8.root.parent.parent / "elsewhere.c").as_uri()
    got = plain(await client.protocol.send_request_async("tvmExplorer/stageDocuments", {"bundle": outside}))
    assert got == {"documents": []}
    got = plain(
        await client.protocol.send_request_async(
            "tvmExplorer/stageRanges",
            types.TextDocumentPositionParams(types.TextDocumentIdentifier(outside), types.Position(0, 0)),
        )
    )
    assert got == {"layers": [], "documents": []}


async def test_ranges_follow_an_edit_of_an_open_stage_document(client, int8):
    model = int8.text("model.tflgraph")
    model_uri = td(int8, "model.tflgraph").uri
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(model_uri, "tflgraph", 1, model))
    )
    # As an editor sends it: Enter at the start of the document.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=model_uri),
            [types.TextDocumentContentChangePartial(types.Range(types.Position(0, 0), types.Position(0, 0)), "\n")],
        )
    )
    try:
        text = int8.text(C)
        header = "TVM_DLL int32_t __tvm_ffi_fused_max_pool2d_dequantize3(void* self_handle, void* args, int32_t num_args, void* result) {"
        got = await stage_ranges(client, int8, C, pos(text, text.index(header) + 20))
        entries = [r["start"]["line"] for r in by_stage(got)["model"]["ranges"]]
        # one line further down than in the bundle's text: the editor's text has a line more
        lines = model.split("\n")
        assert [lines[line - 1].split("  ")[0] for line in entries] == ["op 1 MAX_POOL_2D", "op 2 CONV_2D"]
    finally:
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(model_uri)))


def line_of(bundle, path, rng) -> str:
    return bundle.text(path).split("\n")[rng["start"]["line"]]


async def test_an_int8_layer_shows_its_own_kernel_and_says_where_only_its_input_dequantize_is(client, int8):
    """CONV_2D op 2 of the int8 build: its input dequantize is fused into MAX_POOL_2D op 1's
    kernel (``fused_max_pool2d_dequantize3``), its conv into ``fused_conv2d1_add1_quantize1_tir_clip1``.
    A cursor on its multiply-accumulate shows the conv kernel in every column (the focus), and
    the dequantize in the other kernel is highlighted too, with a note saying what it is."""
    tir = [d.path for d in int8.documents if d.stage == "tir"][-1]
    text = int8.text(tir)
    kernel = text.index("def fused_conv2d1_add1_quantize1_tir_clip1(")
    mac = text.index("conv2d_nhwc_intermediate[cse_v2] = conv2d_nhwc_intermediate[", kernel)
    got = await stage_ranges(client, int8, tir, pos(text, mac))
    assert [lay["op_index"] for lay in got["layers"]] == [2]
    stages = by_stage(got)
    c_lines = int8.text(C).split("\n")
    code = stages["code"]
    # The column shows the conv kernel at its multiply-accumulate (the same statement), not
    # the max-pool kernel that comes first in the file and holds only the input dequantize.
    assert "fused_conv2d1_add1_quantize1_tir_clip1(" in function_at(c_lines, code["focus"]["start"]["line"])
    assert "conv2d_nhwc_intermediate[" in line_of(int8, C, code["focus"])
    functions = {function_at(c_lines, r["start"]["line"]).split("(")[0].split()[-1] for r in code["ranges"]}
    assert functions == {"__tvm_ffi_fused_conv2d1_add1_quantize1_tir_clip1", "__tvm_ffi_fused_max_pool2d_dequantize3"}
    assert [
        (function_at(c_lines, n["range"]["start"]["line"]).split("(")[0].split()[-1], n["text"]) for n in code["notes"]
    ] == [
        (
            "__tvm_ffi_fused_max_pool2d_dequantize3",
            "op 2 CONV_2D: input dequantize only — in the kernel of op 1 MAX_POOL_2D",
        )
    ]
    # Relax: the binding calling the conv kernel, the other binding noted the same way.
    relax = [d.path for d in int8.documents if d.stage == "relax"][-1]
    assert line_of(int8, relax, stages["relax"]["focus"]).strip().startswith("fused_conv2d1_add1_quantize1_tir_clip1(")
    assert [line_of(int8, relax, n["range"]).strip().split("(")[0] for n in stages["relax"]["notes"]] == [
        "fused_max_pool2d_dequantize3"
    ]
    assert "op 2 CONV_2D" in line_of(int8, "model.tflgraph", stages["model"]["focus"])

    # On the dequantize statement itself (in the max-pool kernel): the same statement in C.
    pool = text.index("def fused_max_pool2d_dequantize3(")
    deq = text.index("dequantized_intermediate_1[cse_v2] = ", pool)
    got = await stage_ranges(client, int8, tir, pos(text, deq))
    code = by_stage(got)["code"]
    assert "fused_max_pool2d_dequantize3(" in function_at(c_lines, code["focus"]["start"]["line"])
    assert line_of(int8, C, code["focus"]).strip().startswith("dequantized_intermediate[")
