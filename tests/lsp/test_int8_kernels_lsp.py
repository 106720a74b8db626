"""A real server on two int8 bundles: MobileNet v3 small (llvm) and the small CNN (c).

Quantized layers lower their input dequantize into the previous layer's kernel: the stages
side by side show a layer's own kernel at its compute body (not the previous kernel, not LLVM's
``@__tvm_ffi_`` argument-checking wrapper) and say what the other kernel holds of it, as Layer
Places does. Ctrl+T ranks a layer named exactly as typed first, across bundles."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from tvm_explorer.bundle.reader import Bundle

from .conftest import MODELS_DIR, uri, workspace_client
from .real import pos, td
from .test_stage_jumps import plain


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, bundles) -> Path:
    folder = tmp_path_factory.mktemp("int8-ws")
    # listed in this order: the MobileNet first (its fuzzy matches came before the CNN's exact ones)
    shutil.copytree(
        bundles.get(MODELS_DIR / "mobilenet_v3_small_int8.tflite", "llvm"), folder / "mobilenet_v3_small_int8"
    )
    shutil.copytree(bundles.get(MODELS_DIR / "small_cnn_int8.tflite", "c"), folder / "small_cnn_int8")
    return folder


client = workspace_client(expect=2)


@pytest.fixture(scope="module")
def mobilenet(workspace) -> Bundle:
    return Bundle(workspace / "mobilenet_v3_small_int8")


LL = "code/host.ll"


def function_at(lines: list[str], line: int) -> str:
    """The LLVM function holding ``line``: the nearest ``define`` above it."""
    return next(s for s in reversed(lines[: line + 1]) if s.startswith("define "))


def last(bundle: Bundle, stage: str) -> str:
    return [d.path for d in bundle.documents if d.stage == stage][-1]


async def stage_ranges(client, bundle, path, position):
    return plain(
        await client.protocol.send_request_async(
            "tvmExplorer/stageRanges", types.TextDocumentPositionParams(td(bundle, path), position)
        )
    )


async def test_stage_sync_shows_a_quantized_layers_own_kernel_at_its_compute_body(client, mobilenet):
    """DEPTHWISE_CONV_2D op 4: its input dequantize is the tail of the kernel of ops 2-3
    (``fused_conv2d_add1_…_dequantize8``). A cursor on its multiply-accumulate in the final TIR
    shows, in the LLVM column, the same statement in its own kernel's ``_compute_`` function;
    no range is an ``@__tvm_ffi_`` wrapper's ``define`` line; the other kernel is noted."""
    tir = last(mobilenet, "tir")
    text = mobilenet.text(tir)
    kernel = text.index("def fused_conv2d1_add3_quantize4_tir_clip1(")
    mac = text.index("group_conv2d_nhwc_intermediate[cse_v3] = T.call_llvm_pure_intrin", kernel)
    got = await stage_ranges(client, mobilenet, tir, pos(text, mac))
    assert [(lay["op_index"], lay["opcode"]) for lay in got["layers"]] == [(4, "DEPTHWISE_CONV_2D")]
    code = next(d for d in got["documents"] if d["stage"] == "code")
    lines = mobilenet.text(LL).split("\n")
    focus = code["focus"]["start"]["line"]
    assert "@fused_conv2d1_add3_quantize4_tir_clip1_compute_(" in function_at(lines, focus)
    assert not lines[focus].startswith("define ")  # the statement, not a function's header
    wrappers = [r for r in code["ranges"] if "@__tvm_ffi_" in lines[r["start"]["line"]]]
    assert wrappers == [], [lines[r["start"]["line"]][:90] for r in wrappers]
    held = {function_at(lines, r["start"]["line"]).split("@")[1].split("(")[0] for r in code["ranges"]}
    previous = "fused_conv2d_add1_quantize2_dequantize7_add2_tir_clip_multiply1_divide_quantize3_dequantize8_compute_"
    assert held == {"fused_conv2d1_add3_quantize4_tir_clip1_compute_", previous}
    assert [
        (function_at(lines, n["range"]["start"]["line"]).split("@")[1].split("(")[0], n["text"]) for n in code["notes"]
    ] == [(previous, "op 4 DEPTHWISE_CONV_2D: input dequantize only — in the kernel of op 2 CONV_2D, op 3 HARD_SWISH")]


