"""IR-native navigation on real bundles: definition on a use lands on its definition (the
binding, the ``def`` line, the allocation, producers first), highlights mark reads and writes,
references on a name list its uses. Every check reads the text at the landing."""

from __future__ import annotations

import re

from lsprotocol import types

from tvm_explorer.bundle.reader import Bundle

from .real import landing, pos, real_bundle, real_client, td

client = real_client()
cnn = real_bundle("small_cnn_fp32")
cuda = real_bundle("small_cnn_fp32_cuda")


def fuse_ops_doc(bundle: Bundle) -> str:
    return next(d.path for d in bundle.documents if d.path.endswith("-FuseOps.relax"))


def main_body(text: str) -> tuple[int, int]:
    start = text.index("    def main(")
    end = text.find("\n    @", start)
    return start, len(text) if end < 0 else end


async def definition(client, bundle, path, offset):
    return await client.text_document_definition_async(
        types.DefinitionParams(td(bundle, path), pos(bundle.text(path), offset))
    )


async def test_relax_variable_use_goes_to_its_binding(client, cnn):
    path = fuse_ops_doc(cnn)
    text = cnn.text(path)
    lo, hi = main_body(text)
    m = re.compile(r"= (fused_conv2d1\w*)\((\w+),").search(text, lo, hi)
    arg = m.group(2)
    found = await definition(client, cnn, path, m.start(2) + 1)
    assert len(found) == 1
    rel, got, line = landing(cnn, found[0])
    assert rel == path
    assert re.match(rf"{arg}(: [^\n]*?)? = R\.call_tir\(max_pool2d,", got), got
    assert found[0].range.start.line < pos(text, m.start(2)).line


async def test_plain_call_and_call_tir_go_to_the_def_line(client, cnn):
    path = fuse_ops_doc(cnn)
    text = cnn.text(path)
    lo, hi = main_body(text)
    call = re.compile(r"= (fused_conv2d_add_relu)\(").search(text, lo, hi)
    found = await definition(client, cnn, path, call.start(1) + 2)
    rel, got, line = landing(cnn, found[0])
    assert (rel, got) == (path, "fused_conv2d_add_relu")
    assert line.strip().startswith("def fused_conv2d_add_relu(")
    tir = re.compile(r"R\.call_tir\((max_pool2d), ").search(text, lo, hi)
    found = await definition(client, cnn, path, tir.start(1))
    rel, got, line = landing(cnn, found[0])
    assert got == "max_pool2d" and line.strip().startswith("def max_pool2d(")


async def test_binding_left_side_and_store_target_still_go_to_the_layer(client, cnn):
    path = fuse_ops_doc(cnn)
    text = cnn.text(path)
    lo, hi = main_body(text)
    binding = re.compile(r"\n\s+(\w+)(: [^\n]*?)? = fused_conv2d_add_relu\(").search(text, lo, hi)
    found = await definition(client, cnn, path, binding.start(1))
    assert [landing(cnn, f)[0] for f in found] == ["model.tflgraph"]
    assert landing(cnn, found[0])[2].startswith("op 0 CONV_2D")
    c_text = cnn.text("code/module.c")
    store = re.compile(r"\n\s+(conv2d_nhwc_intermediate)\[cse_v\d+\] = 0").search(c_text)
    found = await definition(client, cnn, "code/module.c", store.start(1) + 2)
    assert [landing(cnn, f)[0] for f in found] == ["model.tflgraph"]
    assert landing(cnn, found[0])[2].startswith("op ") and "CONV_2D" in landing(cnn, found[0])[2]


def tir_input(bundle: Bundle) -> str:
    return next(d.path for d in bundle.documents if d.stage == "tir")


async def test_tir_buffer_read_goes_to_producers_then_allocation(client, cnn):
    path = tir_input(cnn)
    text = cnn.text(path)
    start = text.index("def fused_conv2d_add_relu(")
    read = re.compile(r"T_add_intermediate\[[^\]]*\] = (conv2d_nhwc_intermediate)\[").search(text, start)
    found = await definition(client, cnn, path, read.start(1) + 3)
    got = [landing(cnn, f)[1] for f in found]
    assert len(got) == 3, got
    assert got[0].startswith("conv2d_nhwc_intermediate[") and got[0].endswith("= T.float32(0.0)")
    assert got[1].startswith("conv2d_nhwc_intermediate[") and "= conv2d_nhwc_intermediate[" in got[1]
    assert got[2].startswith("conv2d_nhwc_intermediate = T.sblock_alloc_buffer(")


