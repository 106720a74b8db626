"""Hovers for a compiler engineer, and the model document's TF names, on real bundles (float
and int8, c and cuda): about 8 lines, the layer's TF name, opcode, attributes, types,
quantization and the PrimFunc/kernel the position is in."""

from __future__ import annotations

import re

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.frontends.tflite.loader import load_model
from tvm_explorer.lsp.protocol import RequestFailed

from .conftest import MODELS_DIR, SERVER, start_session, uri
from .real import pos, td


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, real_workspace):
    await start_session(lsp_client, real_workspace["folder"], expect=len(real_workspace["bundles"]))
    yield
    await lsp_client.shutdown_session()


async def hover_at(client, bundle, path, offset) -> str:
    got = await client.text_document_hover_async(types.HoverParams(td(bundle, path), pos(bundle.text(path), offset)))
    return got.contents.value


async def test_hover_on_an_int8_c_conv_line(client, real_workspace):
    bundle = Bundle(real_workspace["bundles"]["small_cnn_int8"])
    text = bundle.text("code/module.c")
    func = re.search(r"int32_t __tvm_ffi_(fused_conv2d1_\w+)\(void\* self_handle[^;]*\{", text)
    store = re.compile(r"\n\s+((\w+)\[[^\n]*\] = \(?\2\[[^\n]*\*)").search(text, func.end())
    value = await hover_at(client, bundle, "code/module.c", store.start(1))
    lines = value.split("\n")
    assert lines[0] == "**CONV\\_2D** `small_cnn_1/conv2d_1_2` — op 2, part of layer  "
    assert lines[1] == "3×3 kernel · stride 1 · padding VALID · RELU  "
    assert lines[2] == "`int8[1,13,13,16]` → `int8[1,11,11,32]`  "
    assert re.fullmatch(
        r"quantized: in scale [\d.e-]+ zp -128 · weights scale [\d.e-]+\.\.\(32 per-channel\) · out scale [\d.e-]+ zp -128",
        lines[3].replace("\\", ""),
    )  # the line is Markdown-escaped
    assert f"In PrimFunc `{func.group(1)}`" in value
    assert len([line for line in lines if line.strip()]) <= 9
    assert ";" not in value  # no fused tensor names


async def test_hover_names_the_cuda_kernel(client, real_workspace):
    bundle = Bundle(real_workspace["bundles"]["small_cnn_fp32_cuda"])
    text = bundle.text("code/device.cu")
    kernel = text.rindex(" fused_conv2d1_add1_relu1_kernel(")
    store = re.compile(r"\n\s+(conv2d\w*_local_ptr\[\d+\] = __\d+;)").search(text, kernel)
    value = await hover_at(client, bundle, "code/device.cu", store.start(1))
    assert value.startswith("**CONV\\_2D** `small_cnn_1/conv2d_1_2` — op 2")
    assert "In kernel `fused_conv2d1_add1_relu1_kernel`" in value
    assert "schedule step" in value


async def test_hover_on_a_shared_primfunc_lists_one_line_per_layer(client, real_workspace):
    bundle = Bundle(real_workspace["bundles"]["small_cnn_fp32"])
    path = [d.path for d in bundle.documents if d.stage == "relax"][-1]
    text = bundle.text(path)
    value = await hover_at(client, bundle, path, text.index("shape_heap: R.Any"))
    items = [line for line in value.split("\n") if line.startswith("- ")]
    assert items[0].startswith("- **CONV\\_2D** `small_cnn_1/conv2d_1` (op 0, part of layer): 3×3 kernel")
    assert len(items) == 7 and items[-1] == "- … and 2 more layers"


async def test_model_document_shows_tf_names_beside_opcodes(client, real_workspace):
    bundle = Bundle(real_workspace["bundles"]["small_cnn_int8"])
    model = load_model(MODELS_DIR / "small_cnn_int8.tflite")
    text = bundle.text("model.tflgraph")
    for layer in model.layers:
        assert (
            f"\nop {layer.op_index} {layer.opcode}  {layer.name}  " in text
            or f"\nop {layer.op_index} {layer.opcode}  {layer.name}\n" in text
        )
    for rng in bundle.index("model.tflgraph").ranges:
        if rng.kind == "tensor":
            assert text[rng.start : rng.end] == rng.key.split(":", 2)[2]
        if rng.kind == "layer":
            assert text[rng.start :].startswith(f"op {rng.key.split(':')[2]} ")
    value = await hover_at(client, bundle, "model.tflgraph", text.index("op 0 CONV_2D"))
    assert value.startswith("**CONV\\_2D** `small_cnn_1/conv2d_1` — op 0  \n3×3 kernel")
    assert "Ended up in " in value and " in generated code · " in value


async def test_trace_link_opens_at_the_step_the_hover_names(client, real_workspace):
    bundle = Bundle(real_workspace["bundles"]["small_cnn_fp32_cuda"])
    path = "code/device.cu"
    links = await client.text_document_document_link_async(types.DocumentLinkParams(td(bundle, path)))
    stepped = [link for link in links if "/traces/" in link.target and "#L" in link.target]
    assert stepped
    text = bundle.text(path)
    for link in stepped:
        file, line_col = link.target.split("#L")
        line, col = map(int, line_col.split(","))
        rel = "traces/" + file.rsplit("/traces/", 1)[1]
        trace_line = (bundle.root / rel).read_text().split("\n")[line - 1]
        assert col - 1 == len(trace_line) - len(trace_line.lstrip())
        lines = text.split("\n")
        offset = sum(len(x) + 1 for x in lines[: link.range.start.line]) + link.range.start.character
        hover = await hover_at(client, bundle, path, offset)
        step_text = re.search(r"created by schedule step \d+ of `\w+` in `[^`]+`, rule `\w+`: `(.*)`$", hover, re.M)
        assert step_text and trace_line.strip() == step_text.group(1)