async def test_a_separate_dequantize_kernel_is_said_to_be_one(client, mobilenet):
    """MEAN op 5: its input is dequantized by a kernel of its own (``dequantize10``), its mean
    computed in ``fused_mean_quantize5_dequantize11``: from the model entry, the code column
    shows the mean's kernel, and the note names it."""
    model = mobilenet.text("model.tflgraph")
    got = await stage_ranges(client, mobilenet, "model.tflgraph", pos(model, model.index("op 5 MEAN")))
    code = next(d for d in got["documents"] if d["stage"] == "code")
    lines = mobilenet.text(LL).split("\n")
    assert "@fused_mean_quantize5_dequantize11_compute_(" in function_at(lines, code["focus"]["start"]["line"])
    assert [n["text"] for n in code["notes"]] == [
        "op 5 MEAN: input dequantize only — a kernel of its own; the output is computed in "
        "fused_mean_quantize5_dequantize11"
    ]


async def test_layer_places_name_the_kernel_holding_only_the_input_dequantize(client, mobilenet):
    model = mobilenet.text("model.tflgraph")
    result = plain(
        await client.protocol.send_request_async(
            "tvmExplorer/layerPlaces",
            types.TextDocumentPositionParams(
                td(mobilenet, "model.tflgraph"), pos(model, model.index("op 4 DEPTHWISE_CONV_2D"))
            ),
        )
    )
    lines = mobilenet.text(LL).split("\n")
    code = [p for p in result["places"] if p["stage"] == "code"]
    # No place is an argument-checking wrapper (its group would open there).
    assert not [p for p in code if "@__tvm_ffi_" in lines[p["range"]["start"]["line"]]]
    notes = {
        (p["function"], p["note"]) for p in result["places"] if p["stage"] in ("tir", "code") and p["last_of_stage"]
    }
    previous = "fused_conv2d_add1_quantize2_dequantize7_add2_tir_clip_multiply1_divide_quantize3_dequantize8"
    assert notes == {
        ("fused_conv2d1_add3_quantize4_tir_clip1", ""),
        (previous, "op 4 DEPTHWISE_CONV_2D: input dequantize only — in the kernel of op 2 CONV_2D, op 3 HARD_SWISH"),
    }, notes
    relax = [p for p in result["places"] if p["stage"] == "relax" and p["last_of_stage"] and p["role"] == "compute"]
    assert sorted(bool(p["note"]) for p in relax) == [False, True]
    assert re.fullmatch(r"2 functions in generated code · \d+ in IR · 1 only input dequantize", result["summary"])


async def test_ctrl_t_ranks_an_exact_layer_name_first_across_bundles(client, workspace):
    listed = await client.protocol.send_request_async("tvmExplorer/listBundles", {})
    assert [Path(b.root).name for b in listed.bundles][0] == "mobilenet_v3_small_int8"
    cnn = uri(workspace / "small_cnn_int8")
    for query, name in (
        ("dense_1", "dense_1 · op 5 FULLY_CONNECTED"),
        ("conv2d_1", "conv2d_1 · op 0 CONV_2D"),
        ("small_cnn_1/conv2d_1_2", "small_cnn_1/conv2d_1_2 · op 2 CONV_2D"),
    ):
        got = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query))
        if "/" not in query:  # both bundles answer (the MobileNet's names hold the query's characters)
            assert len({s.location.uri.rsplit("/", 1)[0] for s in got}) == 2, query
        first = got[0]
        assert first.location.uri.startswith(cnn + "/") and first.name == name, [s.name for s in got[:5]]
        # An editor re-ranks by its own fuzzy score, which favours a name starting with the
        # query: the exact match's name starts with it; the looser ones' names do not.
        assert first.name.lower().startswith(query.lower())
        assert "small_cnn_1/" in first.container_name or query.startswith("small_cnn_1/")
        assert not any(s.name.lower().startswith(query.lower() + " ") for s in got[1:]), [s.name for s in got]