async def test_tir_loop_variable_read_goes_to_the_loop_header(client, cnn):
    path = tir_input(cnn)
    text = cnn.text(path)
    start = text.index("def fused_conv2d_add_relu(")
    remap = re.compile(r"T\.axis\.remap\(\"SSSSRRR\", \[(nn), ").search(text, start)
    found = await definition(client, cnn, path, remap.start(1))
    rel, got, line = landing(cnn, found[0])
    assert got == "nn" and line.strip().startswith("for nn, yy, xx, ff, ry, rx, rc in T.grid(")
    # The loop header itself is a definition: it goes to the layer.
    header = text.index("for nn, yy", start)
    found = await definition(client, cnn, path, header + 5)
    assert [landing(cnn, f)[0] for f in found] == ["model.tflgraph"]


async def test_c_buffer_read_and_local(client, cnn):
    path = "code/module.c"
    text = cnn.text(path)
    body = text.index("int32_t __tvm_ffi_fused_conv2d1_add1_relu1(")
    bias = re.compile(
        r"(conv2d_nhwc_intermediate)\[(cse_v\d+)\] = \(conv2d_nhwc_intermediate\[cse_v\d+\] \+ param_1"
    ).search(text, body)
    read = text.index("conv2d_nhwc_intermediate[", bias.end(1)) + 1
    found = await definition(client, cnn, path, read)
    got = [landing(cnn, f)[1] for f in found]
    assert got[0] == next(
        line.strip()
        for line in text[body:].split("\n")
        if line.strip().startswith("conv2d_nhwc_intermediate[") and line.strip().endswith("= 0.000000e+00f;")
    )
    assert got[-1].startswith("float* conv2d_nhwc_intermediate = ")
    assert len(got) == 3
    local = await definition(client, cnn, path, bias.start(2))
    assert landing(cnn, local[0])[1].startswith(f"int32_t {bias.group(2)} = ")


async def test_cuda_local_read_goes_to_its_declaration(client, cuda):
    path = "code/device.cu"
    text = cuda.text(path)
    m = re.compile(r"\n\s+(\w+_local_ptr)\[0\] = ").search(text)
    name = m.group(1)
    read = re.compile(rf"[=(,+*] ?({name})\[").search(text, m.end())  # a read, not a store
    found = await definition(client, cuda, path, read.start(1))
    got = [landing(cuda, f)[1] for f in found]
    assert got[-1].endswith(f"float2 {name}[8];") or re.search(rf"\b{name}\[\d+\];$", got[-1]), got
    assert all(g.startswith(f"{name}[") for g in got[:-1]) and len(got) >= 2


async def test_highlights_mark_reads_and_writes(client, cnn):
    path = tir_input(cnn)
    text = cnn.text(path)
    start = text.index("def fused_conv2d_add_relu(")
    end = text.index("    @T.prim_func", start)
    alloc = text.index("conv2d_nhwc_intermediate = ", start)
    got = await client.text_document_document_highlight_async(
        types.DocumentHighlightParams(td(cnn, path), pos(text, alloc))
    )
    occurrences = [m.start() for m in re.finditer(r"\bconv2d_nhwc_intermediate\b", text[start:end])]
    assert len(got) == len(occurrences)
    kinds = {(h.range.start.line, h.range.start.character): h.kind for h in got}
    writes = [
        o
        for o in occurrences
        if text[start + o :].startswith("conv2d_nhwc_intermediate[")
        and re.match(r"conv2d_nhwc_intermediate\[[^\]]*\] = ", text[start + o :])
    ]
    assert len(writes) == 2
    for o in writes:
        assert kinds[_lc(pos(text, start + o))] == types.DocumentHighlightKind.Write
    assert kinds[_lc(pos(text, alloc))] == types.DocumentHighlightKind.Write
    assert types.DocumentHighlightKind.Read in kinds.values()


async def test_references_on_a_name_are_its_uses_in_the_document(client, cnn):
    path = "code/module.c"
    text = cnn.text(path)
    body = text.index("int32_t __tvm_ffi_fused_conv2d1_add1_relu1(")
    decl = text.index("float* pad_temp = ", body)
    refs = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=td(cnn, path),
            position=pos(text, decl + len("float* ")),
            context=types.ReferenceContext(include_declaration=False),
        )
    )
    assert refs and all(r.uri.endswith("code/module.c") for r in refs)
    assert all(landing(cnn, r)[1] == "pad_temp" for r in refs)
    end = text.index("\n}\n", body)
    assert len(refs) == len(re.findall(r"\bpad_temp\b", text[decl:end])) - 1


def _lc(p: types.Position) -> tuple[int, int]:
    return p.line, p.character