async def test_hover_on_an_allocation_says_which_layers_tensors_live_in_it_and_when(client, real_workspace):
    bundle = Bundle(real_workspace["bundles"]["small_cnn_fp32"])
    memory = bundle.memory()
    analysed = memory["analysed"]["document"]
    text = bundle.text(analysed)
    storage = memory["storages"][0]
    line = re.search(
        rf"\n\s+({storage['var']}): R\.Any = R\.memory\.alloc_storage\(R\.shape\(\[{storage['size']}\]\)", text
    )
    value = await hover_at(client, bundle, analysed, line.start(1))
    assert f"**Memory** storage #0: {storage['bytes'] / 1024:.1f} KiB (planned by StaticPlanBlockMemory)" in value
    assert "2 tensors in turn" in value
    # the two convolutions whose outputs it holds, each with the steps it lives
    assert "`small_cnn_1/conv2d_1`" in value and "`small_cnn_1/conv2d_1_2`" in value
    assert "from step 0 to step 1" in value and "Held at the peak (step 0" in value
    # the same tensor in the last Relax document, where the VM's builtins allocate it
    last = max((d for d in bundle.documents if d.stage == "relax"), key=lambda d: d.order).path
    final = bundle.text(last)
    alloc = re.search(r"\n\s+(alloc): R\.Tensor\(\(1, 26, 26, 16\)", final)
    value = await hover_at(client, bundle, last, alloc.start(1))
    assert "**Memory** tensor `alloc [1, 26, 26, 16] float32` 42.2 KiB, from step 0 to step 1" in value
    assert "in storage #0 (42.2 KiB) at offset 0" in value and "the same storage holds, in turn: `alloc2`" in value
    # a kill is no allocation: no memory lines there
    kill = final.index("R.vm.kill_object(")
    assert "**Memory**" not in await hover_at(client, bundle, last, kill)


def _plain(x):
    """A result as JSON has it (the client hands objects back as named tuples)."""
    if hasattr(x, "_asdict"):
        return {k: _plain(v) for k, v in x._asdict().items()}
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return [_plain(v) for v in x] if isinstance(x, list) else x


async def timeline(client, root, bands):
    return _plain(
        await client.protocol.send_request_async("tvmExplorer/memoryTimeline", {"bundle": uri(root), "bands": bands})
    )


async def test_memory_timeline_request_bands_sum_to_each_step_and_link_to_alloc_lines_and_layers(
    client, real_workspace
):
    """``tvmExplorer/memoryTimeline``: the bands (one storage here, the rest summed as other)
    and the scratch add up to every step's bytes; the band is the storage held at the peak,
    its allocation line is its ``alloc_storage`` binding, its tensors' layers are located in
    the model document."""
    root = real_workspace["bundles"]["small_cnn_fp32"]
    bundle = Bundle(root)
    memory = bundle.memory()
    got = await timeline(client, root, 1)
    assert "error" not in got, got
    assert got["peak"]["step"] == memory["peak"]["step"] and got["peak"]["bytes"] == memory["peak"]["bytes"]
    assert len(got["steps"]) == len(memory["steps"]) and len(got["bands"]) == 1
    drawable = [s for s in memory["storages"] if s["bytes"] and s["first_step"] is not None]
    assert got["other_storages"] == len(drawable) - 1
    for i, step in enumerate(got["steps"]):
        held = sum(b["bytes"] for b in got["bands"] if b["first_step"] <= i <= b["last_step"])
        assert held + step["other"] + step["scratch"] == step["total"] == memory["steps"][i]["total_bytes"]
    band = got["bands"][0]
    peak = got["peak"]["step"]
    assert band["first_step"] <= peak <= band["last_step"]
    assert band["bytes"] == max(s["bytes"] for s in drawable if s["first_step"] <= peak <= s["last_step"])
    # the allocation line: the storage's alloc_storage binding in the analysed Relax document
    assert band["alloc"]["uri"].endswith(got["document"])
    line = bundle.text(got["document"]).split("\n")[band["alloc"]["range"]["start"]["line"]]
    assert line.strip().startswith(f"{band['var']}: R.Any = R.memory.alloc_storage(")
    layers = {lay["id"]: lay for lay in got["layers"]}
    assert band["tensors"] and all(t["layer"] in layers for t in band["tensors"])
    for t in band["tensors"]:
        lay = layers[t["layer"]]
        assert lay["location"]["uri"].endswith(".tflgraph") and lay["opcode"] == "CONV_2D"
    # what a run measured, or why not: the same as the report's (tests/memory/test_section.py)
    measured = memory["measured"]
    assert got["measured"]["status"] == measured["status"] and got["measured"]["caption"]
    assert got["measured"]["steps"] == (measured.get("steps") or [] if measured["status"] == "measured" else [])
    # the whole picture, every storage a band: nothing is left for "other"
    whole = await timeline(client, root, 64)
    assert whole["other_storages"] == 0 and all(s["other"] == 0 for s in whole["steps"])
    with pytest.raises(JsonRpcException) as missing:  # an LSP error, its message shown by the editor
        await timeline(client, root.parent / "nowhere", 8)
    assert missing.value.code == RequestFailed.CODE and "no loaded bundle holds" in missing.value.message
